import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { challengeS256, generateVerifier } from '@authcli/pkce';
import { launchChromium } from '@authcli/test-support/chromium';
import { addUsers } from '@authcli/test-support/seed';
import { startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const PASSWORD = 'continuation e2e pass';

/**
 * The attack in the browser it was reported against: Chromium's URL
 * parser drops the tab of `/\t/evil.example` and reads `//evil.example`, so a
 * check on the string alone let the sign-in redirect off-site.
 */
describe('sign-in continuation in a real Chromium', () => {
  let server: ServerProcess;
  let chromium: Browser;

  beforeAll(async () => {
    server = await startServerProcess();
    await addUsers(server.env, [{ username: 'erin', password: PASSWORD }]);
    chromium = await launchChromium();
  });
  afterAll(async () => {
    await chromium?.close();
    await server?.stop();
  });

  /** Every request the page sends to another origin (none should leave the issuer). */
  function offsite(page: Page): string[] {
    const seen: string[] = [];
    page.on('request', (r) => {
      if (new URL(r.url()).origin !== server.issuer) seen.push(r.url());
    });
    return seen;
  }

  async function signIn(page: Page): Promise<void> {
    await page.getByLabel('Username').fill('erin');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  it('no open redirect after sign-in: /signin?return_to=/%09/evil.example stays on the issuer', async () => {
    const context = await chromium.newContext();
    try {
      const page = await context.newPage();
      const left = offsite(page);
      await page.goto(`${server.issuer}/signin?return_to=/%09/evil.example`);
      await signIn(page);
      // Wherever the sign-in leads, here or elsewhere (Chromium shows an error page for an unreachable host).
      await page.waitForURL((url) => url.href !== `${server.issuer}/signin` && !url.href.startsWith(`${server.issuer}/signin?`), {
        waitUntil: 'commit',
        timeout: 10_000,
      });
      expect(left).toEqual([]);
      expect(page.url()).toBe(`${server.issuer}/`);
      await page.getByText('You are signed in as').waitFor();
    } finally {
      await context.close();
    }
  });

  it('an authorization request resumes after sign-in: the consent page of the application, on the issuer', async () => {
    const context = await chromium.newContext();
    try {
      const page = await context.newPage();
      const left = offsite(page);
      const query = new URLSearchParams({
        response_type: 'code',
        client_id: 'authcli',
        redirect_uri: 'http://127.0.0.1/callback',
        scope: 'openid profile',
        state: 'e2e-state',
        code_challenge: await challengeS256(generateVerifier()),
        code_challenge_method: 'S256',
      });
      await page.goto(`${server.issuer}/oauth/authorize?${query}`);
      expect(new URL(page.url()).pathname).toBe('/signin');
      await page.getByText('to continue to').waitFor();
      await signIn(page);
      await page.getByRole('button', { name: 'Approve' }).waitFor();
      const at = new URL(page.url());
      expect(at.origin).toBe(server.issuer);
      expect(at.pathname).toBe('/oauth/authorize');
      expect(at.searchParams.get('state')).toBe('e2e-state');
      expect(left).toEqual([]);
    } finally {
      await context.close();
    }
  });
  it('oidc core §3.1.2.1 prompt=select_account: the sign-in page despite a live session, to continue as the user or sign in as another', async () => {
    await addUsers(
      server.env,
      ['sam', 'tess'].map((username) => ({ username, password: PASSWORD })),
    );
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: 'authcli',
      redirect_uri: 'http://127.0.0.1/callback',
      scope: 'openid profile',
      state: 'pick',
      prompt: 'select_account',
      code_challenge: await challengeS256(generateVerifier()),
      code_challenge_method: 'S256',
    });
    const context = await chromium.newContext();
    try {
      const page = await context.newPage();
      const left = offsite(page);
      await page.goto(`${server.issuer}/signin`);
      await page.getByLabel('Username').fill('sam');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('You are signed in as').waitFor();

      // Continue as the signed-in user: on to consent, as sam, the request without select_account.
      await page.goto(`${server.issuer}/oauth/authorize?${query}`);
      expect(new URL(page.url()).pathname).toBe('/oauth/authorize');
      await page.getByLabel('Username').waitFor();
      await page.getByLabel('Password').waitFor();
      await page.getByRole('button', { name: 'Sign in' }).waitFor();
      await page.getByRole('link', { name: 'Continue as sam' }).click();
      await page.getByRole('button', { name: 'Approve' }).waitFor();
      expect(await page.locator('.who strong').textContent()).toBe('sam');
      expect(new URL(page.url()).searchParams.get('prompt')).toBeNull();

      // Or sign in as someone else there: on to consent as tess.
      await page.goto(`${server.issuer}/oauth/authorize?${query}`);
      await page.getByLabel('Username').fill('tess');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Approve' }).waitFor();
      expect(await page.locator('.who strong').textContent()).toBe('tess');
      const at = new URL(page.url());
      expect(at.pathname).toBe('/oauth/authorize');
      expect(at.searchParams.get('state')).toBe('pick');
      expect(at.searchParams.get('prompt')).toBeNull();
      expect(left).toEqual([]);
    } finally {
      await context.close();
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { challengeS256, generateVerifier } from '@authcli/pkce';
import { launchChromium } from './support/chromium.js';
import { serverCommand, startServerProcess, type ServerProcess } from './support/server-process.js';

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
    const added = await serverCommand(['users', 'add', 'erin', '--password-stdin'], server.env, `${PASSWORD}\n`);
    expect(added.code, added.stderr).toBe(0);
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
      await page.waitForURL((url) => url.href !== `${server.issuer}/signin` && !url.href.startsWith(`${server.issuer}/signin?`), { waitUntil: 'commit', timeout: 10_000 });
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
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser as Chromium, BrowserContext, Page } from 'playwright-core';
import { launchChromium, screenshotPath } from '@authcli/test-support/chromium';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const PASSWORD = 'playground pass 1';

describe('Developer > OAuth playground in a real Chromium', () => {
  let server: ServerProcess;
  let chromium: Chromium;
  let context: BrowserContext;
  /** The application the playground tests run as, its consent already given (see beforeAll). */
  let clientId: string;

  /** Registers a public application with the playground callback (and offline_access) in the dashboard. */
  async function registerPlaygroundApp(name: string): Promise<string> {
    const page = await context.newPage();
    await page.goto(`${server.issuer}/dashboard/apps/new`);
    await page.getByLabel('Name').fill(name);
    await page.getByLabel('Callback URLs').fill(`${server.issuer}/developer/playground`);
    await page.getByRole('checkbox', { name: 'offline_access' }).check();
    await page.getByRole('button', { name: 'Register' }).click();
    await page.getByText('Client ID').waitFor();
    const id = (await page.locator('p code').first().textContent())!;
    await page.close();
    expect(id).toMatch(/^[\w-]{22}$/);
    return id;
  }

  /** Opens the playground with `app` chosen (each test names its own: several may be registered, in any order). */
  async function openPlayground(page: Page, app = clientId): Promise<void> {
    await page.goto(`${server.issuer}/developer/playground`);
    // The first application's scopes load with the page; choosing another empties them until its own have loaded.
    await page.locator('#scopes input').first().waitFor();
    await page.locator('#client_id').selectOption(app);
    await page.locator('#scopes input').first().waitFor();
  }

  beforeAll(async () => {
    server = await startServerProcess();
    expect((await serverCommand(['users', 'add', 'dev', '--password-stdin'], server.env, `${PASSWORD}\n`)).code).toBe(0);
    chromium = await launchChromium();
    context = await chromium.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${server.issuer}/dashboard`);
    await page.getByLabel('Username').fill('dev');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Applications' }).waitFor();
    await page.close();
    // The application most tests run as, approved once here: their authorization requests then answer with the
    // callback at once, whichever test runs first.
    clientId = await registerPlaygroundApp('Playground app');
    const approve = await context.newPage();
    await openPlayground(approve);
    await approve.getByRole('button', { name: 'Start' }).click();
    await approve.getByRole('button', { name: 'Approve' }).click();
    await approve.locator('#playground[data-done]').waitFor();
    await approve.close();
  });
  afterAll(async () => {
    await chromium?.close();
    await server?.stop();
  });

  /** Watches a page for token requests, which the blocking rules say must not be sent. */
  function tokenRequests(page: Page): string[] {
    const seen: string[] = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/oauth/token')) seen.push(r.method());
    });
    return seen;
  }

  /**
   * Runs Start (consent is already remembered, so the server answers the
   * authorization request with the callback redirect at once) and returns the
   * callback URL instead of following it.
   */
  async function callbackUrl(page: Page): Promise<string> {
    let captured = '';
    await page.route('**/oauth/authorize?*', async (route) => {
      const res = await route.fetch({ maxRedirects: 0 });
      captured = res.headers().location ?? '';
      await route.abort();
    });
    await openPlayground(page);
    await page.getByRole('button', { name: 'Start' }).click();
    await expect.poll(() => captured).toContain('code=');
    await page.unroute('**/oauth/authorize?*');
    return captured;
  }

  it('register a public application with the playground callback in the dashboard', async () => {
    const registered = await registerPlaygroundApp('Registered app');
    const page = await context.newPage();
    await page.goto(`${server.issuer}/dashboard`);
    await expect.poll(() => page.getByRole('link', { name: 'Playground', exact: true }).count()).toBe(1);
    await page.screenshot({ path: screenshotPath('dashboard'), fullPage: true });
    await page.goto(`${server.issuer}/developer/playground`);
    expect(await page.locator(`#client_id option[value="${registered}"]`).count()).toBe(1);
    await page.close();
  });

  it('end to end: sign in, approve, tokens shown, signature and nonce checks passed, refresh and userinfo', async () => {
    // An application of its own, not yet approved: the consent page is shown whatever ran before.
    const app = await registerPlaygroundApp('End to end app');
    const page = await context.newPage();
    await openPlayground(page, app);
    await page.getByRole('button', { name: 'Start' }).click();
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.locator('#playground[data-done]').waitFor();
    await page.locator('[data-check="nonce matches the request"]').waitFor();
    expect(await page.getByLabel('Token response').textContent()).toMatch(/^HTTP 200/);
    expect(await page.locator('[data-check="signature verified against the JWKS"]').getAttribute('class')).toContain('ok');
    expect(await page.locator('[data-check="nonce matches the request"]').getAttribute('class')).toContain('ok');
    expect(await page.locator('[data-check="iss equals the issuer (RFC 9207)"]').getAttribute('class')).toContain('ok');
    expect(await page.getByLabel('curl').textContent()).toContain('curl -sS -X POST');
    expect(await page.getByLabel('Authorization request URL').textContent()).toMatch(/code_challenge_method=S256/);
    expect(page.url()).toBe(`${server.issuer}/developer/playground`);
    await page.getByRole('button', { name: 'Call userinfo' }).click();
    await expect.poll(async () => (await page.getByLabel('Userinfo response').textContent()) ?? '').toContain('HTTP 200');
    await page.getByRole('button', { name: 'Refresh tokens' }).first().click();
    await expect.poll(() => page.getByLabel('Token response').count()).toBe(2);
    await page.screenshot({ path: screenshotPath('playground-result'), fullPage: true });
    // Nothing of the request stays behind: sessionStorage entry used up, localStorage never touched.
    expect(await page.evaluate(() => [sessionStorage.length, localStorage.length])).toEqual([0, 0]);
    await page.close();
  });

  it('a callback opened in a fresh tab (no saved request) is blocked and sends no token request', async () => {
    const first = await context.newPage();
    const url = await callbackUrl(first);
    await first.close();
    const fresh = await context.newPage();
    const sent = tokenRequests(fresh);
    await fresh.goto(url);
    await fresh.locator('#playground[data-done]').waitFor();
    expect(await fresh.locator('#blocked').textContent()).toMatch(/No saved request/);
    expect(sent).toEqual([]);
    await fresh.close();
  });

  it('rfc9207 a tampered iss is blocked and sends no token request', async () => {
    const page = await context.newPage();
    const url = new URL(await callbackUrl(page));
    url.searchParams.set('iss', 'https://evil.example');
    const sent = tokenRequests(page);
    await page.goto(url.href);
    await page.locator('#playground[data-done]').waitFor();
    expect(await page.locator('#blocked').textContent()).toMatch(/not the issuer/);
    expect(sent).toEqual([]);
    // One use: the saved request is gone even though it was blocked.
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.close();
  });

  it('a saved request older than 10 minutes is not used', async () => {
    const page = await context.newPage();
    const url = await callbackUrl(page);
    const sent = tokenRequests(page);
    await page.goto(`${server.issuer}/developer/playground`);
    await page.evaluate(() => {
      for (let i = 0; i < sessionStorage.length; i++) {
        const key = sessionStorage.key(i)!;
        const saved = JSON.parse(sessionStorage.getItem(key)!);
        saved.created_at -= 10 * 60_000 + 1000;
        sessionStorage.setItem(key, JSON.stringify(saved));
      }
    });
    await page.goto(url);
    await page.locator('#playground[data-done]').waitFor();
    expect(await page.locator('#blocked').textContent()).toMatch(/No saved request/);
    expect(sent).toEqual([]);
    await page.close();
  });

  it('a missing iss is blocked too', async () => {
    const page = await context.newPage();
    const url = new URL(await callbackUrl(page));
    url.searchParams.delete('iss');
    const sent = tokenRequests(page);
    await page.goto(url.href);
    await page.locator('#playground[data-done]').waitFor();
    expect(await page.locator('#blocked').textContent()).toMatch(/no iss/);
    expect(sent).toEqual([]);
    await page.close();
  });

  it('an error callback (Deny) is shown as such', async () => {
    const page = await context.newPage();
    await openPlayground(page);
    await page.locator('#extra').fill('prompt=consent');
    await page.getByRole('button', { name: 'Start' }).click();
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.locator('#playground[data-done]').waitFor();
    expect(await page.locator('#auth-error').textContent()).toContain('access_denied');
    await page.close();
  });

  it('csrf: a dashboard form with a forged token is refused', async () => {
    const page = await context.newPage();
    await page.goto(`${server.issuer}/dashboard/apps/new`);
    await page.getByLabel('Name').fill('Forged in the browser');
    await page.getByLabel('Callback URLs').fill('https://forged.example/cb');
    await page.evaluate(() => {
      (document.querySelector('form[action="/dashboard/apps"] input[name=_csrf]') as HTMLInputElement).value = 'forged';
    });
    await page.getByRole('button', { name: 'Register' }).click();
    await page.getByRole('heading', { name: 'Form expired' }).waitFor();
    await page.goto(`${server.issuer}/dashboard`);
    expect(await page.content()).not.toContain('Forged in the browser');
    await page.close();
  });

  it("another user's application is not reachable, in the dashboard or the playground", async () => {
    expect((await serverCommand(['users', 'add', 'eve', '--password-stdin'], server.env, `${PASSWORD}\n`)).code).toBe(0);
    const eve = await chromium.newContext();
    const page = await eve.newPage();
    try {
      await page.goto(`${server.issuer}/signin`);
      await page.getByLabel('Username').fill('eve');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.goto(`${server.issuer}/dashboard`);
      expect(await page.content()).not.toContain('Playground app');
      const direct = await page.goto(`${server.issuer}/dashboard/apps/${clientId}`);
      expect(direct!.status()).toBe(404);
      const json = await page.goto(`${server.issuer}/developer/playground/apps/${clientId}`);
      expect(json!.status()).toBe(404);
      await page.goto(`${server.issuer}/developer/playground`);
      expect(await page.content()).not.toContain(clientId);
    } finally {
      await eve.close();
    }
  });

  it('a confidential secret is shown once, then never', async () => {
    const page = await context.newPage();
    await page.goto(`${server.issuer}/dashboard/apps/new`);
    await page.getByLabel('Name').fill('Server app');
    await page.getByLabel(/Confidential/).check();
    await page.getByLabel('Callback URLs').fill('https://server.example/cb');
    await page.getByRole('button', { name: 'Register' }).click();
    const secret = await page.getByLabel('Client secret').inputValue();
    expect(secret).toMatch(/^[\w-]{43}$/);
    await page.getByRole('link', { name: 'Done' }).click();
    expect(await page.content()).not.toContain(secret);
    // The secret page was a no-store POST answer: going back does not bring it out of a cache.
    const back = await page.goBack().then(
      () => page.content(),
      (err: Error) => err.message,
    );
    expect(back).not.toContain(secret);
    await page.close();
    const playground = await context.newPage();
    await playground.goto(`${server.issuer}/developer/playground`);
    expect(await playground.getByText('the playground acts as a public client').count()).toBe(1);
    expect(await playground.content()).not.toContain(secret);
    await playground.close();
  });
});

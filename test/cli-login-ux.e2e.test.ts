import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser as Chromium, Page } from 'playwright-core';
import { DARK_SCHEME, LIGHT_SCHEME, scanTerminal } from '@authcli/test-support/terminal';
import { launchChromium, screenshotPath } from '@authcli/test-support/chromium';
import { runCli, tempConfigHome } from '@authcli/test-support/cli-process';
import { runInTerminal } from '@authcli/test-support/pty';
import { approveInBrowser, Browser } from '@authcli/test-support/http';
import { addApp, addUsers } from '@authcli/test-support/seed';
import { startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const PASSWORD = 'login ux password';
const AUTHORIZE_LINE = /^\s+(http:\/\/\S+\/oauth\/authorize\?\S+)$/m;

/** What a page looks like, as Chromium draws it: the page's colours and font, its card, its heading, its header. */
function lookOf(page: Page, card: string) {
  return page.evaluate((selector) => {
    const style = (s: string) => getComputedStyle(document.querySelector(s)!);
    const [html, box, h1, header] = [style('html'), style(selector), style('h1'), style('header')];
    return {
      page: [html.backgroundColor, html.color, html.fontFamily, html.fontSize],
      card: [box.backgroundColor, box.borderTopColor, box.borderTopWidth, box.borderRadius, box.paddingTop],
      heading: [h1.fontSize, h1.fontWeight],
      header: [header.backgroundColor, header.borderBottomColor, header.paddingTop],
    };
  }, card);
}

describe('authcli login as a person sees it', () => {
  let server: ServerProcess;
  let chromium: Chromium;

  beforeAll(async () => {
    server = await startServerProcess();
    // Each test that meets the consent page has its own user: alice approves once (in Chromium), bob never approves,
    // carol approves outside Chromium. A consent given in one test would skip the page in another (vitest shuffles in CI).
    await addUsers(
      server.env,
      ['alice', 'bob', 'carol'].map((username) => ({ username, password: PASSWORD })),
    );
    chromium = await launchChromium();
  });
  afterAll(async () => {
    await chromium?.close();
    await server?.stop();
  });

  const envFor = (home: string) => ({ XDG_CONFIG_HOME: home, AUTHCLI_ISSUER: server.issuer });

  /** Signs in as `user` in Chromium at the authorization URL and takes `decision` on the consent page; returns the loopback page. */
  async function decideInChromium(
    url: string,
    user: string,
    decision: 'Approve' | 'Deny',
  ): Promise<{ page: Page; close: () => Promise<void> }> {
    const context = await chromium.newContext();
    const page = await context.newPage();
    await page.goto(url);
    await page.getByLabel('Username').fill(user);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: decision }).click();
    await page.waitForURL(/^http:\/\/127\.0\.0\.1:\d+\/callback\?/);
    return { page, close: () => context.close() };
  }

  it('browser login in Chromium: the waiting line, then "Signed in as alice" only once the sign-in is verified and stored', async () => {
    const home = tempConfigHome();
    const login = runCli(['login', '--browser', '--no-open'], envFor(home));
    const [, url] = await login.waitFor(AUTHORIZE_LINE);
    await login.waitFor(/^Waiting for the browser to finish signing in \(up to 5 min\)… Ctrl-C to cancel$/m);
    const { page, close } = await decideInChromium(url!, 'alice', 'Approve');
    try {
      await page.getByRole('heading', { name: 'Signed in as alice' }).waitFor();
      // The page was held until the code exchange, the ID token check and the write were done: the sign-in is there now.
      const status = await runCli(['status', '--json'], envFor(home)).exit;
      expect(JSON.parse(status.stdout)).toMatchObject({ signed_in: true, username: 'alice' });
      expect(await page.locator('body').innerText()).toContain(`authcli has verified and stored the sign-in to ${server.issuer}.`);
      // The server's look: the page's inline style applies (its CSP allows it by hash) with the server's colours, font and card.
      const serverPage = await page.context().newPage();
      await serverPage.goto(server.issuer);
      expect(await lookOf(page, 'main section')).toEqual(await lookOf(serverPage, 'main .card'));
      await page.screenshot({ path: screenshotPath('cli-browser-signed-in') });
    } finally {
      await close();
    }
    const done = await login.exit;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toBe(`Signed in to ${server.issuer} as alice.\n`);
  });

  it('browser login denied in Chromium: the page and the CLI both say that you denied it; nothing is stored', async () => {
    const home = tempConfigHome();
    const login = runCli(['login', '--browser', '--no-open'], envFor(home));
    const [, url] = await login.waitFor(AUTHORIZE_LINE);
    const { page, close } = await decideInChromium(url!, 'bob', 'Deny');
    try {
      await page.getByRole('heading', { name: 'Sign-in cancelled' }).waitFor();
      expect(await page.locator('body').innerText()).toContain('You denied the sign-in in the browser, so authcli did not sign in.');
      await page.screenshot({ path: screenshotPath('cli-browser-denied') });
    } finally {
      await close();
    }
    const done = await login.exit;
    expect(done.code).toBe(1);
    expect(done.stderr.trim().split('\n').at(-1)).toBe('authcli: you denied the sign-in in the browser');
    expect((await runCli(['status'], envFor(home)).exit).code).toBe(1);
  });

  it('a failure after the callback is on the page with its reason, and nothing is stored', async () => {
    const home = tempConfigHome();
    const login = runCli(['login', '--browser', '--no-open'], envFor(home));
    const [, url] = await login.waitFor(AUTHORIZE_LINE);
    const callback = new URL(await approveInBrowser(new Browser(server.issuer), url!, 'carol', PASSWORD));
    // State and iss are right, so the callback is accepted; the server will not redeem this code.
    callback.searchParams.set('code', 'not-a-code-the-server-issued');
    const page = await fetch(callback);
    expect(page.status).toBe(400);
    const html = await page.text();
    expect(html).toContain('<h1>Sign-in failed</h1>');
    expect(html).toMatch(/authcli could not complete the sign-in: the code exchange failed: invalid_grant/);
    const done = await login.exit;
    expect(done.code).toBe(1);
    expect(done.stderr).toMatch(/^authcli: the code exchange failed: invalid_grant/m);
    expect((await runCli(['status'], envFor(home)).exit).code).toBe(1);
  });

  it('rfc6749 §4.1.2.1 an unknown client id is caught before the browser opens, in well under a minute', async () => {
    const started = Date.now();
    const run = await runCli(['login', '--browser', '--no-open', '--client-id', 'no-such-client'], envFor(tempConfigHome())).exit;
    const elapsed = Date.now() - started;
    expect(run.code).toBe(1);
    expect(run.stderr).not.toMatch(/oauth\/authorize/);
    expect(run.stderr.trim()).toBe(
      // The server offers PAR (RFC 9126): the request is pushed first, and the push is what is refused.
      'authcli: the server refused the pushed authorization request (invalid_client: client authentication failed); the browser was not opened. Check the client id (no-such-client: --client-id, AUTHCLI_CLIENT_ID or config.json) and, for a confidential client, its secret.',
    );
    expect(elapsed).toBeLessThan(10_000);
  });

  it('a client without the loopback redirect URI registered: says which callback to register', async () => {
    const app = await addApp(server.env, {
      name: 'Web only',
      kind: 'public',
      callbackUrls: ['https://app.example/cb'],
      scopes: ['openid', 'profile'],
    });
    const run = await runCli(['login', '--browser', '--no-open', '--client-id', app.client_id], envFor(tempConfigHome())).exit;
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toMatch(
      /^authcli: the server refused the pushed authorization request \(invalid_request: The redirect_uri is not registered[^\n]*\); the browser was not opened\. Check that the server has http:\/\/127\.0\.0\.1\/callback \(any port\) registered as a redirect URI for client \S+\.$/,
    );
  });

  it('--timeout 2 gives up after 2 s with one clear line', async () => {
    const started = Date.now();
    const login = runCli(['login', '--browser', '--no-open', '--timeout', '2'], envFor(tempConfigHome()));
    await login.waitFor(/^Waiting for the browser to finish signing in \(up to 2 s\)… Ctrl-C to cancel$/m);
    // The upper bound counts from the wait's start: the process's own start (Node, discovery) is not the timeout's
    // and takes seconds on a loaded machine.
    const waiting = Date.now();
    const done = await login.exit;
    const elapsed = Date.now() - started;
    expect(done.code).toBe(1);
    expect(done.stderr.trim().split('\n').at(-1)).toBe(
      'authcli: no answer from the browser within 2 s. If the browser shows an error page, check the client id (authcli) and that the server has http://127.0.0.1/callback registered as a redirect URI for it; to wait longer, pass --timeout SECONDS.',
    );
    expect(elapsed).toBeGreaterThanOrEqual(2000);
    expect(Date.now() - waiting).toBeLessThan(6000);
    const bad = await runCli(['login', '--browser', '--no-open', '--timeout', 'soon'], envFor(tempConfigHome())).exit;
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim()).toBe('authcli: --timeout must be a whole number of seconds, got soon. See `authcli login --help`.');
  });

  it('device login on a terminal: the QR code drawn there scans to verification_uri_complete on dark and light themes', async () => {
    const login = runInTerminal(['login'], envFor(tempConfigHome()));
    const [, code] = await login.waitFor(/\x1b\[1m([BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4})\x1b\[22m/);
    await login.waitFor(/Waiting for approval/);
    const complete = `${server.issuer}/device?user_code=${code}`;
    expect(scanTerminal(login.screen(), DARK_SCHEME)).toBe(complete);
    expect(scanTerminal(login.screen(), LIGHT_SCHEME)).toBe(complete);
    login.type('\x03');
    expect(await login.exit).toBe(130);
  });

  /** The rows a terminal shows for `screen`, each as its pieces between carriage returns, colour escapes removed. */
  const rowsOf = (screen: string) =>
    screen.split('\r\n').map((row) => row.split('\r').map((piece) => [...piece.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '')].length));

  it('a 38-column terminal: no QR code (it would wrap) but the complete URL; prose wrapped at words; the countdown one line', async () => {
    const login = runInTerminal(['login'], envFor(tempConfigHome()), { columns: 38 });
    await login.waitFor(/Waiting/);
    // Two redraws of the countdown at least (it ticks each second), on one row: waited for, not slept.
    await login.waitFor(/Waiting… expires in \d+:\d\d[^\n]*\r[^\n]*Waiting… expires in \d+:\d\d/);
    const screen = login.screen();
    expect(screen).not.toMatch(/[▀▄█]/);
    expect(screen).toMatch(/http:\/\/127\.0\.0\.1:\d+\/device\?user_code=[A-Z]{4}-[A-Z]{4}/);
    const lines = screen.split('\r\n');
    rowsOf(screen).forEach((pieces, i) => {
      // A URL wider than the terminal has a row of its own (whole, for copying); everything else fits.
      if (/^\s*\S+$/.test(lines[i]!.split('\r').at(-1)!) && /https?:\/\//.test(lines[i]!)) return;
      for (const width of pieces) expect(width, JSON.stringify(lines[i])).toBeLessThanOrEqual(38);
    });
    const countdown = lines.find((l) => l.includes('Waiting'))!;
    // Redrawn in place: several pieces on one row, each shorter than the width.
    expect(countdown.split('\r').filter((p) => p.includes('Waiting')).length).toBeGreaterThanOrEqual(2);
    expect(countdown).toMatch(/Waiting… expires in \d+:\d\d/);
    login.type('\x03');
    expect(await login.exit).toBe(130);
  });

  it('a 100-column terminal still draws the QR code, and it scans', async () => {
    const login = runInTerminal(['login'], envFor(tempConfigHome()), { columns: 100 });
    const [, code] = await login.waitFor(/\x1b\[1m([BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4})\x1b\[22m/);
    await login.waitFor(/Waiting for approval… the code expires in/);
    expect(scanTerminal(login.screen(), DARK_SCHEME)).toBe(`${server.issuer}/device?user_code=${code}`);
    login.type('\x03');
    expect(await login.exit).toBe(130);
  });

  it('--no-qr on a terminal: the complete URI as text, no QR code', async () => {
    const login = runInTerminal(['login', '--no-qr'], envFor(tempConfigHome()));
    await login.waitFor(/Waiting for approval/);
    expect(login.screen()).toMatch(/Or open http:\/\/127\.0\.0\.1:\d+\/device\?user_code=\S+ \(the code is filled in\)\./);
    expect(login.screen()).not.toMatch(/[▀▄█]/);
    expect(scanTerminal(login.screen(), DARK_SCHEME)).toBeUndefined();
    login.type('\x03');
    expect(await login.exit).toBe(130);
  });
});

import { userinfoStatus } from './cli-dpop-key.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { decodeJwt, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser as Chromium } from 'playwright-core';
import { launchChromium, screenshotPath } from '@authcli/test-support/chromium';
import { runCli, tempConfigHome } from '@authcli/test-support/cli-process';
import { approveInBrowser, Browser } from '@authcli/test-support/http';
import { expireStoredToken } from '@authcli/test-support/credentials';
import { addApp, addUsers } from '@authcli/test-support/seed';
import { startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const PASSWORD = 'cli e2e password';

describe('authcli against a started authcli-server', () => {
  let server: ServerProcess;
  let chromium: Chromium;

  beforeAll(async () => {
    // Devices poll every second (the default is 5 s), so a device login ends soon after its approval.
    server = await startServerProcess({ env: { AUTHCLI_DEVICE_POLL_INTERVAL: '1' } });
    await addUsers(server.env, [{ username: 'alice', password: PASSWORD }]);
    chromium = await launchChromium();
  });
  afterAll(async () => {
    await chromium?.close();
    await server?.stop();
  });

  const envFor = (home: string) => ({ XDG_CONFIG_HOME: home, AUTHCLI_ISSUER: server.issuer });

  /** The person's side of the device flow, in Chromium at the verification URI the CLI printed. */
  async function actInChromium(url: string, code: string, decision: 'Approve' | 'Deny', shot?: string) {
    const context = await chromium.newContext();
    const page = await context.newPage();
    try {
      await page.goto(url);
      await page.getByLabel('Username').fill('alice');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByLabel('Code').fill(code);
      await page.getByRole('button', { name: 'Continue' }).click();
      if (decision === 'Approve') await page.getByLabel(`My device shows ${code}`).check();
      await page.getByRole('button', { name: decision }).click();
      await page.getByRole('heading').first().waitFor();
      if (shot) await page.screenshot({ path: screenshotPath(shot) });
    } finally {
      await context.close();
    }
  }

  it('device login approved in a real browser; status, token (with refresh after expiry) and logout', async () => {
    const home = tempConfigHome();
    const login = runCli(['login'], envFor(home));
    const [, url] = await login.waitFor(/open (\S+) on any device/);
    const [, code] = await login.waitFor(/^\s+([BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4})\s*$/m);
    expect(url).toBe(`${server.issuer}/device`);
    // Not a terminal: no QR code (it scans only in its own colours), the complete URL as text instead.
    await login.waitFor(/^Or open \S+\?user_code=\S+ \(the code is filled in\)\.$/m);
    await actInChromium(url!, code!, 'Approve', 'cli-device-approved');
    const done = await login.exit;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toBe(`Signed in to ${server.issuer} as alice.\n`);
    // Not a terminal: no colour codes, no countdown line rewriting.
    expect(done.stderr).not.toContain('\x1b[');

    // Credentials: per issuer, mode 0600, in the XDG folder.
    const file = join(home, 'authcli', 'credentials.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(file, 'utf8')).sessions[server.issuer];
    expect(stored.refresh_token).toBeTruthy();

    const status = await runCli(['status', '--json'], envFor(home)).exit;
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ signed_in: true, issuer: server.issuer, username: 'alice', refreshable: true });

    // Once the access token has expired (as the CLI sees it), `token` refreshes it through the refresh token.
    expireStoredToken(home, server.issuer);
    const token = await runCli(['token'], envFor(home)).exit;
    expect(token.code, token.stderr).toBe(0);
    const fresh = token.stdout.trim();
    expect(fresh).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(fresh).not.toBe(stored.access_token);
    // The server offers DPoP: the CLI's token is bound to its key and goes with a proof (RFC 9449 §7.1).
    expect(await userinfoStatus(server.issuer, fresh, home)).toBe(200);
    const rotated = JSON.parse(readFileSync(file, 'utf8')).sessions[server.issuer].refresh_token as string;
    expect(rotated).not.toBe(stored.refresh_token);
    // The refreshed ID token names no user (OIDC Core §5.4): the name found at sign-in is kept.
    const refreshedStatus = await runCli(['status', '--json'], envFor(home)).exit;
    expect(JSON.parse(refreshedStatus.stdout)).toMatchObject({ signed_in: true, username: 'alice' });

    const logout = await runCli(['logout'], envFor(home)).exit;
    expect(logout.code).toBe(0);
    expect(logout.stdout).toContain('Signed out');
    // The server rejects the refresh token the CLI revoked.
    const reuse = await fetch(`${server.issuer}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: rotated, client_id: 'authcli' }),
    });
    expect((await reuse.json()).error).toBe('invalid_grant');
    const after = await runCli(['status'], envFor(home)).exit;
    expect(after.code).toBe(1);
    expect(after.stdout).toContain('Not signed in');
    const noToken = await runCli(['token'], envFor(home)).exit;
    expect(noToken.code).toBe(1);
    expect(noToken.stdout).toBe('');
    expect(noToken.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('rfc9449 a copied credentials file is useless without the key: no refresh, the tokens refused from any other key', async () => {
    const home = tempConfigHome();
    const login = runCli(['login', '--dpop'], envFor(home));
    const [, url] = await login.waitFor(/open (\S+) on any device/);
    const [, code] = await login.waitFor(/^\s+([BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4})\s*$/m);
    await actInChromium(url!, code!, 'Approve');
    expect((await login.exit).code).toBe(0);
    const stolen = JSON.parse(readFileSync(join(home, 'authcli', 'credentials.json'), 'utf8')).sessions[server.issuer] as {
      access_token: string;
      refresh_token: string;
    };
    const jkt = (decodeJwt(stolen.access_token).cnf as { jkt: string }).jkt;
    expect(jkt).toMatch(/^[\w-]{43}$/);

    // The thief's machine: the credentials file copied, the key (in dpop-keys.json, never in credentials.json) not.
    const thief = tempConfigHome();
    mkdirSync(join(thief, 'authcli'), { recursive: true });
    copyFileSync(join(home, 'authcli', 'credentials.json'), join(thief, 'authcli', 'credentials.json'));
    expect(readFileSync(join(thief, 'authcli', 'credentials.json'), 'utf8')).not.toMatch(/"d"\s*:/);
    // The access token has expired, as the thief's CLI sees it: `token` would refresh it, and needs the key for that.
    expireStoredToken(thief, server.issuer);
    const refused = await runCli(['token'], envFor(thief)).exit;
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/bound to a DPoP key that is not on this machine/);

    // The tokens themselves, by hand: the access token (still valid at the server) as Bearer or with the thief's own
    // key, the refresh token with the thief's key, all refused by the server.
    const thiefKey = await generateKeyPair('ES256');
    const thiefJwk = await exportJWK(thiefKey.publicKey);
    const proof = async (htm: string, htu: string, extra: Record<string, string> = {}) =>
      new SignJWT({ htm, htu, iat: Math.floor(Date.now() / 1000), jti: crypto.randomUUID(), ...extra })
        .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: thiefJwk })
        .sign(thiefKey.privateKey);
    const userinfo = `${server.issuer}/oauth/userinfo`;
    const asBearer = await fetch(userinfo, { headers: { authorization: `Bearer ${stolen.access_token}` } });
    expect(asBearer.status).toBe(401);
    const ath = createHash('sha256').update(stolen.access_token).digest('base64url');
    const otherKey = await fetch(userinfo, {
      headers: { authorization: `DPoP ${stolen.access_token}`, dpop: await proof('GET', userinfo, { ath }) },
    });
    expect(otherKey.status).toBe(401);
    const tokenUrl = `${server.issuer}/oauth/token`;
    const refresh = async () =>
      fetch(tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', dpop: await proof('POST', tokenUrl) },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: stolen.refresh_token, client_id: 'authcli' }),
      });
    let answer = await refresh();
    // The server may first ask for its nonce (RFC 9449 §8); the refusal follows with it.
    const nonce = answer.headers.get('dpop-nonce');
    if (answer.status === 400 && ((await answer.clone().json()) as { error: string }).error === 'use_dpop_nonce' && nonce) {
      answer = await fetch(tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', dpop: await proof('POST', tokenUrl, { nonce }) },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: stolen.refresh_token, client_id: 'authcli' }),
      });
    }
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { error: string }).error).toBe('invalid_grant');

    // The owner, with the key, still refreshes and signs in.
    expireStoredToken(home, server.issuer);
    const owner = await runCli(['token'], envFor(home)).exit;
    expect(owner.code, owner.stderr).toBe(0);
    expect(owner.stdout.trim()).not.toBe(stolen.access_token);
    expect(await userinfoStatus(server.issuer, owner.stdout.trim(), home)).toBe(200);
  });

  it('device login denied in the browser: one clear line, exit 1, nothing stored', async () => {
    const home = tempConfigHome();
    const login = runCli(['login'], envFor(home));
    const [, url] = await login.waitFor(/open (\S+) on any device/);
    const [, code] = await login.waitFor(/^\s+([BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4})\s*$/m);
    await actInChromium(url!, code!, 'Deny');
    const done = await login.exit;
    expect(done.code).toBe(1);
    expect(done.stderr).toMatch(/authcli: the sign-in was denied/);
    expect((await runCli(['status'], envFor(home)).exit).code).toBe(1);
  });

  it('browser login: the test plays the browser, the CLI takes the loopback callback and signs in', async () => {
    const home = tempConfigHome();
    const login = runCli(['login', '--browser', '--no-open', '--json'], envFor(home));
    const [, url] = await login.waitFor(/^\s+(http:\/\/\S+\/oauth\/authorize\?\S+)$/m);
    // The server advertises PAR (RFC 9126): the request (redirect URI, PKCE challenge, state) was pushed, and the
    // browser gets only its reference.
    const authorize = new URL(url!);
    expect([...authorize.searchParams.keys()].sort()).toEqual(['client_id', 'request_uri']);
    expect(authorize.searchParams.get('request_uri')).toMatch(/^urn:ietf:params:oauth:request_uri:/);
    const callback = await approveInBrowser(new Browser(server.issuer), url!, 'alice', PASSWORD);
    expect(callback).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback\?/);
    expect(new URL(callback).searchParams.get('iss')).toBe(server.issuer);
    // A stray request first: ignored, the CLI keeps waiting for the callback.
    expect((await fetch(new URL('/favicon.ico', callback))).status).toBe(404);
    const page = await fetch(callback);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Signed in');
    const done = await login.exit;
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({ issuer: server.issuer, username: 'alice' });
    const token = await runCli(['token'], envFor(home)).exit;
    expect(token.stdout.trim()).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    // The listener is closed after the one callback.
    await expect(fetch(callback)).rejects.toThrow();
  });

  it('browser login: a callback with the wrong state is rejected (error page, exit 1, nothing stored)', async () => {
    const home = tempConfigHome();
    const login = runCli(['login', '--browser', '--no-open'], envFor(home));
    const [, url] = await login.waitFor(/^\s+(http:\/\/\S+\/oauth\/authorize\?\S+)$/m);
    // The loopback redirect URI is in the pushed request, so the browser learns it at the callback.
    const callback = new URL(await approveInBrowser(new Browser(server.issuer), url!, 'alice', PASSWORD));
    const forged = await fetch(
      `${callback.origin}${callback.pathname}?code=attacker-code&state=not-ours&iss=${encodeURIComponent(server.issuer)}`,
    );
    expect(forged.status).toBe(400);
    expect(await forged.text()).toContain('Sign-in failed');
    const done = await login.exit;
    expect(done.code).toBe(1);
    expect(done.stderr).toMatch(/state does not match/);
    expect((await runCli(['status'], envFor(home)).exit).code).toBe(1);
  });

  it('rfc9207 browser login: a callback whose iss is not the issuer is rejected (mix-up)', async () => {
    const home = tempConfigHome();
    const login = runCli(['login', '--browser', '--no-open'], envFor(home));
    const [, url] = await login.waitFor(/^\s+(http:\/\/\S+\/oauth\/authorize\?\S+)$/m);
    const callback = new URL(await approveInBrowser(new Browser(server.issuer), url!, 'alice', PASSWORD));
    callback.searchParams.set('iss', 'https://evil.example');
    const page = await fetch(callback);
    expect(page.status).toBe(400);
    const done = await login.exit;
    expect(done.code).toBe(1);
    expect(done.stderr).toMatch(/RFC 9207/);
    expect((await runCli(['status'], envFor(home)).exit).code).toBe(1);
  });

  it('rfc6749 §2.3.1 a confidential client signs in with HTTP Basic; a wrong secret is refused', async () => {
    const app = (await addApp(server.env, {
      name: 'Build bot',
      kind: 'confidential',
      scopes: ['openid', 'profile'],
      grantTypes: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
    })) as { client_id: string; client_secret: string };
    const home = tempConfigHome();
    const wrong = await runCli(['login', '--client-id', app.client_id, '--client-secret', 'wrong'], envFor(home)).exit;
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/refused this client/);
    const login = runCli(['login', '--scope', 'openid profile'], {
      ...envFor(home),
      AUTHCLI_CLIENT_ID: app.client_id,
      AUTHCLI_CLIENT_SECRET: app.client_secret,
    });
    const [, url] = await login.waitFor(/open (\S+) on any device/);
    const [, code] = await login.waitFor(/^\s+([BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4})\s*$/m);
    await actInChromium(url!, code!, 'Approve');
    const done = await login.exit;
    expect(done.code, done.stderr).toBe(0);
    const status = JSON.parse((await runCli(['status', '--json'], envFor(home)).exit).stdout);
    expect(status).toMatchObject({ signed_in: true, client_id: app.client_id });
  });

  it('HTTP_PROXY is honoured, and NO_PROXY bypasses it', async () => {
    const seen: string[] = [];
    // undici tunnels through the proxy with CONNECT; this one records the target and refuses.
    const proxy = createServer((req, res) => {
      seen.push(req.url ?? '');
      res.writeHead(502).end();
    });
    proxy.on('connect', (req, socket) => {
      seen.push(req.url ?? '');
      socket.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      const home = tempConfigHome();
      const viaProxy = await runCli(['login', '--browser', '--no-open'], { ...envFor(home), HTTP_PROXY: proxyUrl, http_proxy: proxyUrl })
        .exit;
      expect(viaProxy.code).toBe(1);
      expect(viaProxy.stderr).toMatch(/^authcli: /);
      expect(seen).toContain(new URL(server.issuer).host);
      seen.length = 0;
      const bypass = runCli(['login', '--browser', '--no-open'], { ...envFor(home), HTTP_PROXY: proxyUrl, NO_PROXY: '127.0.0.1' });
      await bypass.waitFor(/oauth\/authorize/);
      bypass.child.kill('SIGINT');
      const stopped = await bypass.exit;
      expect(stopped.code).toBe(130);
      expect(stopped.stderr).toMatch(/cancelled/);
      expect(seen).toEqual([]);
    } finally {
      proxy.close();
    }
  });

  it('an unreachable issuer or an unknown client is one clear line and exit 1', async () => {
    const home = tempConfigHome();
    const down = await runCli(['login', '--issuer', 'http://127.0.0.1:9'], { XDG_CONFIG_HOME: home }).exit;
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^authcli: cannot reach http:\/\/127\.0\.0\.1:9/);
    expect(down.stderr.trim().split('\n')).toHaveLength(1);
    const unknown = await runCli(['login', '--client-id', 'nope'], envFor(home)).exit;
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/refused this client/);
    const http = await runCli(['login', '--issuer', 'http://example.com'], { XDG_CONFIG_HOME: home }).exit;
    expect(http.code).toBe(1);
    expect(http.stderr).toMatch(/https/);
  });
});

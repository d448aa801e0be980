// @authcli/client, as another tool embeds it (its built package, not its sources), against authcli-server and
// against another standard OpenID Connect server (node-oidc-provider): both flows, refresh, revocation, status.
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthcliError, authorization, type DeviceCode, getToken, signIn, signOut, status } from '@authcli/client';
import type { Browser as Chromium } from 'playwright-core';
import { launchChromium } from '@authcli/test-support/chromium';
import { approveInBrowser, Browser, hidden, signInFields } from '@authcli/test-support/http';
import { approveAtOtherProvider, approveDeviceAtOtherProvider, startOtherProvider } from '@authcli/test-support/other-op';
import { addApp, addUsers } from '@authcli/test-support/seed';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';
import { decodeJwt } from 'jose';

const PASSWORD = 'library e2e pass';
const execFileAsync = promisify(execFile);

/** Approves a device code at authcli-server as a person would, over HTTP: sign in, enter the code, confirm, approve. */
async function approveDevice(issuer: string, code: DeviceCode, username: string): Promise<void> {
  const browser = new Browser(issuer);
  const signin = await browser.get('/signin');
  await browser.postForm('/signin', signInFields(signin.text, username, PASSWORD));
  const entry = await browser.get('/device');
  const confirm = await browser.postForm('/device', { _csrf: hidden(entry.text, '_csrf'), user_code: code.userCode });
  const decided = await browser.postForm('/device/decision', {
    _csrf: hidden(confirm.text, '_csrf'),
    user_code: hidden(confirm.text, 'user_code'),
    code_confirmed: hidden(confirm.text, 'code_confirmed'),
    decision: 'approve',
  });
  expect(decided.status).toBe(200);
}

/** Signs in by the device flow, the person approving at authcli-server as `username`; the approval's failure is the test's. */
async function signInApproved(options: Omit<Parameters<typeof signIn>[0], 'flow'>, issuer: string, username: string) {
  let approved: Promise<void> | undefined;
  const who = await signIn({
    ...options,
    flow: 'device',
    onDeviceCode: (code) => {
      approved = approveDevice(issuer, code, username);
    },
  });
  await approved;
  return who;
}

/**
 * A renewal without waiting: asked for a token valid for ten years, getToken refreshes (the kept one does not last
 * that long), keeps the new one, and says the server's tokens are shorter (protocol); the next getToken returns it.
 */
async function renew(target: Parameters<typeof getToken>[0]): Promise<string> {
  await expect(getToken({ ...target, minValidity: 10 * 365 * 86400 })).rejects.toMatchObject({ code: 'protocol' });
  return getToken(target);
}

/** Polls until the running server knows an API (its copy of them lasts RESOURCE_CACHE_MS): no invalid_target. */
async function untilKnown(issuer: string, clientId: string, resource: string, scope: string): Promise<void> {
  const query = new URLSearchParams({
    client_id: clientId,
    redirect_uri: 'http://127.0.0.1/callback',
    response_type: 'code',
    scope,
    state: 's',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
    resource,
  });
  const deadline = Date.now() + 5000;
  for (;;) {
    const location = (await fetch(`${issuer}/oauth/authorize?${query}`, { redirect: 'manual' })).headers.get('location') ?? '';
    if (!location.includes('invalid_target')) return;
    if (Date.now() > deadline) throw new Error(`${resource} is still unknown to the server: ${location}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Whether the server takes the access token (userinfo: 200) or no longer does (401). */
async function userinfo(issuer: string, token: string): Promise<number> {
  return (await fetch(`${issuer}/oauth/userinfo`, { headers: { authorization: `Bearer ${token}` } })).status;
}

const DEPLOY_API = 'https://deploy.example.test/api';
const BILLING_API = 'https://billing.example.test';

describe('@authcli/client against authcli-server', () => {
  let server: ServerProcess;
  let teamTool: string;

  beforeAll(async () => {
    server = await startServerProcess({ env: { AUTHCLI_DEVICE_POLL_INTERVAL: '1' } });
    await addUsers(server.env, [
      { username: 'lena', password: PASSWORD },
      { username: 'lars', password: PASSWORD },
    ]);
    for (const [id, name, scope] of [
      [DEPLOY_API, 'Deploy API', 'deploy:write=Deploy to production'],
      [BILLING_API, 'Billing', 'invoices:read=Read invoices'],
    ] as const) {
      const added = await serverCommand(['resources', 'add', '--id', id, '--name', name, '--scope', scope], server.env);
      expect(added.code, added.stderr).toBe(0);
    }
    ({ client_id: teamTool } = await addApp(server.env, {
      name: 'Team tool',
      callbackUrls: ['http://127.0.0.1/callback'],
      scopes: ['openid', 'offline_access', 'deploy:write', 'invoices:read'],
      grantTypes: ['authorization_code', 'refresh_token'],
    }));
    // The running server answers from its copy of the APIs for up to a second (RESOURCE_CACHE_MS).
    await untilKnown(server.issuer, teamTool, DEPLOY_API, 'deploy:write');
    await untilKnown(server.issuer, teamTool, BILLING_API, 'invoices:read');
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('device flow: signIn hands the code to the tool, getToken returns and renews the token, signOut revokes it', async () => {
    // In memory: nothing is written, not even in the folder the sign-ins' files would go to.
    const directory = mkdtempSync(join(tmpdir(), 'authcli-memory-'));
    const target = { issuer: server.issuer, clientId: 'authcli', storage: 'memory' as const, directory, profile: 'device' };
    const shown: DeviceCode[] = [];
    let approved: Promise<void> | undefined;
    const who = await signIn({
      ...target,
      flow: 'device',
      onDeviceCode: (code) => {
        shown.push(code);
        approved = approveDevice(server.issuer, code, 'lena');
      },
    });
    await approved;
    expect(shown).toHaveLength(1);
    expect(shown[0]!.verificationUri).toBe(`${server.issuer}/device`);
    expect(shown[0]!.verificationUriComplete).toContain('/device?');
    expect(who).toMatchObject({ issuer: server.issuer, username: 'lena', tokenType: 'Bearer' });
    expect(who.expiresAt.getTime()).toBeGreaterThan(Date.now());

    const first = await getToken(target);
    expect(await userinfo(server.issuer, first)).toBe(200);
    // The same token while it lasts; a new one (a refresh) when asked to last longer than it will.
    expect(await getToken(target)).toBe(first);
    const renewed = await renew(target);
    expect(renewed).not.toBe(first);
    expect(await userinfo(server.issuer, renewed)).toBe(200);

    const seen = await status(target);
    expect(seen).toMatchObject({ signedIn: true, username: 'lena', storedIn: 'memory (this process)', renewable: true });

    expect(await signOut(target)).toBe(true);
    // Revoked at the server (the refresh token, and with it the access tokens), and forgotten here.
    expect(await userinfo(server.issuer, renewed)).toBe(401);
    expect((await status(target)).signedIn).toBe(false);
    await expect(getToken(target)).rejects.toMatchObject({
      name: 'AuthcliError',
      code: 'signed_out',
      message: expect.stringMatching(/; sign in again$/),
    });
    // In the embedding tool's words: its own way to sign in again, never authcli's command.
    const inWords = getToken({ ...target, signInAgain: 'run `deploy login`' });
    await expect(inWords).rejects.toMatchObject({ code: 'signed_out', message: expect.stringMatching(/; run `deploy login`$/) });
    expect(await signOut(target)).toBe(false);
    expect(readdirSync(directory)).toEqual([]);
    rmSync(directory, { recursive: true, force: true });
  });

  it('browser flow: the tool opens the URL (here a scripted person), the loopback callback completes the sign-in', async () => {
    const target = { issuer: server.issuer, clientId: 'authcli', storage: 'memory' as const, profile: 'browser', appName: 'deploy-tool' };
    const notices: string[] = [];
    let lastPage: Promise<string> | undefined;
    const who = await signIn({
      ...target,
      flow: 'browser',
      scope: 'openid profile',
      notices: (line) => notices.push(line),
      openBrowser: async (url) => {
        const person = new Browser(server.issuer);
        // The person's browser follows the redirect to the tool's loopback listener, which answers the page.
        const callback = await approveInBrowser(person, url, 'lars', PASSWORD);
        expect(new URL(callback).hostname).toBe('127.0.0.1');
        lastPage = fetch(callback).then((res) => res.text());
        return true;
      },
    });
    expect(who).toMatchObject({ username: 'lars', scope: 'openid profile' });
    expect(notices.join('\n')).toContain('/oauth/authorize?');
    expect(notices.join('\n')).not.toContain('authcli login');
    // The browser's last page names the tool, not authcli.
    expect(await lastPage).toContain('deploy-tool has verified and stored the sign-in');
    expect(await userinfo(server.issuer, await getToken(target))).toBe(200);
    expect(await status(target)).toMatchObject({ signedIn: true, username: 'lars', scope: 'openid profile' });
    expect(await authorization({ ...target, url: `${server.issuer}/oauth/userinfo` })).toEqual({
      authorization: `Bearer ${await getToken(target)}`,
    });
    await signOut(target);
  });

  it('file storage in its own folder: five processes ask for a token at once, and the sign-in is refreshed once', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'authcli-library-'));
    try {
      const target = { issuer: server.issuer, clientId: 'authcli', storage: 'file' as const, directory, profile: 'processes' };
      await signInApproved(target, server.issuer, 'lena');
      expect(statSync(join(directory, 'credentials.json')).mode & 0o777).toBe(0o600);
      expect((await status(target)).storedIn).toBe(join(directory, 'credentials.json'));
      const first = await getToken(target);
      // The kept access token expires (its expiry moved into the past, in the file as the library writes it): each
      // process needs a new one; one refreshes under the lock, the others wait for it and take what it stored. A
      // refresh token sent twice would end the sign-in (RFC 9700 §4.14.2).
      const file = join(directory, 'credentials.json');
      const kept = JSON.parse(readFileSync(file, 'utf8')) as { sessions: Record<string, { expires_at: number }> };
      kept.sessions[`${server.issuer}#processes`]!.expires_at = Date.now() - 1000;
      writeFileSync(`${file}.tmp`, JSON.stringify(kept), { mode: 0o600 });
      renameSync(`${file}.tmp`, file);
      const asked = JSON.stringify(target);
      const script = "import('@authcli/client').then((c) => c.getToken(JSON.parse(process.argv[1]))).then((t) => process.stdout.write(t))";
      const tokens = await Promise.all(
        Array.from({ length: 5 }, () =>
          execFileAsync(process.execPath, ['-e', script, asked], { cwd: import.meta.dirname }).then((r) => r.stdout),
        ),
      );
      expect(new Set(tokens).size).toBe(1);
      expect(tokens[0]).not.toBe(first);
      expect(await userinfo(server.issuer, tokens[0]!)).toBe(200);
      // The sign-in goes on: the next renewal works too.
      const next = await renew(target);
      expect(next).not.toBe(tokens[0]);
      expect(await signOut(target)).toBe(true);
      expect((await status(target)).signedIn).toBe(false);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it("resource (RFC 8707): the sign-in's tokens are for one API, and getToken gets another API's from the same sign-in", async () => {
    const target = { issuer: server.issuer, clientId: teamTool, storage: 'memory' as const, profile: 'apis' };
    const who = await signIn({
      ...target,
      flow: 'browser',
      scope: 'openid offline_access deploy:write invoices:read',
      resource: DEPLOY_API,
      openBrowser: async (url) => {
        void fetch(await approveInBrowser(new Browser(server.issuer), url, 'lena', PASSWORD));
        return true;
      },
    });
    expect(who.scope).toBe('deploy:write');
    const deploy = await getToken(target);
    expect(decodeJwt(deploy)).toMatchObject({ aud: DEPLOY_API, scope: 'deploy:write', sub: who.subject });
    const billing = await getToken({ ...target, resource: BILLING_API });
    expect(decodeJwt(billing)).toMatchObject({ aud: BILLING_API, scope: 'invoices:read', sub: who.subject });
    // Each is kept: asked again, the same tokens, and the first API's was not replaced.
    expect(await getToken({ ...target, resource: BILLING_API })).toBe(billing);
    expect(await getToken(target)).toBe(deploy);
    await signOut(target);
  });

  it('dpop: the tokens are bound to a key of this process, and authorization() gives the DPoP headers a request needs', async () => {
    const target = { issuer: server.issuer, clientId: 'authcli', storage: 'memory' as const, profile: 'bound' };
    const who = await signInApproved({ ...target, dpop: true }, server.issuer, 'lars');
    expect(who.tokenType).toBe('DPoP');
    const url = `${server.issuer}/oauth/userinfo`;
    const headers = await authorization({ ...target, url });
    expect(headers.authorization).toMatch(/^DPoP /);
    expect(decodeJwt(headers.dpop!)).toMatchObject({ htm: 'GET', htu: url });
    expect((await fetch(url, { headers })).status).toBe(200);
    // The same token sent as Bearer is refused: a bound token is only good with a proof of the key.
    expect((await fetch(url, { headers: { authorization: `Bearer ${await getToken(target)}` } })).status).toBe(401);
    // A proof is for one method and URL.
    const post = await authorization({ ...target, url, method: 'post' });
    expect(decodeJwt(post.dpop!)).toMatchObject({ htm: 'POST' });
    await expect(authorization({ ...target, url: '/relative' })).rejects.toMatchObject({ code: 'usage' });
    expect(await signOut(target)).toBe(true);
  });

  it("two applications on one server: each tool has its own sign-in, and never takes, refreshes or ends another's", async () => {
    const authcli = { issuer: server.issuer, clientId: 'authcli', storage: 'memory' as const, profile: 'shared' };
    await signInApproved(authcli, server.issuer, 'lena');
    const mine = await getToken(authcli);
    // Another application naming the same profile finds a sign-in that is not its own: refused, never used.
    const other = { ...authcli, clientId: teamTool };
    await expect(getToken(other)).rejects.toMatchObject({ code: 'usage', message: expect.stringContaining('another application') });
    expect((await status(other)).signedIn).toBe(false);
    expect(await signOut(other)).toBe(false);
    await expect(signIn({ ...other, flow: 'device', onDeviceCode: () => undefined })).rejects.toMatchObject({ code: 'usage' });
    expect(await getToken(authcli)).toBe(mine);
    expect(await userinfo(server.issuer, mine)).toBe(200);
    // Without a profile, each client has its own: authcli's default, and one named after the other client.
    expect((await status({ issuer: server.issuer, clientId: 'authcli', storage: 'memory' })).profile).toBe('default');
    expect((await status({ issuer: server.issuer, clientId: teamTool, storage: 'memory' })).profile).not.toBe('default');
    await signOut(authcli);
  });

  it('a cancelled sign-in and bad options are AuthcliErrors with a code, and store nothing', async () => {
    const target = { issuer: server.issuer, clientId: 'authcli', storage: 'memory' as const, profile: 'cancelled' };
    const abort = new AbortController();
    const cancelled = signIn({ ...target, flow: 'device', signal: abort.signal, onDeviceCode: () => abort.abort() });
    await expect(cancelled).rejects.toMatchObject({ code: 'cancelled' });
    expect((await status(target)).signedIn).toBe(false);

    await expect(signIn({ ...target, flow: 'device' })).rejects.toMatchObject({ code: 'usage' });
    await expect(getToken({ ...target, issuer: 'not a url' })).rejects.toBeInstanceOf(AuthcliError);
    await expect(getToken({ ...target, profile: 'a b' })).rejects.toMatchObject({ code: 'usage' });
    await expect(getToken({ ...target, resource: 'api#x' })).rejects.toMatchObject({ code: 'usage' });
    // Nothing listens there: a network error, said as such.
    await expect(signIn({ ...target, issuer: 'http://127.0.0.1:9', flow: 'device', onDeviceCode: () => undefined })).rejects.toMatchObject({
      code: 'network',
    });
  });
});

describe('@authcli/client against another OpenID Connect server (node-oidc-provider)', () => {
  let op: { issuer: string; close: () => Promise<void> };
  let chromium: Chromium;

  beforeAll(async () => {
    op = await startOtherProvider({ deviceInterval: 1 });
    chromium = await launchChromium();
  });
  afterAll(async () => {
    await chromium?.close();
    await op?.close();
  });

  it('device flow, refresh and revocation', async () => {
    const target = { issuer: op.issuer, clientId: 'authcli', storage: 'memory' as const, profile: 'other-device' };
    const page = await chromium.newPage();
    let done = false;
    let approving: Promise<void> | undefined;
    try {
      const who = await signIn({
        ...target,
        flow: 'device',
        onDeviceCode: (code) => {
          approving = approveDeviceAtOtherProvider(page, code.verificationUri, code.userCode, 'olga', () => done).catch(() => undefined);
        },
      });
      expect(who.subject).toBe('olga');
    } finally {
      done = true;
      await approving;
      await page.close();
    }
    const first = await getToken(target);
    const renewed = await renew(target);
    expect(renewed).not.toBe(first);
    const { userinfo_endpoint } = (await (await fetch(`${op.issuer}/.well-known/openid-configuration`)).json()) as {
      userinfo_endpoint: string;
    };
    const asked = () => fetch(userinfo_endpoint, { headers: { authorization: `Bearer ${renewed}` } }).then((r) => r.status);
    expect(await asked()).toBe(200);
    const notices: string[] = [];
    expect(await signOut({ ...target, notices: (line) => notices.push(line) })).toBe(true);
    expect(notices).toEqual([]);
    // Revoking the refresh token (RFC 7009 §2.1) ended the grant and its access tokens at the other server too.
    expect(await asked()).toBe(401);
    expect((await status(target)).signedIn).toBe(false);
  });

  it('browser flow in a real Chromium', async () => {
    const target = { issuer: op.issuer, clientId: 'authcli', storage: 'memory' as const, profile: 'other-browser' };
    const page = await chromium.newPage();
    let done = false;
    let approving: Promise<void> | undefined;
    try {
      const who = await signIn({
        ...target,
        flow: 'browser',
        scope: 'openid profile offline_access',
        openBrowser: async (url) => {
          await page.goto(url);
          approving = approveAtOtherProvider(page, 'oskar', () => done).catch(() => undefined);
          return true;
        },
      });
      expect(who.subject).toBe('oskar');
    } finally {
      done = true;
      await approving;
      await page.close();
    }
    expect(await getToken(target)).toMatch(/\S+/);
    expect(await signOut(target)).toBe(true);
  });
});

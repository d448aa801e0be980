import { userinfoStatus } from './cli-dpop-key.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { runCli, tempConfigHome, type CliRun } from '@authcli/test-support/cli-process';
import { freshDatabase, type TestDatabase } from '@authcli/test-support/databases';
import { approveInBrowser, Browser } from '@authcli/test-support/http';
import { expireStoredToken } from '@authcli/test-support/credentials';
import { addApp, addUsers } from '@authcli/test-support/seed';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';
import { tunnelProxy } from '@authcli/test-support/tunnel-proxy';

const PASSWORD = 'cli session e2e password';
/**
 * Access tokens live this long at the server: longer than any test, so the only expiry the CLI sees is the one a
 * test writes into its credentials file (expireStoredToken), and a token a parallel process just stored is never
 * taken for one about to expire.
 */
const TTL_S = 300;

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

describe('authcli sessions: the refresh lock, token formats, lifecycle and status', () => {
  let server: ServerProcess;
  let db: TestDatabase;

  beforeAll(async () => {
    db = await freshDatabase('sqlite');
    server = await startServerProcess({ database: db.url, env: { AUTHCLI_ACCESS_TOKEN_TTL: String(TTL_S) } });
    await addUsers(
      server.env,
      ['alice', 'bob', 'carol', 'erin', 'frank', 'grace', 'heidi', 'ivan'].map((username) => ({ username, password: PASSWORD })),
    );
  });
  afterAll(async () => {
    await server?.stop();
    await db?.cleanup();
  });

  const envFor = (home: string, extra: Record<string, string> = {}) => ({ XDG_CONFIG_HOME: home, AUTHCLI_ISSUER: server.issuer, ...extra });
  /** The CLI in `home` takes its access token for expired from now on (the server still accepts it). */
  const expireAccessToken = (home: string) => expireStoredToken(home, server.issuer);

  /** Starts `authcli login --browser` and plays the user's browser up to the redirect back; the callback is the caller's to deliver. */
  async function startLogin(
    home: string,
    user: string,
    args: string[] = [],
    env: Record<string, string> = {},
  ): Promise<{ run: CliRun; callback: string }> {
    const run = runCli(['login', '--browser', '--no-open', '--json', ...args], envFor(home, env));
    const [, url] = await run.waitFor(/^\s+(http:\/\/\S+\/oauth\/authorize\?\S+)$/m);
    return { run, callback: await approveInBrowser(new Browser(server.issuer), url!, user, PASSWORD) };
  }

  async function signIn(home: string, user: string, args: string[] = [], env: Record<string, string> = {}) {
    const { run, callback } = await startLogin(home, user, args, env);
    await fetch(callback);
    const done = await run.exit;
    expect(done.code, done.stderr).toBe(0);
    return done;
  }

  /** The user's sign-ins (grants) at the server, oldest first, with their refresh tokens. */
  async function grantsOf(user: string) {
    const grants = await db.query(
      `select g.id, g.revoked_at from grants g join users u on u.id = g.user_id where u.username = '${user}' order by g.created_at`,
    );
    return Promise.all(
      grants.map(async (g) => ({
        revoked: g.revoked_at !== null,
        refreshTokens: await db.query(`select used_at from refresh_tokens where grant_id = '${String(g.id)}' order by created_at`),
      })),
    );
  }

  /** Userinfo's status for a token the CLI in `home` printed (DPoP-bound when the server offers DPoP, as ours does). */
  function userinfo(token: string, home: string): Promise<number> {
    return userinfoStatus(server.issuer, token, home);
  }

  async function refreshAtServer(refreshToken: string): Promise<{ status: number; error?: string }> {
    const res = await fetch(`${server.issuer}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: 'authcli' }),
    });
    return { status: res.status, ...((await res.json()) as { error?: string }) };
  }

  it('8 parallel authcli token refresh once: one refresh reaches the server, all 8 print a token that works, the sign-in lives on', async () => {
    const home = tempConfigHome();
    await signIn(home, 'alice');
    expireAccessToken(home); // the access token has expired, as far as the CLI knows
    const runs = await Promise.all(Array.from({ length: 8 }, () => runCli(['token'], envFor(home)).exit));
    for (const r of runs) expect(r.code, r.stderr).toBe(0);
    const printed = new Set(runs.map((r) => r.stdout.trim()));
    // One refresh: the 7 that waited print the token the first one stored.
    expect(printed.size).toBe(1);
    const [token] = printed;
    expect(await userinfo(token!, home)).toBe(200);
    const [grant] = await grantsOf('alice');
    expect(grant!.revoked).toBe(false);
    expect(grant!.refreshTokens).toHaveLength(2);
    expect(grant!.refreshTokens[1]!.used_at).toBeNull();

    // The stored refresh token is the live one: the next refresh works and the sign-in is not revoked.
    expireAccessToken(home);
    const again = await runCli(['token'], envFor(home)).exit;
    expect(again.code, again.stderr).toBe(0);
    expect(await userinfo(again.stdout.trim(), home)).toBe(200);
    const [after] = await grantsOf('alice');
    expect(after!.revoked).toBe(false);
    expect(after!.refreshTokens).toHaveLength(3);
  });

  it('a process killed (SIGKILL) while holding the lock does not block the next ones beyond the stale rule', async () => {
    const home = tempConfigHome();
    await signIn(home, 'bob');
    expireAccessToken(home);
    // The holder's refresh request is held in the proxy: it holds the lock, its request never arrives.
    const proxy = await tunnelProxy({ hold: /^POST \/oauth\/token /m });
    try {
      const holder = runCli(['token'], envFor(home, { HTTP_PROXY: proxy.url, http_proxy: proxy.url }));
      await proxy.held;
      const waiters = Array.from({ length: 3 }, () => runCli(['token'], envFor(home)));
      const interrupted = runCli(['token'], envFor(home));
      await Promise.all(
        [...waiters, interrupted].map((w) => w.waitFor(new RegExp(`Waiting for another authcli process \\(pid ${holder.child.pid}\\)`))),
      );
      for (const w of waiters) expect(w.child.exitCode).toBeNull();
      // Ctrl-C ends a wait for the lock.
      interrupted.child.kill('SIGINT');
      const cancelled = await interrupted.exit;
      expect(cancelled.code).toBe(130);
      expect(cancelled.stdout).toBe('');
      expect(cancelled.stderr).toMatch(/authcli: cancelled while waiting for another authcli process/);
      const killedAt = Date.now();
      holder.child.kill('SIGKILL');
      expect((await holder.exit).stdout).toBe('');
      const done = await Promise.all(waiters.map((w) => w.exit));
      // The holder's pid is gone: no wait for the 10 s heartbeat rule.
      expect(Date.now() - killedAt).toBeLessThan(8000);
      for (const d of done) expect(d.code, d.stderr).toBe(0);
      expect(new Set(done.map((d) => d.stdout)).size).toBe(1);
      expect(await userinfo(done[0]!.stdout.trim(), home)).toBe(200);
      const [grant] = await grantsOf('bob');
      expect(grant!.revoked).toBe(false);
      expect(grant!.refreshTokens).toHaveLength(2);
    } finally {
      await proxy.close();
    }
  });

  it('rfc7009 3 parallel re-logins leave only the last refresh token alive; the others get invalid_grant', async () => {
    const home = tempConfigHome();
    // Every request of the CLI goes through the proxy, which reads the refresh tokens the server hands out.
    const proxy = await tunnelProxy();
    try {
      const env = { HTTP_PROXY: proxy.url, http_proxy: proxy.url };
      await signIn(home, 'carol', [], env);
      // Three logins wait at once; the user approves them one after the other (the server hashes at most
      // two passwords at a time per address); the three callbacks then arrive together.
      const logins = [];
      for (let i = 0; i < 3; i++) logins.push(await startLogin(home, 'carol', [], env));
      await Promise.all(logins.map((l) => fetch(l.callback)));
      for (const d of await Promise.all(logins.map((l) => l.run.exit))) {
        expect(d.code, d.stderr).toBe(0);
        expect(d.stderr).not.toMatch(/revoke/i);
      }
      const issued = [...proxy.answers().matchAll(/"refresh_token":"([^"]+)"/g)].map((m) => m[1]!);
      expect(issued).toHaveLength(4);
      const grants = await grantsOf('carol');
      expect(grants).toHaveLength(4);
      expect(grants.filter((g) => !g.revoked)).toHaveLength(1);
      const live = new Set(
        (await db.query(`select r.token_hash from refresh_tokens r join grants g on g.id = r.grant_id where g.revoked_at is null`)).map(
          (r) => r.token_hash,
        ),
      );
      const [alive, replaced] = [issued.filter((rt) => live.has(sha256(rt))), issued.filter((rt) => !live.has(sha256(rt)))];
      expect(alive).toHaveLength(1);
      for (const rt of replaced) expect(await refreshAtServer(rt)).toMatchObject({ status: 400, error: 'invalid_grant' });
      // The stored refresh token is the live one: authcli token renews with it.
      expireAccessToken(home);
      const token = await runCli(['token'], envFor(home)).exit;
      expect(token.code, token.stderr).toBe(0);
      expect(await userinfo(token.stdout.trim(), home)).toBe(200);
      expect((await grantsOf('carol')).filter((g) => !g.revoked).map((g) => g.refreshTokens.length)).toEqual([2]);
    } finally {
      await proxy.close();
    }
  });

  it('a failed revocation of the replaced sign-in is one line on stderr, not a failed login', async () => {
    const home = tempConfigHome();
    await signIn(home, 'erin');
    const proxy = await tunnelProxy({ cut: /^POST \/oauth\/revoke /m });
    try {
      const done = await signIn(home, 'erin', [], { HTTP_PROXY: proxy.url, http_proxy: proxy.url });
      expect(JSON.parse(done.stdout)).toMatchObject({ issuer: server.issuer, username: 'erin' });
      const lines = done.stderr
        .trim()
        .split('\n')
        .filter((l) => /revoke/i.test(l));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        /^Could not revoke the previous sign-in to \S+ \(.+\); its refresh token stays valid at the server until it expires\.$/,
      );
      expect((await grantsOf('erin')).map((g) => g.revoked)).toEqual([false, false]);
    } finally {
      await proxy.close();
    }
    // Without the cut the next re-login revokes the one it replaces (and not the older one it never saw).
    await signIn(home, 'erin');
    expect((await grantsOf('erin')).map((g) => g.revoked)).toEqual([false, true, false]);
  });

  it('logout with the server down exits non-zero and keeps the session; --local forgets it and says the token stays valid', async () => {
    // A server of its own, since it is stopped.
    const own = await startServerProcess();
    const home = tempConfigHome();
    const env = { XDG_CONFIG_HOME: home, AUTHCLI_ISSUER: own.issuer };
    try {
      await addUsers(own.env, [{ username: 'alice', password: PASSWORD }]);
      const run = runCli(['login', '--browser', '--no-open'], env);
      const [, url] = await run.waitFor(/^\s+(http:\/\/\S+\/oauth\/authorize\?\S+)$/m);
      await fetch(await approveInBrowser(new Browser(own.issuer), url!, 'alice', PASSWORD));
      expect((await run.exit).code).toBe(0);
    } finally {
      await own.stop();
    }
    const down = await runCli(['logout'], env).exit;
    expect(down.code).toBe(1);
    expect(down.stdout).toBe('');
    expect(down.stderr.trim().split('\n')).toHaveLength(1);
    expect(down.stderr).toMatch(/could not revoke the sign-in at \S+: cannot reach .*still signed in here .*authcli logout --local/);
    const kept = await runCli(['status', '--json'], env).exit;
    expect(JSON.parse(kept.stdout)).toMatchObject({ signed_in: true, issuer: own.issuer });

    const local = await runCli(['logout', '--local'], env).exit;
    expect(local.code).toBe(0);
    expect(local.stdout).toBe(`Signed out of ${own.issuer} on this machine.\n`);
    expect(local.stderr).toMatch(/^The refresh token was not revoked: it stays valid at \S+ until it expires\.\n$/);
    const gone = await runCli(['status', '--json'], env).exit;
    expect(gone.code).toBe(1);
    expect(JSON.parse(gone.stdout)).toMatchObject({ signed_in: false, state: 'signed_out' });
  });

  it('logout revokes the sign-in at the server, then forgets it', async () => {
    const home = tempConfigHome();
    await signIn(home, 'frank');
    const out = await runCli(['logout'], envFor(home)).exit;
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toBe(`Signed out of ${server.issuer}.\n`);
    expect((await grantsOf('frank')).map((g) => g.revoked)).toEqual([true]);
    expect((await runCli(['status'], envFor(home)).exit).code).toBe(1);
  });

  it('status exit codes: 0 valid or renewable, 1 signed out, 2 expired and not renewable; --json carries the same', async () => {
    const status = async (home: string) => {
      const [human, json] = await Promise.all([runCli(['status'], envFor(home)).exit, runCli(['status', '--json'], envFor(home)).exit]);
      expect(json.code).toBe(human.code);
      return { code: human.code, text: human.stdout, json: JSON.parse(json.stdout) as { state: string; signed_in: boolean } };
    };
    const home = tempConfigHome();
    expect(await status(home)).toMatchObject({ code: 1, json: { signed_in: false, state: 'signed_out' } });

    await signIn(home, 'grace');
    expect(await status(home)).toMatchObject({ code: 0, json: { signed_in: true, state: 'valid' } });
    expireAccessToken(home);
    const renewable = await status(home);
    expect(renewable).toMatchObject({ code: 0, json: { state: 'renewable' } });
    // "expired" once, with when: the time and how long ago, then what renews it.
    expect(renewable.text).toMatch(
      /\n {2}access token: expired \d{4}-\d\d-\d\d \d\d:\d\d \S+ \(less than a minute ago\); `authcli token` renews it\n/,
    );
    expect(renewable.text.match(/expired/g)).toHaveLength(1);

    // An application without refresh tokens: once its access token expires, only a new login helps.
    const app = await addApp(server.env, {
      name: 'No refresh',
      kind: 'public',
      callbackUrls: ['http://127.0.0.1/callback'],
      scopes: ['openid', 'profile'],
      grantTypes: ['authorization_code'],
    });
    const short = tempConfigHome();
    await signIn(short, 'grace', ['--client-id', app.client_id, '--scope', 'openid profile']);
    expect(await status(short)).toMatchObject({ code: 0, json: { state: 'valid' } });
    expireAccessToken(short);
    const expired = await status(short);
    expect(expired).toMatchObject({ code: 2, json: { signed_in: true, state: 'expired' } });
    expect(expired.text).toMatch(
      /\n {2}access token: expired \S+ \S+ \S+ \(less than a minute ago\) and cannot be renewed: run `authcli login`\n/,
    );
    expect(expired.text.match(/expired/g)).toHaveLength(1);
    const token = await runCli(['token'], envFor(short)).exit;
    expect(token.code).toBe(1);
    expect(token.stdout).toBe('');
    expect(token.stderr).toMatch(/has expired and cannot be renewed/);

    // The sign-in ends at the server (the account is disabled): token says so, forgets it, status says signed out.
    expect((await serverCommand(['users', 'disable', 'grace'], server.env)).code).toBe(0);
    const ended = await runCli(['token'], envFor(home)).exit;
    expect(ended.code).toBe(1);
    expect(ended.stdout).toBe('');
    expect(ended.stderr).toMatch(/^authcli: the sign-in to \S+ has ended \(.*disabled.*\); run `authcli login`\n$/);
    expect(await status(home)).toMatchObject({ code: 1, json: { signed_in: false, state: 'signed_out' } });
    expect((await serverCommand(['users', 'enable', 'grace'], server.env)).code).toBe(0);
  });

  it('a valid cached token is printed without loading commander, undici or jose; a refresh loads what it needs', async () => {
    const home = tempConfigHome();
    await signIn(home, 'ivan');
    // NODE_DEBUG=module,esm names every file Node loads: the packages are the node_modules folders among them.
    const packagesLoaded = async (args: string[]) => {
      const run = await runCli(args, envFor(home, { NODE_DEBUG: 'module,esm' })).exit;
      expect(run.code, run.stderr.slice(-2000)).toBe(0);
      return {
        token: run.stdout,
        debug: run.stderr,
        packages: new Set(
          [...run.stderr.matchAll(/node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/"]+)/g)].map((m) => m[1]),
        ),
      };
    };
    const cached = await packagesLoaded(['token']);
    expect(cached.token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+\n$/);
    expect([...cached.packages]).toEqual([]);
    // Through the CommonJS bin and dist/token-fast.cjs alone: no ES module, so Node's ESM loader never starts
    // (bench/README.md, "CLI cold start"), and no node:tty (with net and the streams) for a Bearer token.
    expect(cached.debug).toContain('dist/token-fast.cjs');
    expect(cached.debug).not.toMatch(/^ESM \d+:/m);
    expect(cached.debug).not.toContain('node:tty');
    expireAccessToken(home);
    const refreshed = await packagesLoaded(['token']);
    expect(refreshed.token).not.toBe(cached.token);
    expect([...refreshed.packages].sort()).toEqual(expect.arrayContaining(['commander', 'jose', 'undici']));
  });

  it('token --json and --format exec-credential: the documented shapes, the ID token for Kubernetes', async () => {
    const home = tempConfigHome();
    await signIn(home, 'heidi');
    const { jwks_uri } = (await (await fetch(`${server.issuer}/.well-known/openid-configuration`)).json()) as { jwks_uri: string };
    const jwks = createLocalJWKSet((await (await fetch(jwks_uri)).json()) as JSONWebKeySet);

    const json = await runCli(['token', '--json'], envFor(home)).exit;
    expect(json.code, json.stderr).toBe(0);
    const body = JSON.parse(json.stdout) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['access_token', 'expires_at', 'expires_in', 'scope', 'token_type']);
    // The server offers DPoP, but a sign-in is Bearer unless it asks for binding (`login --dpop`) or the application requires it.
    expect(body.token_type).toBe('Bearer');
    expect(body.scope).toBe('openid profile offline_access');
    expect(new Date(body.expires_at as string).toISOString()).toBe(body.expires_at);
    expect(body.expires_in).toBeGreaterThanOrEqual(0);
    expect(body.expires_in).toBeLessThanOrEqual(TTL_S);
    // The lifetime the server gave (the CLI's expiry is the server's, not a guess of its own).
    expect(body.expires_in).toBeGreaterThan(TTL_S - 60);
    expect(await userinfo(body.access_token as string, home)).toBe(200);

    const execInfo = JSON.stringify({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: { interactive: false },
    });
    const exec = await runCli(['token', '--format', 'exec-credential'], envFor(home, { KUBERNETES_EXEC_INFO: execInfo })).exit;
    expect(exec.code, exec.stderr).toBe(0);
    const cred = JSON.parse(exec.stdout) as { apiVersion: string; kind: string; status: Record<string, unknown> } & Record<string, unknown>;
    // client.authentication.k8s.io/v1 ExecCredential: apiVersion, kind, status {token, expirationTimestamp (RFC 3339)}.
    expect(Object.keys(cred).sort()).toEqual(['apiVersion', 'kind', 'status']);
    expect(cred.apiVersion).toBe('client.authentication.k8s.io/v1');
    expect(cred.kind).toBe('ExecCredential');
    expect(Object.keys(cred.status).sort()).toEqual(['expirationTimestamp', 'token']);
    expect(cred.status.expirationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    // The ID token: what an API server with --oidc-issuer-url / --oidc-client-id verifies.
    const { payload } = await jwtVerify(cred.status.token as string, jwks, { issuer: server.issuer, audience: 'authcli' });
    expect(new Date(payload.exp! * 1000).toISOString().replace('.000Z', 'Z')).toBe(cred.status.expirationTimestamp);

    // The full path (through commander, here because of --client-secret) prints the same as the fast path.
    const full = await runCli(
      ['token', '--format', 'exec-credential', '--client-secret', 'unused'],
      envFor(home, { KUBERNETES_EXEC_INFO: execInfo }),
    ).exit;
    expect(full.stdout).toBe(exec.stdout);

    const beta = await runCli(
      ['token', '--format', 'exec-credential'],
      envFor(home, { KUBERNETES_EXEC_INFO: execInfo.replace('/v1"', '/v1beta1"') }),
    ).exit;
    expect(JSON.parse(beta.stdout)).toMatchObject({ apiVersion: 'client.authentication.k8s.io/v1beta1', kind: 'ExecCredential' });
    const alpha = await runCli(
      ['token', '--format', 'exec-credential'],
      envFor(home, { KUBERNETES_EXEC_INFO: execInfo.replace('/v1"', '/v1alpha1"') }),
    ).exit;
    expect(alpha.code).toBe(1);
    expect(alpha.stdout).toBe('');
    expect(alpha.stderr).toMatch(/v1alpha1.*v1 or .*v1beta1/);

    const both = await runCli(['token', '--json', '--format', 'exec-credential'], envFor(home)).exit;
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/--json and --format exec-credential/);
    const unknown = await runCli(['token', '--format', 'yaml'], envFor(home)).exit;
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/--format must be one of token, json, exec-credential/);

    // The ID token outlives the access token: with the access token expired, exec-credential still
    // hands out the valid ID token without a refresh; `token` refreshes the access token.
    expireAccessToken(home);
    const refreshes = async () => (await grantsOf('heidi'))[0]!.refreshTokens.length;
    const before = await refreshes();
    const later = await runCli(['token', '--format', 'exec-credential'], envFor(home)).exit;
    expect(later.code, later.stderr).toBe(0);
    expect((JSON.parse(later.stdout) as { status: { token: string } }).status.token).toBe(cred.status.token);
    expect(await refreshes()).toBe(before);
    expect((await runCli(['token'], envFor(home)).exit).code).toBe(0);
    expect(await refreshes()).toBe(before + 1);
  });
});

import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { calculateJwkThumbprint, type JWK } from 'jose';
import type { Browser as Chromium } from 'playwright-core';
import { launchChromium } from '@authcli/test-support/chromium';
import { CLI_BIN, runCli, tempConfigHome } from '@authcli/test-support/cli-process';
import { credentialsPath, expireStoredToken, storedSession } from '@authcli/test-support/credentials';
import {
  approveAtOtherProvider,
  approveDeviceAtOtherProvider,
  startOtherProvider,
  type ProviderEvent,
} from '@authcli/test-support/other-op';
import { startSecretService } from '@authcli/test-support/secret-service';

interface Session {
  access_token: string;
  token_type: string;
  dpop_jkt?: string;
  expires_at: number;
  refresh_token?: string;
}

type Op = Awaited<ReturnType<typeof startOtherProvider>>;

const keysFile = (home: string) => join(home, 'authcli', 'dpop-keys.json');

/** The thumbprint of the key kept in dpop-keys.json for the issuer (there must be exactly one). */
async function storedKeyThumbprint(home: string, issuer: string): Promise<string> {
  const keys = (JSON.parse(readFileSync(keysFile(home), 'utf8')) as { keys: Record<string, Record<string, JWK>> }).keys[issuer]!;
  const entries = Object.entries(keys);
  expect(entries).toHaveLength(1);
  const [jkt, jwk] = entries[0]!;
  expect(jwk).toMatchObject({ kty: 'EC', crv: 'P-256' });
  expect(await calculateJwkThumbprint({ kty: 'EC', crv: 'P-256', x: jwk.x!, y: jwk.y! })).toBe(jkt);
  return jkt;
}

const since = (events: ProviderEvent[], from: number) => events.slice(from);

describe('authcli with DPoP (RFC 9449) and PAR (RFC 9126) against node-oidc-provider', () => {
  let op: Op;
  let parOp: Op;
  let chromium: Chromium;

  beforeAll(async () => {
    [op, parOp, chromium] = await Promise.all([
      // Devices poll every second (node-oidc-provider names no interval: 5 s), so a device login ends soon after its approval.
      startOtherProvider({ dpop: true, deviceInterval: 1 }),
      startOtherProvider({ dpop: true, requirePar: true }),
      launchChromium(),
    ]);
  });
  afterAll(async () => {
    await chromium?.close();
    await op?.close();
    await parOp?.close();
  });

  const envFor = (home: string, issuer = op.issuer, extra: Record<string, string> = {}) => ({
    XDG_CONFIG_HOME: home,
    AUTHCLI_ISSUER: issuer,
    ...extra,
  });

  async function deviceLogin(home: string, user: string, extra: Record<string, string> = {}): Promise<void> {
    const login = runCli(['login', '--dpop', '--scope', 'openid profile offline_access'], envFor(home, op.issuer, extra));
    const [, url] = await login.waitFor(/open (\S+) on any device/);
    const [, code] = await login.waitFor(/^\s+(\S{4,}-?\S*)\s*$/m);
    const page = await chromium.newPage();
    try {
      await approveDeviceAtOtherProvider(page, url!, code!, user, () => login.child.exitCode !== null);
    } finally {
      await page.close();
    }
    const done = await login.exit;
    expect(done.code, done.stderr).toBe(0);
    // The name comes from userinfo, called with the bound token and a proof (the ID token carries none).
    expect(done.stdout).toBe(`Signed in to ${op.issuer} as ${user}.\n`);
  }

  /** `authcli login --browser`, approved in Chromium; the URL it printed, and how it ended. */
  async function browserLogin(env: Record<string, string>, user: string) {
    const login = runCli(['login', '--dpop', '--browser', '--no-open', '--scope', 'openid profile'], env);
    const [, url] = await login.waitFor(/^\s+(http:\/\/\S+\?\S+)$/m);
    const page = await chromium.newPage();
    try {
      await page.goto(url!);
      await approveAtOtherProvider(page, user, () => login.child.exitCode !== null);
      await page.getByText('Signed in').waitFor();
    } finally {
      await page.close();
    }
    return { url: url!, done: await login.exit };
  }

  it('device login: a DPoP-bound token (cnf.jkt = the stored key), the private key kept apart from credentials.json', async () => {
    const home = tempConfigHome();
    const from = op.events.length;
    await deviceLogin(home, 'olivia');
    const session = storedSession(home, op.issuer);
    expect(session.token_type).toBe('DPoP');
    const jkt = await storedKeyThumbprint(home, op.issuer);
    expect(session.dpop_jkt).toBe(jkt);
    expect(statSync(keysFile(home)).mode & 0o777).toBe(0o600);
    // No private key material in the credentials file.
    expect(readFileSync(credentialsPath(home), 'utf8')).not.toMatch(/"d"\s*:/);
    const events = since(op.events, from);
    const issued = events.find((e) => e.name === 'access_token.saved' && e.jti === session.access_token);
    expect(issued).toMatchObject({ jkt });
    // A nonce was required (§8): the first proof had none, and the CLI retried with the server's.
    expect(events).toContainEqual(expect.objectContaining({ name: 'grant.error', error: 'use_dpop_nonce' }));

    const status = await runCli(['status', '--json'], envFor(home)).exit;
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ token_type: 'DPoP', dpop_jkt: jkt, dpop_key: 'present' });
    const human = await runCli(['status'], envFor(home)).exit;
    expect(human.stdout).toContain(`  token type:   DPoP-bound (RFC 9449); its key ${jkt} kept on this machine\n`);

    // The bound token alone is refused as a Bearer token.
    const { userinfo_endpoint } = (await (await fetch(`${op.issuer}/.well-known/openid-configuration`)).json()) as {
      userinfo_endpoint: string;
    };
    expect((await fetch(userinfo_endpoint, { headers: { authorization: `Bearer ${session.access_token}` } })).status).toBe(401);

    // `authcli token` still prints the token, from the cache, loading no package (no jose).
    const plain = await runCli(['token'], { ...envFor(home), NODE_DEBUG: 'module,esm' }).exit;
    expect(plain.stdout).toBe(`${session.access_token}\n`);
    // A file of a package (…/node_modules/<package>/…); the CommonJS loader also names the folders it would search.
    expect(plain.stderr).not.toMatch(/\/node_modules\//);

    const logout = await runCli(['logout'], envFor(home)).exit;
    expect(logout.code, logout.stderr).toBe(0);
    expect(() => statSync(keysFile(home))).toThrow(/ENOENT/);
  });

  it("token --dpop: header lines the provider's userinfo accepts, after its DPoP-Nonce (§9) through --nonce; --json", async () => {
    const home = tempConfigHome();
    await deviceLogin(home, 'peter');
    const { userinfo_endpoint } = (await (await fetch(`${op.issuer}/.well-known/openid-configuration`)).json()) as {
      userinfo_endpoint: string;
    };
    const headersFor = async (args: string[] = []) => {
      const run = await runCli(['token', '--dpop', '--htm', 'GET', '--htu', `${userinfo_endpoint}?x=1#f`, ...args], envFor(home)).exit;
      expect(run.code, run.stderr).toBe(0);
      const lines = run.stdout.trimEnd().split('\n');
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(/^Authorization: DPoP \S+$/);
      expect(lines[1]).toMatch(/^DPoP: [\w-]+\.[\w-]+\.[\w-]+$/);
      return Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 2)]));
    };
    // The proof has the query and fragment dropped (htu), and ath: the provider checks both.
    const first = await headersFor();
    const proofClaims = JSON.parse(Buffer.from(first.dpop!.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
    expect(proofClaims).toMatchObject({ htm: 'GET', htu: userinfo_endpoint });
    expect(proofClaims.ath).toEqual(expect.any(String));
    // This provider wants a nonce on every proof: its 401 names one, as a resource server may (§9).
    const asked = await fetch(userinfo_endpoint, { headers: first });
    expect(asked.status).toBe(401);
    expect(asked.headers.get('www-authenticate')).toMatch(/DPoP.*error="use_dpop_nonce"/);
    const nonce = asked.headers.get('dpop-nonce')!;
    const res = await fetch(userinfo_endpoint, { headers: await headersFor(['--nonce', nonce]) });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { sub: string }).sub).toBe('peter');

    const json = await runCli(['token', '--dpop', '--htu', userinfo_endpoint, '--json'], envFor(home)).exit;
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      authorization: `DPoP ${storedSession(home, op.issuer).access_token}`,
      dpop: expect.any(String),
      htm: 'GET',
      htu: userinfo_endpoint,
      token_type: 'DPoP',
    });
    // --htu is required, and only with --dpop.
    const noHtu = await runCli(['token', '--dpop'], envFor(home)).exit;
    expect(noHtu.code).toBe(1);
    expect(noHtu.stderr).toMatch(/^authcli: --dpop needs --htu/);
  });

  it.skipIf(!existsSync('/usr/bin/curl'))(
    "docs/cli.md's curl recipe: the nonce from the 401, then the headers piped into curl -H @-",
    async () => {
      const home = tempConfigHome();
      await deviceLogin(home, 'paula');
      const { userinfo_endpoint } = (await (await fetch(`${op.issuer}/.well-known/openid-configuration`)).json()) as {
        userinfo_endpoint: string;
      };
      // `authcli` on the PATH, as installed.
      const bin = join(home, 'bin');
      mkdirSync(bin);
      writeFileSync(join(bin, 'authcli'), `#!/bin/sh\nexec "${process.execPath}" "${CLI_BIN}" "$@"\n`, { mode: 0o755 });
      const script = [
        'NONCE=$(curl -s -o /dev/null -D - -H @<(authcli token --dpop --htu "$URL") "$URL" | sed -n \'s/^dpop-nonce: *//Ip\' | tr -d \'\\r\')',
        'authcli token --dpop --htu "$URL" --nonce "$NONCE" | curl -s -H @- "$URL"',
      ].join('\n');
      const { stdout } = await promisify(execFile)('bash', ['-c', script], {
        env: { PATH: `${bin}:${process.env.PATH}`, HOME: home, XDG_CONFIG_HOME: home, AUTHCLI_ISSUER: op.issuer, URL: userinfo_endpoint },
      });
      expect(JSON.parse(stdout)).toMatchObject({ sub: 'paula' });
    },
  );

  it('refresh with a stale nonce: use_dpop_nonce, one retry with the new nonce, a token bound to the same key', async () => {
    const home = tempConfigHome();
    await deviceLogin(home, 'quinn');
    const before = storedSession(home, op.issuer);
    writeFileSync(join(home, 'authcli', 'dpop-nonces.json'), JSON.stringify({ [op.issuer]: 'stale-nonce' }));
    expireStoredToken(home, op.issuer);
    const from = op.events.length;
    const run = await runCli(['token'], envFor(home)).exit;
    expect(run.code, run.stderr).toBe(0);
    const after = storedSession(home, op.issuer);
    expect(run.stdout).toBe(`${after.access_token}\n`);
    expect(after.access_token).not.toBe(before.access_token);
    expect(after).toMatchObject({ token_type: 'DPoP', dpop_jkt: before.dpop_jkt });
    const events = since(op.events, from);
    expect(events.filter((e) => e.name === 'grant.error')).toEqual([
      { name: 'grant.error', error: 'use_dpop_nonce', grantType: 'refresh_token' },
    ]);
    expect(events.filter((e) => e.name === 'grant.success')).toEqual([{ name: 'grant.success', grantType: 'refresh_token' }]);
    expect(events.find((e) => e.name === 'access_token.saved' && e.jti === after.access_token)).toMatchObject({ jkt: before.dpop_jkt });
    // The new nonce is kept for the next process.
    expect(JSON.parse(readFileSync(join(home, 'authcli', 'dpop-nonces.json'), 'utf8'))[op.issuer]).not.toBe('stale-nonce');
  });

  it('6 parallel authcli token refresh once: all print the same token, bound to the one stored key', async () => {
    const home = tempConfigHome();
    await deviceLogin(home, 'rita');
    const jkt = storedSession(home, op.issuer).dpop_jkt;
    expireStoredToken(home, op.issuer);
    const from = op.events.length;
    const runs = await Promise.all(Array.from({ length: 6 }, () => runCli(['token'], envFor(home)).exit));
    for (const r of runs) expect(r.code, r.stderr).toBe(0);
    const printed = new Set(runs.map((r) => r.stdout.trim()));
    expect(printed.size).toBe(1);
    const events = since(op.events, from);
    expect(events.filter((e) => e.name === 'grant.success')).toHaveLength(1);
    expect(events.find((e) => e.name === 'access_token.saved' && e.jti === [...printed][0])).toMatchObject({ jkt });
    expect(await storedKeyThumbprint(home, op.issuer)).toBe(jkt);
  });

  it('a credentials file copied to another machine (without the key) is refused with one clear line, never sent as Bearer', async () => {
    const home = tempConfigHome();
    await deviceLogin(home, 'sam');
    const elsewhere = tempConfigHome();
    mkdirSync(join(elsewhere, 'authcli'), { recursive: true });
    copyFileSync(credentialsPath(home), credentialsPath(elsewhere));
    const from = op.events.length;
    const expected = new RegExp(
      `^authcli: the sign-in to ${op.issuer.replace(/[.]/g, '\\.')} is bound to a DPoP key that is not on this machine .*; run \`authcli login\`\n$`,
    );

    const dpop = await runCli(['token', '--dpop', '--htu', `${op.issuer}/me`], envFor(elsewhere)).exit;
    expect(dpop.code).toBe(1);
    expect(dpop.stdout).toBe('');
    expect(dpop.stderr).toMatch(expected);

    expireStoredToken(elsewhere, op.issuer);
    const refresh = await runCli(['token'], envFor(elsewhere)).exit;
    expect(refresh.code).toBe(1);
    expect(refresh.stdout).toBe('');
    expect(refresh.stderr).toMatch(expected);
    // Nothing reached the token endpoint.
    expect(since(op.events, from).filter((e) => e.name.startsWith('grant.'))).toEqual([]);

    const status = await runCli(['status', '--json'], envFor(elsewhere)).exit;
    expect(JSON.parse(status.stdout)).toMatchObject({ token_type: 'DPoP', dpop_key: 'missing' });
    expect((await runCli(['status'], envFor(elsewhere)).exit).stdout).toMatch(
      /token type: {3}DPoP-bound .* is not on this machine: run `authcli login`/,
    );
    // The original machine still works.
    expireStoredToken(home, op.issuer);
    expect((await runCli(['token'], envFor(home)).exit).code).toBe(0);
  });

  it('browser login pushes its request (PAR, required for this client) with dpop_jkt, then gets a bound token', async () => {
    const home = tempConfigHome();
    const env = envFor(home, parOp.issuer);
    const from = parOp.events.length;
    const { url, done } = await browserLogin(env, 'tess');
    // The browser carries only the reference: nothing of the request itself.
    expect([...new URL(url).searchParams.keys()].sort()).toEqual(['client_id', 'request_uri']);
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toBe(`Signed in to ${parOp.issuer} as tess.\n`);
    const session = storedSession(home, parOp.issuer);
    expect(session.token_type).toBe('DPoP');
    const jkt = await storedKeyThumbprint(home, parOp.issuer);
    const events = since(parOp.events, from);
    const pushed = events.find((e) => e.name === 'pushed_authorization_request.success');
    expect(pushed).toMatchObject({ clientId: 'authcli', params: { dpop_jkt: jkt, code_challenge_method: 'S256' } });
    expect(events.find((e) => e.name === 'access_token.saved' && e.jti === session.access_token)).toMatchObject({ jkt });

    // A re-login makes a new key, and the old one is gone.
    expect((await browserLogin(env, 'tess')).done.code).toBe(0);
    const newJkt = await storedKeyThumbprint(home, parOp.issuer);
    expect(newJkt).not.toBe(jkt);
    expect(storedSession(home, parOp.issuer).dpop_jkt).toBe(newJkt);
  });

  it('with a Secret Service: the key is a keychain entry beside the session (no file); refresh uses it; logout removes it', async () => {
    const ss = await startSecretService();
    onTestFinished(() => ss.stop());
    const home = tempConfigHome();
    await deviceLogin(home, 'uma', ss.env);
    const env = envFor(home, op.issuer, ss.env);
    expect(existsSync(credentialsPath(home))).toBe(false);
    expect(existsSync(keysFile(home))).toBe(false);
    const session = JSON.parse((await ss.lookup(`${op.issuer} authcli`))!) as Session;
    expect(session).toMatchObject({ token_type: 'DPoP', dpop_jkt: expect.any(String) });
    expect(JSON.stringify(session)).not.toMatch(/"d"\s*:/);
    const jwk = JSON.parse((await ss.lookup(`${op.issuer} ${session.dpop_jkt}`, 'authcli-dpop'))!) as JWK;
    expect(await calculateJwkThumbprint({ kty: 'EC', crv: 'P-256', x: jwk.x!, y: jwk.y! })).toBe(session.dpop_jkt);

    await ss.store(`${op.issuer} authcli`, JSON.stringify({ ...session, expires_at: Date.now() - 1000 }));
    const from = op.events.length;
    const refreshed = await runCli(['token'], env).exit;
    expect(refreshed.code, refreshed.stderr).toBe(0);
    expect(since(op.events, from).find((e) => e.name === 'access_token.saved' && e.jti === refreshed.stdout.trim())).toMatchObject({
      jkt: session.dpop_jkt,
    });

    const logout = await runCli(['logout'], env).exit;
    expect(logout.code, logout.stderr).toBe(0);
    expect(await ss.lookup(`${op.issuer} ${session.dpop_jkt}`, 'authcli-dpop')).toBeUndefined();
    expect(await ss.lookup(`${op.issuer} authcli`)).toBeUndefined();
  });

  it('a Secret Service that is gone: session and key fall back to the files; when it is back the session moves there and the key still signs', async () => {
    const ss = await startSecretService();
    onTestFinished(() => ss.stop());
    await ss.kill();
    const home = tempConfigHome();
    await deviceLogin(home, 'vera', ss.env);
    const env = envFor(home, op.issuer, ss.env);
    const session = storedSession(home, op.issuer);
    expect(await storedKeyThumbprint(home, op.issuer)).toBe(session.dpop_jkt);

    await ss.unlock();
    expireStoredToken(home, op.issuer);
    const refreshed = await runCli(['token'], env).exit;
    expect(refreshed.code, refreshed.stderr).toBe(0);
    // The refreshed session went back to the keychain; its key, in the file, signed the refresh.
    expect(JSON.parse((await ss.lookup(`${op.issuer} authcli`))!)).toMatchObject({ dpop_jkt: session.dpop_jkt });
    expect(existsSync(credentialsPath(home))).toBe(false);
    expect(op.events.find((e) => e.name === 'access_token.saved' && e.jti === refreshed.stdout.trim())).toMatchObject({
      jkt: session.dpop_jkt,
    });
    const logout = await runCli(['logout'], env).exit;
    expect(logout.code, logout.stderr).toBe(0);
    expect(existsSync(keysFile(home))).toBe(false);
  });

  it('a refused pushed authorization request ends the login before any browser, saying what to check', async () => {
    const home = tempConfigHome();
    const run = await runCli(['login', '--browser', '--no-open', '--client-id', 'nobody'], envFor(home, parOp.issuer)).exit;
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(
      /^authcli: the server refused the pushed authorization request \(invalid_client.*\); the browser was not opened\. Check the client id \(nobody/,
    );
  });
});

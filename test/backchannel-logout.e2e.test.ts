import { createHash, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeProtectedHeader,
  generateKeyPair,
  type JSONWebKeySet,
  type JWTPayload,
  jwtVerify,
  SignJWT,
} from 'jose';
import * as client from 'openid-client';
import { authorizationRequest } from './openid-rp.js';
import type { Browser as Chromium } from 'playwright-core';
import { launchChromium } from '@authcli/test-support/chromium';
import { approveInBrowser, Browser, freePort, hidden } from '@authcli/test-support/http';
import { approveAtOtherProvider, startOtherProvider } from '@authcli/test-support/other-op';
import { addUsers } from '@authcli/test-support/seed';
import { dialects, execute, freshDatabase } from '@authcli/test-support/databases';
import { withStore } from '@authcli/server';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';
import { testRows } from '@authcli/server/testing';

const PASSWORD = 'back-channel e2e password';
const EVENT = 'http://schemas.openid.net/event/backchannel-logout';
const OTHER = { clientId: 'bcl-rp', clientSecret: 'bcl-rp-secret-bcl-rp-secret-0000' };

/** What the relying party made of one logout request: the claims it accepted, or why it refused. */
type Verdict = { path: string; token: string; claims?: JWTPayload; alg?: string; refused?: string };

/**
 * A relying party's back-channel logout endpoint (§2.6, §2.8), the way an RP built on jose writes one: the token is
 * verified against its OP's JWKS with `typ: 'logout+jwt'`, issuer and audience, then the logout event, `sub` or
 * `sid`, and no `nonce`; 200 when it is accepted, 400 when not. Which OP and client a path belongs to is set
 * with `expect(path, op)`. It is also the RP's redirect URI (`/cb`, answering 200).
 */
async function relyingParty() {
  const port = await freePort();
  const ops = new Map<string, { issuer: string; clientId: string; jwks: ReturnType<typeof createRemoteJWKSet> }>();
  const verdicts: Verdict[] = [];
  const waiting: (() => void)[] = [];
  async function verify(path: string, token: string): Promise<Verdict> {
    const op = ops.get(path);
    if (!op) return { path, token, refused: 'unknown path' };
    try {
      const { payload, protectedHeader } = await jwtVerify(token, op.jwks, {
        issuer: op.issuer,
        audience: op.clientId,
        typ: 'logout+jwt',
        requiredClaims: ['iat', 'exp', 'jti', 'events'],
      });
      const event = (payload.events as Record<string, unknown> | undefined)?.[EVENT];
      if (typeof event !== 'object' || event === null) return { path, token, refused: 'no back-channel logout event' };
      if (payload.sub === undefined && payload.sid === undefined) return { path, token, refused: 'neither sub nor sid' };
      if ('nonce' in payload) return { path, token, refused: 'a nonce' };
      return { path, token, claims: payload, alg: protectedHeader.alg };
    } catch (err) {
      return { path, token, refused: (err as Error).message };
    }
  }
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!;
      if (req.method !== 'POST') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('signed in');
      const form = new URLSearchParams(body);
      const token = form.get('logout_token') ?? '';
      void verify(path, req.headers['content-type'] === 'application/x-www-form-urlencoded' ? token : '').then((v) => {
        verdicts.push(v);
        for (const w of waiting.splice(0)) w();
        res.writeHead(v.claims ? 200 : 400, { 'cache-control': 'no-store' }).end();
      });
    });
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  const base = `http://127.0.0.1:${port}`;
  return {
    base,
    redirectUri: `${base}/cb`,
    verdicts,
    async expect(path: string, op: { issuer: string; clientId: string }) {
      const meta = (await (await fetch(`${op.issuer}/.well-known/openid-configuration`)).json()) as { jwks_uri: string };
      ops.set(path, { ...op, jwks: createRemoteJWKSet(new URL(meta.jwks_uri)) });
      return `${base}${path}`;
    },
    async next(path: string, timeoutMs = 10_000): Promise<Verdict> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const v = verdicts.find((x) => x.path === path);
        if (v) return v;
        if (Date.now() > deadline) throw new Error(`no logout token at ${path} within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          waiting.push(resolve);
          setTimeout(resolve, 100);
        });
      }
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

type Rp = Awaited<ReturnType<typeof relyingParty>>;

/** `apps add` as an operator types it; the client id and secret it prints. */
async function appsAdd(server: ServerProcess, name: string, extra: string[]): Promise<{ client_id: string; client_secret: string }> {
  const added = await serverCommand(
    [
      'apps',
      'add',
      '--name',
      name,
      '--kind',
      'confidential',
      '--callback',
      'http://127.0.0.1:9/cb',
      '--scope',
      'openid profile',
      '--json',
      ...extra,
    ],
    server.env,
  );
  expect(added.code, added.stderr).toBe(0);
  return JSON.parse(added.stdout) as { client_id: string; client_secret: string };
}

/** Signs `username` in to `app` through the code flow in a cookie-keeping browser (no Chromium), as a relying party would. */
async function signInTo(
  server: ServerProcess,
  b: Browser,
  app: { client_id: string; client_secret: string },
  username: string,
  redirectUri = 'http://127.0.0.1:9/cb',
) {
  const config = await client.discovery(new URL(server.issuer), app.client_id, app.client_secret, undefined, {
    execute: [client.allowInsecureRequests],
  });
  const { url, verifier, state } = await authorizationRequest(config, { redirect_uri: redirectUri, scope: 'openid' });
  const callback = await approveInBrowser(b, url.href, username, PASSWORD);
  return client.authorizationCodeGrant(config, new URL(callback), {
    pkceCodeVerifier: verifier,
    expectedState: state,
    idTokenExpected: true,
  });
}

/**
 * OpenID Connect Back-Channel Logout 1.0 end to end: a started authcli-server process, applications added with the
 * real `apps add`, and a relying party that verifies each logout token with jose. The same RP checks run against
 * node-oidc-provider's logout tokens first-hand, so they are the standard's, not this server's.
 */
describe('back-channel logout: a started server, a relying party verifying with jose, node-oidc-provider as the oracle', () => {
  let server: ServerProcess;
  let other: Awaited<ReturnType<typeof startOtherProvider>>;
  let rp: Rp;
  let chromium: Chromium;
  let metricsBase: string;
  let ours: { client_id: string; client_secret: string };

  beforeAll(async () => {
    rp = await relyingParty();
    const metricsPort = await freePort();
    metricsBase = `http://127.0.0.1:${metricsPort}`;
    [server, other, chromium] = await Promise.all([
      startServerProcess({ env: { AUTHCLI_METRICS_PORT: String(metricsPort), AUTHCLI_BACKCHANNEL_LOGOUT_TIMEOUT: '2' } }),
      startOtherProvider({
        webClient: { ...OTHER, redirectUri: rp.redirectUri },
        backchannelLogoutUri: `${rp.base}/other`,
      }),
      launchChromium(),
    ]);
    await addUsers(
      server.env,
      ['ada', 'bob', 'cy', 'eve', 'flo', 'gus', 'hal', 'ivy', 'jay'].map((username) => ({ username, password: PASSWORD })),
    );
    await rp.expect('/other', { issuer: other.issuer, clientId: OTHER.clientId });
    const added = await serverCommand(
      [
        'apps',
        'add',
        '--name',
        'Back-channel RP',
        '--kind',
        'confidential',
        '--callback',
        rp.redirectUri,
        '--scope',
        'openid profile',
        '--id-token-alg',
        'ES256',
        '--backchannel-logout-uri',
        `${rp.base}/ours`,
        '--backchannel-logout-session-required',
        '--json',
      ],
      server.env,
    );
    expect(added.code, added.stderr).toBe(0);
    ours = JSON.parse(added.stdout) as { client_id: string; client_secret: string };
    await rp.expect('/ours', { issuer: server.issuer, clientId: ours.client_id });
  });
  afterAll(async () => {
    await chromium?.close();
    await other?.close();
    await server?.stop();
    await rp?.close();
  });

  for (const which of ['node-oidc-provider', 'authcli-server'] as const) {
    it(`${which}: RP-initiated logout in Chromium posts a logout token the relying party accepts, naming the ID token's sub and sid`, async () => {
      const isOurs = which === 'authcli-server';
      const issuer = isOurs ? server.issuer : other.issuer;
      const [id, secret] = isOurs ? [ours.client_id, ours.client_secret] : [OTHER.clientId, OTHER.clientSecret];
      const path = isOurs ? '/ours' : '/other';
      const config = await client.discovery(new URL(issuer), id, secret, client.ClientSecretBasic(secret), {
        execute: [client.allowInsecureRequests],
      });
      expect(config.serverMetadata().backchannel_logout_supported).toBe(true);
      expect(config.serverMetadata().backchannel_logout_session_supported).toBe(true);
      const { url, verifier, state } = await authorizationRequest(config, { redirect_uri: rp.redirectUri, scope: 'openid' });
      const page = await chromium.newPage();
      try {
        await page.goto(url.href);
        if (isOurs) {
          await page.getByLabel('Username').fill('ada');
          await page.getByLabel('Password').fill(PASSWORD);
          await page.getByRole('button', { name: 'Sign in' }).click();
          await page.getByRole('button', { name: 'Approve' }).click();
        } else {
          await approveAtOtherProvider(page, 'ada');
        }
        await page.waitForURL(`${rp.redirectUri}?**`);
        const tokens = await client.authorizationCodeGrant(config, new URL(page.url()), {
          pkceCodeVerifier: verifier,
          expectedState: state,
        });
        const idToken = tokens.claims()!;
        expect(idToken.sid).toBeTypeOf('string');
        expect(rp.verdicts.filter((v) => v.path === path)).toEqual([]);
        await page.goto(client.buildEndSessionUrl(config, { id_token_hint: tokens.id_token! }).href);
        // node-oidc-provider asks first; this server signs the hinted user out at once.
        if (isOurs) await page.getByText('You are signed out of this browser.').waitFor();
        else await page.getByRole('button', { name: /sign me out/i }).click();
        const verdict = await rp.next(path);
        expect(verdict.refused).toBeUndefined();
        expect(verdict.claims).toMatchObject({ iss: issuer, aud: id, sub: idToken.sub, sid: idToken.sid, events: { [EVENT]: {} } });
        expect(verdict.claims!.exp! - verdict.claims!.iat!).toBeGreaterThan(0);
        expect(verdict.claims!.exp! - verdict.claims!.iat!).toBeLessThanOrEqual(300);
        expect(verdict.alg).toBe(decodeProtectedHeader(tokens.id_token!).alg);
      } finally {
        await page.close();
      }
    });
  }

  it('the relying party refuses what is not a logout token from its OP (an ID token, a token of another OP): the checks can fail', async () => {
    // Signed in at the registered callback (the RP's), for an ID token to pass off as a logout token.
    const tokens = await signInTo(server, new Browser(server.issuer), ours, 'cy', rp.redirectUri);
    // A path of its own, for the same OP and client as /ours: what is refused here is not mistaken for a logout there.
    await rp.expect('/forged', { issuer: server.issuer, clientId: ours.client_id });
    const post = (token: string) =>
      fetch(`${rp.base}/forged`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ logout_token: token }),
      });
    expect((await post(tokens.id_token!)).status).toBe(400);
    expect(rp.verdicts.find((v) => v.path === '/forged' && v.token === tokens.id_token)?.refused).toMatch(/typ/);
    // Well-formed logout tokens for this client, made here (not left over from another test), signed by a key of
    // neither OP: one naming the other OP as issuer, one naming this OP.
    const { privateKey } = await generateKeyPair('ES256');
    const logoutToken = (iss: string) =>
      new SignJWT({ events: { [EVENT]: {} }, sid: 'another-sid' })
        .setProtectedHeader({ alg: 'ES256', typ: 'logout+jwt' })
        .setIssuer(iss)
        .setAudience(ours.client_id)
        .setSubject('another-sub')
        .setJti(randomUUID())
        .setIssuedAt()
        .setExpirationTime('2m')
        .sign(privateKey);
    for (const iss of [other.issuer, server.issuer]) {
      const token = await logoutToken(iss);
      expect((await post(token)).status, iss).toBe(400);
      expect(rp.verdicts.find((v) => v.path === '/forged' && v.token === token)?.refused, iss).toMatch(/signature|no applicable key/i);
    }
  });

  it('authcli-server users disable tells every application with a live grant of the user, and says so', async () => {
    const plain = await appsAdd(server, 'Plain RP', ['--backchannel-logout-uri', `${rp.base}/plain`]);
    await rp.expect('/plain', { issuer: server.issuer, clientId: plain.client_id });
    const perSession = await appsAdd(server, 'Per-session RP', [
      '--backchannel-logout-uri',
      `${rp.base}/per-session`,
      '--backchannel-logout-session-required',
    ]);
    await rp.expect('/per-session', { issuer: server.issuer, clientId: perSession.client_id });
    const sids: unknown[] = [];
    for (const b of [new Browser(server.issuer), new Browser(server.issuer)]) {
      const plainTokens = await signInTo(server, b, plain, 'bob');
      sids.push((await signInTo(server, b, perSession, 'bob')).claims()!.sid);
      expect(plainTokens.claims()!.sid).toBe(sids.at(-1));
    }
    const disabled = await serverCommand(['users', 'disable', 'bob'], server.env);
    expect(disabled.code, disabled.stderr).toBe(0);
    expect(disabled.stdout).toContain('disabled user bob');
    expect(disabled.stdout).toContain('back-channel logout: 3 of 3 logout tokens delivered');
    const byUser = rp.verdicts.filter((v) => v.path === '/plain');
    expect(byUser).toHaveLength(1);
    expect(byUser[0]!.claims).toBeDefined();
    expect(byUser[0]!.claims).not.toHaveProperty('sid');
    const named = rp.verdicts.filter((v) => v.path === '/per-session');
    expect(named.every((v) => v.claims !== undefined)).toBe(true);
    expect(new Set(named.map((v) => v.claims!.sid))).toEqual(new Set(sids));
  });

  it('authcli-server users reset-password tells the applications of the sessions it ends, naming each, and says so', async () => {
    const app = await appsAdd(server, 'Reset RP', [
      '--backchannel-logout-uri',
      `${rp.base}/reset`,
      '--backchannel-logout-session-required',
    ]);
    await rp.expect('/reset', { issuer: server.issuer, clientId: app.client_id });
    const sids = new Set<unknown>();
    for (const b of [new Browser(server.issuer), new Browser(server.issuer)])
      sids.add((await signInTo(server, b, app, 'flo')).claims()!.sid);
    const reset = await serverCommand(
      ['users', 'reset-password', 'flo', '--password-stdin'],
      server.env,
      'a password the operator chose\n',
    );
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stdout).toContain('reset the password of flo (2 sessions ended');
    expect(reset.stdout).toContain('back-channel logout: 2 of 2 logout tokens delivered');
    const named = rp.verdicts.filter((v) => v.path === '/reset');
    expect(named.every((v) => v.claims !== undefined)).toBe(true);
    expect(new Set(named.map((v) => v.claims!.sid))).toEqual(sids);
  });

  it('users reset-password --revoke-tokens tells every application holding a sign-in; users reset-passkeys those of the passkey sessions', async () => {
    const plain = await appsAdd(server, 'Revoke RP', ['--backchannel-logout-uri', `${rp.base}/revoke`]);
    await rp.expect('/revoke', { issuer: server.issuer, clientId: plain.client_id });
    await signInTo(server, new Browser(server.issuer), plain, 'gus');
    const reset = await serverCommand(
      ['users', 'reset-password', 'gus', '--password-stdin', '--revoke-tokens'],
      server.env,
      'gus new pw 1\n',
    );
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stdout).toContain('1 application sign-in ended');
    expect(reset.stdout).toContain('back-channel logout: 1 of 1 logout token delivered');
    const [byUser] = rp.verdicts.filter((v) => v.path === '/revoke');
    expect(byUser!.claims).toBeDefined();
    expect(byUser!.claims).not.toHaveProperty('sid');

    const perSession = await appsAdd(server, 'Passkey RP', [
      '--backchannel-logout-uri',
      `${rp.base}/passkey`,
      '--backchannel-logout-session-required',
    ]);
    await rp.expect('/passkey', { issuer: server.issuer, clientId: perSession.client_id });
    const [withPasskey, withPassword] = [new Browser(server.issuer), new Browser(server.issuer)];
    const sid = (await signInTo(server, withPasskey, perSession, 'hal')).claims()!.sid;
    await signInTo(server, withPassword, perSession, 'hal');
    // The first browser's session as a passkey sign-in leaves it (RFC 8176 hwk), seeded through the store.
    const seeded = await withStore(server.env.DATABASE_URL!, async (store) => {
      const cookie = withPasskey.cookies.get('authcli_session')!;
      const idHash = createHash('sha256').update(cookie).digest('hex');
      return testRows(store).update('sessions', { id_hash: idHash }, { amr: 'hwk user' });
    });
    expect(seeded).toBe(1);
    const removed = await serverCommand(['users', 'reset-passkeys', 'hal', '--yes'], server.env);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toContain('ended 1 browser session signed in with one');
    expect(removed.stdout).toContain('back-channel logout: 1 of 1 logout token delivered');
    const named = rp.verdicts.filter((v) => v.path === '/passkey');
    expect(named.map((v) => v.claims?.sid)).toEqual([sid]);
  });

  it('users remove asks for --yes without a terminal; with it the user goes, their tokens are refused and applications are told; apps remove ends its sign-ins', async () => {
    const app = await appsAdd(server, 'Remove RP', ['--backchannel-logout-uri', `${rp.base}/remove`]);
    await rp.expect('/remove', { issuer: server.issuer, clientId: app.client_id });
    const tokens = await signInTo(server, new Browser(server.issuer), app, 'ivy');
    const userinfo = async (token: string) =>
      (await fetch(`${server.issuer}/oauth/userinfo`, { headers: { authorization: `Bearer ${token}` } })).status;
    expect(await userinfo(tokens.access_token)).toBe(200);

    // No terminal, no --yes: nothing removed, nobody told.
    const unasked = await serverCommand(['users', 'remove', 'ivy'], server.env);
    expect(unasked.code).toBe(1);
    expect(unasked.stderr).toContain('not removed: no terminal to ask whether to remove user ivy (their sign-ins at 1 application end');
    expect(unasked.stderr).toContain('pass --yes to remove it');
    expect(await userinfo(tokens.access_token)).toBe(200);
    // A name that does not exist is said before anything is asked.
    const nobody = await serverCommand(['users', 'remove', 'nobody'], server.env);
    expect(nobody.stderr.trim().split('\n').at(-1)).toBe('authcli-server: no user nobody');

    const removed = await serverCommand(['users', 'remove', 'ivy', '--yes'], server.env);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toContain('removed user ivy');
    expect(removed.stdout).toContain('back-channel logout: 1 of 1 logout token delivered');
    const told = rp.verdicts.filter((v) => v.path === '/remove');
    expect(told).toHaveLength(1);
    expect(told[0]!.claims).toBeDefined();
    expect(await userinfo(tokens.access_token)).toBe(401);
    const users = JSON.parse((await serverCommand(['users', 'list', '--json'], server.env)).stdout) as { username: string }[];
    expect(users.map((u) => u.username)).not.toContain('ivy');

    // An application removed: its sign-ins end (the token it holds is refused) and its credentials stop working.
    const gone = await appsAdd(server, 'Gone RP', []);
    const held = await signInTo(server, new Browser(server.issuer), gone, 'jay');
    expect(await userinfo(held.access_token)).toBe(200);
    const appRemoved = await serverCommand(['apps', 'remove', gone.client_id, '--yes', '--json'], server.env);
    expect(appRemoved.code, appRemoved.stderr).toBe(0);
    expect(JSON.parse(appRemoved.stdout)).toEqual({ client_id: gone.client_id, removed: true });
    expect(await userinfo(held.access_token)).toBe(401);
    const basic = `Basic ${Buffer.from(`${gone.client_id}:${gone.client_secret}`).toString('base64')}`;
    const tokenError = async () =>
      (
        (await (
          await fetch(`${server.issuer}/oauth/token`, {
            method: 'POST',
            headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
            body: 'grant_type=client_credentials',
          })
        ).json()) as { error: string }
      ).error;
    // The running server's copy of the application lasts APPLICATION_CACHE_MS (a second) after the removal.
    const deadline = Date.now() + 5_000;
    while ((await tokenError()) !== 'invalid_client' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(await tokenError()).toBe('invalid_client');
  });

  it('apps add|update: the URI is checked; none clears it; apps list --json shows both settings', async () => {
    const badApp = (...extra: string[]) =>
      serverCommand(
        ['apps', 'add', '--name', 'Bad', '--kind', 'public', '--callback', 'http://127.0.0.1:9/cb', '--scope', 'openid', ...extra],
        server.env,
      );
    const refused = await badApp('--backchannel-logout-uri', 'http://rp.example/bcl');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('back-channel logout URI must be https');
    expect(refused.stderr).not.toContain('    at ');
    const alone = await badApp('--backchannel-logout-session-required');
    expect(alone.code).toBe(1);
    expect(alone.stderr).toContain('needs a back-channel logout URI');
    const app = await appsAdd(server, 'Cleared RP', [
      '--backchannel-logout-uri',
      'https://rp.example/bcl',
      '--backchannel-logout-session-required',
    ]);
    const listed = async () => {
      const list = await serverCommand(['apps', 'list', '--json'], server.env);
      return (JSON.parse(list.stdout) as Record<string, unknown>[]).find((a) => a.client_id === app.client_id);
    };
    expect(await listed()).toMatchObject({ backchannel_logout_uri: 'https://rp.example/bcl', backchannel_logout_session_required: true });
    const bad = await serverCommand(['apps', 'update', app.client_id, '--backchannel-logout-uri', 'https://rp.example/bcl#x'], server.env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('fragment');
    const cleared = await serverCommand(['apps', 'update', app.client_id, '--backchannel-logout-uri', 'none'], server.env);
    expect(cleared.code, cleared.stderr).toBe(0);
    expect(await listed()).toMatchObject({ backchannel_logout_uri: null, backchannel_logout_session_required: false });
  });

  it('/metrics counts the deliveries: authcli_backchannel_logout_total by outcome', async () => {
    const delivered = async () => {
      const text = await (await fetch(`${metricsBase}/metrics`)).text();
      return Number(/^authcli_backchannel_logout_total\{outcome="delivered"\} (\d+)$/m.exec(text)?.[1]);
    };
    const before = await delivered();
    const app = await appsAdd(server, 'Counted RP', ['--backchannel-logout-uri', `${rp.base}/counted`]);
    await rp.expect('/counted', { issuer: server.issuer, clientId: app.client_id });
    const b = new Browser(server.issuer);
    await signInTo(server, b, app, 'eve');
    const page = await b.get('/signout');
    expect((await b.postForm('/signout', { _csrf: hidden(page.text, '_csrf') })).status).toBe(200);
    expect((await rp.next('/counted')).claims).toBeDefined();
    // Counted once the RP's answer is in: a moment after the RP saw the token.
    for (let i = 0; i < 50 && (await delivered()) === before; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await delivered()).toBe(before + 1);
    const text = await (await fetch(`${metricsBase}/metrics`)).text();
    expect(text).toMatch(/^authcli_backchannel_logout_total\{outcome="failed"\} \d+$/m);
    expect(text).toMatch(/^authcli_backchannel_logout_total\{outcome="retried"\} \d+$/m);
  });
});

/**
 * A relying party's back-channel logout endpoint on a port of its own, that can be down (nothing listening: the
 * connection is refused) and up again: each token it gets is verified (§2.6) against the OP's JWKS, as fetched
 * once beforehand (every instance signs with the same keys; the instance at the issuer's address may be the one
 * restarting when another delivers).
 */
function receiverOn(port: number, issuer: string, clientId: () => string, jwks: ReturnType<typeof createLocalJWKSet>) {
  const accepted: JWTPayload[] = [];
  const refused: string[] = [];
  let server: Server | undefined;
  return {
    uri: `http://127.0.0.1:${port}/bcl`,
    accepted,
    refused,
    up: () =>
      new Promise<void>((resolve) => {
        server = createServer((req, res) => {
          let body = '';
          req.on('data', (d: Buffer) => (body += d.toString()));
          req.on('end', async () => {
            try {
              const token = new URLSearchParams(body).get('logout_token') ?? '';
              const { payload } = await jwtVerify(token, jwks, { issuer, audience: clientId(), typ: 'logout+jwt' });
              expect(payload.events).toEqual({ [EVENT]: {} });
              accepted.push(payload);
              res.writeHead(200).end();
            } catch (err) {
              refused.push((err as Error).message);
              res.writeHead(400).end();
            }
          });
        });
        server.listen(port, '127.0.0.1', resolve);
      }),
    down: () => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())),
  };
}

/** `authcli-server logouts --json` of `server`'s database. */
async function outbox(server: ServerProcess): Promise<{ state: string; attempts: number; client_id: string; last_error: string | null }[]> {
  const listed = await serverCommand(['logouts', '--json'], server.env);
  expect(listed.code, listed.stderr).toBe(0);
  return JSON.parse(listed.stdout);
}

async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await check();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.each(dialects())('back-channel logout outlives a receiver that is down and a restart of the server (%s)', (dialect) => {
  it('the logout the server accepted is delivered exactly once, verified, when the receiver is back; with two instances (PostgreSQL) still once', async () => {
    const db = await freshDatabase(dialect);
    const port = await freePort();
    const issuer = `http://127.0.0.1:${port}`;
    // PostgreSQL: two instances behind one issuer, as behind a load balancer; both poll the outbox.
    const env = { AUTHCLI_ISSUER: issuer };
    let first = await startServerProcess({ database: db.url, port, env });
    const second = dialect === 'postgres' ? await startServerProcess({ database: db.url, env }) : undefined;
    let clientId = '';
    const keys = (await (await fetch(`${issuer}/oauth/jwks`)).json()) as JSONWebKeySet;
    const rp = receiverOn(await freePort(), issuer, () => clientId, createLocalJWKSet(keys));
    try {
      await addUsers(first.env, [{ username: 'rhea', password: PASSWORD }]);
      const app = await appsAdd(first, 'Down RP', ['--backchannel-logout-uri', rp.uri]);
      clientId = app.client_id;
      const b = new Browser(issuer);
      await signInTo(first, b, app, 'rhea');
      // The receiver is down: the sign-out is answered all the same, and the logout waits in the outbox.
      const page = await b.get('/signout');
      expect((await b.postForm('/signout', { _csrf: hidden(page.text, '_csrf') })).status).toBe(200);
      const tried = await until('a failed attempt', async () => {
        const [row] = await outbox(first);
        return row && row.attempts >= 1 && row.last_error !== null ? row : undefined;
      });
      expect(tried).toMatchObject({
        state: 'pending',
        client_id: app.client_id,
        last_error: expect.stringMatching(/ECONNREFUSED|refused/i),
      });
      const text = await serverCommand(['logouts'], first.env);
      expect(text.stdout).toMatch(/^STATE +CLIENT +ATTEMPTS +CREATED +NEXT TRY \/ ENDED +LAST ERROR\npending +\S+ +\d+ /);
      // The server restarts (and is down a while); the receiver comes back meanwhile.
      await first.stop();
      await rp.up();
      first = await startServerProcess({ database: db.url, port, env });
      // Time passes: the retry is due (the outbox's clock, moved instead of waited for).
      await execute(db, dialect, 'update logout_outbox set next_attempt_at = 0');
      const done = await until('the delivery', async () => {
        const [row] = await outbox(first);
        return row?.state === 'delivered' ? row : undefined;
      });
      expect(done.attempts).toBeGreaterThanOrEqual(2);
      // Delivered is final: no instance holds another attempt of it, so what the receiver has now is all it gets.
      expect(rp.refused).toEqual([]);
      expect(rp.accepted).toHaveLength(1);
      expect(rp.accepted[0]).toMatchObject({ iss: issuer, aud: app.client_id, sid: expect.any(String) });
    } finally {
      await first.stop();
      await second?.stop();
      await rp.down();
      await db.cleanup();
    }
  });
});

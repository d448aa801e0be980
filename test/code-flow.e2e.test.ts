import { availableParallelism } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as client from 'openid-client';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { challengeS256, generateNonce, generateState, generateVerifier } from '@authcli/pkce';
import { addApp, addUsers } from '@authcli/test-support/seed';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';
import { approveInBrowser, Browser } from '@authcli/test-support/http';

const PASSWORD = 'e2e password 1';

describe('authorization code flow against a started authcli-server process', () => {
  let server: ServerProcess;
  let app: { client_id: string; client_secret?: string };
  let pub: { client_id: string };

  beforeAll(async () => {
    // An empty UV_THREADPOOL_SIZE: the launcher chooses (one thread per core but one).
    server = await startServerProcess({ env: { UV_THREADPOOL_SIZE: '' } });
    await addUsers(server.env, [{ username: 'alice', password: PASSWORD, email: 'alice@example.com' }]);
    // The confidential application by `apps add --json`, whose output (the secret, shown once) is checked here.
    const added = await serverCommand(
      [
        'apps',
        'add',
        '--name',
        'E2E RP',
        '--kind',
        'confidential',
        '--callback',
        'http://127.0.0.1:9/cb',
        '--scope',
        'openid profile email',
        '--json',
      ],
      server.env,
    );
    expect(added.code, added.stderr).toBe(0);
    app = JSON.parse(added.stdout) as typeof app;
    expect(app.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    pub = await addApp(server.env, {
      name: 'E2E public',
      kind: 'public',
      callbackUrls: ['http://127.0.0.1/cb'],
      scopes: ['openid', 'profile'],
    });
    expect(Object.keys(pub)).toEqual(['client_id']);
  });
  afterAll(async () => server?.stop());

  it('a standard OIDC relying party (openid-client) completes the code flow with PKCE and nonce', async () => {
    const config = await client.discovery(
      new URL(server.issuer),
      app.client_id,
      app.client_secret,
      client.ClientSecretBasic(app.client_secret!),
      {
        execute: [client.allowInsecureRequests],
      },
    );
    const verifier = client.randomPKCECodeVerifier();
    const nonce = client.randomNonce();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: 'http://127.0.0.1:9/cb',
      scope: 'openid profile email',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      nonce,
      state,
    });
    const callback = await approveInBrowser(new Browser(server.issuer), url.href, 'alice', PASSWORD);
    const tokens = await client.authorizationCodeGrant(config, new URL(callback), {
      pkceCodeVerifier: verifier,
      expectedNonce: nonce,
      expectedState: state,
      idTokenExpected: true,
    });
    const claims = tokens.claims()!;
    expect(claims.iss).toBe(server.issuer);
    expect(claims.aud).toBe(app.client_id);
    expect(claims.nonce).toBe(nonce);
    // OIDC Core §5.4: with an access token issued, the email claims come from userinfo.
    expect(claims.email).toBeUndefined();
    const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
    expect(info.email).toBe('alice@example.com');
    expect(tokens.token_type).toBe('bearer');
  });

  it('public loopback client over real sockets: callback carries code, state, iss; ID token verifies against JWKS with the nonce', async () => {
    const redirectUri = 'http://127.0.0.1:53682/cb';
    const { callback, state, nonce, body } = await publicCodeFlow(server.issuer, redirectUri, 'openid profile');
    expect(callback.origin + callback.pathname).toBe(redirectUri);
    expect(callback.searchParams.get('state')).toBe(state);
    expect(callback.searchParams.get('iss')).toBe(server.issuer);
    const jwks = createRemoteJWKSet(new URL(`${server.issuer}/oauth/jwks`));
    const { payload } = await jwtVerify(body.id_token, jwks, { issuer: server.issuer, audience: pub.client_id });
    expect(payload.nonce).toBe(nonce);
    expect(payload.preferred_username).toBeUndefined();
    const info = await fetch(`${server.issuer}/oauth/userinfo`, { headers: { authorization: `Bearer ${body.access_token}` } });
    expect(await info.json()).toMatchObject({ sub: payload.sub, preferred_username: 'alice' });
  });

  it("the launcher leaves a core to the event loop unless the operator sizes libuv's pool", async () => {
    // Not on a terminal, the start is told as a JSON log line (at info).
    const started = async (p: { output: () => string }) => {
      for (let i = 0; i < 50 && !p.output().includes('authcli-server started'); i++) await new Promise((r) => setTimeout(r, 100));
      const line = p
        .output()
        .split('\n')
        .find((l) => l.includes('authcli-server started'));
      return (JSON.parse(line!) as { signingThreads: string }).signingThreads;
    };
    const plain = await startServerProcess({ database: server.env.DATABASE_URL!, env: { LOG_LEVEL: 'info' } });
    try {
      expect(await started(plain)).toBe(String(Math.max(1, availableParallelism() - 1)));
    } finally {
      await plain.stop();
    }
    const sized = await startServerProcess({ database: server.env.DATABASE_URL!, env: { UV_THREADPOOL_SIZE: '3', LOG_LEVEL: 'info' } });
    try {
      expect(await started(sized)).toBe('3');
    } finally {
      await sized.stop();
    }
  });

  it('apps list shows the built-in authcli application and the new ones', async () => {
    const list = await serverCommand(['apps', 'list', '--json'], server.env);
    const apps = JSON.parse(list.stdout) as { client_id: string; kind: string; callback_urls: string[] }[];
    expect(apps.find((a) => a.client_id === 'authcli')).toMatchObject({ kind: 'public', callback_urls: ['http://127.0.0.1/callback'] });
    expect(apps.map((a) => a.client_id)).toEqual(expect.arrayContaining([app.client_id, pub.client_id]));
  });

  it('keys rotate keeps the previous key published in JWKS', async () => {
    const before = (await (await fetch(`${server.issuer}/oauth/jwks`)).json()) as { keys: { kid: string }[] };
    const rotated = await serverCommand(['keys', 'rotate'], server.env);
    expect(rotated.code, rotated.stderr).toBe(0);
    const newKids = [...rotated.stdout.matchAll(/key (\S+)/g)].map((m) => m[1]!);
    expect(newKids).toHaveLength(2);
    // The running server re-reads keys within 30 s; a fresh process sees them at once.
    const second = await startServerProcess({ database: server.env.DATABASE_URL! });
    try {
      const after = (await (await fetch(`${second.issuer}/oauth/jwks`)).json()) as { keys: { kid: string }[] };
      const kids = after.keys.map((k) => k.kid);
      expect(kids).toEqual(expect.arrayContaining([...before.keys.map((k) => k.kid), ...newKids]));
      // Until every instance has published the new keys, tokens are still signed with the previous ones.
      const signedWith = decodeProtectedHeader(
        (await publicCodeFlow(second.issuer, 'http://127.0.0.1:40000/cb', 'openid')).body.id_token,
      ).kid;
      expect(kids).toContain(signedWith);
      expect(newKids).not.toContain(signedWith);
    } finally {
      await second.stop();
    }
  });

  it('LOG_LEVEL=debug logs each request by method and path: no query string, no body, no secret', async () => {
    const debug = await startServerProcess({ database: server.env.DATABASE_URL!, env: { LOG_LEVEL: 'debug' } });
    try {
      const { body, state, code, verifier } = await publicCodeFlow(debug.issuer, 'http://127.0.0.1:40001/cb', 'openid');
      expect(body.access_token).toBeTruthy();
      await fetch(`${debug.issuer}/device?user_code=BCDF-GHJK`);
      await new Promise((r) => setTimeout(r, 200));
      const log = debug.output();
      expect(log).toMatch(/"path":"\/oauth\/authorize"/);
      expect(log).toMatch(/"path":"\/oauth\/token"/);
      expect(log).toMatch(/"path":"\/device"/);
      for (const secret of [state, code, verifier, PASSWORD, body.access_token, 'BCDF-GHJK', 'code_challenge']) {
        expect(log).not.toContain(secret);
      }
    } finally {
      await debug.stop();
    }
  });

  /** The code flow as the public client over real sockets: authorize (sign in, approve), then the token request. */
  async function publicCodeFlow(issuer: string, redirectUri: string, scope: string) {
    const verifier = generateVerifier();
    const state = generateState();
    const nonce = generateNonce();
    const q = new URLSearchParams({
      response_type: 'code',
      client_id: pub.client_id,
      redirect_uri: redirectUri,
      scope,
      state,
      nonce,
      code_challenge: await challengeS256(verifier),
      code_challenge_method: 'S256',
    });
    const callback = new URL(await approveInBrowser(new Browser(issuer), `/oauth/authorize?${q}`, 'alice', PASSWORD));
    const res = await fetch(`${issuer}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code')!,
        redirect_uri: redirectUri,
        client_id: pub.client_id,
        code_verifier: verifier,
      }),
    });
    expect(res.status).toBe(200);
    return {
      callback,
      state,
      nonce,
      verifier,
      code: callback.searchParams.get('code')!,
      body: (await res.json()) as { id_token: string; access_token: string },
    };
  }

  it('operator commands reject bad input with one clear line', async () => {
    const badCallback = await serverCommand(
      ['apps', 'add', '--name', 'X', '--kind', 'public', '--callback', 'http://evil.example/cb', '--scope', 'openid'],
      server.env,
    );
    expect(badCallback.code).toBe(1);
    expect(badCallback.stderr.trim().split('\n')).toHaveLength(1);
    expect(badCallback.stderr).toMatch(/http is allowed only for loopback/);
    const badKind = await serverCommand(
      ['apps', 'add', '--name', 'X', '--kind', 'weird', '--callback', 'https://a.example/cb', '--scope', 'openid'],
      server.env,
    );
    expect(badKind.code).not.toBe(0);
    const dup = await serverCommand(['users', 'add', 'alice', '--password-stdin'], server.env, `${PASSWORD}\n`);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/already exists/);
    const short = await serverCommand(['users', 'add', 'zed', '--password-stdin'], server.env, 'short\n');
    expect(short.code).toBe(1);
    expect(short.stderr).toMatch(/at least 8/);
    const badIssuer = await serverCommand(['start', '--issuer', 'http://example.com'], server.env);
    expect(badIssuer.code).toBe(1);
    expect(badIssuer.stderr).toMatch(/https/);
  });
});

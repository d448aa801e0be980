import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { decodeProtectedHeader } from 'jose';
import { KEY_ACTIVATION_DELAY_MS } from '../src/config/defaults.js';
import { generateSigningKey } from '../src/oauth/keys.js';
import { sha256Hex } from '../src/util/crypto.js';
import {
  authorize,
  dialects,
  seedApp,
  seedUser,
  signedInBrowser,
  startServer,
  tokenRequest,
  type TestServer,
  ownClock,
} from './helpers.js';
import { testRows } from '../src/testing.js';

describe.each(dialects())('metadata, keys and probes (%s)', (dialect) => {
  let server: TestServer;
  let clientId: string;
  const redirectUri = 'https://app.example/callback';

  beforeAll(async () => {
    // The keys a new server makes itself at start, not the ones other test servers share.
    server = await startServer(dialect, {}, { generateKeys: true });
    await seedUser(server);
    clientId = (await seedApp(server, { callbackUrls: [redirectUri] })).app.clientId;
  });
  afterAll(async () => server.close());

  async function idToken(s: TestServer, client: string): Promise<string> {
    const { callback, verifier } = await authorize(s, await signedInBrowser(s), { clientId: client, redirectUri, scope: 'openid' });
    const res = await tokenRequest(s, {
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code')!,
      redirect_uri: redirectUri,
      client_id: client,
      code_verifier: verifier,
    });
    expect(res.status).toBe(200);
    return res.json.id_token as string;
  }

  it('rfc8414 §3 / oidc discovery: both documents advertise the same metadata', async () => {
    const oidc = await (await fetch(`${server.url}/.well-known/openid-configuration`)).json();
    const oauth = await (await fetch(`${server.url}/.well-known/oauth-authorization-server`)).json();
    expect(oauth).toEqual(oidc);
    // RFC 7591: registration is off by default, and then no registration endpoint is named (registration.test.ts has it on).
    expect(oidc).not.toHaveProperty('registration_endpoint');
    expect(oidc).toMatchObject({
      issuer: server.url,
      authorization_endpoint: `${server.url}/oauth/authorize`,
      token_endpoint: `${server.url}/oauth/token`,
      jwks_uri: `${server.url}/oauth/jwks`,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'],
      id_token_signing_alg_values_supported: ['RS256', 'ES256'],
    });
    expect(oidc.grant_types_supported).toContain('authorization_code');
    expect(oidc.code_challenge_methods_supported).not.toContain('plain');
  });

  it('rfc7517 JWKS publishes public keys only, with kid, alg and use', async () => {
    const res = await fetch(`${server.url}/oauth/jwks`);
    expect(res.headers.get('content-type')).toMatch(/^application\/jwk-set\+json/);
    const { keys } = (await res.json()) as { keys: Record<string, string>[] };
    expect(keys.map((k) => k.alg).sort()).toEqual(['ES256', 'RS256']);
    for (const k of keys) {
      expect(k.kid).toBeTruthy();
      expect(k.use).toBe('sig');
      for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi']) expect(k[secret]).toBeUndefined();
    }
  });

  it('codes are stored only as their SHA-256', async () => {
    const { callback } = await authorize(server, await signedInBrowser(server), { clientId, redirectUri, scope: 'openid' });
    const code = callback.searchParams.get('code')!;
    const rows = await testRows(server.store).select('authorization_codes');
    expect(rows.map((r) => r.code_hash)).toContain(sha256Hex(code));
    expect(rows.map((r) => r.code_hash)).not.toContain(code);
  });

  it('key rotation: the new key is published first and signs only after the activation delay; the old one stays published', async () => {
    // A server of its own: the rotation changes the keys every other test here reads.
    const s = await startServer(dialect);
    onTestFinished(() => s.close());
    await seedUser(s);
    const client = (await seedApp(s, { callbackUrls: [redirectUri] })).app.clientId;
    const clock = ownClock(s);
    const before = decodeProtectedHeader(await idToken(s, client)).kid;
    const fresh = await Promise.all([generateSigningKey('RS256', clock.now()), generateSigningKey('ES256', clock.now())]);
    await s.store.keys.rotate(fresh, clock.now());
    clock.advance(31_000); // past the 30 s reload
    const published = ((await (await fetch(`${s.url}/oauth/jwks`)).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    expect(published).toEqual(expect.arrayContaining([before, fresh[0]!.kid, fresh[1]!.kid]));
    expect(decodeProtectedHeader(await idToken(s, client)).kid).toBe(before);
    clock.advance(KEY_ACTIVATION_DELAY_MS);
    expect(decodeProtectedHeader(await idToken(s, client)).kid).toBe(fresh[0]!.kid);
    const still = ((await (await fetch(`${s.url}/oauth/jwks`)).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    expect(still).toContain(before);
  });

  it('CORS: browser clients on other origins may read the protocol endpoints, never with credentials; pages stay same-origin', async () => {
    const origin = { origin: 'https://spa.example' };
    for (const path of ['/.well-known/openid-configuration', '/oauth/jwks']) {
      const res = await fetch(`${server.url}${path}`, { headers: origin });
      expect(res.headers.get('access-control-allow-origin'), path).toBe('*');
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    }
    const token = await fetch(`${server.url}/oauth/token`, {
      method: 'POST',
      headers: { ...origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=x',
    });
    expect(token.headers.get('access-control-allow-origin')).toBe('*');
    const preflight = await fetch(`${server.url}/oauth/userinfo`, {
      method: 'OPTIONS',
      headers: { ...origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/authorization/);
    const page = await fetch(`${server.url}/signin`, { headers: origin });
    expect(page.headers.get('access-control-allow-origin')).toBeNull();
    // Preflights: the protocol endpoints say yes (registration.test.ts: its parameter route too); pages and unknown
    // paths are not found.
    const ask = (path: string, method = 'GET') =>
      fetch(`${server.url}${path}`, { method: 'OPTIONS', headers: { ...origin, 'access-control-request-method': method } });
    for (const path of ['/oauth/token', '/oauth/revoke', '/.well-known/openid-configuration?x=1']) {
      const res = await ask(path, 'POST');
      expect(res.status, path).toBe(204);
      expect(res.headers.get('access-control-allow-origin'), path).toBe('*');
    }
    for (const path of [
      '/account',
      '/dashboard',
      '/signin',
      '/device',
      '/oauth/authorize',
      '/consent',
      '/no/such/path',
      '/oauth/token/x',
    ]) {
      const res = await ask(path, 'POST');
      expect(res.status, path).toBe(404);
      expect(res.headers.get('access-control-allow-origin'), path).toBeNull();
      expect(res.headers.get('access-control-allow-methods'), path).toBeNull();
    }
  });

  it("addresses refused before routing (bad UTF-8, a segment too long) get the app's answer with its security headers, never the address", async () => {
    const long = 'a'.repeat(600);
    const cases: [string, number, 'page' | 'json'][] = [
      ['/dashboard/%ff%fe', 400, 'page'],
      ['/account/%c0%af', 400, 'page'],
      [`/dashboard/apps/${long}`, 414, 'page'],
      ['/oauth/token/%ff', 400, 'json'],
    ];
    for (const [path, status, kind] of cases) {
      const res = await fetch(`${server.url}${path}`);
      const body = await res.text();
      expect(res.status, path).toBe(status);
      expect(res.headers.get('x-content-type-options'), path).toBe('nosniff');
      expect(res.headers.get('content-security-policy'), path).toMatch(/default-src 'none'.*frame-ancestors 'none'/);
      expect(res.headers.get('x-frame-options'), path).toBe('DENY');
      expect(body, path).not.toContain(path.slice(path.lastIndexOf('/') + 1, path.lastIndexOf('/') + 20));
      expect(body, path).not.toContain('FST_');
      if (kind === 'json') expect(JSON.parse(body), path).toMatchObject({ error: 'invalid_request' });
      else expect(res.headers.get('content-type'), path).toMatch(/^text\/html/);
    }
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  it('CORS and nosniff on every protocol answer, errors included; nosniff on probes and unknown paths', async () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://spa.example' };
    const answers = {
      'wrong content type': await fetch(`${server.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      }),
      'oversize body': await fetch(`${server.url}/oauth/token`, { method: 'POST', headers: form, body: `a=${'x'.repeat(2_000_000)}` }),
      'unknown client': await fetch(`${server.url}/oauth/device/authorization`, {
        method: 'POST',
        headers: form,
        body: 'client_id=nobody',
      }),
      'no token': await fetch(`${server.url}/oauth/userinfo`),
      revocation: await fetch(`${server.url}/oauth/revoke`, { method: 'POST', headers: form, body: `client_id=${clientId}&token=x` }),
    };
    for (const [name, res] of Object.entries(answers)) {
      expect(res.status, name).toBeLessThan(500);
      expect(res.headers.get('access-control-allow-origin'), name).toBe('*');
      expect(res.headers.get('x-content-type-options'), name).toBe('nosniff');
    }
    expect(answers['wrong content type'].headers.get('cache-control')).toBe('no-store');
    expect(((await answers['unknown client'].json()) as { error: string }).error).toBe('invalid_client');
    for (const path of ['/healthz', '/readyz', '/no/such/path']) {
      const res = await fetch(`${server.url}${path}`);
      expect(res.headers.get('x-content-type-options'), path).toBe('nosniff');
      expect(res.headers.get('access-control-allow-origin'), path).toBeNull();
    }
  });

  it('healthz answers; readyz checks the store', async () => {
    expect(await (await fetch(`${server.url}/healthz`)).json()).toEqual({ status: 'ok' });
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  });
});

describe('readiness when the store is gone', () => {
  it('readyz is 503 once the database is unreachable', async () => {
    const server = await startServer('sqlite');
    try {
      await server.store.close();
      const res = await fetch(`${server.url}/readyz`);
      expect(res.status).toBe(503);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      await server.close(); // closing the closed store again is harmless; its folder goes too
    }
  });
});

import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/config.js';
import { describeConfig } from '../src/config/describe.js';
import { registerApplication } from '../src/oauth/registration.js';
import { Fapi2Refused } from '../src/oauth/fapi2.js';
import { assertion, assertionFields, type ClientKey, clientKey, jwksOf } from './client-assertions.js';
import {
  authorize,
  basic,
  deviceAuthorization,
  dialects,
  seedApp,
  seedUser,
  signedInBrowser,
  startServer,
  tokenRequest,
  type TestServer,
} from './helpers.js';

/**
 * What AUTHCLI_FAPI2 changes beyond client assertions (private-key-jwt.test.ts): DPoP proofs signed RS256 are
 * refused and not advertised (FAPI 2.0 Security Profile §5.4.1), a confidential client's refresh token is not
 * rotated (§5.3.2.1), and what the profile forbids (a public client, a client secret, RS256 ID tokens: §5.3.2.1,
 * §5.4) is refused at registration and at the token endpoint. The plan's modules themselves run in
 * test/conformance-fapi2-op*.e2e.test.ts.
 */
describe.each(dialects())('AUTHCLI_FAPI2: DPoP algorithms and refresh rotation (%s)', (dialect) => {
  let server: TestServer;
  let conf: { id: string; key: ClientKey };
  const redirectUri = 'https://app.example/callback';

  /** A confidential application with keys (private_key_jwt) and ES256 ID tokens, registered under FAPI 2.0. */
  async function fapiApp(name: string) {
    const key = await clientKey('ES256');
    const { app } = await registerApplication(
      server.store,
      {
        name,
        kind: 'confidential',
        callbackUrls: [redirectUri],
        scopes: ['openid', 'offline_access'],
        grantTypes: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
        clientKeys: { jwks: jwksOf(key) },
      },
      server.clock.now(),
      { fapi2: true },
    );
    return { id: app.clientId, key };
  }
  /** The client's authentication: a fresh assertion, aud the issuer. */
  const authOf = async (c: { id: string; key: ClientKey }) => assertionFields(await assertion(server, c.id, c.key));

  beforeAll(async () => {
    server = await startServer(dialect, { fapi2: true, dpopNonce: false });
    await seedUser(server, 'alice', {});
    conf = await fapiApp('Conf');
  });
  afterAll(async () => server.close());

  async function proof(alg: 'RS256' | 'PS256'): Promise<string> {
    const { privateKey, publicKey } = await generateKeyPair(alg === 'RS256' ? 'RS256' : 'PS256');
    const claims = {
      htm: 'POST',
      htu: `${server.url}/oauth/token`,
      iat: Math.floor(server.clock.now() / 1000),
      jti: randomBytes(16).toString('base64url'),
    };
    return new SignJWT(claims).setProtectedHeader({ alg, typ: 'dpop+jwt', jwk: await exportJWK(publicKey) }).sign(privateKey);
  }

  /** A code of the confidential client, exchanged with client_secret_basic and the given DPoP proof. */
  async function confidentialLogin(dpop?: string) {
    const { callback, verifier } = await authorize(server, await signedInBrowser(server), {
      clientId: conf.id,
      redirectUri,
      scope: 'openid offline_access',
    });
    const fields = {
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code')!,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    };
    return tokenRequest(server, { ...fields, ...(await authOf(conf)) }, dpop ? { dpop } : {});
  }

  it('§5.4.1 a DPoP proof signed RS256 is invalid_dpop_proof; PS256 binds the tokens; discovery lists no RS256', async () => {
    const refused = await confidentialLogin(await proof('RS256'));
    expect([refused.status, refused.json.error]).toEqual([400, 'invalid_dpop_proof']);
    expect(refused.json.error_description).toBe('the DPoP proof alg must be one of ES256, PS256, EdDSA, Ed25519 (RFC 9449 section 4.3)');
    const bound = await confidentialLogin(await proof('PS256'));
    expect([bound.status, bound.json.token_type]).toEqual([200, 'DPoP']);
    const doc = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(doc.dpop_signing_alg_values_supported).toEqual(['ES256', 'PS256', 'EdDSA', 'Ed25519']);
  });

  it('§5.3.2.1 a confidential client refreshes with the same refresh token, which keeps working; another client cannot use it', async () => {
    const t = await confidentialLogin();
    expect(t.status, JSON.stringify(t.json)).toBe(200);
    const refresh = async (token: string, client = conf) =>
      tokenRequest(server, { grant_type: 'refresh_token', refresh_token: token, ...(await authOf(client)) });
    for (let i = 0; i < 3; i++) {
      const r = await refresh(t.json.refresh_token);
      expect(r.status).toBe(200);
      expect(r.json.refresh_token).toBeUndefined();
      expect(r.json.access_token).toBeTruthy();
    }
    // Not rotated, still ended: many refreshes at once all work (no reuse to detect), and a revocation (RFC 7009)
    // ends it for every one of them; another client cannot use it.
    const parallel = await Promise.all(Array.from({ length: 10 }, () => refresh(t.json.refresh_token)));
    expect(parallel.map((r) => r.status)).toEqual(Array(10).fill(200));
    const stolen = await refresh(t.json.refresh_token, await fapiApp('Other'));
    expect([stolen.status, stolen.json.error]).toEqual([400, 'invalid_grant']);
    const revoked = await fetch(`${server.url}/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: t.json.refresh_token, token_type_hint: 'refresh_token', ...(await authOf(conf)) }),
    });
    expect(revoked.status).toBe(200);
    const after = await refresh(t.json.refresh_token);
    expect([after.status, after.json.error]).toEqual([400, 'invalid_grant']);
  });

  it('§5.3.2.1, §5.4 registration refuses what the profile forbids: a public application, a client secret, RS256 ID tokens; ES256 is the default', async () => {
    const register = (input: Partial<Parameters<typeof registerApplication>[1]>) =>
      registerApplication(
        server.store,
        { name: 'X', kind: 'confidential', callbackUrls: [redirectUri], scopes: ['openid'], ...input },
        server.clock.now(),
        { fapi2: true },
      );
    const key = await clientKey('ES256');
    await expect(register({ kind: 'public' })).rejects.toThrow(
      new Fapi2Refused('FAPI 2.0 (AUTHCLI_FAPI2=on) allows confidential applications only'),
    );
    await expect(register({})).rejects.toThrow(/private_key_jwt client authentication only, not a client secret/);
    await expect(register({ clientKeys: { jwks: jwksOf(key) }, idTokenAlg: 'RS256' })).rejects.toThrow(
      /ID tokens signed PS256, ES256 or EdDSA only/,
    );
    const { app } = await register({ clientKeys: { jwks: jwksOf(key) } });
    expect(app.idTokenAlg).toBe('ES256');
  });

  it('§5.3.2.1 the token endpoint refuses, as invalid_client, what was registered before the mode was on: a secret, a public client, RS256 ID tokens', async () => {
    // Registered without FAPI 2.0's checks, as a store from before AUTHCLI_FAPI2=on holds them.
    const secretApp = await seedApp(server, { name: 'Secret', kind: 'confidential', callbackUrls: [redirectUri], scopes: ['openid'] });
    const rsaKey = await clientKey('ES256');
    const { app: rs256 } = await registerApplication(
      server.store,
      {
        name: 'RS256 ID tokens',
        kind: 'confidential',
        callbackUrls: [redirectUri],
        scopes: ['openid'],
        clientKeys: { jwks: jwksOf(rsaKey) },
      },
      server.clock.now(),
    );
    const answers = [
      await tokenRequest(
        server,
        { grant_type: 'refresh_token', refresh_token: 'x' },
        { authorization: basic(secretApp.app.clientId, secretApp.clientSecret!) },
      ),
      await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: 'x', client_id: 'authcli' }),
      await tokenRequest(server, {
        grant_type: 'refresh_token',
        refresh_token: 'x',
        ...(await authOf({ id: rs256.clientId, key: rsaKey })),
      }),
      await deviceAuthorization(server, 'authcli', 'openid'),
    ];
    expect(answers.map((a) => [a.status, a.json.error])).toEqual(Array(4).fill([401, 'invalid_client']));
    expect(answers.map((a) => a.json.error_description)).toEqual([
      expect.stringMatching(/private_key_jwt client authentication only, not a client secret/),
      'FAPI 2.0 (AUTHCLI_FAPI2=on) allows confidential applications only',
      expect.stringMatching(/ID tokens signed PS256, ES256 or EdDSA only, not RS256/),
      'FAPI 2.0 (AUTHCLI_FAPI2=on) allows confidential applications only',
    ]);
    // A wrong secret is still the one answer for any failure: nothing is said of the application.
    const wrong = await tokenRequest(
      server,
      { grant_type: 'refresh_token', refresh_token: 'x' },
      { authorization: basic(secretApp.app.clientId, 'wrong') },
    );
    expect(wrong.json.error_description).toBe('client authentication failed');
  });
});

describe('AUTHCLI_FAPI2 in the configuration', () => {
  it('§5.4 RS256 access tokens are refused at start with FAPI 2.0 on, and `config` states what the mode refuses', () => {
    const env = { AUTHCLI_FAPI2: 'on', AUTHCLI_ACCESS_TOKEN_ALG: 'RS256' };
    expect(() => loadConfig({}, env, {})).toThrow(
      new ConfigError('AUTHCLI_ACCESS_TOKEN_ALG=RS256 is not allowed with AUTHCLI_FAPI2=on (FAPI 2.0 §5.4: PS256, ES256 or EdDSA)'),
    );
    expect(loadConfig({}, { AUTHCLI_ACCESS_TOKEN_ALG: 'RS256' }, {}).accessTokenAlg).toBe('RS256');
    const fapi2 = describeConfig(loadConfig({}, { AUTHCLI_FAPI2: 'on' }, {}), {}, { AUTHCLI_FAPI2: 'on' }).find((s) => s.name === 'fapi2');
    expect(fapi2?.value).toMatch(
      /confidential applications with private_key_jwt only, no secrets; ID tokens, client assertions and DPoP proofs PS256, ES256 or EdDSA, never RS256/,
    );
  });
});

describe.each(dialects())('AUTHCLI_FAPI2 and dynamic registration (%s)', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer(dialect, { fapi2: true, registration: 'open' });
  });
  afterAll(async () => server.close());

  const register = (metadata: Record<string, unknown>) =>
    fetch(`${server.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: ['https://rp.example/cb'], scope: 'openid', ...metadata }),
    });

  it('rfc7591 §3.2.2 a client secret, a public client or RS256 ID tokens are invalid_client_metadata; private_key_jwt with ES256 registers', async () => {
    const key = await clientKey('ES256');
    const refused = [
      await register({ token_endpoint_auth_method: 'client_secret_basic' }),
      await register({ token_endpoint_auth_method: 'none' }),
      await register({ token_endpoint_auth_method: 'private_key_jwt', jwks: jwksOf(key), id_token_signed_response_alg: 'RS256' }),
    ];
    for (const res of refused) {
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: string; error_description: string };
      expect(body.error).toBe('invalid_client_metadata');
      expect(body.error_description).toMatch(/^FAPI 2\.0 \(AUTHCLI_FAPI2=on\) allows /);
    }
    const ok = await register({ token_endpoint_auth_method: 'private_key_jwt', jwks: jwksOf(key) });
    expect(ok.status, await ok.clone().text()).toBe(201);
    expect(await ok.json()).toMatchObject({ token_endpoint_auth_method: 'private_key_jwt', id_token_signed_response_alg: 'ES256' });
  });
});

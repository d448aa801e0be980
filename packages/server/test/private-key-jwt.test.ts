import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../src/config/defaults.js';
import {
  ASSERTION_TYPE,
  assertion,
  assertionFields,
  type ClientKey,
  clientKey,
  forged,
  jwksOf,
  jwksServer,
  seedKeyApp,
} from './client-assertions.js';
import {
  authorize,
  basic,
  dialects,
  ownClock,
  postForm,
  secondInstance,
  seedApp,
  seedUser,
  signedInBrowser,
  startServer,
  tally,
  tokenRequest,
  type TestServer,
} from './helpers.js';

/**
 * private_key_jwt client authentication (RFC 7523 §2.2 and §3, OIDC Core §9): assertions signed by keys the
 * client registered inline (`jwks`) or at a `jwks_uri`, checked claim by claim, each used once; every failure
 * is invalid_client with its own description and counts as a failed client authentication.
 */

const REDIRECT = 'https://app.example/callback';

describe.each(dialects())('private_key_jwt (%s)', (dialect) => {
  let server: TestServer;
  let es: ClientKey;
  let ps: ClientKey;
  let rs: ClientKey;
  let ed: ClientKey;
  let inline: string;
  let byUri: string;
  let withSecret: { id: string; secret: string };

  beforeAll(async () => {
    server = await startServer(dialect);
    await seedUser(server, 'alice');
    [es, ps, rs, ed] = await Promise.all([clientKey('ES256'), clientKey('PS256'), clientKey('RS256'), clientKey('EdDSA')]);
    inline = await seedKeyApp(server, { jwks: jwksOf(es, ps, rs, ed) });
    const s = await seedApp(server, { name: 'With a secret', kind: 'confidential', callbackUrls: [REDIRECT] });
    withSecret = { id: s.app.clientId, secret: s.clientSecret! };
  });
  afterAll(async () => server.close());

  /** A code for `clientId` from the real authorization endpoint. */
  async function code(clientId: string) {
    const r = await authorize(server, await signedInBrowser(server), { clientId, redirectUri: REDIRECT, scope: 'openid offline_access' });
    return { code: r.callback.searchParams.get('code')!, verifier: r.verifier };
  }
  const redeem = (clientId: string, c: { code: string; verifier: string }, clientAssertion: string) =>
    tokenRequest(server, {
      grant_type: 'authorization_code',
      code: c.code,
      redirect_uri: REDIRECT,
      code_verifier: c.verifier,
      ...assertionFields(clientAssertion, clientId),
    });
  const refresh = (clientId: string, refreshToken: string, clientAssertion: string) =>
    tokenRequest(server, { grant_type: 'refresh_token', refresh_token: refreshToken, ...assertionFields(clientAssertion, clientId) });
  /** The cheapest authenticated request: introspection of nothing (200 `active: false` once the client authenticated). */
  const introspect = (clientAssertion: string, clientId?: string, s: { url: string } = server) =>
    fetch(`${s.url}/oauth/introspect`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: 'not-a-token', ...assertionFields(clientAssertion, clientId) }),
    }).then(async (r) => ({ status: r.status, json: (await r.json()) as Record<string, string> }));
  const refusedWith = async (clientAssertion: string, description: RegExp, clientId?: string) => {
    const res = await introspect(clientAssertion, clientId);
    expect(res.status, JSON.stringify(res.json)).toBe(401);
    expect(res.json.error).toBe('invalid_client');
    expect(res.json.error_description).toMatch(description);
  };

  it('rfc7523 §2.2 a code redeemed and refreshed with assertions signed by each registered key (jwks inline)', async () => {
    for (const key of [es, ps, rs, ed]) {
      const tokens = await redeem(inline, await code(inline), await assertion(server, inline, key));
      expect(tokens.status, `${key.alg}: ${JSON.stringify(tokens.json)}`).toBe(200);
      expect(tokens.json.refresh_token).toBeTruthy();
      const refreshed = await refresh(inline, tokens.json.refresh_token, await assertion(server, inline, key));
      expect(refreshed.status, JSON.stringify(refreshed.json)).toBe(200);
      expect(refreshed.json.access_token).toBeTruthy();
    }
  });

  it('rfc7523 §2.2 a code redeemed and refreshed with keys from the jwks_uri (the client_id parameter may be left out)', async () => {
    const keys = await jwksServer({ kind: 'json', body: jwksOf(es) });
    byUri = await seedKeyApp(server, { jwksUri: keys.url, anyAddress: true }, 'Backend with a jwks_uri');
    const tokens = await redeem(byUri, await code(byUri), await assertion(server, byUri, es));
    expect(tokens.status, JSON.stringify(tokens.json)).toBe(200);
    const refreshed = await tokenRequest(server, {
      grant_type: 'refresh_token',
      refresh_token: tokens.json.refresh_token,
      ...assertionFields(await assertion(server, byUri, es)),
    });
    expect(refreshed.status, JSON.stringify(refreshed.json)).toBe(200);
    // Fetched once, then kept (no Cache-Control: the default time).
    expect(keys.requests()).toBe(1);
  });

  it('rfc7523 §3 (9) a key the client did not register: invalid_client, and the code is still good for the client', async () => {
    const stranger = await clientKey('ES256', es.kid);
    const c = await code(inline);
    const res = await redeem(inline, c, await assertion(server, inline, stranger));
    expect(res.status).toBe(401);
    expect(res.json).toMatchObject({ error: 'invalid_client', error_description: expect.stringMatching(/not signed by a key registered/) });
    expect(res.headers.get('www-authenticate')).toMatch(/error="invalid_client"/);
    expect((await redeem(inline, c, await assertion(server, inline, es))).status).toBe(200);
  });

  it('oidc-core §9 jti: an assertion is used once; 20 parallel uses on two instances, exactly one succeeds', async () => {
    const once = await assertion(server, inline, es);
    expect((await introspect(once)).status).toBe(200);
    await refusedWith(once, /used already/);
    const second = await secondInstance(server);
    try {
      const shared = await assertion(server, inline, ed);
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => introspect(shared, undefined, i % 2 ? second : server)));
      expect(tally(answers)).toEqual({ 200: 1, 401: 19 });
      for (const a of answers.filter((x) => x.status === 401)) expect(a.json.error_description).toMatch(/used already/);
    } finally {
      await second.close();
    }
  });

  it('rfc7523 §3 (3) aud: the issuer identifier, or the URL of the token (or another client-authenticating) endpoint', async () => {
    for (const aud of [server.url, `${server.url}/oauth/token`, `${server.url}/oauth/par`, [server.url, 'https://elsewhere.example']]) {
      expect((await introspect(await assertion(server, inline, es, { aud }))).status, JSON.stringify(aud)).toBe(200);
    }
    for (const aud of ['https://elsewhere.example', `${server.url}/`, `${server.url}/oauth/authorize`, undefined]) {
      await refusedWith(await assertion(server, inline, es, { aud }), aud === undefined ? /no aud/ : /aud must be the issuer identifier/);
    }
  });

  it('rfc7523 §3 (4)-(6) exp required, not past, at most 5 minutes ahead; nbf and iat not in the future (30 s leeway)', async () => {
    const now = Math.floor(server.clock.now() / 1000);
    await refusedWith(await assertion(server, inline, es, { exp: undefined }), /no exp/);
    await refusedWith(await assertion(server, inline, es, { exp: now - 31 }), /expired/);
    expect((await introspect(await assertion(server, inline, es, { exp: now - 5 }))).status).toBe(200);
    await refusedWith(await assertion(server, inline, es, { exp: now + 3600 }), /more than 300 seconds ahead/);
    expect((await introspect(await assertion(server, inline, es, { exp: now + 300 }))).status).toBe(200);
    // A NumericDate may have a fraction (RFC 7519 §2): kept until then all the same.
    expect((await introspect(await assertion(server, inline, es, { exp: now + 60.12345 }))).status).toBe(200);
    await refusedWith(await assertion(server, inline, es, { nbf: now + 120 }), /not valid yet/);
    await refusedWith(await assertion(server, inline, es, { iat: now + 120 }), /iat is in the future/);
    expect((await introspect(await assertion(server, inline, es, { iat: now + 10, nbf: now + 10 }))).status).toBe(200);
    await refusedWith(await assertion(server, inline, es, { exp: 'soon' }), /exp is not valid/);
  });

  it('an assertion is checked against the server clock: one made for later fails until then', async () => {
    const clock = ownClock(server);
    const later = await assertion(server, inline, es, {
      iat: Math.floor(clock.now() / 1000) + 200,
      nbf: Math.floor(clock.now() / 1000) + 200,
      exp: Math.floor(clock.now() / 1000) + 260,
    });
    await refusedWith(later, /not valid yet/);
    clock.advance(200_000);
    expect((await introspect(later)).status).toBe(200);
  });

  it('oidc-core §9 jti required, of bounded length; iss and sub both the client_id, as the client_id parameter', async () => {
    await refusedWith(await assertion(server, inline, es, { jti: undefined }), /no jti/);
    await refusedWith(await assertion(server, inline, es, { jti: 'x'.repeat(257) }), /jti must be a string of 1-256/);
    await refusedWith(await assertion(server, inline, es, { jti: 42 }), /jti must be a string/);
    await refusedWith(await assertion(server, inline, es, { sub: 'someone-else' }), /iss and sub must both be the client_id/);
    await refusedWith(await assertion(server, inline, es, { iss: undefined }), /iss and sub must both be the client_id/);
    await refusedWith(await assertion(server, inline, es), /client_id differs/, withSecret.id);
    expect((await introspect(await assertion(server, inline, es), inline)).status).toBe(200);
  });

  it('rfc7518 §3.6, rfc8725 §3.1 alg none and HMAC are refused before any key is looked at; so is a made-up signature', async () => {
    const claims = { iss: inline, sub: inline, aud: server.url, jti: 'j', exp: Math.floor(server.clock.now() / 1000) + 60 };
    await refusedWith(forged({ alg: 'none' }, claims), /alg must be one of PS256, ES256, EdDSA, RS256/);
    await refusedWith(forged({ alg: 'HS256' }, claims, 'c2ln'), /alg must be one of/);
    await refusedWith(forged({ alg: 'ES256', kid: es.kid }, claims, 'c2ln'), /not signed by a key registered/);
    await refusedWith('not.a-jwt', /must be a signed JWT/);
    await refusedWith('x'.repeat(9000), /longer than 8192/);
  });

  it('the form: the assertion type is the jwt-bearer URN, both parameters sent, one method per request', async () => {
    const a = await assertion(server, inline, es);
    const form = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
      postForm(server, '/oauth/introspect', { token: 'x', ...fields }, headers);
    const wrongType = await form({
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:saml2-bearer',
      client_assertion: a,
    });
    expect(wrongType.json).toMatchObject({ error: 'invalid_client', error_description: expect.stringMatching(/jwt-bearer/) });
    expect((await form({ client_assertion_type: ASSERTION_TYPE })).json.error_description).toMatch(/client_assertion is missing/);
    expect((await form({ client_assertion: a })).json.error_description).toMatch(/client_assertion_type must be/);
    const twoMethods = await form(assertionFields(a), { authorization: basic(inline, 'x') });
    expect([twoMethods.status, twoMethods.json.error]).toEqual([400, 'invalid_request']);
    expect((await form({ ...assertionFields(a), client_secret: 'x' })).json.error).toBe('invalid_request');
  });

  it('a client with keys never authenticates with a secret; a client with a secret never with an assertion', async () => {
    const res = await postForm(server, '/oauth/introspect', { token: 'x' }, { authorization: basic(inline, 'anything') });
    expect([res.status, res.json.error]).toEqual([401, 'invalid_client']);
    const other = await assertion(server, withSecret.id, es);
    await refusedWith(other, /not signed by a key registered/);
    await refusedWith(await assertion(server, 'no-such-client', es), /not signed by a key registered/);
    const ok = await postForm(server, '/oauth/introspect', { token: 'x' }, { authorization: basic(withSecret.id, withSecret.secret) });
    expect(ok.status).toBe(200);
  });

  it('every endpoint that authenticates clients takes an assertion: PAR, device authorization, revocation, introspection', async () => {
    const par = await postForm(server, '/oauth/par', {
      response_type: 'code',
      redirect_uri: REDIRECT,
      scope: 'openid',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      ...assertionFields(await assertion(server, inline, ps, { aud: `${server.url}/oauth/par` }), inline),
    });
    expect(par.status, JSON.stringify(par.json)).toBe(201);
    const device = await postForm(server, '/oauth/device/authorization', {
      scope: 'openid',
      ...assertionFields(await assertion(server, inline, ed), inline),
    });
    expect(device.status, JSON.stringify(device.json)).toBe(200);
    const revoke = await postForm(server, '/oauth/revoke', { token: 'x', ...assertionFields(await assertion(server, inline, rs)) });
    expect(revoke.status).toBe(200);
  });

  it('rfc8414 §2 discovery: private_key_jwt and its algorithms at the token, revocation and introspection endpoints', async () => {
    const doc = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, string[]>;
    expect(doc.token_endpoint_auth_methods_supported).toContain('private_key_jwt');
    expect(doc.revocation_endpoint_auth_methods_supported).toContain('private_key_jwt');
    expect(doc.introspection_endpoint_auth_methods_supported).toContain('private_key_jwt');
    for (const name of ['token', 'revocation', 'introspection']) {
      expect(doc[`${name}_endpoint_auth_signing_alg_values_supported`]).toEqual(['PS256', 'ES256', 'EdDSA', 'RS256']);
    }
  });
});

describe.each(dialects())('private_key_jwt under AUTHCLI_FAPI2, and its failures counted (%s)', (dialect) => {
  let server: TestServer | undefined;
  afterAll(async () => server?.close());

  it('FAPI 2.0: RS256 refused (PS256, ES256, EdDSA only), aud only the issuer as a string; discovery says so', async () => {
    const s = await startServer(dialect, { fapi2: true });
    server = s;
    const [rs, ps] = await Promise.all([clientKey('RS256'), clientKey('PS256')]);
    const id = await seedKeyApp(s, { jwks: jwksOf(rs, ps) });
    // ID tokens as FAPI 2.0 allows them (an RS256 one is refused: fapi2.test.ts).
    await s.store.applications.update(id, { idTokenAlg: 'ES256' }, s.clock.now());
    const introspect = async (a: string) => postForm(s, '/oauth/introspect', { token: 'x', ...assertionFields(a) });
    const rsRes = await introspect(await assertion(s, id, rs));
    expect([rsRes.status, rsRes.json.error_description]).toEqual([401, 'the client assertion alg must be one of PS256, ES256, EdDSA']);
    expect((await introspect(await assertion(s, id, ps))).status).toBe(200);
    for (const aud of [`${s.url}/oauth/token`, [s.url]]) {
      const res = await introspect(await assertion(s, id, ps, { aud }));
      expect([res.status, res.json.error_description]).toEqual([401, 'the client assertion aud must be the issuer identifier (FAPI 2.0)']);
    }
    const doc = (await (await fetch(`${s.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(doc.token_endpoint_auth_signing_alg_values_supported).toEqual(['PS256', 'ES256', 'EdDSA']);
    await s.close();
    server = undefined;
  });

  it('every failed assertion counts into client-auth-ip like a wrong secret; past the limit even a good one is answered 429', async () => {
    const s = await startServer(dialect, { limits: { ...LIMITS, 'client-auth-ip': { limit: 5, windowMs: 15 * 60_000 } } });
    server = s;
    const key = await clientKey('ES256');
    const id = await seedKeyApp(s, { jwks: jwksOf(key) });
    const introspect = async (a: string) => postForm(s, '/oauth/introspect', { token: 'x', ...assertionFields(a) });
    // Successes are never counted.
    expect(tally(await Promise.all(Array.from({ length: 10 }, async () => introspect(await assertion(s, id, key)))))).toEqual({ 200: 10 });
    expect(await s.store.rateLimits.list()).toEqual([]);
    const stranger = await clientKey('ES256');
    const failures = [
      await assertion(s, id, stranger),
      await assertion(s, id, key, { aud: 'https://elsewhere.example' }),
      forged({ alg: 'none' }, { iss: id, sub: id }),
      'garbage',
      await assertion(s, id, key, { exp: undefined }),
      await assertion(s, id, key, { jti: undefined }),
    ];
    const answers = [];
    for (const a of failures) answers.push(await introspect(a));
    expect(answers.map((a) => [a.status, a.json.error])).toEqual([
      ...Array.from({ length: 5 }, () => [401, 'invalid_client']),
      [429, 'temporarily_unavailable'],
    ]);
    expect((await s.store.rateLimits.list()).map((r) => [r.key, r.count])).toEqual([['client-auth-ip|127.0.0.1', 5]]);
    const good = await introspect(await assertion(s, id, key));
    expect([good.status, good.json.error]).toEqual([429, 'temporarily_unavailable']);
    await s.close();
    server = undefined;
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { createHash } from 'node:crypto';
import { generateVerifier } from '@authcli/pkce';
import { sha256Hex } from '../src/util/crypto.js';
import {
  authorize,
  basic,
  Browser,
  dialects,
  seedApp,
  seedUser,
  signedInBrowser,
  startServer,
  tokenRequest,
  ownClock,
  type TestServer,
} from './helpers.js';
import { testRows } from '../src/testing.js';

describe.each(dialects())('token endpoint, authorization_code grant (%s)', (dialect) => {
  let server: TestServer;
  let pub: string;
  let other: string;
  let conf: { id: string; secret: string };
  let es: string;
  const redirectUri = 'https://app.example/callback';

  beforeAll(async () => {
    server = await startServer(dialect);
    await seedUser(server, 'alice', { email: 'alice@example.com' });
    pub = (await seedApp(server, { callbackUrls: [redirectUri, 'http://127.0.0.1/cb', 'http://localhost/cb'] })).app.clientId;
    other = (await seedApp(server, { name: 'Other', callbackUrls: [redirectUri] })).app.clientId;
    const c = await seedApp(server, { name: 'Conf', kind: 'confidential', callbackUrls: [redirectUri] });
    conf = { id: c.app.clientId, secret: c.clientSecret! };
    es = (await seedApp(server, { name: 'ES', callbackUrls: [redirectUri], idTokenAlg: 'ES256' })).app.clientId;
  });
  afterAll(async () => server.close());

  /** A code from the real authorization endpoint, for a signed-in browser of its own (seeded unless `browser` is given). */
  async function code(clientId = pub, opts: { redirectUri?: string; scope?: string; browser?: Browser } = {}) {
    const b = opts.browser ?? (await signedInBrowser(server));
    const r = await authorize(server, b, {
      clientId,
      redirectUri: opts.redirectUri ?? redirectUri,
      scope: opts.scope ?? 'openid profile email',
    });
    return { code: r.callback.searchParams.get('code')!, verifier: r.verifier, nonce: r.nonce, callback: r.callback };
  }

  const exchange = (c: { code: string; verifier: string }, clientId = pub, extra: Record<string, string> = {}) =>
    tokenRequest(server, {
      grant_type: 'authorization_code',
      code: c.code,
      redirect_uri: redirectUri,
      client_id: clientId,
      code_verifier: c.verifier,
      ...extra,
    });

  it('rfc6749 §5.1 success: Bearer JWT access token (rfc9068) and ID token, no-store', async () => {
    // End to end: signed in through the form, whose sign-in the ID token's auth_time and amr describe.
    const c = await code(pub, { browser: new Browser(server.url) });
    const res = await exchange(c);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.json).toMatchObject({ token_type: 'Bearer', expires_in: 900, scope: 'openid profile email' });
    const jwks = createRemoteJWKSet(new URL(`${server.url}/oauth/jwks`));
    const at = await jwtVerify(res.json.access_token, jwks, { issuer: server.url, typ: 'at+jwt', audience: server.url });
    expect(at.payload).toMatchObject({ client_id: pub, scope: 'openid profile email' });
    expect(at.payload.sub).toBeTruthy();
    expect(at.payload.jti).toBeTruthy();
    expect(at.protectedHeader.alg).toBe('ES256');
    const id = await jwtVerify(res.json.id_token, jwks, { issuer: server.url, audience: pub });
    expect(id.protectedHeader.alg).toBe('RS256');
    expect(id.payload).toMatchObject({ nonce: c.nonce, azp: pub, sub: at.payload.sub, amr: ['pwd'] });
    // OIDC Core §5.4: an access token was issued, so the profile and email claims are userinfo's.
    expect(id.payload).not.toHaveProperty('preferred_username');
    expect(id.payload).not.toHaveProperty('email');
    expect(typeof id.payload.auth_time).toBe('number');
    const digest = createHash('sha256').update(res.json.access_token).digest();
    expect(id.payload.at_hash).toBe(digest.subarray(0, 16).toString('base64url'));
  });

  it('ES256 ID tokens per application', async () => {
    const res = await exchange(await code(es), es);
    expect(res.status).toBe(200);
    expect(decodeProtectedHeader(res.json.id_token).alg).toBe('ES256');
    const jwks = createRemoteJWKSet(new URL(`${server.url}/oauth/jwks`));
    await jwtVerify(res.json.id_token, jwks, { issuer: server.url, audience: es });
  });

  it('no ID token without the openid scope', async () => {
    const res = await exchange(await code(pub, { scope: 'profile' }));
    expect(res.status).toBe(200);
    expect(res.json.id_token).toBeUndefined();
  });

  it('rfc7636 §4.6 wrong verifier is invalid_grant and leaves the code usable', async () => {
    const c = await code();
    const wrong = await exchange({ code: c.code, verifier: generateVerifier() });
    expect(wrong.status).toBe(400);
    expect(wrong.json.error).toBe('invalid_grant');
    expect((await exchange(c)).status).toBe(200);
  });

  it('rfc7636 §4.5 a missing or malformed verifier is rejected', async () => {
    const c = await code();
    const res = await tokenRequest(server, { grant_type: 'authorization_code', code: c.code, redirect_uri: redirectUri, client_id: pub });
    expect(res.json.error).toBe('invalid_grant');
    for (const v of ['a'.repeat(42), 'a'.repeat(129), `${'a'.repeat(42)}+`]) {
      expect((await exchange({ code: c.code, verifier: v })).json.error).toBe('invalid_grant');
    }
  });

  it('rfc7636 §4.6 the challenge is compared as a string: a non-canonical base64url form of the right hash fails', async () => {
    const c = await code();
    const row = (await server.store.codes.find(sha256Hex(c.code)))!;
    // 43 characters carry 258 bits; the last character's two low bits are padding. Setting one gives a different
    // string that decodes to the same 32 bytes.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = row.code_challenge!.at(-1)!;
    const twin = row.code_challenge!.slice(0, 42) + alphabet[alphabet.indexOf(last) ^ 1];
    expect(Buffer.from(twin, 'base64url').equals(Buffer.from(row.code_challenge!, 'base64url'))).toBe(true);
    await testRows(server.store).update('authorization_codes', { code_hash: row.code_hash }, { code_challenge: twin });
    const res = await exchange(c);
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('invalid_grant');
    await testRows(server.store).update('authorization_codes', { code_hash: row.code_hash }, { code_challenge: row.code_challenge });
    expect((await exchange(c)).status).toBe(200);
  });

  it('rfc9700 §2.1.1 a verifier for a code issued without challenge is rejected (PKCE downgrade)', async () => {
    const c = await code();
    const hash = sha256Hex(c.code);
    await testRows(server.store).update('authorization_codes', { code_hash: hash }, { code_challenge: null, code_challenge_method: null });
    const res = await exchange(c);
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('invalid_grant');
    expect(res.json.error_description).toMatch(/without code_challenge/);
  });

  it('rfc6749 §4.1.2 code replay is invalid_grant and revokes the tokens issued from it', async () => {
    const c = await code();
    const first = await exchange(c);
    expect(first.status).toBe(200);
    const me = await fetch(`${server.url}/oauth/jwks`);
    expect(me.status).toBe(200);
    const grantId = JSON.parse(Buffer.from(first.json.access_token.split('.')[1], 'base64url').toString()).gid as string;
    expect((await server.store.grants.find(grantId))!.revoked_at).toBeNull();
    const replay = await exchange(c);
    expect(replay.status).toBe(400);
    expect(replay.json.error).toBe('invalid_grant');
    expect((await server.store.grants.find(grantId))!.revoked_at).not.toBeNull();
  });

  it('code replay: concurrent redemptions have exactly one winner', async () => {
    const c = await code();
    const results = await Promise.all(Array.from({ length: 8 }, () => exchange(c)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.json.error === 'invalid_grant')).toHaveLength(7);
  });

  it('rfc6749 §4.1.2 expired code (after 60 s) is invalid_grant', async () => {
    const c = await code();
    const clock = ownClock(server);
    clock.advance(60_001);
    const res = await exchange(c);
    expect(res.json.error).toBe('invalid_grant');
    expect(res.json.error_description).toMatch(/expired/);
  });

  it('a code just inside its 60 s lifetime still works', async () => {
    const c = await code();
    const clock = ownClock(server);
    clock.advance(59_000);
    expect((await exchange(c)).status).toBe(200);
  });

  it('rfc6749 §4.1.3 code of another client is invalid_grant and not burnt', async () => {
    const c = await code(pub);
    const stolen = await exchange(c, other);
    expect(stolen.json.error).toBe('invalid_grant');
    expect((await exchange(c, pub)).status).toBe(200);
  });

  it('rfc6749 §4.1.3 redirect_uri mismatch at the token endpoint is invalid_grant', async () => {
    const c = await code();
    expect((await exchange(c, pub, { redirect_uri: 'https://app.example/other' })).json.error).toBe('invalid_grant');
    const missing = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code: c.code,
      client_id: pub,
      code_verifier: c.verifier,
    });
    expect(missing.json.error).toBe('invalid_request');
  });

  it('rfc8252 §7.3 loopback code must be redeemed with the exact port it was issued for', async () => {
    const c = await code(pub, { redirectUri: 'http://127.0.0.1:45678/cb' });
    const wrongPort = await exchange(c, pub, { redirect_uri: 'http://127.0.0.1:45679/cb' });
    expect(wrongPort.json.error).toBe('invalid_grant');
    expect((await exchange(c, pub, { redirect_uri: 'http://127.0.0.1:45678/cb' })).status).toBe(200);
  });

  it('rfc6749 §5.2 unknown, garbled and oversized codes are invalid_grant', async () => {
    for (const bad of ['nope', 'x'.repeat(300)]) {
      const res = await exchange({ code: bad, verifier: generateVerifier() });
      expect(res.status, bad.slice(0, 10)).toBe(400);
      expect(res.json.error, bad.slice(0, 10)).toBe('invalid_grant');
    }
  });

  it('rfc6749 §5.2 an empty code is a missing parameter (§3.1: sent without a value is omitted): invalid_request', async () => {
    const res = await exchange({ code: '', verifier: generateVerifier() });
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('invalid_request');
  });

  it('rfc6749 §2.3.1 confidential client with HTTP Basic (form-urlencoded id and secret)', async () => {
    const c = await code(conf.id);
    const res = await tokenRequest(
      server,
      { grant_type: 'authorization_code', code: c.code, redirect_uri: redirectUri, code_verifier: c.verifier },
      { authorization: basic(conf.id, conf.secret) },
    );
    expect(res.status).toBe(200);
  });

  it('rfc6749 §2.3.1 confidential client with client_secret_post', async () => {
    const c = await code(conf.id);
    expect((await exchange(c, conf.id, { client_secret: conf.secret })).status).toBe(200);
  });

  it('rfc6749 §5.2 wrong secret is 401 invalid_client with WWW-Authenticate', async () => {
    const c = await code(conf.id);
    const res = await tokenRequest(
      server,
      { grant_type: 'authorization_code', code: c.code, redirect_uri: redirectUri, code_verifier: c.verifier },
      { authorization: basic(conf.id, 'wrong') },
    );
    expect(res.status).toBe(401);
    expect(res.json.error).toBe('invalid_client');
    expect(res.headers.get('www-authenticate')).toMatch(/^Basic /);
    const post = await exchange(c, conf.id, { client_secret: 'wrong' });
    expect(post.status).toBe(401);
    expect(post.headers.get('www-authenticate')).toBeTruthy();
  });

  it('rfc6749 §5.2 confidential client without credentials, unknown client, public client with a secret: invalid_client', async () => {
    const c = await code(conf.id);
    expect((await exchange(c, conf.id)).status).toBe(401);
    expect((await exchange(c, 'no-such-client')).json.error).toBe('invalid_client');
    expect((await exchange(c, pub, { client_secret: 'x' })).json.error).toBe('invalid_client');
    const none = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code: c.code,
      redirect_uri: redirectUri,
      code_verifier: c.verifier,
    });
    expect(none.status).toBe(401);
  });

  it('rfc6749 §5.2 invalid_client says the same for an unknown client, a wrong secret, a missing secret and a secret for a public client', async () => {
    const c = await code(conf.id);
    const answers = [
      await exchange(c, 'no-such-client'),
      await exchange(c, conf.id, { client_secret: 'wrong' }),
      await tokenRequest(
        server,
        { grant_type: 'authorization_code', code: c.code, redirect_uri: redirectUri, code_verifier: c.verifier },
        { authorization: basic(conf.id, 'wrong') },
      ),
      await exchange(c, conf.id),
      await exchange(c, pub, { client_secret: 'x' }),
    ];
    for (const a of answers) {
      expect(a.status).toBe(401);
      expect(a.json).toEqual(answers[0]!.json);
      expect(a.headers.get('www-authenticate')).toBe(answers[0]!.headers.get('www-authenticate'));
    }
    expect(answers[0]!.json).toEqual({ error: 'invalid_client', error_description: 'client authentication failed' });
  });

  it('rfc6749 §2.3 two client authentication methods at once are invalid_request', async () => {
    const c = await code(conf.id);
    const res = await tokenRequest(
      server,
      { grant_type: 'authorization_code', code: c.code, redirect_uri: redirectUri, code_verifier: c.verifier, client_secret: conf.secret },
      { authorization: basic(conf.id, conf.secret) },
    );
    expect(res.json.error).toBe('invalid_request');
  });

  it('malformed Authorization headers are invalid_client, not a crash', async () => {
    for (const h of [
      'Basic',
      'Basic !!!',
      `Basic ${Buffer.from('nocolon').toString('base64')}`,
      'Bearer abc',
      `Basic ${Buffer.from('%zz:%zz').toString('base64')}`,
    ]) {
      const res = await tokenRequest(
        server,
        { grant_type: 'authorization_code', code: 'x', redirect_uri: redirectUri, code_verifier: generateVerifier() },
        { authorization: h },
      );
      expect(res.status, h).toBe(401);
      expect(res.json.error).toBe('invalid_client');
    }
  });

  it('rfc6749 §3.2 repeated parameters are invalid_request', async () => {
    const c = await code();
    const body = new URLSearchParams({
      grant_type: 'authorization_code',
      code: c.code,
      redirect_uri: redirectUri,
      client_id: pub,
      code_verifier: c.verifier,
    }).toString();
    const res = await tokenRequest(server, `${body}&code=${c.code}`);
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('invalid_request');
    expect(res.json.error_description).toBe('the code parameter is repeated');
    expect((await exchange(c)).status).toBe(200);
  });

  it('rfc6749 §3.2 wrong content types are invalid_request', async () => {
    const c = await code();
    const fields = { grant_type: 'authorization_code', code: c.code, redirect_uri: redirectUri, client_id: pub, code_verifier: c.verifier };
    for (const [type, body] of [
      ['application/json', JSON.stringify(fields)],
      ['text/plain', new URLSearchParams(fields).toString()],
      ['multipart/form-data; boundary=x', '--x--'],
    ] as const) {
      const res = await fetch(`${server.url}/oauth/token`, { method: 'POST', headers: { 'content-type': type }, body });
      expect(res.status, type).toBe(400);
      expect((await res.json()).error).toBe('invalid_request');
    }
    const noBody = await fetch(`${server.url}/oauth/token`, { method: 'POST' });
    expect(noBody.status).toBe(400);
    expect((await noBody.json()).error).toBe('invalid_request');
  });

  it('oversize body gets 413 invalid_request and the server stays up', async () => {
    const res = await tokenRequest(server, `grant_type=authorization_code&code=${'a'.repeat(64 * 1024)}`);
    expect(res.status).toBe(413);
    expect(res.json.error).toBe('invalid_request');
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  it('invalid UTF-8 and bad percent-encoding are invalid_request', async () => {
    for (const body of [Buffer.from([0x67, 0x3d, 0xff, 0xfe]), Buffer.from('grant_type=%E0%A4%A'), Buffer.from('grant_type=%C3%28')]) {
      const res = await fetch(`${server.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
      expect(res.status).toBe(400);
      expect((await res.json()).error).toBe('invalid_request');
    }
  });

  it('unsupported and missing grant types', async () => {
    expect((await tokenRequest(server, { grant_type: 'password', client_id: pub })).json.error).toBe('unsupported_grant_type');
    expect((await tokenRequest(server, { grant_type: '__proto__', client_id: pub })).json.error).toBe('unsupported_grant_type');
    expect((await tokenRequest(server, { client_id: pub })).json.error).toBe('invalid_request');
  });

  it('rfc6749 §5.2 a client not allowed the grant is unauthorized_client', async () => {
    const { app } = await seedApp(server, {
      name: 'NoCode',
      grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'],
      callbackUrls: [],
    });
    const res = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code: 'x',
      redirect_uri: redirectUri,
      client_id: app.clientId,
      code_verifier: generateVerifier(),
    });
    expect(res.json.error).toBe('unauthorized_client');
  });

  it('a disabled account cannot redeem a code', async () => {
    await seedUser(server, 'bob');
    const c = await code(pub, { scope: 'openid', browser: await signedInBrowser(server, 'bob') });
    await server.store.users.setDisabled('bob', server.clock.now());
    const out = await exchange(c);
    expect(out.json.error).toBe('invalid_grant');
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { approveInBrowser } from '@authcli/test-support/http';
import {
  authorizeUrl,
  basic,
  dialects,
  PASSWORD,
  postForm,
  seedApp,
  seedUser,
  signedInBrowser,
  startServer,
  tokenRequest,
  ownClock,
  type TestServer,
} from './helpers.js';

/** RFC 7662 token introspection. */
describe.each(dialects())('token introspection (%s)', (dialect) => {
  let server: TestServer;
  let conf: { id: string; secret: string };
  let other: { id: string; secret: string };
  let pub: string;
  const redirectUri = 'https://app.example/callback';

  beforeAll(async () => {
    server = await startServer(dialect);
    await seedUser(server, 'alice');
    const c = await seedApp(server, { name: 'Conf', kind: 'confidential', callbackUrls: [redirectUri] });
    conf = { id: c.app.clientId, secret: c.clientSecret! };
    const o = await seedApp(server, { name: 'Other', kind: 'confidential', callbackUrls: [redirectUri] });
    other = { id: o.app.clientId, secret: o.clientSecret! };
    pub = (await seedApp(server, { name: 'Public', callbackUrls: [redirectUri] })).app.clientId;
  });
  afterAll(async () => server.close());

  /** A code login of `client`: an access token, a refresh token and an ID token. */
  async function login(client: { id: string; secret: string } = conf, scope = 'openid profile offline_access', username = 'alice') {
    const { url, verifier } = await authorizeUrl({ clientId: client.id, redirectUri, scope });
    const callback = new URL(await approveInBrowser(await signedInBrowser(server, username), server.url + url, username, PASSWORD));
    const res = await tokenRequest(
      server,
      { grant_type: 'authorization_code', code: callback.searchParams.get('code')!, redirect_uri: redirectUri, code_verifier: verifier },
      { authorization: basic(client.id, client.secret) },
    );
    expect(res.status).toBe(200);
    return res.json as { access_token: string; refresh_token: string; id_token: string };
  }

  const introspect = (fields: Record<string, string>, client: { id: string; secret: string } | null = conf) =>
    postForm(server, '/oauth/introspect', fields, client ? { authorization: basic(client.id, client.secret) } : {});

  it('rfc7662 §2.2 an active access token: active, scope, client_id, username, token_type, exp, iat, nbf, sub, aud, iss, jti; no-store', async () => {
    const tokens = await login();
    const res = await introspect({ token: tokens.access_token });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const claims = decodeJwt(tokens.access_token);
    expect(res.json).toMatchObject({
      active: true,
      scope: 'openid profile offline_access',
      client_id: conf.id,
      username: 'alice',
      token_type: 'Bearer',
      exp: claims.exp,
      iat: claims.iat,
      sub: claims.sub,
      aud: claims.aud,
      iss: server.url,
      jti: claims.jti,
    });
    expect(res.json.nbf).toBeLessThanOrEqual(claims.iat!);
  });

  it('rfc7662 §2.2 an active refresh token (stored hashed) is active with its grant, without an access token type', async () => {
    const tokens = await login();
    const res = await introspect({ token: tokens.refresh_token, token_type_hint: 'refresh_token' });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      active: true,
      scope: 'openid profile offline_access',
      client_id: conf.id,
      username: 'alice',
      iss: server.url,
    });
    expect(res.json.sub).toBe(decodeJwt(tokens.access_token).sub);
    expect(res.json.exp).toBeGreaterThan(res.json.iat);
    expect(res.json.token_type).toBeUndefined();
  });

  it('rfc7662 §2.1 a wrong token_type_hint does not hide the token (the server looks further)', async () => {
    const tokens = await login();
    expect((await introspect({ token: tokens.access_token, token_type_hint: 'refresh_token' })).json.active).toBe(true);
    expect((await introspect({ token: tokens.refresh_token, token_type_hint: 'access_token' })).json.active).toBe(true);
    expect((await introspect({ token: tokens.refresh_token, token_type_hint: 'something_else' })).json.active).toBe(true);
  });

  it('rfc7662 §2.2 unknown and malformed tokens, and ID tokens, are {"active":false} and nothing more', async () => {
    const tokens = await login();
    for (const token of ['nope', 'a'.repeat(43), 'x.y.z', tokens.id_token, `${tokens.access_token}x`, 'a'.repeat(5000)]) {
      const res = await introspect({ token });
      expect(res.status, token.slice(0, 20)).toBe(200);
      expect(res.json).toEqual({ active: false });
    }
  });

  it('rfc7662 §2.2 an expired access token is inactive; the refresh token lives on until its own expiry', async () => {
    const tokens = await login();
    const clock = ownClock(server);
    clock.advance((server.config.accessTokenTtlSeconds + 1) * 1000);
    expect((await introspect({ token: tokens.access_token })).json).toEqual({ active: false });
    expect((await introspect({ token: tokens.refresh_token })).json.active).toBe(true);
  });

  it('rfc7662 §2.2 revoked (rfc7009) and rotated tokens are inactive', async () => {
    const a = await login();
    const rotated = await tokenRequest(
      server,
      { grant_type: 'refresh_token', refresh_token: a.refresh_token },
      { authorization: basic(conf.id, conf.secret) },
    );
    expect(rotated.status).toBe(200);
    expect((await introspect({ token: a.refresh_token })).json).toEqual({ active: false });
    expect((await introspect({ token: rotated.json.refresh_token })).json.active).toBe(true);

    const b = await login();
    const revoked = await postForm(
      server,
      '/oauth/revoke',
      { token: b.access_token, token_type_hint: 'access_token' },
      { authorization: basic(conf.id, conf.secret) },
    );
    expect(revoked.status).toBe(200);
    expect((await introspect({ token: b.access_token })).json).toEqual({ active: false });
    await postForm(server, '/oauth/revoke', { token: b.refresh_token }, { authorization: basic(conf.id, conf.secret) });
    expect((await introspect({ token: b.refresh_token })).json).toEqual({ active: false });
  });

  it("rfc7662 §2.2 a disabled account's tokens are inactive", async () => {
    await seedUser(server, 'dora');
    const tokens = await login(conf, 'openid offline_access', 'dora');
    expect((await introspect({ token: tokens.access_token })).json).toMatchObject({ active: true, username: 'dora' });
    await server.store.users.setDisabled('dora', server.clock.now());
    expect((await introspect({ token: tokens.access_token })).json).toEqual({ active: false });
    expect((await introspect({ token: tokens.refresh_token })).json).toEqual({ active: false });
  });

  it('rfc7662 §2.2 a token issued to another client is answered exactly as an unknown one (no leak that it exists)', async () => {
    const theirs = await login(other);
    const unknown = await introspect({ token: 'a'.repeat(43) });
    for (const token of [theirs.access_token, theirs.refresh_token]) {
      const res = await introspect({ token });
      expect(res.status).toBe(200);
      expect(res.json).toEqual(unknown.json);
      expect(res.headers.get('cache-control')).toBe(unknown.headers.get('cache-control'));
    }
    expect((await introspect({ token: theirs.access_token }, other)).json.active).toBe(true);
  });

  it("rfc7662 §2.1 a resource server allowed its owner's applications sees their tokens, and no one else's", async () => {
    const dev = await seedUser(server, 'dev-rs');
    const stranger = await seedUser(server, 'dev-other');
    const make = async (name: string, ownerId: string | undefined, introspection?: string) => {
      const r = await seedApp(server, {
        name,
        kind: 'confidential',
        callbackUrls: [redirectUri],
        ...(ownerId && { ownerId }),
        ...(introspection && { introspection }),
      });
      return { id: r.app.clientId, secret: r.clientSecret! };
    };
    const app = await make('Dev app', dev.id);
    const rs = await make('Dev resource server', dev.id, 'owner');
    const strangers = await make('Stranger app', stranger.id);
    const ownerless = await make('Operator RS', undefined, 'owner');
    const everything = await make('Gateway', undefined, 'all');
    const mine = await login(app);
    const theirs = await login(strangers);
    const unknown = await introspect({ token: 'a'.repeat(43) });
    for (const token of [mine.access_token, mine.refresh_token]) {
      const seen = await introspect({ token }, rs);
      expect(seen.json).toMatchObject({ active: true, client_id: app.id, username: 'alice' });
      // An application of no dashboard user has no siblings: 'owner' is its own tokens only.
      expect((await introspect({ token }, ownerless)).json).toEqual(unknown.json);
      expect((await introspect({ token }, everything)).json).toMatchObject({ active: true, client_id: app.id });
      // The other way round, the application does not see the resource server's view (its own setting is 'own').
      expect((await introspect({ token }, strangers)).json).toEqual(unknown.json);
    }
    for (const token of [theirs.access_token, theirs.refresh_token]) {
      expect((await introspect({ token }, rs)).json).toEqual(unknown.json);
      expect((await introspect({ token }, everything)).json).toMatchObject({ active: true, client_id: strangers.id });
    }
    // Revoked is inactive for the resource server too.
    await postForm(server, '/oauth/revoke', { token: mine.refresh_token }, { authorization: basic(app.id, app.secret) });
    expect((await introspect({ token: mine.refresh_token }, rs)).json).toEqual({ active: false });
    // Taking the permission away takes effect at once on this instance.
    await server.store.applications.update(rs.id, { introspection: 'own' }, server.clock.now());
    expect((await introspect({ token: mine.access_token }, rs)).json).toEqual(unknown.json);
  });

  it('rfc7662 §2.1 client_secret_post authenticates too', async () => {
    const tokens = await login();
    const res = await postForm(server, '/oauth/introspect', { token: tokens.access_token, client_id: conf.id, client_secret: conf.secret });
    expect(res.json.active).toBe(true);
  });

  it('rfc7662 §2.3 no, wrong or public client authentication is invalid_client (401), with the same answer', async () => {
    const tokens = await login();
    const none = await introspect({ token: tokens.access_token }, null);
    const wrong = await introspect({ token: tokens.access_token }, { id: conf.id, secret: 'wrong' });
    const unknown = await introspect({ token: tokens.access_token }, { id: 'no-such-client', secret: 'x' });
    const publicClient = await postForm(server, '/oauth/introspect', { token: tokens.access_token, client_id: pub });
    for (const res of [none, wrong, unknown, publicClient]) {
      expect(res.status).toBe(401);
      expect(res.json.error).toBe('invalid_client');
      expect(res.headers.get('www-authenticate')).toMatch(/^Basic /);
      expect(res.json.active).toBeUndefined();
    }
    expect(publicClient.json).toEqual(wrong.json);
  });

  it('rfc7662 §2.1 a missing token is invalid_request; repeated parameters and other content types are refused', async () => {
    expect((await introspect({})).status).toBe(400);
    expect((await introspect({})).json.error).toBe('invalid_request');
    const tokens = await login();
    const twice = await postForm(server, '/oauth/introspect', `token=${tokens.access_token}&token=x`, {
      authorization: basic(conf.id, conf.secret),
    });
    expect(twice.status).toBe(400);
    const json = await fetch(`${server.url}/oauth/introspect`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basic(conf.id, conf.secret) },
      body: JSON.stringify({ token: tokens.access_token }),
    });
    expect(json.status).toBeGreaterThanOrEqual(400);
    expect(json.status).toBeLessThan(500);
  });

  it('rfc8414 discovery advertises the introspection endpoint and its client authentication methods', async () => {
    const doc = (await (await fetch(`${server.url}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    expect(doc.introspection_endpoint).toBe(`${server.url}/oauth/introspect`);
    expect(doc.introspection_endpoint_auth_methods_supported).toEqual(['client_secret_basic', 'client_secret_post', 'private_key_jwt']);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import {
  authorize,
  basic,
  decideOnDevicePage,
  deviceAuthorization,
  dialects,
  poll,
  postForm,
  seedApp,
  seedUser,
  signedInBrowser,
  startServer,
  tokenRequest,
  ownClock,
  type TestServer,
} from './helpers.js';

describe.each(dialects())('refresh tokens, revocation and userinfo (%s)', (dialect) => {
  let server: TestServer;
  let web: string;
  let noRefresh: string;
  let conf: { id: string; secret: string };
  const redirectUri = 'https://app.example/callback';

  beforeAll(async () => {
    server = await startServer(dialect);
    await seedUser(server, 'alice', { email: 'alice@example.com' });
    web = (await seedApp(server, { name: 'Web', callbackUrls: [redirectUri, 'http://127.0.0.1/cb'] })).app.clientId;
    // Registration now refuses offline_access without the refresh grant; a store from before may still hold such an
    // application, so it is written directly, and the server must still issue it no refresh token.
    noRefresh = (
      await server.store.applications.create({
        clientId: 'no-refresh',
        ownerId: null,
        name: 'No refresh',
        kind: 'public',
        secretHash: null,
        callbackUrls: [redirectUri],
        scopes: ['openid', 'profile', 'email', 'offline_access'],
        grantTypes: ['authorization_code'],
        idTokenAlg: 'RS256',
        createdAt: server.clock.now(),
      })
    ).clientId;
    const c = await seedApp(server, { name: 'Conf', kind: 'confidential', callbackUrls: [redirectUri] });
    conf = { id: c.app.clientId, secret: c.clientSecret! };
  });
  afterAll(async () => server.close());

  /** A device login of the built-in app: tokens with a refresh token. */
  async function deviceLogin(scope = 'openid profile email') {
    const d = (await deviceAuthorization(server, 'authcli', scope)).json;
    await decideOnDevicePage(await signedInBrowser(server), d.user_code, 'approve');
    const res = await poll(server, 'authcli', d.device_code);
    expect(res.status).toBe(200);
    return res.json as { access_token: string; refresh_token: string; id_token: string; scope: string };
  }

  async function codeLogin(clientId: string, opts: { scope?: string; redirect?: string; secret?: string } = {}) {
    const redirect = opts.redirect ?? redirectUri;
    const { callback, verifier } = await authorize(server, await signedInBrowser(server), {
      clientId,
      redirectUri: redirect,
      scope: opts.scope ?? 'openid profile',
    });
    const res = await tokenRequest(
      server,
      {
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code')!,
        redirect_uri: redirect,
        code_verifier: verifier,
        ...(opts.secret ? {} : { client_id: clientId }),
      },
      opts.secret ? { authorization: basic(clientId, opts.secret) } : {},
    );
    expect(res.status).toBe(200);
    return res.json;
  }

  const refresh = (token: string, clientId = 'authcli', extra: Record<string, string> = {}) =>
    tokenRequest(server, { grant_type: 'refresh_token', refresh_token: token, client_id: clientId, ...extra });

  const userinfo = (token: string | undefined, init: RequestInit = {}) =>
    fetch(`${server.url}/oauth/userinfo`, {
      ...init,
      headers: { ...(token !== undefined && { authorization: `Bearer ${token}` }), ...(init.headers as Record<string, string>) },
    });

  // ---- when refresh tokens are issued ----

  it('refresh tokens go to device logins, public loopback logins and offline_access; not otherwise', async () => {
    expect((await deviceLogin()).refresh_token).toBeTruthy();
    expect((await codeLogin(web, { redirect: 'http://127.0.0.1:43210/cb' })).refresh_token).toBeTruthy();
    expect((await codeLogin(web, { scope: 'openid offline_access' })).refresh_token).toBeTruthy();
    expect((await codeLogin(web)).refresh_token).toBeUndefined();
    expect((await codeLogin(conf.id, { secret: conf.secret })).refresh_token).toBeUndefined();
    expect((await codeLogin(conf.id, { secret: conf.secret, scope: 'openid offline_access' })).refresh_token).toBeTruthy();
    expect((await codeLogin(noRefresh, { scope: 'openid offline_access' })).refresh_token).toBeUndefined();
  });

  // ---- rotation and reuse ----

  it('rfc9700 §4.14.2 refresh rotates the refresh token on every use', async () => {
    const t = await deviceLogin();
    const r1 = await refresh(t.refresh_token);
    expect(r1.status).toBe(200);
    expect(r1.headers.get('cache-control')).toBe('no-store');
    expect(r1.json.refresh_token).toBeTruthy();
    expect(r1.json.refresh_token).not.toBe(t.refresh_token);
    expect(r1.json.id_token).toBeTruthy();
    const r2 = await refresh(r1.json.refresh_token);
    expect(r2.status).toBe(200);
    expect(decodeJwt(r2.json.access_token).sub).toBe(decodeJwt(t.access_token).sub);
  });

  it('rfc9700 §4.14.2 reuse of a rotated refresh token revokes the whole family', async () => {
    const t = await deviceLogin();
    const r1 = await refresh(t.refresh_token);
    expect(r1.status).toBe(200);
    const reuse = await refresh(t.refresh_token);
    expect(reuse.status).toBe(400);
    expect(reuse.json.error).toBe('invalid_grant');
    // The legitimate successor dies with it, and so do the family's access tokens.
    expect((await refresh(r1.json.refresh_token)).json.error).toBe('invalid_grant');
    expect((await userinfo(r1.json.access_token)).status).toBe(401);
    expect((await userinfo(t.access_token)).status).toBe(401);
  });

  it('concurrent use of one refresh token: one success, then the family is revoked', async () => {
    const t = await deviceLogin();
    const results = await Promise.all(Array.from({ length: 6 }, () => refresh(t.refresh_token)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    const winner = results.find((r) => r.status === 200)!;
    expect((await refresh(winner.json.refresh_token)).json.error).toBe('invalid_grant');
  });

  it('rfc6749 §6 scope may only narrow; the next refresh still has the full grant', async () => {
    const t = await deviceLogin('openid profile email');
    const narrow = await refresh(t.refresh_token, 'authcli', { scope: 'openid' });
    expect(narrow.status).toBe(200);
    expect(narrow.json.scope).toBe('openid');
    expect(decodeJwt(narrow.json.access_token).scope).toBe('openid');
    const wider = await refresh(narrow.json.refresh_token, 'authcli', { scope: 'openid offline_access' });
    expect(wider.json.error).toBe('invalid_scope');
    const full = await refresh(narrow.json.refresh_token);
    expect(full.status).toBe(200);
    expect(full.json.scope).toBe('openid profile email');
  });

  it('a refresh token of another client is invalid_grant', async () => {
    const t = await codeLogin(web, { redirect: 'http://127.0.0.1:43210/cb' });
    expect((await refresh(t.refresh_token, 'authcli')).json.error).toBe('invalid_grant');
    expect((await refresh(t.refresh_token, web)).status).toBe(200);
  });

  it('absolute lifetime: the family ends after 30 days whatever the rotation', async () => {
    const clock = ownClock(server);
    const t = await deviceLogin();
    clock.advance(29 * 24 * 3600_000);
    const r = await refresh(t.refresh_token);
    expect(r.status).toBe(200);
    clock.advance(24 * 3600_000);
    expect((await refresh(r.json.refresh_token)).json.error).toBe('invalid_grant');
  });

  it('unknown and missing refresh tokens; a disabled account cannot refresh', async () => {
    expect((await refresh('nope')).json.error).toBe('invalid_grant');
    expect((await tokenRequest(server, { grant_type: 'refresh_token', client_id: 'authcli' })).json.error).toBe('invalid_request');
    await seedUser(server, 'dora');
    const d = (await deviceAuthorization(server, 'authcli', 'openid')).json;
    await decideOnDevicePage(await signedInBrowser(server, 'dora'), d.user_code, 'approve');
    const t = (await poll(server, 'authcli', d.device_code)).json;
    await server.store.users.setDisabled('dora', server.clock.now());
    expect((await refresh(t.refresh_token)).json.error).toBe('invalid_grant');
    expect((await userinfo(t.access_token)).status).toBe(401);
  });

  // ---- revocation ----

  it('rfc7009 §2.1 revoking a refresh token ends its family, access tokens included', async () => {
    const t = await deviceLogin();
    const res = await postForm(server, '/oauth/revoke', { token: t.refresh_token, token_type_hint: 'refresh_token', client_id: 'authcli' });
    expect(res.status).toBe(200);
    expect((await refresh(t.refresh_token)).json.error).toBe('invalid_grant');
    expect((await userinfo(t.access_token)).status).toBe(401);
  });

  it('rfc7009 §2.1 revoking an access token ends that token only', async () => {
    const t = await deviceLogin();
    expect((await userinfo(t.access_token)).status).toBe(200);
    const res = await postForm(server, '/oauth/revoke', { token: t.access_token, client_id: 'authcli' });
    expect(res.status).toBe(200);
    expect((await userinfo(t.access_token)).status).toBe(401);
    const next = await refresh(t.refresh_token);
    expect(next.status).toBe(200);
    expect((await userinfo(next.json.access_token)).status).toBe(200);
  });

  it('rfc7009 §2.2 unknown tokens get 200; a missing token is invalid_request', async () => {
    expect((await postForm(server, '/oauth/revoke', { token: 'never-issued', client_id: 'authcli' })).status).toBe(200);
    expect((await postForm(server, '/oauth/revoke', { token: 'a.b.c', client_id: 'authcli' })).status).toBe(200);
    expect((await postForm(server, '/oauth/revoke', { client_id: 'authcli' })).json.error).toBe('invalid_request');
  });

  it("rfc7009 §2.1 the client is authenticated, and may not revoke another client's token", async () => {
    const t = await deviceLogin();
    const foreign = await postForm(server, '/oauth/revoke', { token: t.refresh_token, client_id: web });
    expect(foreign.status).toBe(400);
    expect((await refresh(t.refresh_token)).status).toBe(200);
    const wrongSecret = await postForm(server, '/oauth/revoke', { token: t.refresh_token }, { authorization: basic(conf.id, 'wrong') });
    expect(wrongSecret.status).toBe(401);
    expect(wrongSecret.json.error).toBe('invalid_client');
  });

  // ---- userinfo ----

  it('oidc core §5.3 userinfo returns sub and the claims of the granted scopes', async () => {
    const t = await deviceLogin('openid profile email');
    const res = await userinfo(t.access_token);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = await res.json();
    expect(body).toMatchObject({ sub: decodeJwt(t.id_token).sub, preferred_username: 'alice', email: 'alice@example.com' });
    const narrow = await deviceLogin('openid');
    const slim = await (await userinfo(narrow.access_token)).json();
    expect(Object.keys(slim)).toEqual(['sub']);
    expect((await userinfo(t.access_token, { method: 'POST' })).status).toBe(200);
  });

  it('rfc6750 §3.1, rfc9449 §7.1 no token: 401 with the bare DPoP and Bearer challenges', async () => {
    const res = await userinfo(undefined);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="authcli", DPoP algs="ES256 PS256 RS256 EdDSA Ed25519"');
    // §3.1: "SHOULD NOT include an error code or other error information": no body either.
    expect(await res.text()).toBe('');
  });

  it('rfc6750 §3.1 invalid, expired or foreign tokens: 401 invalid_token', async () => {
    for (const bad of ['garbage', 'a.b.c', 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.']) {
      const res = await userinfo(bad);
      expect(res.status, bad).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
    }
    const t = await deviceLogin();
    // Token confusion: an ID token (typ JWT, aud = client) is not an access token.
    expect((await userinfo(t.id_token)).status).toBe(401);
    const clock = ownClock(server);
    clock.advance(901_000);
    const expired = await userinfo(t.access_token);
    expect(expired.status).toBe(401);
    expect(expired.headers.get('www-authenticate')).toMatch(/expired/);
  });

  it('rfc6750 §3.1 a token without the openid scope: 403 insufficient_scope', async () => {
    const t = await deviceLogin('profile');
    const res = await userinfo(t.access_token);
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toMatch(/error="insufficient_scope"/);
  });

  it('rfc6750 §2 a token in the query string is refused', async () => {
    const t = await deviceLogin();
    const res = await fetch(`${server.url}/oauth/userinfo?access_token=${t.access_token}`);
    expect(res.status).toBe(400);
    expect((await res.json()).error).toBe('invalid_request');
  });
});

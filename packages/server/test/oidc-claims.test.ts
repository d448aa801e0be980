import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { PASSWORD_ACR } from '../src/oauth/acr.js';
import {
  authorize,
  authorizeUrl,
  basic,
  Browser,
  dialects,
  postForm,
  seedApp,
  seedUser,
  signedInBrowser,
  startServer,
  tokenRequest,
  type TestServer,
} from './helpers.js';

const redirectUri = 'https://app.example/callback';

describe.each(dialects())('where claims go: ID token, userinfo, the claims parameter, acr and amr (%s)', (dialect) => {
  let server: TestServer;
  let web: string;
  let narrow: string;
  let conf: { id: string; secret: string };
  let aliceId: string;
  let bobId: string;

  beforeAll(async () => {
    server = await startServer(dialect);
    aliceId = (await seedUser(server, 'alice', { email: 'alice@example.com' })).id;
    bobId = (await seedUser(server, 'bob', { email: 'bob@example.com' })).id;
    web = (await seedApp(server, { name: 'Web', callbackUrls: [redirectUri] })).app.clientId;
    narrow = (await seedApp(server, { name: 'Narrow', callbackUrls: [redirectUri], scopes: ['openid'] })).app.clientId;
    const c = await seedApp(server, { name: 'Conf', kind: 'confidential', callbackUrls: [redirectUri] });
    conf = { id: c.app.clientId, secret: c.clientSecret! };
  });
  afterAll(async () => server.close());

  /** The code flow as alice (a seeded session of its own unless a browser is given), then the code exchange. */
  async function login(clientId: string, scope: string, extra: Record<string, string> = {}, browser?: Browser) {
    const b = browser ?? (await signedInBrowser(server));
    const { callback, verifier } = await authorize(server, b, { clientId, redirectUri, scope, extra });
    expect(callback.searchParams.get('error'), callback.href).toBeNull();
    const res = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code')!,
      redirect_uri: redirectUri,
      code_verifier: verifier,
      client_id: clientId,
    });
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    return res.json as { access_token: string; id_token: string; refresh_token?: string; scope: string };
  }

  async function userinfo(accessToken: string) {
    const res = await fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } });
    expect(res.status).toBe(200);
    return (await res.json()) as Record<string, unknown>;
  }

  /** The error an authorization request is redirected with, for a signed-in alice. */
  async function authorizeError(clientId: string, extra: Record<string, string>, browser?: Browser) {
    const b = browser ?? (await signedInBrowser(server));
    const { url } = await authorizeUrl({ clientId, redirectUri, extra });
    const res = await b.get(url);
    expect(res.status).toBe(303);
    const params = new URL(res.location!).searchParams;
    return { error: params.get('error'), description: params.get('error_description') };
  }

  it('oidc core §5.4 with an access token issued, scope claims come from userinfo, not the ID token', async () => {
    const t = await login(web, 'openid profile email');
    const id = decodeJwt(t.id_token);
    for (const claim of ['name', 'preferred_username', 'email', 'email_verified']) expect(id, claim).not.toHaveProperty(claim);
    expect(await userinfo(t.access_token)).toMatchObject({ sub: aliceId, preferred_username: 'alice', email: 'alice@example.com' });
  });

  it('oidc core §2 and rfc8176 every ID token carries acr and amr ["pwd"]; discovery lists the acr value', async () => {
    // Signed in through the form: the acr and amr describe that sign-in.
    const t = await login(web, 'openid', { acr_values: 'urn:example:mfa 1 2' }, new Browser(server.url));
    expect(decodeJwt(t.id_token)).toMatchObject({ acr: PASSWORD_ACR, amr: ['pwd'] });
    const meta = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(meta.acr_values_supported).toEqual(['phr', PASSWORD_ACR, 'urn:authcli:acr:federated']);
    expect(meta.claims_parameter_supported).toBe(true);
    expect(meta.claims_supported).toEqual(expect.arrayContaining(['acr', 'amr']));
  });

  it('a passkey session (rfc8176 hwk or swk, mfa) gives acr phr, kept by the refreshes of its grant', async () => {
    const hardware = await login(web, 'openid offline_access', {}, await signedInBrowser(server, 'alice', ['hwk', 'mfa']));
    expect(decodeJwt(hardware.id_token)).toMatchObject({ acr: 'phr', amr: ['hwk', 'mfa'] });
    const refreshed = await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: hardware.refresh_token!, client_id: web });
    expect(decodeJwt((refreshed.json as { id_token: string }).id_token)).toMatchObject({ acr: 'phr', amr: ['hwk', 'mfa'] });
    const synced = await login(web, 'openid', {}, await signedInBrowser(server, 'alice', ['swk', 'mfa']));
    expect(decodeJwt(synced.id_token)).toMatchObject({ acr: 'phr', amr: ['swk', 'mfa'] });
    const password = await login(web, 'openid', {}, await signedInBrowser(server, 'alice'));
    expect(decodeJwt(password.id_token)).toMatchObject({ acr: PASSWORD_ACR, amr: ['pwd'] });
  });

  it('oidc core §5.5 a claim named for userinfo is released there (scope openid only), and not put in the ID token', async () => {
    const t = await login(web, 'openid', { claims: JSON.stringify({ userinfo: { email: { essential: true } } }) });
    expect(t.scope).toBe('openid');
    expect(decodeJwt(t.id_token)).not.toHaveProperty('email');
    const info = await userinfo(t.access_token);
    expect(info).toEqual({ sub: aliceId, email: 'alice@example.com' });
  });

  it('oidc core §5.5 a claim named for the ID token is in it, and stays in the ID tokens of refreshes', async () => {
    const t = await login(web, 'openid offline_access', { claims: JSON.stringify({ id_token: { preferred_username: null } }) });
    expect(decodeJwt(t.id_token)).toMatchObject({ preferred_username: 'alice' });
    expect(await userinfo(t.access_token)).toEqual({ sub: aliceId });
    const refreshed = await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: t.refresh_token!, client_id: web });
    expect(refreshed.status).toBe(200);
    expect(decodeJwt(refreshed.json.id_token as string)).toMatchObject({ preferred_username: 'alice', acr: PASSWORD_ACR });
  });

  it('oidc core §5.5 the user approves the scope of a claim named one by one: the consent page lists it', async () => {
    const b = await signedInBrowser(server, 'bob');
    const { url } = await authorizeUrl({
      clientId: web,
      redirectUri,
      scope: 'openid',
      extra: { claims: JSON.stringify({ userinfo: { email: null } }) },
    });
    const consent = await b.get(url);
    expect(consent.status).toBe(200);
    expect(consent.text).toMatch(/email/i);
    // prompt=none for the same request without that approval: consent_required.
    const none = await authorizeError(web, { scope: 'openid', prompt: 'none', claims: JSON.stringify({ userinfo: { email: null } }) }, b);
    expect(none.error).toBe('consent_required');
  });

  it('oidc core §5.5 unknown claims, and claims of a scope the application may not use, are ignored', async () => {
    const t = await login(narrow, 'openid', {
      claims: JSON.stringify({ userinfo: { email: null, 'https://example.com/claim': null }, id_token: { shoe_size: null } }),
    });
    expect(await userinfo(t.access_token)).toEqual({ sub: aliceId });
    expect(decodeJwt(t.id_token)).not.toHaveProperty('shoe_size');
  });

  it('oidc core §5.5 a claims parameter that is not a JSON object is invalid_request', async () => {
    for (const claims of ['{', '[]', '"x"', '{"userinfo":[]}', '{"userinfo":{"email":7}}', '{"id_token":{"acr":{"essential":"yes"}}}']) {
      expect((await authorizeError(web, { claims })).error, claims).toBe('invalid_request');
    }
    expect((await authorizeError(web, { claims: JSON.stringify({ userinfo: { email: { x: 'y'.repeat(5000) } } }) })).error).toBe(
      'invalid_request',
    );
  });

  it('oidc core §5.5.1.1 an essential acr this server cannot satisfy is a failed authentication; its own value succeeds', async () => {
    const unmet = JSON.stringify({ id_token: { acr: { essential: true, values: ['urn:example:mfa'] } } });
    expect((await authorizeError(web, { claims: unmet })).error).toBe('access_denied');
    const met = JSON.stringify({ id_token: { acr: { essential: true, value: PASSWORD_ACR } } });
    expect(decodeJwt((await login(web, 'openid', { claims: met })).id_token).acr).toBe(PASSWORD_ACR);
    // Voluntary: answered with the class the sign-in had.
    const voluntary = JSON.stringify({ id_token: { acr: { values: ['urn:example:mfa'] } } });
    expect(decodeJwt((await login(web, 'openid', { claims: voluntary })).id_token).acr).toBe(PASSWORD_ACR);
  });

  it('oidc core §3.1.2.1 id_token_hint of the signed-in user: prompt=none answers with a code', async () => {
    const b = await signedInBrowser(server);
    const first = await login(web, 'openid', {}, b);
    const { url } = await authorizeUrl({
      clientId: web,
      redirectUri,
      scope: 'openid',
      extra: { prompt: 'none', id_token_hint: first.id_token },
    });
    const res = await b.get(url);
    expect(res.status).toBe(303);
    expect(new URL(res.location!).searchParams.get('code')).toBeTruthy();
  });

  it('oidc core §3.1.2.2 a hint or sub value naming another user: the session does not count (login_required with prompt=none)', async () => {
    const alices = await login(web, 'openid');
    const bobs = await signedInBrowser(server, 'bob');
    expect((await authorizeError(web, { prompt: 'none', id_token_hint: alices.id_token }, bobs)).error).toBe('login_required');
    const sub = JSON.stringify({ id_token: { sub: { value: aliceId } } });
    expect((await authorizeError(web, { prompt: 'none', claims: sub }, bobs)).error).toBe('login_required');
    expect(
      (await authorizeError(web, { prompt: 'none', claims: JSON.stringify({ id_token: { sub: { value: bobId } } }) }, bobs)).error,
    ).toBe('consent_required');
  });

  it('oidc core §3.1.2.1 an id_token_hint this server did not issue to this client is invalid_request', async () => {
    const t = await login(web, 'openid');
    expect((await authorizeError(web, { id_token_hint: 'not.a.jwt' })).error).toBe('invalid_request');
    expect((await authorizeError(conf.id, { id_token_hint: t.id_token })).error).toBe('invalid_request');
    // An access token is not an ID token (typ at+jwt).
    expect((await authorizeError(web, { id_token_hint: t.access_token })).error).toBe('invalid_request');
  });

  it('oidc core §3.1.2.1 unknown scope values are ignored; rfc6749 §5.1 the token response says which were granted', async () => {
    const t = await login(web, 'openid profile email https://api.example/read urn:example:write');
    expect(t.scope).toBe('openid profile email');
    expect(decodeJwt(t.access_token).scope).toBe('openid profile email');
    expect((await authorizeError(web, { scope: 'https://api.example/read' })).error).toBe('invalid_scope');
    // A scope the server knows that this application was not allowed (phone) is not ignored.
    expect((await authorizeError(web, { scope: 'openid phone' })).error).toBe('invalid_scope');
    expect((await authorizeError(narrow, { scope: 'openid email' })).error).toBe('invalid_scope');
  });

  describe('rfc6750 §2.2 userinfo with the access token in a form-encoded POST body', () => {
    const post = (body: string, headers: Record<string, string> = {}) => postForm(server, '/oauth/userinfo', body, headers);

    it('is accepted, and answers like the Authorization header', async () => {
      const t = await login(web, 'openid email');
      const res = await post(new URLSearchParams({ access_token: t.access_token }).toString());
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.json).toMatchObject({ sub: aliceId, email: 'alice@example.com' });
    });

    it('rfc6750 §2 two methods at once, a repeated or malformed token, and the query string are invalid_request with the challenge', async () => {
      const t = await login(web, 'openid');
      const cases: [string, Promise<{ status: number; headers: Headers; json: Record<string, unknown> }>][] = [
        ['header and body', post(`access_token=${t.access_token}`, { authorization: `Bearer ${t.access_token}` })],
        ['repeated', post(`access_token=${t.access_token}&access_token=${t.access_token}`)],
        ['not a b64token', post('access_token=a%20b')],
        ['malformed header', post('', { authorization: 'Bearer a b' })],
        [
          'query',
          fetch(`${server.url}/oauth/userinfo?access_token=${t.access_token}`).then(async (r) => ({
            status: r.status,
            headers: r.headers,
            json: (await r.json()) as Record<string, unknown>,
          })),
        ],
        [
          'JSON body',
          fetch(`${server.url}/oauth/userinfo`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ access_token: t.access_token }),
          }).then(async (r) => ({ status: r.status, headers: r.headers, json: (await r.json()) as Record<string, unknown> })),
        ],
      ];
      for (const [what, pending] of cases) {
        const res = await pending;
        expect(res.status, what).toBe(400);
        expect(res.json.error, what).toBe('invalid_request');
        expect(res.headers.get('www-authenticate'), what).toMatch(/^Bearer realm="authcli", error="invalid_request"/);
      }
    });

    it('rfc6750 §3.1 an invalid token in the body is 401 invalid_token with the challenge', async () => {
      const res = await post('access_token=bm90LWEtdG9rZW4');
      expect(res.status).toBe(401);
      expect(res.json.error).toBe('invalid_token');
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="authcli", error="invalid_token"/);
    });

    it('rfc6750 §3.1 a token without the openid scope is 403 insufficient_scope, whichever way it came', async () => {
      const b = await signedInBrowser(server);
      const { callback, verifier } = await authorize(server, b, { clientId: conf.id, redirectUri, scope: 'profile' });
      const t = await tokenRequest(
        server,
        { grant_type: 'authorization_code', code: callback.searchParams.get('code')!, redirect_uri: redirectUri, code_verifier: verifier },
        { authorization: basic(conf.id, conf.secret) },
      );
      const res = await post(`access_token=${t.json.access_token as string}`);
      expect(res.status).toBe(403);
      expect(res.headers.get('www-authenticate')).toMatch(/error="insufficient_scope"/);
    });
  });
});

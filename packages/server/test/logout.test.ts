import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveInBrowser } from '@authcli/test-support/http';
import { registerApplication } from '../src/oauth/registration.js';
import {
  authorizeUrl,
  basic,
  Browser,
  dialects,
  hidden,
  PASSWORD,
  seedUser,
  signedInBrowser,
  startServer,
  tokenRequest,
  ownClock,
  type TestServer,
} from './helpers.js';

/** OpenID Connect RP-Initiated Logout 1.0. */
describe.each(dialects())('RP-initiated logout (%s)', (dialect) => {
  let server: TestServer;
  let rp: { id: string; secret: string };
  let other: { id: string; secret: string };
  const redirectUri = 'https://app.example/callback';
  const loggedOut = 'https://app.example/logged-out';

  beforeAll(async () => {
    server = await startServer(dialect);
    await seedUser(server, 'alice');
    await seedUser(server, 'bob');
    const add = async (name: string, postLogout: string[]) => {
      const r = await registerApplication(
        server.store,
        { name, kind: 'confidential', callbackUrls: [redirectUri], scopes: ['openid', 'profile'], postLogoutRedirectUris: postLogout },
        server.clock.now(),
      );
      return { id: r.app.clientId, secret: r.clientSecret! };
    };
    rp = await add('RP', [loggedOut]);
    other = await add('Other RP', ['https://other.example/bye']);
  });
  afterAll(async () => server.close());

  /**
   * Signs `username` in to `client` through the code flow, in a fresh browser with a seeded session (or signed in
   * through the form, `b` a signed-out browser); returns the browser and the ID token.
   */
  async function login(username = 'alice', client = rp, b?: Browser) {
    b ??= await signedInBrowser(server, username);
    const { url, verifier } = await authorizeUrl({ clientId: client.id, redirectUri, scope: 'openid' });
    const callback = new URL(await approveInBrowser(b, server.url + url, username, PASSWORD));
    const res = await tokenRequest(
      server,
      { grant_type: 'authorization_code', code: callback.searchParams.get('code')!, redirect_uri: redirectUri, code_verifier: verifier },
      { authorization: basic(client.id, client.secret) },
    );
    expect(res.status).toBe(200);
    return { b, idToken: res.json.id_token as string, accessToken: res.json.access_token as string };
  }

  async function signedIn(b: Browser): Promise<boolean> {
    const res = await b.get('/signout');
    return res.status === 200;
  }

  const logoutUrl = (params: Record<string, string>) => `/oauth/logout?${new URLSearchParams(params)}`;

  it('discovery advertises end_session_endpoint', async () => {
    const doc = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(doc.end_session_endpoint).toBe(`${server.url}/oauth/logout`);
  });

  it('rp-initiated logout §2, §3 a hint for the signed-in user ends the session and returns to the registered URI with state', async () => {
    // End to end: the session the sign-in form started is the one the logout ends.
    const { b, idToken } = await login('alice', rp, new Browser(server.url));
    expect(await signedIn(b)).toBe(true);
    const res = await b.get(logoutUrl({ id_token_hint: idToken, post_logout_redirect_uri: loggedOut, state: 'st 1' }));
    expect(res.status).toBe(303);
    const back = new URL(res.location!);
    expect(`${back.origin}${back.pathname}`).toBe(loggedOut);
    expect(back.searchParams.get('state')).toBe('st 1');
    expect(await signedIn(b)).toBe(false);
  });

  it('rp-initiated logout §2 an expired ID token is still a valid hint', async () => {
    const { b, idToken } = await login();
    const clock = ownClock(server);
    clock.advance((server.config.idTokenTtlSeconds + 60) * 1000);
    const res = await b.get(logoutUrl({ id_token_hint: idToken, client_id: rp.id, post_logout_redirect_uri: loggedOut }));
    expect(res.status).toBe(303);
    expect(res.location).toBe(loggedOut);
  });

  it('rp-initiated logout §2 without a hint the user confirms on a CSRF-protected page; a forged confirmation is refused', async () => {
    const { b } = await login();
    const page = await b.get(logoutUrl({ client_id: rp.id, post_logout_redirect_uri: loggedOut, state: 'x' }));
    expect(page.status).toBe(200);
    expect(page.text).toContain('action="/oauth/logout/confirm"');
    expect(await signedIn(b)).toBe(true);
    const forged = await b.postForm('/oauth/logout/confirm', { client_id: rp.id, post_logout_redirect_uri: loggedOut, state: 'x' });
    expect(forged.status).toBe(403);
    expect(await signedIn(b)).toBe(true);
    const confirmed = await b.postForm('/oauth/logout/confirm', {
      _csrf: hidden(page.text, '_csrf'),
      client_id: hidden(page.text, 'client_id'),
      post_logout_redirect_uri: hidden(page.text, 'post_logout_redirect_uri'),
      state: hidden(page.text, 'state'),
    });
    expect(confirmed.status).toBe(303);
    expect(confirmed.location).toBe(`${loggedOut}?state=x`);
    expect(await signedIn(b)).toBe(false);
  });

  it('rp-initiated logout §2 a hint for another user (a foreign hint) does not sign this one out without confirmation', async () => {
    const { idToken: bobsToken } = await login('bob');
    const { b } = await login('alice');
    const res = await b.get(logoutUrl({ id_token_hint: bobsToken, post_logout_redirect_uri: loggedOut }));
    expect(res.status).toBe(200);
    expect(res.text).toContain('action="/oauth/logout/confirm"');
    expect(await signedIn(b)).toBe(true);
  });

  it('rp-initiated logout §3.1 an unregistered post_logout_redirect_uri is an error page, never a redirect, and the session stays', async () => {
    const { b, idToken } = await login();
    for (const uri of [
      'https://evil.example/',
      `${loggedOut}/x`,
      `${loggedOut}?a=1`,
      'https://APP.example/logged-out',
      'https://other.example/bye',
    ]) {
      const res = await b.get(logoutUrl({ id_token_hint: idToken, post_logout_redirect_uri: uri }));
      expect(res.status, uri).toBe(400);
      expect(res.location).toBeNull();
    }
    expect(await signedIn(b)).toBe(true);
  });

  it('rp-initiated logout §3 a post_logout_redirect_uri without a client (no client_id, no hint) is an error page', async () => {
    const { b } = await login();
    const res = await b.get(logoutUrl({ post_logout_redirect_uri: loggedOut }));
    expect(res.status).toBe(400);
    expect(res.location).toBeNull();
    expect(await signedIn(b)).toBe(true);
  });

  it("rp-initiated logout §2 a client_id that is not the hint's audience, a forged or foreign-signed hint, an access token as hint: error pages", async () => {
    const { b, idToken, accessToken } = await login();
    const [h, p, s] = idToken.split('.');
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), sub: 'someone' })).toString('base64url')}.${s}`;
    const cases: Record<string, string>[] = [
      { id_token_hint: idToken, client_id: other.id },
      { id_token_hint: tampered },
      { id_token_hint: accessToken },
      { id_token_hint: 'not-a-jwt' },
      { client_id: 'no-such-client' },
    ];
    for (const params of cases) {
      const res = await b.get(logoutUrl(params));
      expect(res.status, JSON.stringify(params).slice(0, 60)).toBe(400);
      expect(res.location).toBeNull();
    }
    expect(await signedIn(b)).toBe(true);
  });

  it('rp-initiated logout §3 POST is accepted without a CSRF token and continues as a GET carrying the same request', async () => {
    const { b, idToken } = await login();
    const res = await new Browser(server.url).postForm('/oauth/logout', {
      id_token_hint: idToken,
      post_logout_redirect_uri: loggedOut,
      state: 's',
      ignored: 'x',
    });
    expect(res.status).toBe(303);
    const next = new URL(res.location!, server.url);
    expect(next.pathname).toBe('/oauth/logout');
    expect(Object.fromEntries(next.searchParams)).toEqual({ id_token_hint: idToken, post_logout_redirect_uri: loggedOut, state: 's' });
    const back = await b.get(res.location!);
    expect(back.location).toBe(`${loggedOut}?state=s`);
    expect(await signedIn(b)).toBe(false);
    const bad = await new Browser(server.url).postForm('/oauth/logout', { post_logout_redirect_uri: 'https://evil.example/' });
    expect(bad.status).toBe(400);
    expect(bad.location).toBeNull();
  });

  it('rp-initiated logout: a browser that is not signed in goes straight back (nothing to end)', async () => {
    const { idToken } = await login();
    const res = await new Browser(server.url).get(logoutUrl({ id_token_hint: idToken, post_logout_redirect_uri: loggedOut }));
    expect(res.status).toBe(303);
    expect(res.location).toBe(loggedOut);
    const page = await new Browser(server.url).get('/oauth/logout');
    expect(page.status).toBe(200);
    expect(page.text).toContain('Signed out');
  });

  it('rfc9700 §4.11.2 a browser that is not signed in is not redirected to a self-registered client: a page with a link instead', async () => {
    const selfRegistered = await registerApplication(
      server.store,
      {
        name: 'Self-registered RP',
        kind: 'public',
        callbackUrls: [redirectUri],
        scopes: ['openid'],
        postLogoutRedirectUris: ['https://self.example/bye'],
        registrationTokenHash: 'a'.repeat(64),
      },
      server.clock.now(),
    );
    const res = await new Browser(server.url).get(
      logoutUrl({ client_id: selfRegistered.app.clientId, post_logout_redirect_uri: 'https://self.example/bye', state: 's1' }),
    );
    expect(res.status).toBe(200);
    expect(res.location).toBeNull();
    expect(res.text).toContain('registered itself with this server and asks to send you to <code>self.example</code>');
    expect(res.text).toContain('href="https://self.example/bye?state=s1"');
    // An operator's application still gets its redirect (the test above), and so does a signed-in browser's logout
    // after its confirmation.
  });

  it('post-logout redirect URIs follow the callback URL rules when an application is registered', async () => {
    await expect(
      registerApplication(
        server.store,
        {
          name: 'Bad',
          kind: 'public',
          callbackUrls: [redirectUri],
          scopes: ['openid'],
          postLogoutRedirectUris: ['http://evil.example/bye'],
        },
        server.clock.now(),
      ),
    ).rejects.toThrow(/post-logout redirect URI/);
  });

  it('dashboard: post-logout redirect URIs are registered and edited on the application form, with the callback URL rules', async () => {
    const b = await signedInBrowser(server);
    const form = async (path: string, fields: Record<string, string>) => {
      const page = await b.get(path);
      expect(page.text).toContain('name="post_logout_redirect_uris"');
      const body = new URLSearchParams({
        _csrf: hidden(page.text, '_csrf'),
        kind: 'public',
        callback_urls: redirectUri,
        id_token_alg: 'RS256',
        ...fields,
      });
      body.append('scope', 'openid');
      body.append('grant', 'authorization_code');
      return b.request('POST', path === '/dashboard/apps/new' ? '/dashboard/apps' : path, body.toString(), {
        'content-type': 'application/x-www-form-urlencoded',
      });
    };
    const created = await form('/dashboard/apps/new', { name: 'Dash RP', post_logout_redirect_uris: `${loggedOut}\nhttp://127.0.0.1/bye` });
    expect(created.status).toBe(303);
    const clientId = decodeURIComponent(created.location!.split('/').pop()!);
    expect((await server.store.applications.get(clientId))!.postLogoutRedirectUris).toEqual([loggedOut, 'http://127.0.0.1/bye']);
    const edited = await form(created.location!, { name: 'Dash RP', post_logout_redirect_uris: 'https://app.example/bye' });
    expect(edited.status).toBe(303);
    expect((await server.store.applications.get(clientId))!.postLogoutRedirectUris).toEqual(['https://app.example/bye']);
    const bad = await form(created.location!, { name: 'Dash RP', post_logout_redirect_uris: 'http://evil.example/bye' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('post-logout redirect URI');
    expect((await server.store.applications.get(clientId))!.postLogoutRedirectUris).toEqual(['https://app.example/bye']);
  });
});

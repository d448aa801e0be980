import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { challengeS256, generateVerifier } from '@authcli/pkce';
import { decodeJwt } from 'jose';
import {
  authorize,
  authorizeUrl,
  Browser,
  dialects,
  hidden,
  ownClock,
  PASSWORD,
  seedApp,
  seedUser,
  signedInBrowser,
  signIn,
  signInFields,
  startServer,
  tokenRequest,
  type TestServer,
} from './helpers.js';

describe('https issuer', () => {
  it('session and CSRF cookies are Secure with the __Host- prefix when the issuer is https', async () => {
    const server = await startServer('sqlite', { issuer: 'https://id.example' });
    try {
      await seedUser(server);
      const b = new Browser(server.url.replace('https://id.example', `http://127.0.0.1:${server.config.port}`));
      const page = await b.get('/signin');
      const csrf = page.headers.getSetCookie().find((c) => c.startsWith('__Host-authcli_csrf='));
      expect(csrf).toMatch(/Secure/);
      const res = await b.postForm('/signin', { _csrf: hidden(page.text, '_csrf'), username: 'alice', password: 'correct horse battery' });
      const session = res.headers.getSetCookie().find((c) => c.startsWith('__Host-authcli_session='))!;
      expect(session).toMatch(/; Secure/);
      expect(session).toMatch(/HttpOnly/);
      expect(session).toMatch(/SameSite=Lax/);
      expect(session).toMatch(/Path=\//);
      expect(res.headers.get('strict-transport-security')).toBeTruthy();
    } finally {
      await server.close();
    }
  });
});

describe.each(dialects())('authorization endpoint (%s)', (dialect) => {
  let server: TestServer;
  let clientId: string;
  const redirectUri = 'https://app.example/callback';

  beforeAll(async () => {
    server = await startServer(dialect);
    await seedUser(server);
    ({
      app: { clientId },
    } = await seedApp(server, { callbackUrls: [redirectUri, 'http://127.0.0.1/cb', 'http://[::1]/cb', 'http://localhost/cb'] }));
  });
  afterAll(async () => server.close());

  /** Signed in through the form: for the tests about the sign-in and the session it starts. */
  async function signedInByForm(username = 'alice'): Promise<Browser> {
    const b = new Browser(server.url);
    expect((await signIn(b, username)).status).toBe(303);
    return b;
  }
  /** Signed in by a seeded session: for the tests about the request, not the sign-in. */
  const signedIn = (username = 'alice') => signedInBrowser(server, username);

  /** A user of the test's own, signed in (by the form when the session's age matters): no consent given yet, whatever alice approved. */
  let users = 0;
  async function newUser(how: 'seeded' | 'form' = 'seeded'): Promise<{ b: Browser; username: string }> {
    const username = `user${++users}`;
    await seedUser(server, username);
    return { b: await (how === 'form' ? signedInByForm : signedIn)(username), username };
  }

  /** Answers a consent page with Approve; returns the redirect to the client. */
  async function approve(b: Browser, consentPage: { status: number; text: string }) {
    expect(consentPage.status).toBe(200);
    return b.postForm('/consent', {
      _csrf: hidden(consentPage.text, '_csrf'),
      request: hidden(consentPage.text, 'request'),
      decision: 'approve',
    });
  }

  /** The authorize response for a signed-in user with consent given, for `extra` params. */
  async function authorizeWith(b: Browser, params: Record<string, string | undefined>) {
    const { url, verifier } = await authorizeUrl({ clientId, redirectUri });
    const q = new URLSearchParams(url.split('?')[1]);
    for (const [k, v] of Object.entries(params)) v === undefined ? q.delete(k) : q.set(k, v);
    return { ...(await b.get(`/oauth/authorize?${q}`)), verifier };
  }

  /** Whose code it is: the username in the ID token the code is exchanged for. */
  async function codeOwner(code: string, verifier: string): Promise<unknown> {
    const res = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      client_id: clientId,
      code_verifier: verifier,
    });
    expect(res.status).toBe(200);
    // The ID token names the user by sub only (OIDC Core §5.4: with an access token, profile claims are userinfo's).
    const info = await fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${res.json.access_token as string}` } });
    const claims = (await info.json()) as { sub: string; preferred_username: string };
    expect(decodeJwt(res.json.id_token as string).sub).toBe(claims.sub);
    return claims.preferred_username;
  }

  function redirectParams(res: { status: number; location: string | null }) {
    expect(res.status).toBe(303);
    const u = new URL(res.location!);
    expect(`${u.origin}${u.pathname}`).toBe(redirectUri);
    return u.searchParams;
  }

  it('rfc6749 §4.1 signed-out users are sent to sign-in, then consent, then back with code, state and iss (rfc9207)', async () => {
    const b = new Browser(server.url);
    const { callback, state } = await authorize(server, b, { clientId, redirectUri });
    expect(callback.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(callback.searchParams.get('state')).toBe(state);
    expect(callback.searchParams.get('iss')).toBe(server.url);
  });

  it('consent is remembered per user, application and scope set', async () => {
    const { b } = await newUser();
    const first = await authorizeWith(b, { scope: 'openid email' });
    expect(first.status).toBe(200);
    expect(first.text).toContain('Test App');
    expect(first.text).toContain('email');
    const approved = await b.postForm('/consent', {
      _csrf: hidden(first.text, '_csrf'),
      request: hidden(first.text, 'request'),
      decision: 'approve',
    });
    expect(redirectParams(approved).get('code')).toBeTruthy();
    const again = await authorizeWith(b, { scope: 'openid email' });
    expect(redirectParams(again).get('code')).toBeTruthy();
    const wider = await authorizeWith(b, { scope: 'openid email offline_access' });
    expect(wider.status).toBe(200);
    expect(wider.text).toContain('offline_access');
  });

  it('rfc6749 §4.1.2.1 deny redirects access_denied with state and iss', async () => {
    const b = await signedIn();
    const { callback, state } = await authorize(server, b, { clientId, redirectUri, scope: 'openid profile email' }, 'deny');
    expect(callback.searchParams.get('error')).toBe('access_denied');
    expect(callback.searchParams.get('state')).toBe(state);
    expect(callback.searchParams.get('iss')).toBe(server.url);
    expect(callback.searchParams.get('code')).toBeNull();
  });

  it('rfc7636 §4.3 plain PKCE is rejected', async () => {
    const b = await signedIn();
    const p = redirectParams(await authorizeWith(b, { code_challenge_method: 'plain', state: 's1' }));
    expect(p.get('error')).toBe('invalid_request');
    expect(p.get('error_description')).toMatch(/S256/);
    expect(p.get('state')).toBe('s1');
    expect(p.get('iss')).toBe(server.url);
  });

  it('rfc7636 §4.3 a missing code_challenge_method is rejected (no plain default)', async () => {
    const b = await signedIn();
    expect(redirectParams(await authorizeWith(b, { code_challenge_method: undefined })).get('error')).toBe('invalid_request');
  });

  it('rfc7636 §4.3 a missing code_challenge is rejected', async () => {
    const b = await signedIn();
    expect(redirectParams(await authorizeWith(b, { code_challenge: undefined })).get('error')).toBe('invalid_request');
  });

  it('rfc7636 §4.2 a challenge that is not 43 base64url characters is rejected', async () => {
    const b = await signedIn();
    for (const bad of ['a'.repeat(42), 'a'.repeat(44), `${'a'.repeat(42)}=`, `${'a'.repeat(42)}+`]) {
      expect(redirectParams(await authorizeWith(b, { code_challenge: bad })).get('error')).toBe('invalid_request');
    }
  });

  it('rfc6749 §3.1.2.3 unknown client gets an error page, never a redirect', async () => {
    const b = await signedIn();
    const res = await authorizeWith(b, { client_id: 'no-such-client' });
    expect(res.status).toBe(400);
    expect(res.location).toBeNull();
    expect(res.text).toContain('unknown client_id');
  });

  it('rfc6749 §3.1.2.4 unregistered redirect_uri gets an error page, never a redirect', async () => {
    const b = await signedIn();
    for (const uri of [
      'https://evil.example/callback',
      `${redirectUri}/extra`,
      `${redirectUri}?x=1`,
      'https://app.example/Callback',
      'https://app.example:443/callback',
    ]) {
      const res = await authorizeWith(b, { redirect_uri: uri });
      expect(res.status, uri).toBe(400);
      expect(res.location).toBeNull();
    }
    const missing = await authorizeWith(b, { redirect_uri: undefined });
    expect(missing.status).toBe(400);
  });

  it('rfc8252 §7.3 loopback IP redirect matches any port on the same path', async () => {
    const { b } = await newUser();
    // Consent given once, through the first of them: each request then answers with the redirect itself.
    const first = await approve(b, await authorizeWith(b, { redirect_uri: 'http://127.0.0.1:40000/cb', scope: 'openid profile' }));
    expect(first.location!.startsWith('http://127.0.0.1:40000/cb?')).toBe(true);
    for (const uri of ['http://127.0.0.1:51234/cb', 'http://127.0.0.1/cb', 'http://[::1]:8765/cb']) {
      const res = await authorizeWith(b, { redirect_uri: uri, scope: 'openid profile' });
      expect(res.status, uri).toBe(303);
      const back = new URL(res.location!);
      expect(`${back.origin}${back.pathname}`, uri).toBe(uri);
      expect(back.searchParams.get('code'), uri).toBeTruthy();
    }
    for (const uri of ['http://127.0.0.1:51234/other', 'http://127.0.0.2:5000/cb', 'http://127.0.0.1:0/cb', 'http://127.0.0.1:99999/cb']) {
      expect((await authorizeWith(b, { redirect_uri: uri })).status, uri).toBe(400);
    }
  });

  it('rfc8252 §8.3 localhost gets no port exception', async () => {
    const b = await signedIn();
    expect((await authorizeWith(b, { redirect_uri: 'http://localhost:51234/cb' })).status).toBe(400);
  });

  it('rfc6749 §3.1 repeated parameters are invalid_request', async () => {
    const b = await signedIn();
    const { url } = await authorizeUrl({ clientId, redirectUri });
    const scopeTwice = await b.get(`${url}&scope=openid`);
    expect(redirectParams(scopeTwice).get('error')).toBe('invalid_request');
    const clientTwice = await b.get(`${url}&client_id=${clientId}`);
    expect(clientTwice.status).toBe(400);
    expect(clientTwice.location).toBeNull();
  });

  it('unsupported response_type, no supported scope and a missing scope are redirected errors', async () => {
    const b = await signedIn();
    expect(redirectParams(await authorizeWith(b, { response_type: 'token' })).get('error')).toBe('unsupported_response_type');
    expect(redirectParams(await authorizeWith(b, { scope: 'admin' })).get('error')).toBe('invalid_scope');
    expect(redirectParams(await authorizeWith(b, { scope: undefined })).get('error')).toBe('invalid_scope');
    expect(redirectParams(await authorizeWith(b, { request: 'eyJ' })).get('error')).toBe('request_not_supported');
  });

  it('oidc core §3.1.2.6 prompt=none without a session is login_required', async () => {
    const b = new Browser(server.url);
    expect(redirectParams(await authorizeWith(b, { prompt: 'none' })).get('error')).toBe('login_required');
  });

  it('oidc core §3.1.2.6 prompt=none with a session older than max_age is login_required', async () => {
    const { b } = await newUser('form');
    expect((await approve(b, await authorizeWith(b, {}))).status).toBe(303);
    ownClock(server).advance(61_000);
    const p = redirectParams(await authorizeWith(b, { prompt: 'none', max_age: '60', state: 'old' }));
    expect(p.get('error')).toBe('login_required');
    expect(p.get('state')).toBe('old');
    expect(p.get('code')).toBeNull();
  });

  it('oidc core §3.1.2.6 prompt=none, signed in but no consent given: consent_required at the client, with state and iss', async () => {
    const { b, username } = await newUser();
    const p = redirectParams(await authorizeWith(b, { prompt: 'none', state: 'silent' }));
    expect(p.get('error')).toBe('consent_required');
    expect(p.get('state')).toBe('silent');
    expect(p.get('iss')).toBe(server.url);
    expect(p.get('code')).toBeNull();
    // Once the user has approved, the same silent request gets a code, for them.
    expect((await approve(b, await authorizeWith(b, {}))).status).toBe(303);
    const silent = await authorizeWith(b, { prompt: 'none' });
    expect(await codeOwner(redirectParams(silent).get('code')!, silent.verifier)).toBe(username);
  });

  it('oidc core §3.1.2.6 prompt=consent with none is invalid_request: none may not be combined', async () => {
    const { b } = await newUser();
    expect(redirectParams(await authorizeWith(b, { prompt: 'none consent' })).get('error')).toBe('invalid_request');
  });

  it('oidc core §3.1.2.1 prompt=select_account shows the sign-in page despite a live session; continuing as the signed-in user gets their code', async () => {
    const { b, username } = await newUser();
    expect((await approve(b, await authorizeWith(b, {}))).status).toBe(303);
    const page = await authorizeWith(b, { prompt: 'select_account', state: 'pick' });
    expect(page.status).toBe(200);
    expect(page.text).toContain('action="/signin"');
    expect(page.text).toContain('<label for="username">Username</label>');
    expect(page.text).toContain('<label for="password">Password</label>');
    expect(page.text).toContain('Test App');
    expect(page.text).toContain(`Continue as ${username}`);
    const href = /<a href="(\/oauth\/authorize\?[^"]+)">Continue as /.exec(page.text)![1]!.replaceAll('&amp;', '&');
    const query = new URLSearchParams(href.split('?')[1]);
    expect(query.get('prompt')).toBeNull();
    expect(query.get('client_id')).toBe(clientId);
    const p = redirectParams(await b.get(href));
    expect(p.get('state')).toBe('pick');
    expect(await codeOwner(p.get('code')!, page.verifier)).toBe(username);
  });

  it('oidc core §3.1.2.1 prompt=select_account: signing in as another account there gets the code for that account', async () => {
    const { b } = await newUser();
    const other = await newUser();
    const page = await authorizeWith(b, { prompt: 'select_account', state: 'switch' });
    expect(page.status).toBe(200);
    const switched = await b.postForm('/signin', signInFields(page.text, other.username, PASSWORD));
    expect(switched.status).toBe(303);
    expect(switched.location).toMatch(/^\/oauth\/authorize\?/);
    // Resumed without select_account: the sign-in just made is the account selected, it is not asked again.
    expect(new URLSearchParams(switched.location!.split('?')[1]).get('prompt')).toBeNull();
    const consent = await b.get(switched.location!);
    expect(consent.text).toContain(other.username);
    const p = redirectParams(await approve(b, consent));
    expect(p.get('state')).toBe('switch');
    expect(await codeOwner(p.get('code')!, page.verifier)).toBe(other.username);
  });

  it('oidc core §3.1.2.1 prompt=select_account without a session: one sign-in, then the request goes on', async () => {
    const b = new Browser(server.url);
    const res = await authorizeWith(b, { prompt: 'select_account' });
    expect(res.status).toBe(303);
    expect(res.location).toMatch(/^\/signin\?continue=[\w-]{43}$/);
    const resumed = await signIn(b, 'alice', PASSWORD, res.location!);
    expect(resumed.location).toMatch(/^\/oauth\/authorize\?/);
    expect(new URLSearchParams(resumed.location!.split('?')[1]).get('prompt')).toBeNull();
  });

  it('oidc core §3.1.2.1 prompt=select_account with none is invalid_request', async () => {
    const { b } = await newUser();
    const p = redirectParams(await authorizeWith(b, { prompt: 'none select_account', state: 'both' }));
    expect(p.get('error')).toBe('invalid_request');
    expect(p.get('state')).toBe('both');
  });

  it('invalid UTF-8 in the query gets a 400 page, not a crash', async () => {
    const b = await signedIn();
    const res = await b.get(`/oauth/authorize?client_id=%C3%28&redirect_uri=x`);
    expect(res.status).toBe(400);
    const bad = await b.get(`/oauth/authorize?client_id=${clientId}&redirect_uri=%E0%A4%A`);
    expect(bad.status).toBe(400);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  it('pages: session cookie is HttpOnly and SameSite=Lax, not Secure on an http issuer', async () => {
    const b = new Browser(server.url);
    const page = await b.get('/signin');
    const res = await fetch(`${server.url}/signin`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: [...b.cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
      body: new URLSearchParams({ _csrf: hidden(page.text, '_csrf'), username: 'alice', password: 'correct horse battery' }).toString(),
    });
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('authcli_session='))!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).not.toMatch(/Secure/i);
  });

  it('csrf: a sign-in or consent POST without the token is refused', async () => {
    const b = new Browser(server.url);
    await b.get('/signin');
    const res = await b.postForm('/signin', { username: 'alice', password: 'correct horse battery' });
    expect(res.status).toBe(403);
    expect(b.cookies.has('authcli_session')).toBe(false);
    const signed = await signedIn();
    const consent = await authorizeWith(signed, { scope: 'openid profile email offline_access', state: 'csrf' });
    expect(consent.status).toBe(200);
    const forged = await signed.postForm('/consent', { _csrf: 'forged', request: hidden(consent.text, 'request'), decision: 'approve' });
    expect(forged.status).toBe(403);
    expect(forged.location).toBeNull();
  });

  it('wrong password and unknown user get the same answer', async () => {
    const b = new Browser(server.url);
    const wrong = await signIn(b, 'alice', 'wrong password');
    const unknown = await signIn(b, 'nobody', 'wrong password');
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.text).toContain('Invalid username or password');
    expect(unknown.text).toContain('Invalid username or password');
  });

  it('password guessing: failed sign-ins are limited per IP and account, in the store', async () => {
    await seedUser(server, 'target');
    const b = new Browser(server.url);
    for (let i = 0; i < 10; i++) expect((await signIn(b, 'target', `guess ${i}`)).status).toBe(401);
    const locked = await signIn(b, 'target', 'correct horse battery');
    expect(locked.status).toBe(429);
    expect(locked.text).toContain('Too many failed sign-ins');
    expect(b.cookies.has('authcli_session')).toBe(false);
    // Another account from the same address is not locked out by this one.
    expect((await signIn(new Browser(server.url), 'alice')).status).toBe(303);
    const clock = ownClock(server);
    clock.advance(15 * 60_000 + 1);
    expect((await signIn(new Browser(server.url), 'target')).status).toBe(303);
  });

  it('sign-in never redirects off-site (open redirect)', async () => {
    const b = new Browser(server.url);
    for (const target of ['https://evil.example/', '//evil.example/', '/\\evil.example']) {
      // As an old link and form would send it: in the query and in the posted form.
      const page = await b.get(`/signin?return_to=${encodeURIComponent(target)}`);
      const res = await b.postForm('/signin', {
        _csrf: hidden(page.text, '_csrf'),
        return_to: target,
        username: 'alice',
        password: 'correct horse battery',
      });
      expect(res.location, target).toBe('/');
    }
  });

  it('security headers: CSP without inline script, frame-ancestors none, no-store on pages', async () => {
    const res = await fetch(`${server.url}/signin`);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("frame-ancestors 'none'");
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await res.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/);
  });

  it('user-controlled text is escaped on pages (XSS)', async () => {
    const b = await signedIn();
    const { app } = await seedApp(server, { name: '<img src=x onerror=alert(1)>', callbackUrls: [redirectUri] });
    const { url } = await authorizeUrl({ clientId: app.clientId, redirectUri });
    const res = await b.get(url);
    expect(res.status).toBe(200);
    expect(res.text).not.toContain('<img src=x');
    expect(res.text).toContain('&lt;img src=x');
  });

  it('sign-out ends the server-side session', async () => {
    const b = await signedInByForm();
    const session = b.cookies.get('authcli_session')!;
    const page = await b.get('/signout');
    const out = await b.postForm('/signout', { _csrf: hidden(page.text, '_csrf') });
    expect(out.status).toBe(200);
    const replayed = new Browser(server.url);
    replayed.cookies.set('authcli_session', session);
    const res = await authorizeWith(replayed, {});
    expect(res.status).toBe(303);
    expect(res.location).toMatch(/^\/signin/);
  });

  it('oidc core §3.1.2.1 prompt=login asks for credentials again even with a live session', async () => {
    const b = await signedInByForm();
    const res = await authorizeWith(b, { prompt: 'login' });
    expect(res.status).toBe(303);
    expect(res.location).toMatch(/^\/signin\?continue=[\w-]{43}$/);
    const resumed = await signIn(b, 'alice', 'correct horse battery', res.location!);
    expect(resumed.status).toBe(303);
    expect(resumed.location).toMatch(/^\/oauth\/authorize\?/);
    expect(resumed.location).not.toMatch(/prompt=login/);
    expect(new URLSearchParams(resumed.location!.split('?')[1]).get('client_id')).toBe(clientId);
  });

  it('oidc core §3.1.2.1 max_age: a session older than max_age must sign in again; a younger one need not', async () => {
    const { b } = await newUser('form');
    expect((await approve(b, await authorizeWith(b, { scope: 'openid' }))).status).toBe(303);
    const young = await authorizeWith(b, { scope: 'openid', max_age: '60' });
    expect(redirectParams(young).get('code')).toBeTruthy();
    const clock = ownClock(server);
    clock.advance(61_000);
    const old = await authorizeWith(b, { scope: 'openid', max_age: '60' });
    expect(old.status).toBe(303);
    expect(old.location).toMatch(/^\/signin/);
    expect(redirectParams(await authorizeWith(b, { scope: 'openid', max_age: 'soon' })).get('error')).toBe('invalid_request');
  });

  it('a disabled account cannot sign in, and its live sessions stop working', async () => {
    await seedUser(server, 'mallory');
    const b = new Browser(server.url);
    expect((await signIn(b, 'mallory')).status).toBe(303);
    await server.store.users.setDisabled('mallory', server.clock.now());
    const res = await authorizeWith(b, {});
    expect(res.location).toMatch(/^\/signin/);
    // The right password of a disabled account gets exactly the wrong password's answer: it confirms nothing.
    const right = await signIn(new Browser(server.url), 'mallory');
    const wrong = await signIn(new Browser(server.url), 'mallory', 'not the password');
    expect(right.status).toBe(401);
    expect(right.headers.get('set-cookie') ?? '').not.toMatch(/session/i);
    const message = (page: string) => /<p class="alert"[^>]*>([^<]*)<\/p>/.exec(page)?.[1];
    expect(message(right.text)).toBe('Invalid username or password.');
    expect(message(right.text)).toBe(message(wrong.text));
    expect(wrong.status).toBe(401);
  });

  it('a new sign-in ends the browser session it replaces: the earlier session id opens nothing, for the same user or another', async () => {
    for (const same of [false, true]) {
      const first = await newUser('form');
      const before = new Map(first.b.cookies);
      const next = same ? first.username : (await newUser()).username;
      expect((await signIn(first.b, next)).status).toBe(303);
      expect((await first.b.get('/account')).status).toBe(200);
      // A browser that kept the cookies from before the second sign-in (a copy, a stolen cookie) is signed out.
      const kept = new Browser(server.url);
      kept.cookies = before;
      const account = await kept.get('/account');
      expect(account.status, same ? 'same user' : 'another user').toBe(303);
      expect(account.location).toMatch(/^\/signin/);
    }
  });

  it('a challenge from @authcli/pkce is accepted end to end', async () => {
    const b = await signedIn();
    const verifier = generateVerifier();
    const { callback } = await authorize(server, b, { clientId, redirectUri, verifier, scope: 'openid' });
    expect(callback.searchParams.get('code')).toBeTruthy();
    expect(await challengeS256(verifier)).toHaveLength(43);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { CONTINUATION_TTL_MS, LIMITS } from '../src/config/defaults.js';
import { sha256Hex } from '../src/util/crypto.js';
import {
  authorizeUrl,
  Browser,
  deviceAuthorization,
  dialects,
  hidden,
  PASSWORD,
  seedApp,
  seedUser,
  signedInBrowser,
  signIn,
  signInFields,
  startServer,
  tokenRequest,
  type Res,
  ownClock,
  type TestServer,
} from './helpers.js';
import { testRows } from '../src/testing.js';

/**
 * Hostile values as they travel in a query or a form body (percent-encoded):
 * the characters that answered 500 (a Location header Node refuses to send,
 * NUL that PostgreSQL text cannot hold), the ones that made `return_to` an
 * open redirect (`/%09/evil.example`, which browsers read as
 * `//evil.example`), and the usual suspects.
 */
const ODD: readonly string[] = [
  ...[
    '\x0b',
    '\0',
    '\x7f',
    '\u3000',
    '\u{1F600}',
    '\r\n',
    '\t',
    '\\',
    '//evil.example',
    '/\t/evil.example',
    '/\\evil.example',
    'https://evil.example',
    'javascript:alert(1)',
  ]
    .flatMap((v) => [v, `/${v}`])
    .map(encodeURIComponent),
  '/%09/evil.example',
  '/%0B',
  '%ED%A0%80',
  '/%ED%A0%80',
  '%',
  '%zz',
  '%C3%28',
];

/** Escapes that cannot be decoded (and NUL): the strict form parser refuses them. */
const UNPARSEABLE = /%ED%A0%80|^%$|%zz|%C3%28|%00/;

const CONTINUE_LOCATION = /^\/signin\?continue=[\w-]{43}$/;

/**
 * The two sweeps below post a sign-in (a password hash, at the test cost) for every odd value, signed in and out,
 * among hundreds of page requests in one test: 15-20 s on a loaded two-core machine.
 */
const HASHING_TEST_TIMEOUT_MS = 180_000;

describe.each(dialects())('sign-in continuation (%s)', (dialect) => {
  let server: TestServer;
  let clientId: string;
  const redirectUri = 'https://app.example/callback';

  beforeAll(async () => {
    // This suite makes far more signed-out visits from one address than a person would; the limit has its own test.
    server = await startServer(dialect, { limits: { ...LIMITS, 'continuation-ip': { limit: 100_000, windowMs: 600_000 } } });
    await seedUser(server);
    ({
      app: { clientId },
    } = await seedApp(server, { name: 'Continuation App', callbackUrls: [redirectUri] }));
  });
  afterAll(async () => server.close());

  /**
   * A Location this server may send: a path it built (one leading slash, no
   * `//` or `/\` a browser would read as another host) or the registered
   * callback of the client; always plain ASCII, so Node never refuses the header.
   */
  function expectSafeLocation(res: Res, what: string): void {
    if (res.location === null) return;
    expect(res.location, what).toMatch(/^[\x21-\x7e]+$/);
    if (res.location.startsWith('/')) {
      expect(res.location, what).toMatch(/^\/(?![/\\])/);
      expect(new URL(res.location, server.url).origin, what).toBe(server.url);
    } else {
      const to = new URL(res.location);
      expect(`${to.origin}${to.pathname}`, what).toBe(redirectUri);
    }
  }

  function expectPage(res: Res, what: string): void {
    expect(res.status, what).toBeLessThan(500);
    expectSafeLocation(res, what);
  }

  /** A signed-out authorization request: the 303 to the sign-in page of its continuation. */
  async function startAuthorization(b: Browser, extra: Record<string, string> = {}) {
    const started = await authorizeUrl({ clientId, redirectUri, extra });
    const res = await b.get(started.url);
    expect(res.status).toBe(303);
    expect(res.location).toMatch(CONTINUE_LOCATION);
    return { ...started, signInPage: res.location!, id: res.location!.slice('/signin?continue='.length) };
  }

  it(
    'no open redirect after sign-in: return_to is never a redirect target',
    async () => {
      for (const v of ODD) {
        const b = new Browser(server.url);
        // The odd value as `return_to` and `continue`, in the sign-in page's query and in the posted form, with the right password.
        const page = await b.get(`/signin?return_to=${v}&continue=${v}`);
        expectPage(page, `GET ${v}`);
        const csrf = hidden((page.status === 200 ? page : await b.get('/signin')).text, '_csrf');
        const body = `_csrf=${encodeURIComponent(csrf)}&username=alice&password=${encodeURIComponent(PASSWORD)}&return_to=${v}&continue=${v}`;
        const res = await b.request('POST', '/signin', body, { 'content-type': 'application/x-www-form-urlencoded' });
        if (UNPARSEABLE.test(v)) {
          expect(page.status, `GET ${v}`).toBe(400);
          expect(res.status, `POST ${v}`).toBe(400);
          expect(b.cookies.has('authcli_session'), v).toBe(false);
          // The same browser then signs in normally and lands on the server's own home page.
          expect((await signIn(b)).location, v).toBe('/');
        } else {
          expect(page.status, `GET ${v}`).toBe(200);
          expect(page.text, v).not.toContain('name="continue"');
          expect(res.status, `POST ${v}`).toBe(303);
          expect(res.location, `POST ${v}`).toBe('/');
        }
      }
    },
    HASHING_TEST_TIMEOUT_MS,
  );

  it(
    'no 500 and no off-site Location for odd characters in any page query, path or form, signed in or out',
    async () => {
      const signedIn = await signedInBrowser(server);
      const { url: valid } = await authorizeUrl({ clientId, redirectUri });
      const validQuery = valid.slice(valid.indexOf('?') + 1);
      for (const b of [new Browser(server.url), signedIn]) {
        const who = b === signedIn ? 'signed in' : 'signed out';
        const csrf = hidden((await b.get('/signin')).text, '_csrf');
        const post = (path: string, body: string) =>
          b.request('POST', path, `_csrf=${encodeURIComponent(csrf)}&${body}`, { 'content-type': 'application/x-www-form-urlencoded' });
        for (const v of ODD) {
          const gets = [
            `/signin?continue=${v}`,
            `/signin?${v}=1`,
            `/device?user_code=${v}`,
            `/device?${v}`,
            `/oauth/authorize?${validQuery}&x=${v}`,
            `/oauth/authorize?${validQuery.replace(/state=[^&]*/, `state=${v}`)}`,
            `/oauth/authorize?${validQuery.replace(/nonce=[^&]*/, `nonce=${v}`)}`,
            `/oauth/authorize?${validQuery.replace(/scope=[^&]*/, `scope=${v}`)}`,
            `/oauth/authorize?${validQuery.replace(/client_id=[^&]*/, `client_id=${v}`)}`,
            `/oauth/authorize?${validQuery.replace(/redirect_uri=[^&]*/, `redirect_uri=${v}`)}`,
            `/oauth/authorize?${validQuery}&prompt=${v}&max_age=${v}`,
            `/dashboard?x=${v}`,
            `/dashboard/apps/${v}`,
            `/dashboard/apps/${v}?${v}`,
            `/developer/playground?${v}`,
            `/developer/playground/apps/${v}`,
            `/?${v}`,
          ];
          for (const path of gets) expectPage(await b.get(path), `${who} GET ${path}`);
          const posts: [string, string][] = [
            ['/signin', `username=${v}&password=${v}&continue=${v}`],
            ['/consent', `request=${v}&decision=approve`],
            ['/consent', `request=${encodeURIComponent(validQuery)}&decision=${v}`],
            ['/consent', `request=${encodeURIComponent(`${validQuery}&state=`)}${v}&decision=approve`],
            ['/device', `user_code=${v}`],
            ['/device/decision', `user_code=${v}&decision=${v}`],
            ['/dashboard/apps', `name=${v}&kind=${v}&callback_urls=${v}&scope=${v}&grant=${v}`],
          ];
          for (const [path, body] of posts) expectPage(await post(path, body), `${who} POST ${path} ${body}`);
        }
      }
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    },
    HASHING_TEST_TIMEOUT_MS,
  );

  it('the authorization request resumes after sign-in, as the server re-serialized it, and the code flow completes', async () => {
    const b = new Browser(server.url);
    // prompt=login and max_age are satisfied by this sign-in; an unknown parameter is not carried along.
    const { signInPage, verifier, state, nonce } = await startAuthorization(b, { prompt: 'login consent', max_age: '0', unknown: 'x' });
    const page = await b.get(signInPage);
    expect(page.text).toContain('Continuation App');
    const signedIn = await b.postForm('/signin', signInFields(page.text, 'alice', PASSWORD));
    expect(signedIn.status).toBe(303);
    expect(signedIn.location).toMatch(/^\/oauth\/authorize\?/);
    const resumed = new URLSearchParams(signedIn.location!.slice(signedIn.location!.indexOf('?') + 1));
    expect(Object.fromEntries(resumed)).toEqual({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: redirectUri,
      scope: 'openid profile',
      code_challenge: expect.stringMatching(/^[\w-]{43}$/),
      code_challenge_method: 'S256',
      state,
      nonce,
      prompt: 'consent',
    });
    const consent = await b.get(signedIn.location!);
    expect(consent.status).toBe(200);
    const approved = await b.postForm('/consent', {
      _csrf: hidden(consent.text, '_csrf'),
      request: hidden(consent.text, 'request'),
      decision: 'approve',
    });
    expect(approved.status).toBe(303);
    const callback = new URL(approved.location!);
    expect(`${callback.origin}${callback.pathname}`).toBe(redirectUri);
    expect(callback.searchParams.get('state')).toBe(state);
    const tokens = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code')!,
      redirect_uri: redirectUri,
      client_id: clientId,
      code_verifier: verifier,
    });
    expect(tokens.status).toBe(200);
    expect(tokens.json.access_token).toBeTruthy();
    const claims = JSON.parse(Buffer.from(String(tokens.json.id_token).split('.')[1]!, 'base64url').toString()) as { nonce: string };
    expect(claims.nonce).toBe(nonce);
  });

  it('a consent posted after the session ended resumes the authorization request after sign-in', async () => {
    const b = await signedInBrowser(server);
    const { url } = await authorizeUrl({ clientId, redirectUri, scope: 'openid email' });
    const consent = await b.get(url);
    expect(consent.status).toBe(200);
    b.cookies.delete('authcli_session');
    const res = await b.postForm('/consent', {
      _csrf: hidden(consent.text, '_csrf'),
      request: hidden(consent.text, 'request'),
      decision: 'approve',
    });
    expect(res.status).toBe(303);
    expect(res.location).toMatch(CONTINUE_LOCATION);
    const signedIn = await signIn(b, 'alice', PASSWORD, res.location!);
    expect(signedIn.location).toMatch(/^\/oauth\/authorize\?/);
    expect(new URLSearchParams(signedIn.location!.split('?')[1]).get('scope')).toBe('openid email');
  });

  it('the device page resumes after sign-in with the code it was opened with, normalized by the server', async () => {
    const d = await deviceAuthorization(server, 'authcli');
    const userCode = String(d.json.user_code);
    const b = new Browser(server.url);
    const res = await b.get(`/device?user_code=${userCode.toLowerCase().replace('-', '')}`);
    expect(res.status).toBe(303);
    expect(res.location).toMatch(CONTINUE_LOCATION);
    const signedIn = await signIn(b, 'alice', PASSWORD, res.location!);
    expect(signedIn.location).toBe(`/device?user_code=${userCode}`);
    const entry = await b.get(signedIn.location!);
    expect(entry.status).toBe(200);
    expect(entry.text).toContain(`value="${userCode}"`);
    // A code that cannot be one is not carried: the device page comes back empty.
    const junk = new Browser(server.url);
    const odd = await junk.get('/device?user_code=%2F%2Fevil.example');
    expect((await signIn(junk, 'alice', PASSWORD, odd.location!)).location).toBe('/device');
  });

  it('dashboard pages resume after sign-in: the list, the registration form, one application', async () => {
    const cases: [string, string][] = [
      ['/dashboard', '/dashboard'],
      ['/dashboard/apps/new', '/dashboard/apps/new'],
      [`/dashboard/apps/${clientId}`, `/dashboard/apps/${clientId}`],
      ['/dashboard/apps/%2F%2Fevil.example', '/dashboard'],
      ['/developer/playground', '/developer/playground'],
    ];
    for (const [from, to] of cases) {
      const b = new Browser(server.url);
      const res = await b.get(from);
      expect(res.location, from).toMatch(CONTINUE_LOCATION);
      expect((await signIn(b, 'alice', PASSWORD, res.location!)).location, from).toBe(to);
    }
  });

  it('a continuation id used from another browser (another cookie jar) leads to /, and stays usable by its own browser', async () => {
    const owner = new Browser(server.url);
    const { signInPage, id } = await startAuthorization(owner);
    const thief = new Browser(server.url);
    const page = await thief.get(signInPage);
    expect(page.status).toBe(200);
    expect(page.text).not.toContain('Continuation App');
    expect(page.text).not.toContain('name="continue"');
    const stolen = await thief.postForm('/signin', { ...signInFields(page.text, 'alice', PASSWORD), continue: id });
    expect(stolen.status).toBe(303);
    expect(stolen.location).toBe('/');
    // Another browser's own binding cookie does not open it either.
    const planted = new Browser(server.url);
    await startAuthorization(planted);
    expect(
      (await planted.postForm('/signin', { ...signInFields((await planted.get('/signin')).text, 'alice', PASSWORD), continue: id }))
        .location,
    ).toBe('/');
    expect((await signIn(owner, 'alice', PASSWORD, signInPage)).location).toMatch(/^\/oauth\/authorize\?/);
  });

  it('a continuation id is single use: signing in with it twice leads to / the second time', async () => {
    const b = new Browser(server.url);
    const { signInPage, id } = await startAuthorization(b);
    const page = await b.get(signInPage);
    const first = await b.postForm('/signin', signInFields(page.text, 'alice', PASSWORD));
    expect(first.location).toMatch(/^\/oauth\/authorize\?/);
    const again = await b.postForm('/signin', { ...signInFields((await b.get('/signin')).text, 'alice', PASSWORD), continue: id });
    expect(again.location).toBe('/');
    // The sign-in page no longer offers it.
    expect((await b.get(signInPage)).text).not.toContain('name="continue"');
  });

  it('a continuation id is single use under a race: of two concurrent sign-ins with it, one resumes and one goes to /', async () => {
    const b = new Browser(server.url);
    const { signInPage } = await startAuthorization(b);
    const fields = signInFields((await b.get(signInPage)).text, 'alice', PASSWORD);
    const both = await Promise.all([b.postForm('/signin', fields), b.postForm('/signin', fields)]);
    const locations = both.map((r) => (r.location === '/' ? '/' : r.location!.split('?')[0])).sort();
    expect(locations).toEqual(['/', '/oauth/authorize']);
  });

  it('an expired continuation leads to /, and expired rows are purged', async () => {
    const b = new Browser(server.url);
    const { signInPage, id } = await startAuthorization(b);
    const page = await b.get(signInPage);
    const clock = ownClock(server);
    clock.advance(CONTINUATION_TTL_MS + 1);
    const res = await b.postForm('/signin', signInFields(page.text, 'alice', PASSWORD));
    expect(res.status).toBe(303);
    expect(res.location).toBe('/');
    await server.store.purgeExpired(server.clock.now());
    const left = await testRows(server.store).select('continuations', { id_hash: sha256Hex(id) });
    expect(left).toEqual([]);
  });

  it('a forged continuation id leads to /', async () => {
    const b = new Browser(server.url);
    await startAuthorization(b);
    for (const forged of [randomBytes(32).toString('base64url'), 'x', '../../evil.example', 'https://evil.example', '']) {
      const page = await b.get(`/signin?continue=${encodeURIComponent(forged)}`);
      expect(page.status, forged).toBe(200);
      expect(page.text, forged).not.toContain('name="continue"');
      const res = await b.postForm('/signin', { ...signInFields(page.text, 'alice', PASSWORD), continue: forged });
      expect(res.location, forged).toBe('/');
    }
  });

  it('the continuation id and the browser binding are stored only as SHA-256', async () => {
    const b = new Browser(server.url);
    const { id } = await startAuthorization(b);
    const binding = b.cookies.get('authcli_continue')!;
    expect(binding).toMatch(/^[\w-]{43}$/);
    const rows = await testRows(server.store).select('continuations', { id_hash: sha256Hex(id) });
    expect(rows).toHaveLength(1);
    expect(rows[0]!.browser_hash).toBe(sha256Hex(binding));
    expect(JSON.stringify(rows[0])).not.toContain(id);
    expect(JSON.stringify(rows[0])).not.toContain(binding);
    expect(JSON.parse(rows[0]!.target)).toMatchObject({ kind: 'authorize' });
    expect(rows[0]!.expires_at - rows[0]!.created_at).toBe(CONTINUATION_TTL_MS);
  });
});

describe('sign-in continuation on an https issuer', () => {
  it('the browser-binding cookie is __Host- prefixed, Secure, HttpOnly and SameSite=Lax', async () => {
    const server = await startServer('sqlite', { issuer: 'https://id.example' });
    try {
      const b = new Browser(`http://127.0.0.1:${server.config.port}`);
      const res = await b.get('/dashboard');
      expect(res.location).toMatch(CONTINUE_LOCATION);
      const cookie = res.headers.getSetCookie().find((c) => c.startsWith('__Host-authcli_continue='))!;
      expect(cookie).toMatch(/; Secure/);
      expect(cookie).toMatch(/HttpOnly/);
      expect(cookie).toMatch(/SameSite=Lax/);
      expect(cookie).toMatch(/Path=\//);
      expect(cookie).not.toMatch(/Domain=/i);
    } finally {
      await server.close();
    }
  });
});

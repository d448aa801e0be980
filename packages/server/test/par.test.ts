import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calculateJwkThumbprint, decodeJwt, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { challengeS256, generateVerifier } from '@authcli/pkce';
import { approveInBrowser } from '@authcli/test-support/http';
import { LIMITS, PAR_REQUEST_TTL_SECONDS } from '../src/config/defaults.js';
import {
  basic,
  Browser,
  dialects,
  hidden,
  ownClock,
  PASSWORD,
  postForm,
  seedApp,
  seedUser,
  signedInBrowser,
  signIn,
  signInFields,
  startServer,
  tokenRequest,
  type Res,
  type TestServer,
} from './helpers.js';

const REDIRECT = 'https://app.example/callback';
type Answer = Awaited<ReturnType<typeof postForm>>;

const URN = /^urn:ietf:params:oauth:request_uri:[A-Za-z0-9_-]{43}$/;

/** RFC 9126 pushed authorization requests. */
describe.each(dialects())('pushed authorization requests (%s)', (dialect) => {
  let server: TestServer;
  let conf: { id: string; secret: string };
  let other: { id: string; secret: string };
  let pub: string;

  beforeAll(async () => {
    server = await startServer(dialect);
    for (const user of ['alice', 'bob', 'carol', 'dave', 'erin', 'frank']) await seedUser(server, user);
    const c = await seedApp(server, { name: 'Web app', kind: 'confidential', callbackUrls: [REDIRECT] });
    conf = { id: c.app.clientId, secret: c.clientSecret! };
    const o = await seedApp(server, { name: 'Other app', kind: 'confidential', callbackUrls: [REDIRECT] });
    other = { id: o.app.clientId, secret: o.clientSecret! };
    pub = (await seedApp(server, { name: 'Native app', callbackUrls: ['http://127.0.0.1/callback'] })).app.clientId;
  });
  afterAll(async () => server.close());

  /** An authorization request's parameters, PKCE included. */
  async function request(extra: Record<string, string> = {}) {
    const verifier = generateVerifier();
    const params = {
      response_type: 'code',
      redirect_uri: REDIRECT,
      scope: 'openid profile',
      state: `state-${Math.random()}`,
      nonce: `nonce-${Math.random()}`,
      code_challenge: await challengeS256(verifier),
      code_challenge_method: 'S256',
      ...extra,
    };
    return { params, verifier };
  }

  const push = (
    fields: Record<string, string> | string,
    client: { id: string; secret: string } | null = conf,
    headers: Record<string, string> = {},
  ) => postForm(server, '/oauth/par', fields, { ...(client && { authorization: basic(client.id, client.secret) }), ...headers });

  /** Pushes a request of `conf` and returns the authorization URL the browser is sent to. */
  async function pushed(extra: Record<string, string> = {}, client = conf) {
    const { params, verifier } = await request(extra);
    const res = await push(params, client);
    expect(res.status, JSON.stringify(res.json)).toBe(201);
    const requestUri = res.json.request_uri as string;
    const url = `${server.url}/oauth/authorize?${new URLSearchParams({ client_id: client.id, request_uri: requestUri })}`;
    return { url, requestUri, params, verifier };
  }

  const expectError = (res: Answer, status: number, error: string) => {
    expect(res.status, JSON.stringify(res.json)).toBe(status);
    expect(res.json.error).toBe(error);
    expect(res.headers.get('cache-control')).toBe('no-store');
  };

  const expectPageError = (res: Res) => {
    expect(res.status).toBe(400);
    expect(res.location).toBeFalsy();
    expect(res.text).toContain('invalid_request_uri');
  };

  it('rfc9126 §2.2 a push answers 201 with a request_uri of 256 random bits and expires_in, never cached', async () => {
    const { params } = await request();
    const res = await push(params);
    expect(res.status, JSON.stringify(res.json)).toBe(201);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.json.request_uri).toMatch(URN);
    expect(res.json).toEqual({ request_uri: res.json.request_uri, expires_in: PAR_REQUEST_TTL_SECONDS });
    const again = await push(params);
    expect(again.json.request_uri).not.toBe(res.json.request_uri);
  });

  it('rfc9126 §4 the browser carries only client_id and request_uri; the code goes to the pushed redirect_uri with its state', async () => {
    const { url, params, verifier, requestUri } = await pushed();
    const browser = new Browser(server.url);
    let res = await browser.get(url);
    expect(res.status).toBe(303);
    res = await browser.get(res.location!);
    res = await browser.postForm('/signin', signInFields(res.text, 'alice', PASSWORD));
    expect(res.status).toBe(303);
    // The resumed request is the reference again: none of the pushed parameters reach the browser.
    expect(res.location).toBe(`/oauth/authorize?${new URLSearchParams({ client_id: conf.id, request_uri: requestUri })}`);
    const consent = await browser.get(res.location!);
    expect(consent.status).toBe(200);
    const carried = hidden(consent.text, 'request');
    expect(Object.fromEntries(new URLSearchParams(carried))).toEqual({ client_id: conf.id, request_uri: requestUri });
    expect(consent.text).not.toContain(params.state);
    const done = await browser.postForm('/consent', { _csrf: hidden(consent.text, '_csrf'), request: carried, decision: 'approve' });
    expect(done.status).toBe(303);
    const callback = new URL(done.location!);
    expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT);
    expect(callback.searchParams.get('state')).toBe(params.state);
    expect(callback.searchParams.get('iss')).toBe(server.url);
    const token = await tokenRequest(
      server,
      { grant_type: 'authorization_code', code: callback.searchParams.get('code')!, redirect_uri: REDIRECT, code_verifier: verifier },
      { authorization: basic(conf.id, conf.secret) },
    );
    expect(token.status, JSON.stringify(token.json)).toBe(200);
    expect(token.json.scope ?? 'openid profile').toBe('openid profile');
  });

  it('rfc9126 §2 a public client pushes with client_id alone; client_secret_post authenticates a confidential one', async () => {
    const { params } = await request({ redirect_uri: 'http://127.0.0.1:5123/callback' });
    const res = await push({ ...params, client_id: pub }, null);
    expect(res.status, JSON.stringify(res.json)).toBe(201);
    const post = await push({ ...(await request()).params, client_id: conf.id, client_secret: conf.secret }, null);
    expect(post.status, JSON.stringify(post.json)).toBe(201);
    // The secret is client authentication, not part of the stored request: the browser's flow works as usual.
    const callback = new URL(
      await approveInBrowser(
        await signedInBrowser(server, 'bob'),
        `${server.url}/oauth/authorize?client_id=${conf.id}&request_uri=${encodeURIComponent(post.json.request_uri)}`,
        'bob',
        PASSWORD,
      ),
    );
    expect(callback.searchParams.get('code')).toBeTruthy();
  });

  it('rfc9126 §2.3 errors are JSON in the token endpoint format, never a redirect: client authentication, redirect_uri, PKCE', async () => {
    const { params } = await request();
    const wrong = await push(params, { id: conf.id, secret: 'wrong' });
    expectError(wrong, 401, 'invalid_client');
    expect(wrong.headers.get('www-authenticate')).toMatch(/^Basic/);
    expectError(await push(params, null), 401, 'invalid_client');
    // A public client cannot present a secret, a confidential one must.
    expectError(await push({ ...params, client_id: pub, client_secret: 'x' }, null), 401, 'invalid_client');
    expectError(await push({ ...params, redirect_uri: 'https://evil.example/cb' }), 400, 'invalid_request');
    expectError(await push({ ...params, redirect_uri: '' }), 400, 'invalid_request');
    const { code_challenge: _c, ...noPkce } = params;
    expectError(await push(noPkce), 400, 'invalid_request');
    expectError(await push({ ...params, code_challenge_method: 'plain' }), 400, 'invalid_request');
    expectError(await push({ ...params, response_type: 'token' }), 400, 'unsupported_response_type');
    expectError(await push({ ...params, scope: 'openid address' }, other), 400, 'invalid_scope');
    expectError(await push({ ...params, request: 'eyJhbGciOiJub25lIn0.e30.' }), 400, 'request_not_supported');
    expectError(await push({ ...params, client_id: other.id }), 400, 'invalid_request');
    for (const res of [wrong, await push({ ...params, redirect_uri: 'https://evil.example/cb' })])
      expect(res.headers.get('location')).toBeNull();
  });

  it('rfc9126 §2.1 a request_uri cannot be pushed; a repeated parameter and other content types are refused', async () => {
    const { params } = await request();
    expectError(await push({ ...params, request_uri: 'urn:ietf:params:oauth:request_uri:x' }), 400, 'invalid_request');
    const body = `${new URLSearchParams(params)}&scope=openid`;
    expectError(await push(body), 400, 'invalid_request');
    const json = await fetch(`${server.url}/oauth/par`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basic(conf.id, conf.secret) },
      body: JSON.stringify(params),
    });
    expect(json.status).toBe(400);
    expect(((await json.json()) as { error: string }).error).toBe('invalid_request');
    expect((await fetch(`${server.url}/oauth/par`)).status).toBe(404);
  });

  it('rfc9126 §4 the request_uri is bound to the client that pushed it; unknown and malformed ones are an error page', async () => {
    const { requestUri } = await pushed();
    const browser = new Browser(server.url);
    expectPageError(await browser.get(`/oauth/authorize?${new URLSearchParams({ client_id: other.id, request_uri: requestUri })}`));
    for (const uri of [`urn:ietf:params:oauth:request_uri:${'A'.repeat(43)}`, 'urn:ietf:params:oauth:request_uri:short']) {
      expectPageError(await browser.get(`/oauth/authorize?${new URLSearchParams({ client_id: conf.id, request_uri: uri })}`));
    }
    // Another kind of request_uri (a request object by reference) stays unsupported, redirected as before.
    const byReference = await browser.get(
      `/oauth/authorize?${new URLSearchParams({ client_id: conf.id, redirect_uri: REDIRECT, request_uri: 'https://app.example/req.jwt' })}`,
    );
    expect(byReference.status).toBe(303);
    expect(new URL(byReference.location!).searchParams.get('error')).toBe('request_uri_not_supported');
  });

  it('oidc core §3.1.2.1 a pushed login_hint fills in the sign-in page; one beside the request_uri does not', async () => {
    const { url } = await pushed({ login_hint: 'carol' });
    const browser = new Browser(server.url);
    const toSignIn = await browser.get(`${url}&login_hint=mallory`);
    expect(toSignIn.status).toBe(303);
    const page = await browser.get(toSignIn.location!);
    expect(page.text).toMatch(/name="username"[^>]*value="carol"/);
    expect(page.text).not.toContain('mallory');
  });

  it('rfc9126 §4 parameters beside request_uri are ignored: the pushed redirect_uri, scope and state are used', async () => {
    const { requestUri, params } = await pushed();
    const tampered = new URLSearchParams({
      client_id: conf.id,
      request_uri: requestUri,
      redirect_uri: 'https://evil.example/cb',
      scope: 'openid profile email',
      state: 'attacker',
    });
    const callback = new URL(
      await approveInBrowser(await signedInBrowser(server, 'carol'), `${server.url}/oauth/authorize?${tampered}`, 'carol', PASSWORD),
    );
    expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT);
    expect(callback.searchParams.get('state')).toBe(params.state);
  });

  it('rfc9126 §2.2 / §4 unopened past expires_in it is refused; once opened it lives through a slow sign-in, then is answered once', async () => {
    const clock = ownClock(server);
    const late = await pushed();
    clock.advance((PAR_REQUEST_TTL_SECONDS + 1) * 1000);
    expectPageError(await new Browser(server.url).get(late.url));

    const slow = await pushed();
    const browser = new Browser(server.url);
    const toSignIn = await browser.get(slow.url);
    expect(toSignIn.status).toBe(303);
    clock.advance(5 * 60 * 1000);
    const callback = new URL(await approveInBrowser(browser, `${server.url}${toSignIn.location}`, 'dave', PASSWORD));
    expect(callback.searchParams.get('code')).toBeTruthy();
    // Used up: the same URL, even in the same signed-in browser, is refused, as is a denial.
    expectPageError(await browser.get(slow.url));
  });

  it('rfc9126 §4 one-time use: 20 parallel approvals of one pushed request give exactly one code', async () => {
    const { url } = await pushed();
    const browser = await signedInBrowser(server, 'erin');
    const consent = await browser.get(url);
    expect(consent.status).toBe(200);
    const form = { _csrf: hidden(consent.text, '_csrf'), request: hidden(consent.text, 'request'), decision: 'approve' };
    const answers = await Promise.all(Array.from({ length: 20 }, () => browser.postForm('/consent', form)));
    const codes = answers.filter((r) => r.status === 303 && r.location?.startsWith(REDIRECT) && r.location.includes('code='));
    expect(codes).toHaveLength(1);
    for (const r of answers.filter((a) => !codes.includes(a))) expectPageError(r);
    // A denial after the code is refused too: one answer per request.
    expectPageError(await browser.postForm('/consent', { ...form, decision: 'deny' }));
  });

  it('rfc9126 §4 a pushed prompt=login, max_age and select_account are satisfied by the sign-in made for the request (no loop)', async () => {
    // The sign-in before the push does not count for it; the test clock moves on between them.
    const clock = ownClock(server);
    const browser = new Browser(server.url);
    expect((await signIn(browser, 'frank')).status).toBe(303);
    clock.advance(2000);
    for (const extra of [{ prompt: 'login' }, { max_age: '0' }] as Record<string, string>[]) {
      const { url } = await pushed(extra);
      const first = await browser.get(url);
      expect(first.status).toBe(303);
      expect(first.location).toMatch(/^\/signin\?continue=/);
      const callback = new URL(await approveInBrowser(browser, `${server.url}${first.location}`, 'frank', PASSWORD));
      expect(callback.searchParams.get('code')).toBeTruthy();
      clock.advance(2000);
    }
    // select_account: "continue as" drops only that value from the pushed prompt.
    const { url } = await pushed({ prompt: 'select_account consent' });
    const chooser = await browser.get(url);
    expect(chooser.status).toBe(200);
    const continueAs = /href="(\/oauth\/authorize\?[^"]+)"/.exec(chooser.text)![1]!.replace(/&amp;/g, '&');
    expect(new URLSearchParams(continueAs.split('?')[1]).get('prompt')).toBe('consent');
    const consent = await browser.get(continueAs);
    expect(consent.status).toBe(200);
    expect(consent.text).toContain('name="decision"');
    // The narrowing cannot drop anything else: asking to drop consent too is ignored (the chooser again).
    const dropAll = `${url}&prompt=`;
    expect((await browser.get(dropAll)).text).not.toContain('name="decision"');
  });

  it('rfc9449 §10.1 a DPoP proof with the push binds the code to its key (dpop_jkt); a dpop_jkt naming another key is refused', async () => {
    const key = await generateKeyPair('ES256');
    const jwk = await exportJWK(key.publicKey);
    const jkt = await calculateJwkThumbprint(jwk);
    const parUrl = `${server.url}/oauth/par`;
    const proof = (nonce?: string) =>
      new SignJWT({ htm: 'POST', htu: parUrl, iat: Math.floor(Date.now() / 1000), jti: crypto.randomUUID(), ...(nonce && { nonce }) })
        .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk })
        .sign(key.privateKey);
    const { params, verifier } = await request();
    // The server's nonce first (RFC 9449 §8), as at the token endpoint.
    const first = await push(params, conf, { dpop: await proof() });
    expectError(first, 400, 'use_dpop_nonce');
    const nonce = first.headers.get('dpop-nonce')!;
    const mismatch = await push({ ...params, dpop_jkt: 'A'.repeat(43) }, conf, { dpop: await proof(nonce) });
    expectError(mismatch, 400, 'invalid_dpop_proof');
    const res = await push(params, conf, { dpop: await proof(nonce) });
    expect(res.status, JSON.stringify(res.json)).toBe(201);
    const url = `${server.url}/oauth/authorize?${new URLSearchParams({ client_id: conf.id, request_uri: res.json.request_uri as string })}`;
    const code = new URL(await approveInBrowser(await signedInBrowser(server, 'bob'), url, 'bob', PASSWORD)).searchParams.get('code')!;
    // The code's token request must prove that key: without a proof it is refused.
    const exchange = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier };
    const refused = await tokenRequest(server, exchange, { authorization: basic(conf.id, conf.secret) });
    expect(refused.status).toBe(400);
    expect(refused.json.error).toBe('invalid_dpop_proof');
    // With a proof by that key (and the nonce) the code gives a token bound to it.
    const tokenUrl = `${server.url}/oauth/token`;
    const tokenProof = (n: string) =>
      new SignJWT({ htm: 'POST', htu: tokenUrl, iat: Math.floor(Date.now() / 1000), jti: crypto.randomUUID(), nonce: n })
        .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk })
        .sign(key.privateKey);
    const bound = await tokenRequest(server, exchange, { authorization: basic(conf.id, conf.secret), dpop: await tokenProof(nonce) });
    expect(bound.status, JSON.stringify(bound.json)).toBe(200);
    expect(bound.json.token_type).toBe('DPoP');
    expect((decodeJwt(bound.json.access_token as string).cnf as { jkt: string }).jkt).toBe(jkt);
  });

  it('rfc9126 §5 an application that requires PAR: a direct request is redirected invalid_request; a pushed one works', async () => {
    const strict = await seedApp(server, { name: 'Strict', kind: 'confidential', callbackUrls: [REDIRECT] });
    await server.store.applications.update(strict.app.clientId, { requirePushedAuthorizationRequests: true }, server.clock.now());
    const client = { id: strict.app.clientId, secret: strict.clientSecret! };
    const { params } = await request();
    const direct = await new Browser(server.url).get(`/oauth/authorize?${new URLSearchParams({ ...params, client_id: client.id })}`);
    expect(direct.status).toBe(303);
    const error = new URL(direct.location!);
    expect(error.searchParams.get('error')).toBe('invalid_request');
    expect(error.searchParams.get('state')).toBe(params.state);
    expect(error.searchParams.get('iss')).toBe(server.url);
    const { url } = await pushed({}, client);
    expect(new URL(await approveInBrowser(await signedInBrowser(server), url, 'alice', PASSWORD)).searchParams.get('code')).toBeTruthy();
  });

  it('rfc9126 §2 a public client is counted per IP: 40 parallel pushes with forged X-Forwarded-For, exactly the limit succeed', async () => {
    const app = (await seedApp(server, { name: 'Counted', callbackUrls: ['http://127.0.0.1/callback'] })).app.clientId;
    const { params } = await request({ redirect_uri: 'http://127.0.0.1/callback', client_id: app });
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => push(params, null, { 'x-forwarded-for': `10.${i}.0.1, 192.0.2.${i}` })),
    );
    const limit = LIMITS['par-ip'].limit;
    expect(answers.filter((r) => r.status === 201)).toHaveLength(limit);
    const refused = answers.filter((r) => r.status !== 201);
    expect(refused).toHaveLength(40 - limit);
    for (const r of refused) {
      expect(r.status).toBe(429);
      expect(r.json.error).toBe('temporarily_unavailable');
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    }
  });
});

describe('pushed authorization requests required of every client (AUTHCLI_REQUIRE_PAR)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer('sqlite', { requirePushedAuthorizationRequests: true });
  });
  afterAll(async () => server.close());

  it('rfc9126 §5 discovery advertises the endpoint and the requirement; the built-in client must push', async () => {
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
      const meta = (await (await fetch(`${server.url}${path}`)).json()) as Record<string, unknown>;
      expect(meta.pushed_authorization_request_endpoint).toBe(`${server.url}/oauth/par`);
      expect(meta.require_pushed_authorization_requests).toBe(true);
    }
    const verifier = generateVerifier();
    const params = {
      response_type: 'code',
      client_id: 'authcli',
      redirect_uri: 'http://127.0.0.1:4000/callback',
      scope: 'openid',
      code_challenge: await challengeS256(verifier),
      code_challenge_method: 'S256',
    };
    const direct = await new Browser(server.url).get(`/oauth/authorize?${new URLSearchParams(params)}`);
    expect(new URL(direct.location!).searchParams.get('error')).toBe('invalid_request');
    const res = await postForm(server, '/oauth/par', params);
    expect(res.status, JSON.stringify(res.json)).toBe(201);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveInBrowser } from '@authcli/test-support/http';
import {
  authorizeUrl,
  Browser,
  dialects,
  hidden,
  PASSWORD,
  seedApp,
  seedUser,
  signedInBrowser,
  startServer,
  tokenRequest,
  type TestServer,
} from './helpers.js';

/** OpenID Connect Core §3.1.2.1: the authorization endpoint MUST support POST, form-encoded, with the rules of GET. */
describe.each(dialects())('authorization endpoint by POST (%s)', (dialect) => {
  let server: TestServer;
  let clientId: string;
  const redirectUri = 'https://app.example/callback';

  beforeAll(async () => {
    server = await startServer(dialect);
    await seedUser(server);
    ({
      app: { clientId },
    } = await seedApp(server, { callbackUrls: [redirectUri] }));
  });
  afterAll(async () => server.close());

  /** The fields of a valid request, as a client's auto-submitting form would post them; `extra` overrides (undefined removes). */
  async function requestFields(extra: Record<string, string | undefined> = {}) {
    const { url, verifier, state, nonce } = await authorizeUrl({ clientId, redirectUri });
    const fields = new URLSearchParams(url.split('?')[1]);
    for (const [k, v] of Object.entries(extra)) v === undefined ? fields.delete(k) : fields.set(k, v);
    return { fields, verifier, state, nonce };
  }

  /** POSTs a form body as a cross-site page would: no CSRF token, and no cookies unless the browser has them. */
  function post(b: Browser, body: string) {
    return b.request('POST', '/oauth/authorize', body, { 'content-type': 'application/x-www-form-urlencoded' });
  }

  function redirectParams(res: { status: number; location: string | null }) {
    expect(res.status).toBe(303);
    const u = new URL(res.location!);
    expect(`${u.origin}${u.pathname}`).toBe(redirectUri);
    return u.searchParams;
  }

  it('oidc core §3.1.2.1 the code flow works by POST: sign-in, consent, code, and the code redeems', async () => {
    const b = new Browser(server.url);
    const { fields, verifier, state } = await requestFields({ scope: 'openid profile' });
    const res = await post(b, fields.toString());
    expect(res.status).toBe(303);
    expect(res.location).toMatch(/^\/oauth\/authorize\?/);
    const callback = new URL(await approveInBrowser(b, server.url + res.location!, 'alice', PASSWORD));
    expect(callback.searchParams.get('state')).toBe(state);
    expect(callback.searchParams.get('iss')).toBe(server.url);
    const code = callback.searchParams.get('code')!;
    const token = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      client_id: clientId,
      code_verifier: verifier,
    });
    expect(token.status).toBe(200);
    expect(token.json.id_token).toBeTruthy();
  });

  it('oidc core §3.1.2.1 a signed-in user with consent is answered silently: the POST continues as a GET that carries the SameSite=Lax session', async () => {
    const b = await signedInBrowser(server);
    const first = await requestFields({ scope: 'openid email offline_access' });
    const consent = await b.get((await post(b, first.fields.toString())).location!);
    expect(consent.status).toBe(200);
    expect(hidden(consent.text, 'request')).toContain('client_id=');
    const approved = await b.postForm('/consent', {
      _csrf: hidden(consent.text, '_csrf'),
      request: hidden(consent.text, 'request'),
      decision: 'approve',
    });
    expect(redirectParams(approved).get('code')).toBeTruthy();

    const { fields, state, nonce } = await requestFields({ scope: 'openid email offline_access' });
    const res = await post(b, fields.toString());
    const query = new URLSearchParams(res.location!.split('?')[1]);
    expect(query.get('state')).toBe(state);
    expect(query.get('nonce')).toBe(nonce);
    const p = redirectParams(await b.get(res.location!));
    expect(p.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(p.get('state')).toBe(state);
  });

  it('oidc core §3.1.2.1 prompt and max_age survive the POST; parameters the server does not use are left behind', async () => {
    const { fields } = await requestFields({ prompt: 'login consent', max_age: '30', ui_locales: 'de' });
    const res = await post(new Browser(server.url), fields.toString());
    const query = new URLSearchParams(res.location!.split('?')[1]);
    expect(query.get('prompt')).toBe('login consent');
    expect(query.get('max_age')).toBe('30');
    expect(query.has('ui_locales')).toBe(false);
  });

  it('csrf: the POST needs no CSRF token or cookie (a client posts it cross-site); the consent that follows keeps its check', async () => {
    const b = await signedInBrowser(server);
    const { fields } = await requestFields({ scope: 'openid email', prompt: 'consent' });
    const res = await post(new Browser(server.url), fields.toString());
    expect(res.status).toBe(303);
    const consent = await b.get(res.location!);
    expect(consent.status).toBe(200);
    const forged = await b.postForm('/consent', { request: hidden(consent.text, 'request'), decision: 'approve' });
    expect(forged.status).toBe(403);
    expect(forged.location).toBeNull();
  });

  it('rfc6749 §3.1 repeated parameters in the body are invalid_request; a repeated client_id is an error page', async () => {
    const { fields } = await requestFields({ state: 's1' });
    const scopeTwice = await post(new Browser(server.url), `${fields}&scope=openid`);
    const p = redirectParams(scopeTwice);
    expect(p.get('error')).toBe('invalid_request');
    expect(p.get('state')).toBe('s1');
    const clientTwice = await post(new Browser(server.url), `${fields}&client_id=${clientId}`);
    expect(clientTwice.status).toBe(400);
    expect(clientTwice.location).toBeNull();
  });

  it('rfc6749 §4.1.1 missing parameters: no redirect_uri or client_id is a page, no response_type or scope is redirected', async () => {
    for (const missing of ['client_id', 'redirect_uri']) {
      const res = await post(new Browser(server.url), (await requestFields({ [missing]: undefined })).fields.toString());
      expect(res.status, missing).toBe(400);
      expect(res.location).toBeNull();
    }
    expect(
      redirectParams(await post(new Browser(server.url), (await requestFields({ response_type: undefined })).fields.toString())).get(
        'error',
      ),
    ).toBe('invalid_request');
    expect(
      redirectParams(await post(new Browser(server.url), (await requestFields({ scope: undefined })).fields.toString())).get('error'),
    ).toBe('invalid_scope');
    const empty = await post(new Browser(server.url), '');
    expect(empty.status).toBe(400);
    expect(empty.location).toBeNull();
  });

  it('rfc7636 §4.3 PKCE rules hold by POST: plain, a missing method, a missing or malformed challenge are invalid_request', async () => {
    for (const extra of [
      { code_challenge_method: 'plain' },
      { code_challenge_method: undefined },
      { code_challenge: undefined },
      { code_challenge: 'a'.repeat(42) },
    ]) {
      const p = redirectParams(await post(new Browser(server.url), (await requestFields({ ...extra, state: 'pk' })).fields.toString()));
      expect(p.get('error'), JSON.stringify(extra)).toBe('invalid_request');
      expect(p.get('state')).toBe('pk');
      expect(p.get('iss')).toBe(server.url);
    }
  });

  it('rfc6749 §3.1.2.3 an unknown client gets the error page, never a redirect', async () => {
    const res = await post(new Browser(server.url), (await requestFields({ client_id: 'no-such-client' })).fields.toString());
    expect(res.status).toBe(400);
    expect(res.location).toBeNull();
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(res.text).toContain('unknown client_id');
  });

  it('rfc6749 §3.1.2.4 an unregistered redirect_uri gets the error page, never a redirect', async () => {
    const res = await post(
      new Browser(server.url),
      (await requestFields({ redirect_uri: 'https://evil.example/callback' })).fields.toString(),
    );
    expect(res.status).toBe(400);
    expect(res.location).toBeNull();
  });

  it('only a form body is accepted: JSON is refused and invalid UTF-8 is a 400 page', async () => {
    const { fields } = await requestFields();
    const json = await new Browser(server.url).request('POST', '/oauth/authorize', JSON.stringify(Object.fromEntries(fields)), {
      'content-type': 'application/json',
    });
    expect(json.status).toBeGreaterThanOrEqual(400);
    expect(json.status).toBeLessThan(500);
    expect(json.location).toBeNull();
    const bad = await post(new Browser(server.url), `client_id=%C3%28&redirect_uri=x`);
    expect(bad.status).toBe(400);
    expect(bad.location).toBeNull();
  });
});

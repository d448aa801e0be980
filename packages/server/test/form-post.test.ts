import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import {
  authorizeUrl,
  Browser,
  dialects,
  hidden,
  postForm,
  type Res,
  seedApp,
  seedUser,
  signedInBrowser,
  startServer,
  tokenRequest,
  type TestServer,
} from './helpers.js';

/** What the auto-submitting page of OAuth 2.0 Form Post Response Mode §2 holds: where it posts, and what. */
function formPost(res: Res): { action: string; fields: Record<string, string>; script: string } {
  expect(res.status).toBe(200);
  expect(res.location ?? undefined).toBeUndefined();
  const form = /<form id="authorization-response" method="post" action="([^"]*)">([\s\S]*?)<\/form>/.exec(res.text);
  expect(form, res.text.slice(0, 500)).not.toBeNull();
  const fromHtml = (s: string) =>
    s
      .replace(/&amp;/g, '&')
      .replace(/&quot;/g, '"')
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>');
  const fields = Object.fromEntries(
    [...form![2]!.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)"\/?>/g)].map((m) => [m[1]!, fromHtml(m[2]!)]),
  );
  const script = /<script>([\s\S]*?)<\/script>/.exec(res.text)![1]!;
  return { action: fromHtml(form![1]!), fields, script };
}

/** The page's CSP as a map of directive -> value. */
function csp(res: Res): Record<string, string> {
  return Object.fromEntries(
    (res.headers.get('content-security-policy') ?? '').split(';').map((d) => {
      const [name, ...value] = d.trim().split(' ');
      return [name!, value.join(' ')];
    }),
  );
}

describe.each(dialects())('response_mode=form_post (OAuth 2.0 Form Post Response Mode) (%s)', (dialect) => {
  let server: TestServer;
  let clientId: string;
  let consented: Browser;
  const redirectUri = 'https://rp.example/cb?tenant=a';

  beforeAll(async () => {
    server = await startServer(dialect);
    await seedUser(server, 'alice');
    await seedUser(server, 'bob');
    clientId = (await seedApp(server, { callbackUrls: [redirectUri, 'com.example.app:/cb'] })).app.clientId;
    // alice has approved the application once: the authorization endpoint answers at once.
    consented = await signedInBrowser(server, 'alice');
    const first = await consented.get((await authorizeUrl({ clientId, redirectUri, scope: 'openid' })).url);
    await consented.postForm('/consent', {
      _csrf: hidden(first.text, '_csrf'),
      request: hidden(first.text, 'request'),
      decision: 'approve',
    });
  });
  afterAll(async () => server.close());

  it('discovery lists form_post beside query', async () => {
    const meta = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as { response_modes_supported: string[] };
    expect(meta.response_modes_supported).toEqual(['query', 'form_post']);
  });

  it('the code, state and iss are posted by an auto-submitted form the page CSP allows (its script by hash, posting only to the client)', async () => {
    const { url, verifier, state } = await authorizeUrl({ clientId, redirectUri, scope: 'openid', extra: { response_mode: 'form_post' } });
    const res = await consented.get(url);
    const page = formPost(res);
    // The redirect URI's own query stays in the action; the response is in the body only.
    expect(page.action).toBe(redirectUri);
    expect(Object.keys(page.fields).sort()).toEqual(['code', 'iss', 'state']);
    expect(page.fields).toMatchObject({ state, iss: server.config.issuer });
    const policy = csp(res);
    expect(policy['script-src']).toBe(`'sha256-${createHash('sha256').update(page.script).digest('base64')}'`);
    expect(policy['default-src']).toBe("'none'");
    expect(policy['form-action']).toBe('https://rp.example');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.text).toContain('<noscript>');
    const tokens = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code: page.fields.code!,
      redirect_uri: redirectUri,
      client_id: clientId,
      code_verifier: verifier,
    });
    expect(tokens.status).toBe(200);
  });

  it('errors are posted too: prompt=none without a session, PKCE plain, a denial; a native app posts to its scheme', async () => {
    const none = await authorizeUrl({ clientId, redirectUri, scope: 'openid', extra: { response_mode: 'form_post', prompt: 'none' } });
    const signedOut = formPost(await new Browser(server.url).get(none.url));
    expect(signedOut.fields).toEqual({
      error: 'login_required',
      error_description: expect.any(String),
      state: none.state,
      iss: server.config.issuer,
    });

    const plain = await authorizeUrl({
      clientId,
      redirectUri,
      scope: 'openid',
      extra: { response_mode: 'form_post', code_challenge_method: 'plain' },
    });
    expect(formPost(await consented.get(plain.url)).fields).toMatchObject({ error: 'invalid_request', state: plain.state });

    const bob = await signedInBrowser(server, 'bob');
    const ask = await authorizeUrl({ clientId, redirectUri, scope: 'openid', extra: { response_mode: 'form_post' } });
    const consent = await bob.get(ask.url);
    expect(consent.text).toContain('name="decision"');
    const deny = await bob.postForm('/consent', {
      _csrf: hidden(consent.text, '_csrf'),
      request: hidden(consent.text, 'request'),
      decision: 'deny',
    });
    expect(formPost(deny).fields).toMatchObject({ error: 'access_denied', state: ask.state });
    const again = await bob.get(ask.url);
    const approve = await bob.postForm('/consent', {
      _csrf: hidden(again.text, '_csrf'),
      request: hidden(again.text, 'request'),
      decision: 'approve',
    });
    expect(Object.keys(formPost(approve).fields).sort()).toEqual(['code', 'iss', 'state']);

    const native = await authorizeUrl({
      clientId,
      redirectUri: 'com.example.app:/cb',
      scope: 'openid',
      extra: { response_mode: 'form_post' },
    });
    const res = await consented.get(native.url);
    expect(formPost(res).action).toBe('com.example.app:/cb');
    expect(csp(res)['form-action']).toBe('com.example.app:');
  });

  it('an unknown or repeated response_mode is invalid_request, in the query', async () => {
    for (const extra of [{ response_mode: 'fragment' }, { response_mode: 'jwt' }]) {
      const { url, state } = await authorizeUrl({ clientId, redirectUri, scope: 'openid', extra });
      const res = await consented.get(url);
      expect(res.status).toBe(303);
      const back = new URL(res.location!);
      expect(back.searchParams.get('error')).toBe('invalid_request');
      expect(back.searchParams.get('error_description')).toMatch(/response_mode must be query or form_post/);
      expect(back.searchParams.get('state')).toBe(state);
    }
    const { url } = await authorizeUrl({ clientId, redirectUri, scope: 'openid' });
    const repeated = await consented.get(`${url}&response_mode=form_post&response_mode=form_post`);
    expect(repeated.status).toBe(303);
    expect(new URL(repeated.location!).searchParams.get('error')).toBe('invalid_request');
  });

  it('rfc9126 a pushed request with response_mode=form_post is answered by form post', async () => {
    const { app, clientSecret } = await seedApp(server, { kind: 'confidential', callbackUrls: [redirectUri] });
    const b = await signedInBrowser(server, 'alice');
    const { url, state } = await authorizeUrl({
      clientId: app.clientId,
      redirectUri,
      scope: 'openid',
      extra: { response_mode: 'form_post' },
    });
    const pushed = await postForm(server, '/oauth/par', Object.fromEntries(new URL(url, server.url).searchParams), {
      authorization: `Basic ${Buffer.from(`${app.clientId}:${clientSecret}`).toString('base64')}`,
    });
    expect(pushed.status).toBe(201);
    const byReference = `/oauth/authorize?client_id=${app.clientId}&request_uri=${encodeURIComponent(pushed.json.request_uri)}`;
    const consent = await b.get(byReference);
    const res = await b.postForm('/consent', {
      _csrf: hidden(consent.text, '_csrf'),
      request: hidden(consent.text, 'request'),
      decision: 'approve',
    });
    expect(formPost(res).fields).toMatchObject({ state, iss: server.config.issuer });
  });
});

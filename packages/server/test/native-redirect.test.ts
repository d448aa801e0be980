import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorize,
  authorizeUrl,
  dialects,
  seedApp,
  seedUser,
  signedInBrowser,
  startServer,
  tokenRequest,
  type TestServer,
} from './helpers.js';

async function postJson(server: TestServer, path: string, body: unknown) {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> & { redirect_uris?: string[]; error?: string } };
}

/**
 * RFC 8252 Appendix A: a server that supports native apps accepts private-use URI scheme redirects (§7.1, a
 * reverse-domain scheme such as `com.example.app:/callback`), matched exactly (§8.4), beside loopback ones.
 */
describe.each(dialects())('native app redirects, RFC 8252 §7.1 (%s)', (dialect) => {
  let server: TestServer;
  let clientId: string;
  const redirectUri = 'com.example.app:/oauth2redirect';

  beforeAll(async () => {
    server = await startServer(dialect, { registration: 'open' });
    await seedUser(server, 'alice');
    clientId = (await seedApp(server, { kind: 'public', callbackUrls: [redirectUri, 'http://localhost:4242'] })).app.clientId;
  });
  afterAll(async () => server.close());

  it('the code comes back to the app by its scheme, with state and iss; the consent page names the scheme; the code redeems', async () => {
    const b = await signedInBrowser(server);
    // prompt=consent: the page is shown even when another test (in any order) has approved the application already.
    const { url } = await authorizeUrl({ clientId, redirectUri, scope: 'openid', extra: { prompt: 'consent' } });
    const consent = await b.get(url);
    expect(consent.status).toBe(200);
    expect(consent.text).toContain('you will be sent back to <code>com.example.app:</code>');
    const { callback, verifier, state } = await authorize(server, b, { clientId, redirectUri, scope: 'openid' });
    expect(callback.protocol).toBe('com.example.app:');
    expect(callback.pathname).toBe('/oauth2redirect');
    expect(callback.searchParams.get('state')).toBe(state);
    expect(callback.searchParams.get('iss')).toBe(server.config.issuer);
    const tokens = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code')!,
      redirect_uri: redirectUri,
      client_id: clientId,
      code_verifier: verifier,
    });
    expect(tokens.status).toBe(200);
  });

  it('only the registered string: another path, a trailing slash, another scheme are an error page, never a redirect', async () => {
    const b = await signedInBrowser(server);
    for (const other of [
      'com.example.app:/oauth2redirect/',
      'com.example.app://oauth2redirect',
      'com.example.evil:/oauth2redirect',
      'http://localhost:4242/',
    ]) {
      const res = await b.get((await authorizeUrl({ clientId, redirectUri: other, scope: 'openid' })).url);
      expect(res.status, other).toBe(400);
      expect(res.location ?? undefined, other).toBeUndefined();
    }
    // The loopback one without a path is the registered string, so it is taken as sent.
    const { callback } = await authorize(server, b, { clientId, redirectUri: 'http://localhost:4242', scope: 'openid' });
    expect(callback.origin).toBe('http://localhost:4242');
  });

  it("registration (RFC 7591) takes oidc-agent's redirect URIs and refuses schemes that are not reverse-domain", async () => {
    const ok = await postJson(server, '/oauth/register', {
      application_type: 'web',
      client_name: 'oidc-agent:test',
      response_types: [],
      grant_types: ['refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
      scope: 'openid profile offline_access',
      redirect_uris: ['http://localhost:4242', 'http://localhost:34697', 'http://localhost:8080', 'edu.kit.data.oidc-agent:/redirect'],
    });
    expect(ok.status, JSON.stringify(ok.json)).toBe(201);
    expect(ok.json.redirect_uris).toContain('edu.kit.data.oidc-agent:/redirect');
    for (const bad of ['myapp:/cb', 'javascript:alert(1)', 'data:text/html,hi', 'com.example.app:/cb#x']) {
      const res = await postJson(server, '/oauth/register', { redirect_uris: [bad], token_endpoint_auth_method: 'none' });
      expect(res.status, bad).toBe(400);
      expect(res.json.error, bad).toBe('invalid_redirect_uri');
    }
  });
});

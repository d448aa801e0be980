import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../src/config/defaults.js';
import type { ServerConfig } from '../src/config/config.js';
import { createInitialAccessToken } from '../src/oauth/initial-access-tokens.js';
import { newClientId } from '../src/oauth/registration.js';
import { sha256Hex } from '../src/util/crypto.js';
import {
  authorize,
  authorizeUrl,
  basic,
  Browser,
  decideOnDevicePage,
  DEVICE_GRANT,
  deviceAuthorization,
  dialects,
  ownClock,
  postForm,
  seedApp,
  seedUser,
  signedInBrowser,
  startServer,
  tokenRequest,
  type TestServer,
} from './helpers.js';
import { testRows } from '../src/testing.js';

/**
 * Dynamic client registration (RFC 7591) and client management (RFC 7592)
 * against the real server over loopback, on SQLite and PostgreSQL.
 */

// biome-ignore lint/suspicious/noExplicitAny: assertions read nested fields of answers whose shape is what the test checks
type Json = Record<string, any>;
interface Answer {
  status: number;
  headers: Headers;
  json: Json;
  text: string;
}

async function send(
  server: TestServer,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...headers },
    ...(body !== undefined && { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  let json: Json = {};
  try {
    json = text ? (JSON.parse(text) as Json) : {};
  } catch {
    json = { raw: text };
  }
  return { status: res.status, headers: res.headers, json, text };
}

const register = (server: TestServer, body: unknown, headers: Record<string, string> = {}) =>
  send(server, 'POST', '/oauth/register', body, headers);
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const manage = (server: TestServer, method: 'GET' | 'PUT' | 'DELETE', clientId: string, token: string, body?: unknown) =>
  send(server, method, `/oauth/register/${clientId}`, body, bearer(token));

const WEB = { redirect_uris: ['https://app.example/cb'], client_name: 'Example web app' };
const NATIVE = {
  application_type: 'native',
  redirect_uris: ['http://127.0.0.1/callback'],
  grant_types: ['authorization_code', 'refresh_token', DEVICE_GRANT],
  scope: 'openid profile offline_access',
  client_name: 'oidc-agent',
};

function expectError(res: Omit<Answer, 'text'>, status: number, error: string) {
  const text = JSON.stringify(res.json);
  expect(res.status, text).toBe(status);
  expect(res.json.error, text).toBe(error);
  expect(typeof res.json.error_description).toBe('string');
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.headers.get('cache-control')).toBe('no-store');
}

const tally = (answers: readonly { status: number }[]) =>
  answers.reduce<Record<number, number>>((t, r) => {
    t[r.status] = (t[r.status] ?? 0) + 1;
    return t;
  }, {});

/** Open registration with a limit no test of this suite reaches (the limit itself has a server of its own below). */
const ROOMY: Partial<ServerConfig> = {
  registration: 'open',
  limits: { ...LIMITS, 'registration-ip': { limit: 10_000, windowMs: 3_600_000 } },
};

describe('client_id', () => {
  it('rfc6749 §2.2 128 random bits, base64url, never starting with - or _ (a command-line argument starting with - reads as an option)', () => {
    const ids = Array.from({ length: 4000 }, newClientId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9][A-Za-z0-9_-]{21}$/);
    // Every other character still takes every value: the redraw touches the first alone.
    expect(new Set(ids.map((id) => id[1])).size).toBe(64);
  });
});

describe('registration off (the default)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer('sqlite');
  });
  afterAll(async () => server.close());

  it('rfc7591 §3 with AUTHCLI_REGISTRATION off there is no registration endpoint: 404, and discovery names none', async () => {
    expect(server.config.registration).toBe('off');
    const post = await register(server, WEB);
    expect(post.status).toBe(404);
    expect(post.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect((await send(server, 'GET', '/oauth/register/authcli', undefined, bearer('x'))).status).toBe(404);
    expect((await send(server, 'DELETE', '/oauth/register/authcli', undefined, bearer('x'))).status).toBe(404);
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
      expect(((await send(server, 'GET', path)).json as Json).registration_endpoint, path).toBeUndefined();
    }
  });
});

describe.each(dialects())('dynamic client registration, open (%s)', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer(dialect, ROOMY);
    await seedUser(server, 'alice');
  });
  afterAll(async () => server.close());

  it('rfc8414 §2 / oidc discovery §3 both documents advertise registration_endpoint', async () => {
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
      expect((await send(server, 'GET', path)).json.registration_endpoint, path).toBe(`${server.url}/oauth/register`);
    }
  });

  it('rfc7591 §3.2.1 a web client is registered as a confidential client: 201, its secret once, the effective metadata', async () => {
    const res = await register(server, {
      ...WEB,
      logo_uri: 'https://app.example/logo.png',
      contacts: ['ops@app.example'],
      software_id: 'example-app',
      unknown_field: 'ignored (rfc7591 §2)',
    });
    expect(res.status, res.text).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const c = res.json;
    expect(c).toEqual({
      client_id: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
      client_secret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      client_id_issued_at: Math.floor(server.clock.now() / 1000),
      client_secret_expires_at: 0,
      registration_access_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      registration_client_uri: `${server.url}/oauth/register/${c.client_id}`,
      redirect_uris: ['https://app.example/cb'],
      token_endpoint_auth_method: 'client_secret_basic',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      scope: 'openid profile email',
      application_type: 'web',
      id_token_signed_response_alg: 'RS256',
      client_name: 'Example web app',
      logo_uri: 'https://app.example/logo.png',
      contacts: ['ops@app.example'],
      software_id: 'example-app',
    });
    // Only SHA-256s reach the store, and the application has no owner (the dashboard lists it for administrators).
    const app = (await server.store.applications.get(c.client_id))!;
    expect(app).toMatchObject({ kind: 'confidential', ownerId: null, name: 'Example web app' });
    expect(app.secretHash).toBe(sha256Hex(c.client_secret));
    expect(app.registrationTokenHash).toBe(sha256Hex(c.registration_access_token));
    expect(JSON.stringify(await testRows(server.store).select('applications', { client_id: c.client_id }))).not.toContain(c.client_secret);
    // The secret works at the token endpoint like any confidential client's.
    const wrongCode = await tokenRequest(
      server,
      { grant_type: 'authorization_code', code: 'x', redirect_uri: 'https://app.example/cb' },
      {
        authorization: basic(c.client_id, c.client_secret),
      },
    );
    expectError(wrongCode, 400, 'invalid_grant');
  });

  it('rfc8252 §8.4 a native client is public: token_endpoint_auth_method none, no secret', async () => {
    const res = await register(server, NATIVE);
    expect(res.status, res.text).toBe(201);
    expect(res.json).toMatchObject({ token_endpoint_auth_method: 'none', application_type: 'native', response_types: ['code'] });
    expect(res.json).not.toHaveProperty('client_secret');
    expect(res.json).not.toHaveProperty('client_secret_expires_at');
    expect((await server.store.applications.get(res.json.client_id))?.kind).toBe('public');
    // Asked for explicitly, by a web client too.
    const none = await register(server, { ...WEB, token_endpoint_auth_method: 'none' });
    expect(none.status).toBe(201);
    expect(none.json).not.toHaveProperty('client_secret');
    // A native client asking for a secret is told why not.
    expectError(await register(server, { ...NATIVE, token_endpoint_auth_method: 'client_secret_basic' }), 400, 'invalid_client_metadata');
  });

  it('rfc7591 §3.2.2 an http redirect URI that is not loopback is invalid_redirect_uri', async () => {
    const bad = [
      ['http://app.example/cb'],
      ['https://app.example/cb#fragment'],
      ['/relative/cb'],
      ['myapp:/cb'],
      ['https://user:pw@app.example/cb'],
      [],
      'https://app.example/cb',
      [42],
      Array.from({ length: 21 }, (_, i) => `https://app.example/cb${i}`),
    ];
    for (const redirect_uris of bad) {
      const res = await register(server, { ...WEB, redirect_uris });
      expectError(res, 400, 'invalid_redirect_uri');
    }
    // Stored one way, followed another: each refused, with the form to register instead where there is one.
    for (const uri of [
      'https://app.example/c\r\nb',
      'https://app.ex\tample/cb',
      'https://app.example\\@evil.example/cb',
      'https://*.example.com/cb',
      'https://app%2eexample/cb',
      `https://app.example/${'x'.repeat(8000)}`,
    ]) {
      const res = await register(server, { ...WEB, redirect_uris: [uri] });
      expectError(res, 400, 'invalid_redirect_uri');
    }
    // Leaving them out of a code-flow client is the same error.
    expectError(await register(server, { client_name: 'no redirect' }), 400, 'invalid_redirect_uri');
    // A bad post-logout redirect URI is metadata (RFC 7591 defines invalid_redirect_uri for redirect_uris only).
    expectError(await register(server, { ...WEB, post_logout_redirect_uris: ['http://app.example/'] }), 400, 'invalid_client_metadata');
  });

  it("rfc8252 §8.3 a native client's localhost redirect URI is registered as given and gets no port exception", async () => {
    const res = await register(server, { ...NATIVE, redirect_uris: ['http://localhost:8080/cb', 'http://127.0.0.1/cb'] });
    expect(res.status, res.text).toBe(201);
    expect(res.json.redirect_uris).toEqual(['http://localhost:8080/cb', 'http://127.0.0.1/cb']);
    const at = async (redirectUri: string) =>
      (await new Browser(server.url).get((await authorizeUrl({ clientId: res.json.client_id, redirectUri })).url)).status;
    expect(await at('http://localhost:8081/cb')).toBe(400);
    expect(await at('http://127.0.0.1:53121/cb')).not.toBe(400);
  });

  it('rfc7591 §5 the consent page says that a self-registered client chose its own name', async () => {
    const reg = (await register(server, { ...WEB, client_name: 'Corporate Single Sign-On' })).json;
    const b = await signedInBrowser(server);
    const consent = await b.get((await authorizeUrl({ clientId: reg.client_id, redirectUri: 'https://app.example/cb' })).url);
    expect(consent.status).toBe(200);
    expect(consent.text).toContain('This application registered itself: its name has not been checked by anyone here.');
    const operatorApp = (await seedApp(server)).app.clientId;
    const other = await b.get((await authorizeUrl({ clientId: operatorApp, redirectUri: 'https://app.example/callback' })).url);
    expect(other.status).toBe(200);
    expect(other.text).not.toContain('registered itself');
  });

  it('rfc7591 §2 a client_name with control or invisible formatting characters, or one that reads as authcli, is invalid_client_metadata', async () => {
    for (const client_name of [
      '\u001b]0;owned\u0007\u001b[2J',
      'line one\nauthcli2  public  operator',
      'Good App\u202Eppa liveE',
      'Pay\u200bPal',
      'Bank\u2066Login\u2069',
      'authcli',
      'AuthCLI',
      'auth cli',
      'Auth-CLI',
      '\uff41\uff55\uff54\uff48\uff43\uff4c\uff49',
    ]) {
      const res = await register(server, { ...WEB, client_name });
      expectError(res, 400, 'invalid_client_metadata');
    }
    // Names in any script, and ones that only contain the word, are fine.
    for (const client_name of ['Zoë’s Ångström Tool', '東京 ログイン', 'authcli-dev tools', 'My authcli helper']) {
      expect((await register(server, { ...WEB, client_name })).status, client_name).toBe(201);
    }
  });

  it('rfc7591 §3.2.1 a self-registered client has no owner: administrators see it in the dashboard, marked; a user does not', async () => {
    const reg = (await register(server, { ...WEB, client_name: 'Self-registered tool' })).json;
    await seedUser(server, 'root', { admin: true });
    await seedUser(server, 'bob');
    const admin = await signedInBrowser(server, 'root');
    const list = await admin.get('/dashboard');
    expect(list.status).toBe(200);
    const row = list.text.slice(list.text.indexOf(`/dashboard/apps/${reg.client_id}`));
    expect(row.slice(0, row.indexOf('</tr>'))).toContain('(registered by the client, RFC 7591)');
    expect((await admin.get(`/dashboard/apps/${reg.client_id}`)).status).toBe(200);
    const user = await signedInBrowser(server, 'bob');
    expect((await user.get('/dashboard')).text).not.toContain(reg.client_id);
    expect((await user.get(`/dashboard/apps/${reg.client_id}`)).status).toBe(404);
  });

  it('rfc7591 §2.1 grant_types and response_types must agree, and only code and these grants are offered', async () => {
    const cases: Json[] = [
      { grant_types: ['implicit'], response_types: ['token'] },
      { grant_types: ['client_credentials'] },
      { grant_types: ['password'] },
      { response_types: ['token'] },
      { response_types: ['code id_token'] },
      { grant_types: [DEVICE_GRANT], response_types: ['code'] },
      { grant_types: ['authorization_code'], response_types: [] },
      { grant_types: 'authorization_code' },
      { grant_types: [] },
    ];
    for (const c of cases) expectError(await register(server, { ...WEB, ...c }), 400, 'invalid_client_metadata');
    // A device-only client needs no redirect URI and has no response type.
    const device = await register(server, { client_name: 'TV', grant_types: [DEVICE_GRANT], token_endpoint_auth_method: 'none' });
    expect(device.status, device.text).toBe(201);
    expect(device.json).toMatchObject({ grant_types: [DEVICE_GRANT], response_types: [], redirect_uris: [] });
  });

  it('rfc7591 §2 a value this server cannot honour is invalid_client_metadata, never silently replaced', async () => {
    const cases: Json[] = [
      { token_endpoint_auth_method: 'private_key_jwt' },
      { token_endpoint_auth_method: 'client_secret_jwt' },
      { id_token_signed_response_alg: 'HS256' },
      { id_token_signed_response_alg: 'none' },
      { scope: 'openid admin' },
      { scope: 'openid offline_access' },
      { scope: ['openid'] },
      { client_name: 'x'.repeat(101) },
      { client_name: 7 },
      { application_type: 'desktop' },
      { logo_uri: 'javascript:alert(1)' },
      { client_uri: 'not a url' },
      { contacts: 'ops@app.example' },
      { contacts: [''] },
    ];
    for (const c of cases) expectError(await register(server, { ...WEB, ...c }), 400, 'invalid_client_metadata');
    // null is the same as leaving a field out.
    const withNulls = await register(server, { ...WEB, logo_uri: null, scope: null, grant_types: null });
    expect(withNulls.status, withNulls.text).toBe(201);
    expect(withNulls.json).toMatchObject({ scope: 'openid profile email', grant_types: ['authorization_code'] });
    expect(withNulls.json).not.toHaveProperty('logo_uri');
  });

  it('rfc7591 §3 the request is a JSON object: another body or content type is 400 invalid_client_metadata, a large one 413', async () => {
    const cases: [string, string | undefined][] = [
      ['{"redirect_uris": [', 'application/json'],
      ['[]', 'application/json'],
      ['"a string"', 'application/json'],
      ['null', 'application/json'],
      ['', 'application/json'],
      ['redirect_uris=https%3A%2F%2Fapp.example%2Fcb', 'application/x-www-form-urlencoded'],
      [JSON.stringify(WEB), 'text/plain'],
      [JSON.stringify(WEB), undefined],
      [JSON.stringify({ ...WEB, client_name: 'nul \u0000 inside' }), 'application/json'],
    ];
    for (const [body, contentType] of cases) {
      const res = await fetch(`${server.url}/oauth/register`, {
        method: 'POST',
        headers: contentType ? { 'content-type': contentType } : {},
        body,
      });
      const text = await res.text();
      expect(res.status, `${contentType} ${body}`).toBe(400);
      expect(JSON.parse(text).error, `${contentType} ${body}`).toBe('invalid_client_metadata');
    }
    // Invalid UTF-8.
    const bytes = await fetch(`${server.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]),
    });
    expect(bytes.status).toBe(400);
    expect(((await bytes.json()) as Json).error).toBe('invalid_client_metadata');
    // Past the body limit: refused before it is parsed.
    const large = await register(server, { ...WEB, software_id: 'x'.repeat(server.config.bodyLimit) });
    expectError(large, 413, 'invalid_client_metadata');
    // Deeply nested JSON within the limit is an answer, not a crash.
    const deep = await register(server, `{"redirect_uris":["https://app.example/cb"],"contacts":${'['.repeat(5000)}${']'.repeat(5000)}}`);
    expectError(deep, 400, 'invalid_client_metadata');
  });

  it('rfc7592 §2.1 the registration access token reads the registration, and each read rotates it', async () => {
    const reg = (await register(server, WEB)).json;
    const read = await manage(server, 'GET', reg.client_id, reg.registration_access_token);
    expect(read.status, read.text).toBe(200);
    expect(read.headers.get('cache-control')).toBe('no-store');
    const { client_secret, registration_access_token, ...rest } = reg;
    expect(read.json).toEqual({ ...rest, registration_access_token: expect.any(String) });
    expect(read.json).not.toHaveProperty('client_secret');
    expect(read.json.registration_access_token).not.toBe(registration_access_token);
    // The old token is spent; the new one works.
    expectError(await manage(server, 'GET', reg.client_id, registration_access_token), 401, 'invalid_token');
    expect((await manage(server, 'GET', reg.client_id, read.json.registration_access_token)).status).toBe(200);
    expect(client_secret).toBeTruthy();
  });

  it("rfc7592 §2.1 another client's token, a wrong token, an unknown client, an operator's application: one 401 invalid_token", async () => {
    const a = (await register(server, WEB)).json;
    const b = (await register(server, WEB)).json;
    const operatorApp = (await seedApp(server)).app.clientId;
    const answers = [
      await manage(server, 'GET', a.client_id, b.registration_access_token),
      await manage(server, 'PUT', a.client_id, b.registration_access_token, { ...WEB, client_id: a.client_id }),
      await manage(server, 'DELETE', a.client_id, b.registration_access_token),
      await manage(server, 'GET', a.client_id, 'wrong-token'),
      await manage(server, 'GET', 'no-such-client', a.registration_access_token),
      await manage(server, 'GET', operatorApp, a.registration_access_token),
      await manage(server, 'GET', 'authcli', a.registration_access_token),
      await manage(server, 'GET', 'bad%00id', a.registration_access_token),
      await manage(server, 'GET', a.client_id, 'x'.repeat(300)),
    ];
    for (const res of answers) {
      expectError(res, 401, 'invalid_token');
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="authcli", error="invalid_token"/);
      expect(res.text).toBe(answers[0]!.text);
    }
    // No credentials at all (or another scheme): the bare challenge (RFC 6750 §3.1).
    for (const headers of [{}, { authorization: basic(a.client_id, 'x') }] as Record<string, string>[]) {
      const res = await send(server, 'GET', `/oauth/register/${a.client_id}`, undefined, headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="authcli"');
      expect(res.text).toBe('');
    }
    // Nothing changed for a.
    expect((await manage(server, 'GET', a.client_id, a.registration_access_token)).status).toBe(200);
  });

  it('rfc7592 §2.2 PUT replaces the metadata: omitted fields are removed or back to their defaults', async () => {
    const reg = (
      await register(server, {
        ...WEB,
        scope: 'openid profile',
        logo_uri: 'https://app.example/logo.png',
        contacts: ['a@app.example'],
        grant_types: ['authorization_code', 'refresh_token'],
      })
    ).json;
    const put = await manage(server, 'PUT', reg.client_id, reg.registration_access_token, {
      client_id: reg.client_id,
      redirect_uris: ['https://app.example/new-cb'],
      token_endpoint_auth_method: 'client_secret_post',
    });
    expect(put.status, put.text).toBe(200);
    expect(put.json).toMatchObject({
      client_id: reg.client_id,
      redirect_uris: ['https://app.example/new-cb'],
      token_endpoint_auth_method: 'client_secret_post',
      grant_types: ['authorization_code'],
      scope: 'openid profile email',
      client_id_issued_at: reg.client_id_issued_at,
    });
    for (const gone of ['client_name', 'logo_uri', 'contacts', 'client_secret']) expect(put.json).not.toHaveProperty(gone);
    expect(put.json.registration_access_token).not.toBe(reg.registration_access_token);
    const app = (await server.store.applications.get(reg.client_id))!;
    expect(app.callbackUrls).toEqual(['https://app.example/new-cb']);
    // The secret is unchanged by an update.
    expect(app.secretHash).toBe(sha256Hex(reg.client_secret));
    // The spent token cannot update again.
    expectError(
      await manage(server, 'PUT', reg.client_id, reg.registration_access_token, { ...WEB, client_id: reg.client_id }),
      401,
      'invalid_token',
    );
  });

  it('rfc9449 §5.2 / rfc9126 §6 dpop_bound_access_tokens and require_pushed_authorization_requests are kept; introspection stays the operator’s', async () => {
    const res = await register(server, { ...NATIVE, dpop_bound_access_tokens: true, require_pushed_authorization_requests: true });
    expect(res.status, res.text).toBe(201);
    expect(res.json).toMatchObject({ dpop_bound_access_tokens: true, require_pushed_authorization_requests: true });
    const id = res.json.client_id as string;
    expect(await server.store.applications.get(id)).toMatchObject({ requireDpop: true, requirePushedAuthorizationRequests: true });
    // Not booleans: invalid_client_metadata, nothing registered.
    for (const bad of [{ dpop_bound_access_tokens: 'yes' }, { require_pushed_authorization_requests: 1 }]) {
      expectError(await register(server, { ...NATIVE, ...bad }), 400, 'invalid_client_metadata');
    }
    // An operator lets it introspect every token; the client's own PUT (without the flags) turns its flags off but not that.
    await server.store.applications.update(id, { introspection: 'all' }, server.clock.now());
    const put = await manage(server, 'PUT', id, res.json.registration_access_token, { ...NATIVE, client_id: id });
    expect(put.status, put.text).toBe(200);
    expect(put.json).not.toHaveProperty('dpop_bound_access_tokens');
    expect(await server.store.applications.get(id)).toMatchObject({
      requireDpop: false,
      requirePushedAuthorizationRequests: false,
      introspection: 'all',
    });
  });

  it('rfc7592 §2.2 PUT with another client_id, a wrong client_secret or a change of client type is invalid_client_metadata', async () => {
    const reg = (await register(server, WEB)).json;
    const other = (await register(server, WEB)).json;
    const token = reg.registration_access_token;
    const cases: Json[] = [
      { ...WEB },
      { ...WEB, client_id: other.client_id },
      { ...WEB, client_id: reg.client_id, client_secret: 'chosen-by-the-client' },
      { ...WEB, client_id: reg.client_id, client_secret: other.client_secret },
      { ...WEB, client_id: reg.client_id, token_endpoint_auth_method: 'none' },
      { ...WEB, client_id: reg.client_id, redirect_uris: ['http://app.example/cb'] },
    ];
    for (const body of cases) {
      const res = await manage(server, 'PUT', reg.client_id, token, body);
      expectError(res, 400, body.redirect_uris?.[0]?.startsWith('http:') ? 'invalid_redirect_uri' : 'invalid_client_metadata');
    }
    // A refused update spent nothing: the token still works, and its own secret is accepted.
    const ok = await manage(server, 'PUT', reg.client_id, token, { ...WEB, client_id: reg.client_id, client_secret: reg.client_secret });
    expect(ok.status, ok.text).toBe(200);
  });

  it('rfc7592 §2.3 DELETE ends the client: 204, then its refresh and access tokens, secret and registration stop working', async () => {
    const reg = (
      await register(server, {
        ...WEB,
        grant_types: ['authorization_code', 'refresh_token'],
        scope: 'openid profile offline_access',
      })
    ).json;
    const redirectUri = 'https://app.example/cb';
    const browser = await signedInBrowser(server);
    const { callback, verifier } = await authorize(server, browser, {
      clientId: reg.client_id,
      redirectUri,
      scope: 'openid profile offline_access',
    });
    const auth = { authorization: basic(reg.client_id, reg.client_secret) };
    const tokens = await tokenRequest(
      server,
      { grant_type: 'authorization_code', code: callback.searchParams.get('code')!, redirect_uri: redirectUri, code_verifier: verifier },
      auth,
    );
    expect(tokens.status).toBe(200);
    const userinfo = () => fetch(`${server.url}/oauth/userinfo`, { headers: bearer(tokens.json.access_token) });
    expect((await userinfo()).status).toBe(200);

    const del = await manage(server, 'DELETE', reg.client_id, reg.registration_access_token);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expect(await server.store.applications.get(reg.client_id)).toBeUndefined();
    expect((await userinfo()).status).toBe(401);
    expectError(
      await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: tokens.json.refresh_token }, auth),
      401,
      'invalid_client',
    );
    expectError(await manage(server, 'GET', reg.client_id, reg.registration_access_token), 401, 'invalid_token');
    expectError(await manage(server, 'DELETE', reg.client_id, reg.registration_access_token), 401, 'invalid_token');
  });

  it('rfc7592 §2.1, §2.3 GET and DELETE with an empty body labelled application/json are answered, not refused', async () => {
    const reg = (await register(server, WEB)).json;
    const labelled = (method: 'GET' | 'DELETE') =>
      fetch(`${server.url}/oauth/register/${reg.client_id}`, {
        method,
        headers: { ...bearer(reg.registration_access_token), 'content-type': 'application/json' },
      });
    const read = await labelled('GET');
    expect(read.status).toBe(200);
    const answer = (await read.json()) as Json;
    expect(answer.client_id).toBe(reg.client_id);
    // A read may hand out a new registration access token (RFC 7592 §3): the DELETE uses the current one.
    reg.registration_access_token = answer.registration_access_token ?? reg.registration_access_token;
    expect((await labelled('DELETE')).status).toBe(204);
    expect(await server.store.applications.get(reg.client_id)).toBeUndefined();
    // A body that is there is still read by the JSON rules: a broken one on PUT is refused.
    const other = (await register(server, WEB)).json;
    const broken = await fetch(`${server.url}/oauth/register/${other.client_id}`, {
      method: 'PUT',
      headers: { ...bearer(other.registration_access_token), 'content-type': 'application/json' },
      body: '{"redirect_uris":',
    });
    expect(broken.status).toBe(400);
    // The configuration endpoint is a parameter route: its preflight is answered, one level deeper is not found;
    // an id past the router's length and bad UTF-8 get RFC 6749 errors, not the framework's.
    const preflight = (path: string) =>
      fetch(`${server.url}${path}`, {
        method: 'OPTIONS',
        headers: { origin: 'https://spa.example', 'access-control-request-method': 'DELETE' },
      });
    expect((await preflight(`/oauth/register/${other.client_id}`)).status).toBe(204);
    expect((await preflight(`/oauth/register/${other.client_id}/x`)).status).toBe(404);
    for (const [path, status] of [
      [`/oauth/register/${'a'.repeat(600)}`, 414],
      ['/oauth/register/%ff', 400],
    ] as const) {
      const res = await fetch(`${server.url}${path}`, { headers: bearer(other.registration_access_token) });
      expect(res.status, path).toBe(status);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(await res.json()).toMatchObject({ error: 'invalid_request' });
    }
  });

  it('rfc6749 §2.3.1 a public client may name itself in HTTP Basic with an empty password (oidc-agent), a confidential one may not', async () => {
    const pub = (await register(server, NATIVE)).json;
    const asOidcAgent = { authorization: `Basic ${Buffer.from(`${pub.client_id}:`).toString('base64')}` };
    // Device authorization, the second screen, and the polls, all with Basic and no secret.
    const started = await postForm(server, '/oauth/device/authorization', { scope: 'openid profile offline_access' }, asOidcAgent);
    expect(started.status, JSON.stringify(started.json)).toBe(200);
    const poll = () => tokenRequest(server, { grant_type: DEVICE_GRANT, device_code: started.json.device_code }, asOidcAgent);
    expectError(await poll(), 400, 'authorization_pending');
    const browser = await signedInBrowser(server);
    expect((await decideOnDevicePage(browser, started.json.user_code, 'approve')).status).toBe(200);
    ownClock(server).advance(started.json.interval * 1000);
    const tokens = await poll();
    expect(tokens.status, JSON.stringify(tokens.json)).toBe(200);
    expect(tokens.json.refresh_token).toBeTruthy();
    // Refresh and revocation the same way.
    const refreshed = await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: tokens.json.refresh_token }, asOidcAgent);
    expect(refreshed.status).toBe(200);
    const revoked = await postForm(server, '/oauth/revoke', { token: refreshed.json.refresh_token }, asOidcAgent);
    expect(revoked.status).toBe(200);
    // A password is still refused for a public client, and an empty one for a confidential client, with the one answer.
    const conf = (await register(server, WEB)).json;
    const refusals = [
      await deviceAuthorization(server, pub.client_id, 'openid', { authorization: basic(pub.client_id, 'a-secret') }),
      await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: 'x' }, { authorization: basic(conf.client_id, '') }),
      await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: 'x' }, { authorization: basic(conf.client_id, 'wrong') }),
    ];
    for (const res of refusals) {
      expect(res.status).toBe(401);
      expect(res.json).toEqual(refusals[0]!.json);
      expect(res.json.error).toBe('invalid_client');
    }
  });
});

describe.each(dialects())('dynamic client registration, token (%s)', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer(dialect, { registration: 'token' });
  });
  afterAll(async () => server.close());

  const iat = (ttlSeconds = 600) => createInitialAccessToken(server.store, ttlSeconds, server.clock.now());

  it('rfc7591 §3 / rfc6750 §3.1 without an initial access token: 401 with the bare Bearer challenge', async () => {
    for (const headers of [{}, { authorization: basic('authcli', '') }] as Record<string, string>[]) {
      const res = await register(server, WEB, headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="authcli"');
      expect(res.text).toBe('');
    }
  });

  it('rfc6750 §3.1 a wrong, expired or revoked initial access token is 401 invalid_token', async () => {
    const expired = await iat(60);
    const revoked = await iat();
    await server.store.initialAccessTokens.revoke(revoked.id, server.clock.now());
    const clock = ownClock(server);
    clock.advance(61_000);
    for (const token of ['wrong', expired.token, revoked.token, 'x'.repeat(300)]) {
      const res = await register(server, WEB, bearer(token));
      expectError(res, 401, 'invalid_token');
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="authcli", error="invalid_token"/);
    }
  });

  it('rfc7591 §3 an initial access token registers one client, then it is used up', async () => {
    const t = await iat();
    const res = await register(server, NATIVE, bearer(t.token));
    expect(res.status, res.text).toBe(201);
    const [row] = (await server.store.initialAccessTokens.list()).filter((x) => x.id === t.id);
    expect(row).toMatchObject({ clientId: res.json.client_id, usedAt: server.clock.now() });
    expectError(await register(server, NATIVE, bearer(t.token)), 401, 'invalid_token');
    // Its registration access token manages the client; the initial access token does not.
    expect((await manage(server, 'GET', res.json.client_id, res.json.registration_access_token)).status).toBe(200);
    expectError(await manage(server, 'GET', res.json.client_id, t.token), 401, 'invalid_token');
  });

  it('rfc7591 §3.2.2 metadata are checked before the initial access token is spent', async () => {
    const t = await iat();
    expectError(await register(server, { ...WEB, redirect_uris: ['http://app.example/cb'] }, bearer(t.token)), 400, 'invalid_redirect_uri');
    expectError(await register(server, '{"oops"', bearer(t.token)), 400, 'invalid_client_metadata');
    expect((await register(server, WEB, bearer(t.token))).status).toBe(201);
  });

  it('rfc7591 §3 20 parallel registrations with one initial access token: exactly one succeeds', async () => {
    const t = await iat();
    const before = (await server.store.applications.list()).length;
    const answers = await Promise.all(Array.from({ length: 20 }, () => register(server, WEB, bearer(t.token))));
    expect(tally(answers)).toEqual({ 201: 1, 401: 19 });
    expect((await server.store.applications.list()).length).toBe(before + 1);
  });
});

describe.each(dialects())('dynamic client registration, the per-IP limit (%s)', (dialect) => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('rfc7591 §3 open registration: 40 in parallel with forged X-Forwarded-For, exactly the limit succeed, counted per real IP', async () => {
    server = await startServer(dialect, { registration: 'open', trustProxy: 1 });
    const limit = LIMITS['registration-ip'].limit;
    // The proxy appends the address it saw; everything left of it was written by the client.
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => register(server!, WEB, { 'x-forwarded-for': `10.${i}.0.1, 192.0.2.50` })),
    );
    expect(tally(answers)).toEqual({ 201: limit, 429: 40 - limit });
    const refused = answers.find((a) => a.status === 429)!;
    expectError(refused, 429, 'temporarily_unavailable');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another real client is not limited.
    expect((await register(server, WEB, { 'x-forwarded-for': '10.0.0.1, 192.0.2.51' })).status).toBe(201);
    // Refused metadata are answered before counting: they cost the address nothing.
    expect((await register(server, { ...WEB, redirect_uris: ['http://x.example/'] }, { 'x-forwarded-for': '192.0.2.52' })).json.error).toBe(
      'invalid_redirect_uri',
    );
    expect((await server.store.rateLimits.list()).map((r) => r.key)).not.toContain('registration-ip|192.0.2.52');
  });
});

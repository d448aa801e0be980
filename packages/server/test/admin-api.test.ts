import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Validator } from '@seriousme/openapi-schema-validator';
import { LIMITS } from '../src/config/defaults.js';
import { registerApplication } from '../src/oauth/registration.js';
import {
  adminToken,
  authorize,
  basic,
  dialects,
  hidden,
  seedApp,
  seedUser,
  signedInBrowser,
  startServer,
  tally,
  tokenRequest,
  type TestServer,
} from './helpers.js';

type Json = Record<string, unknown>;

/** One admin API call over real HTTP: JSON in, the status, headers and parsed body out. */
async function call(
  server: TestServer,
  method: string,
  path: string,
  token: string | undefined,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; json: Json }> {
  const res = await fetch(`${server.url}/admin/v1${path}`, {
    method,
    headers: {
      ...(token && { authorization: `Bearer ${token}` }),
      ...(body !== undefined && { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body !== undefined && { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? (JSON.parse(text) as Json) : {} };
}

for (const dialect of dialects()) {
  describe(`admin API /admin/v1 (${dialect})`, () => {
    let server: TestServer;
    let reader: string;
    let writer: string;
    let writerId: string;

    /** A confidential application allowed `scope` by client credentials, and a token it got with them. */
    const machine = async (name: string, scope: string) => {
      const { app, clientSecret } = await registerApplication(
        server.store,
        { name, kind: 'confidential', callbackUrls: [], scopes: scope.split(' '), grantTypes: ['client_credentials'] },
        server.clock.now(),
      );
      const r = await tokenRequest(
        server,
        { grant_type: 'client_credentials', scope },
        { authorization: basic(app.clientId, clientSecret!) },
      );
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      return { clientId: app.clientId, token: r.json.access_token as string };
    };

    beforeAll(async () => {
      server = await startServer(dialect);
      reader = (await machine('Inventory', 'admin:read')).token;
      const w = await machine('Provisioner', 'admin:write');
      writer = w.token;
      writerId = w.clientId;
    });
    afterAll(async () => server.close());

    it('an application allowed admin:read lists users and is refused (403 insufficient_scope) when it writes', async () => {
      await seedUser(server, 'listed');
      const list = await call(server, 'GET', '/users', reader);
      expect(list.status).toBe(200);
      expect((list.json.items as Json[]).map((u) => u.username)).toContain('listed');
      expect((list.json.items as Json[])[0]).not.toHaveProperty('password');
      const write = await call(server, 'POST', '/users', reader, { username: 'nope', password: 'long enough pw' });
      expect(write.status).toBe(403);
      expect(write.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(write.headers.get('www-authenticate')).toMatch(/error="insufficient_scope", scope="admin:write"/);
      expect(write.json).toMatchObject({ type: 'about:blank', title: 'Forbidden', status: 403, error: 'insufficient_scope' });
      expect(await server.store.users.findByUsername('nope')).toBeUndefined();
    });

    it('admin:write creates, reads, updates and deletes a user, each change audited with the application as actor', async () => {
      const made = await call(server, 'POST', '/users', writer, { username: 'carol', password: 'carols password', email: 'c@example.com' });
      expect(made.status).toBe(201);
      expect(made.headers.get('location')).toBe(`${server.url}/admin/v1/users/carol`);
      expect(made.json).toMatchObject({ username: 'carol', email: 'c@example.com', admin: false, disabled: false });
      expect(made.json).not.toHaveProperty('password');
      expect((await call(server, 'GET', '/users/CAROL', reader)).json).toMatchObject({ username: 'carol' });
      const changed = await call(server, 'PATCH', '/users/carol', writer, { name: 'Carol C', disabled: true });
      expect(changed.json).toMatchObject({ name: 'Carol C', disabled: true });
      expect((await server.store.users.findByUsername('carol'))!.disabled_at).not.toBeNull();
      expect((await call(server, 'DELETE', '/users/carol', writer)).status).toBe(204);
      expect(await server.store.users.findByUsername('carol')).toBeUndefined();
      expect((await call(server, 'GET', '/users/carol', reader)).status).toBe(404);
      const trail = await call(server, 'GET', `/audit?target=${made.json.id}`, reader);
      const rows = (trail.json.items as Json[]).reverse();
      expect(rows.map((r) => r.action)).toEqual(['user.created', 'user.updated', 'user.deleted']);
      for (const r of rows) {
        expect(r.actor).toEqual({ type: 'client', id: writerId, name: 'Provisioner' });
        expect(r.address).toBe('127.0.0.1');
      }
      expect(rows[1]!.detail).toEqual({ name: { from: null, to: 'Carol C' }, disabled: { from: false, to: true } });
      expect(JSON.stringify(rows)).not.toContain('carols password');
    });

    it("an application's secret is answered once, at creation and rotation, and never read back", async () => {
      const made = await call(server, 'POST', '/apps', writer, {
        name: 'Billing web',
        kind: 'confidential',
        redirect_uris: ['https://billing.example/cb'],
        scope: 'openid profile',
      });
      expect(made.status).toBe(201);
      const id = made.json.client_id as string;
      const secret = made.json.client_secret as string;
      expect(secret).toMatch(/^[\w-]{40,}$/);
      expect(made.json).toMatchObject({
        redirect_uris: ['https://billing.example/cb'],
        scope: 'openid profile',
        token_endpoint_auth_method: 'client_secret_basic',
      });
      const read = await call(server, 'GET', `/apps/${id}`, reader);
      expect(read.json).not.toHaveProperty('client_secret');
      expect(JSON.stringify((await call(server, 'GET', '/apps', reader)).json)).not.toContain(secret);
      const rotated = await call(server, 'POST', `/apps/${id}/secret`, writer);
      expect(rotated.json.client_secret).toMatch(/^[\w-]{40,}$/);
      expect(rotated.json.client_secret).not.toBe(secret);
      const patched = await call(server, 'PATCH', `/apps/${id}`, writer, { redirect_uris: ['https://billing.example/cb2'] });
      expect(patched.json).toMatchObject({ redirect_uris: ['https://billing.example/cb2'] });
      const trail = (await call(server, 'GET', `/audit?target=${id}`, reader)).json.items as Json[];
      expect(trail.map((r) => r.action).reverse()).toEqual(['app.created', 'app.secret_rotated', 'app.updated']);
      expect(trail[0]!.detail).toEqual({ redirect_uris: { from: ['https://billing.example/cb'], to: ['https://billing.example/cb2'] } });
      expect(JSON.stringify(trail)).not.toContain(secret);
      expect(JSON.stringify(trail)).not.toContain(rotated.json.client_secret as string);
      expect((await call(server, 'DELETE', `/apps/${id}`, writer)).status).toBe(204);
      expect(await server.store.applications.get(id)).toBeUndefined();
    });

    it('bad input is a 400 problem naming what to change: a control character, an unknown member, a wrong type', async () => {
      const control = await call(server, 'POST', '/users', writer, { username: 'eve\u0007', password: 'long enough pw' });
      expect(control.status).toBe(400);
      expect(control.json).toMatchObject({
        status: 400,
        title: 'Bad Request',
        error: 'invalid_input',
        detail: expect.stringMatching(/username/),
      });
      const unknown = await call(server, 'POST', '/users', writer, { username: 'eve', password: 'long enough pw', colour: 'red' });
      expect(unknown.json).toMatchObject({ status: 400, detail: 'unknown member body.colour', field: 'colour' });
      const type = await call(server, 'PATCH', '/users/listed', writer, { admin: 'yes' });
      expect(type.json).toMatchObject({ status: 400, detail: 'body.admin must be boolean' });
      const missing = await call(server, 'POST', '/apps', writer, { name: 'x', kind: 'public' });
      expect(missing.json).toMatchObject({ status: 400, detail: 'body.scope is required', field: 'scope' });
      const callback = await call(server, 'POST', '/apps', writer, {
        name: 'x',
        kind: 'public',
        scope: 'openid',
        redirect_uris: ['http://evil.example/cb'],
      });
      expect(callback.json).toMatchObject({ status: 400, error: 'invalid_input', field: 'callbackUrls' });
      expect((await call(server, 'POST', '/users', writer, '[1,2]')).json).toMatchObject({
        status: 400,
        detail: 'the request body must be a JSON object',
      });
      expect((await call(server, 'POST', '/users', writer, '{"username":')).json).toMatchObject({
        status: 400,
        detail: 'the request body is not valid JSON',
      });
      const form = await call(server, 'POST', '/users', writer, 'username=x', { 'content-type': 'application/x-www-form-urlencoded' });
      expect(form.status).toBe(415);
      const big = await call(server, 'POST', '/users', writer, { username: 'big', password: 'x'.repeat(40_000) });
      expect(big.status).toBe(413);
      expect((await call(server, 'GET', '/users/%00', reader)).status).toBe(400);
      expect((await call(server, 'GET', '/users?limit=0', reader)).status).toBe(400);
      expect((await call(server, 'GET', '/audit?since=yesterday', reader)).json).toMatchObject({
        status: 400,
        detail: expect.stringMatching(/since must be/),
      });
      expect((await call(server, 'GET', '/nothing', reader)).json).toMatchObject({ status: 404, type: 'about:blank' });
    });

    it('no token, a token for another audience, a non-administrator: 401 and 403 with their challenges', async () => {
      const none = await call(server, 'GET', '/users', undefined);
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toMatch(/Bearer realm="authcli"/);
      expect((await call(server, 'GET', '/users', 'not.a.jwt')).status).toBe(401);
      // A person's sign-in: their token for the admin API works only while they are an administrator.
      await seedUser(server, 'root', { admin: true });
      await seedUser(server, 'plain');
      const { app } = await seedApp(server, { scopes: ['openid', 'admin:write'], grantTypes: ['authorization_code'] });
      const personal = async (username: string, scope: string) => {
        const { callback, verifier } = await authorize(server, await signedInBrowser(server, username), {
          clientId: app.clientId,
          redirectUri: 'https://app.example/callback',
          scope,
        });
        const r = await tokenRequest(server, {
          grant_type: 'authorization_code',
          code: callback.searchParams.get('code')!,
          redirect_uri: 'https://app.example/callback',
          client_id: app.clientId,
          code_verifier: verifier,
        });
        return r.json.access_token as string;
      };
      expect((await call(server, 'GET', '/users', await personal('root', 'openid admin:write'))).status).toBe(200);
      const plain = await call(server, 'GET', '/users', await personal('plain', 'openid admin:write'));
      expect(plain).toMatchObject({
        status: 403,
        json: { error: 'insufficient_scope', detail: 'only administrators may use the admin API' },
      });
      const other = await call(server, 'GET', '/users', await personal('root', 'openid'));
      expect(other.status).toBe(401);
      expect(other.json.detail).toMatch(/not for the admin API/);
    });

    it("the admin API's scopes: only an administrator allows them; an application that loses them loses the API at once", async () => {
      // The operator takes admin:write back from the Provisioner: its token stops working now, not at its expiry.
      const w = await registerApplication(
        server.store,
        { name: 'Short-lived', kind: 'confidential', callbackUrls: [], scopes: ['admin:write'], grantTypes: ['client_credentials'] },
        server.clock.now(),
      );
      const got = await tokenRequest(
        server,
        { grant_type: 'client_credentials', scope: 'admin:write' },
        { authorization: basic(w.app.clientId, w.clientSecret!) },
      );
      const token = got.json.access_token as string;
      expect((await call(server, 'GET', '/users', token)).status).toBe(200);
      await server.store.applications.update(w.app.clientId, { scopes: ['openid'] }, server.clock.now());
      const after = await call(server, 'GET', '/users', token);
      expect(after.status).toBe(401);
      expect(after.json.detail).toMatch(/no longer allowed the admin API/);
      // A developer cannot allow an application the admin API's scopes in the dashboard.
      await seedUser(server, 'dev');
      const dev = await signedInBrowser(server, 'dev');
      const page = await dev.get('/dashboard/apps/new');
      const body = new URLSearchParams({
        _csrf: hidden(page.text, '_csrf'),
        name: 'Sneaky',
        kind: 'public',
        callback_urls: 'https://app.example/cb',
        id_token_alg: 'RS256',
      });
      for (const scope of ['openid', 'admin:write']) body.append('scope', scope);
      body.append('grant', 'authorization_code');
      const refused = await dev.request('POST', '/dashboard/apps', body.toString(), {
        'content-type': 'application/x-www-form-urlencoded',
      });
      expect(refused.status).toBe(400);
      expect(refused.text).toMatch(/only an administrator can allow an application the admin API(&#39;|&#x27;|')s scope admin:write/);
    });

    it('30 creations of one username at once: one 201, the rest 409, one audit row', async () => {
      const answers = await Promise.all(
        Array.from({ length: 30 }, () => call(server, 'POST', '/users', writer, { username: 'racer', password: 'long enough pw' })),
      );
      expect(tally(answers)).toEqual({ 201: 1, 409: 29 });
      const user = await server.store.users.findByUsername('racer');
      expect((await server.store.audit.list({ target: user!.id })).map((r) => r.action)).toEqual(['user.created']);
    });

    it('lists page by a cursor, with the next page in Link', async () => {
      for (const n of ['pa', 'pb', 'pc']) await seedUser(server, `page-${n}`);
      const seen: string[] = [];
      let next: string | undefined = '/users?limit=2';
      while (next) {
        const page = await call(server, 'GET', next, reader);
        expect((page.json.items as Json[]).length).toBeLessThanOrEqual(2);
        seen.push(...(page.json.items as Json[]).map((u) => u.username as string));
        const link = page.headers.get('link');
        expect(link === null).toBe(page.json.next === null);
        next = link ? /<[^>]*\/admin\/v1([^>]*)>; rel="next"/.exec(link)![1] : undefined;
      }
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen).toEqual(expect.arrayContaining(['page-pa', 'page-pb', 'page-pc']));
    });

    it("APIs, CI trust policies and connectors: the operator CLI's resources, workloads and connectors, audited; a secret never read back", async () => {
      const api = 'https://deploy.example.com/v1';
      const made = await call(server, 'POST', '/resources', writer, {
        id: api,
        name: 'Deploy API',
        scopes: [{ name: 'deploy:write', description: 'Deploy to production' }, { name: 'deploy:read' }],
      });
      expect(made.status).toBe(201);
      expect(made.headers.get('location')).toBe(`${server.url}/admin/v1/resources/${encodeURIComponent(api)}`);
      expect(made.json.scopes).toEqual([
        { name: 'deploy:write', description: 'Deploy to production' },
        { name: 'deploy:read', description: 'deploy:read' },
      ]);
      expect((await call(server, 'POST', '/resources', writer, { id: api, name: 'Again', scopes: [{ name: 'x:y' }] })).status).toBe(409);
      const path = `/resources/${encodeURIComponent(api)}`;
      expect((await call(server, 'PATCH', path, writer, { name: 'Deployments' })).json).toMatchObject({ name: 'Deployments' });
      const ci = await call(server, 'POST', '/apps', writer, {
        name: 'CI deployer',
        kind: 'confidential',
        scope: 'deploy:write',
        grant_types: ['urn:ietf:params:oauth:grant-type:token-exchange'],
      });
      expect(ci.status, JSON.stringify(ci.json)).toBe(201);
      const workload = await call(server, 'POST', '/workloads', writer, {
        id: 'deploy-main',
        issuer: 'https://token.actions.githubusercontent.com',
        audience: server.url,
        subject: 'repo:acme/deploy:ref:refs/heads/main',
        claims: { repository_owner: 'acme' },
        app: ci.json.client_id,
        scope: 'deploy:write',
        token_lifetime: '5m',
      });
      expect(workload.status, JSON.stringify(workload.json)).toBe(201);
      expect(workload.json).toMatchObject({ id: 'deploy-main', claims: { repository_owner: 'acme' }, token_lifetime: 300 });
      const wrongScope = await call(server, 'POST', '/workloads', writer, {
        ...workload.json,
        id: 'other',
        scope: 'openid',
        token_lifetime: undefined,
      });
      expect(wrongScope.status).toBe(400);
      const connector = await call(server, 'POST', '/connectors', writer, {
        type: 'oidc',
        id: 'corp',
        name: 'Corp SSO',
        issuer: 'https://login.example.com',
        client_id: 'authcli-at-corp',
        client_secret: 'the-upstream-secret',
        allowed_email_domains: ['example.com'],
      });
      expect(connector.status, JSON.stringify(connector.json)).toBe(201);
      expect(connector.json).toMatchObject({
        id: 'corp',
        type: 'oidc',
        upstream: 'https://login.example.com',
        redirect_uri: `${server.url}/connectors/corp/callback`,
      });
      const missing = await call(server, 'POST', '/connectors', writer, { type: 'github', id: 'gh', name: 'GitHub', client_id: 'x' });
      expect(missing.json).toMatchObject({ status: 400, field: 'client_secret' });
      const listed = await call(server, 'GET', '/connectors', reader);
      expect(JSON.stringify(listed.json)).not.toContain('the-upstream-secret');
      for (const gone of ['/connectors/corp', '/workloads/deploy-main', path])
        expect((await call(server, 'DELETE', gone, writer)).status, gone).toBe(204);
      expect((await call(server, 'GET', path, reader)).status).toBe(404);
      const rows = await server.store.audit.list({ type: 'resource', actor: writerId, order: 'asc' });
      expect(rows.map((r) => r.action)).toEqual(['resource.created', 'resource.updated', 'resource.removed']);
      const others = (await server.store.audit.list({ actor: writerId, order: 'asc', limit: 500 })).map((r) => r.action);
      expect(others).toEqual(expect.arrayContaining(['workload.created', 'workload.removed', 'connector.created', 'connector.removed']));
      expect(JSON.stringify(await server.store.audit.list({ limit: 500 }))).not.toContain('the-upstream-secret');
    });

    it('the OpenAPI 3.1 document describes every route', async () => {
      const doc = await call(server, 'GET', '/openapi.json', undefined);
      expect(doc.status).toBe(200);
      // A standard validator (the OpenAPI Initiative's 3.1 schema and its JSON Schema dialect) accepts it.
      const verdict = await new Validator().validate(doc.json as Parameters<Validator['validate']>[0]);
      expect(verdict.errors ?? [], JSON.stringify(verdict.errors)).toEqual([]);
      expect(verdict.valid).toBe(true);
      expect(doc.json).toMatchObject({ openapi: '3.1.0', servers: [{ url: `${server.url}/admin/v1` }] });
      expect(Object.keys(doc.json.paths as Json).sort()).toEqual([
        '/apps',
        '/apps/{client_id}',
        '/apps/{client_id}/secret',
        '/audit',
        '/connectors',
        '/connectors/{id}',
        '/resources',
        '/resources/{id}',
        '/users',
        '/users/{username}',
        '/workloads',
        '/workloads/{id}',
      ]);
      // Every operation it names is served (asking without a token: 401, not 404).
      for (const [path, ops] of Object.entries(doc.json.paths as Record<string, Json>)) {
        for (const method of Object.keys(ops).filter((k) => k !== 'parameters')) {
          const concrete = path.replace('{username}', 'listed').replace('{client_id}', 'authcli').replace('{id}', 'x');
          expect((await call(server, method.toUpperCase(), concrete, undefined)).status, `${method} ${path}`).toBe(401);
        }
      }
    });
  });
}

describe.each(dialects())('admin API writes are rate-limited per caller (%s)', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer(dialect, { limits: { ...LIMITS, 'admin-write': { limit: 5, windowMs: 60_000 } } });
  });
  afterAll(async () => server.close());

  it('20 writes at once past the budget: 5 made, 15 refused 429 with Retry-After, one limit.reached row; reads go on', async () => {
    const token = await adminToken(server);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => call(server, 'POST', '/users', token, { username: `burst-${i}`, password: 'long enough pw' })),
    );
    expect(tally(answers)).toEqual({ 201: 5, 429: 15 });
    const refused = answers.find((a) => a.status === 429)!;
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.json).toMatchObject({ status: 429, error: 'rate_limited' });
    expect((await server.store.users.list()).filter((u) => u.username.startsWith('burst-'))).toHaveLength(5);
    const reached = await server.store.audit.list({ type: 'limit.reached' });
    expect(reached.map((r) => JSON.parse(r.detail).counter)).toEqual(['admin-write']);
    expect((await call(server, 'GET', '/users', token)).status).toBe(200);
  });
});

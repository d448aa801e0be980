import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseScopeArgument, resourceIdProblem, validateResource } from '../src/oauth/resources.js';
import {
  authorizeUrl,
  basic,
  DEVICE_GRANT,
  decideOnDevicePage,
  dialects,
  postForm,
  seedApp,
  seedUser,
  signedInBrowser,
  startServer,
  tally,
  tokenRequest,
  type TestServer,
} from './helpers.js';
import { approveInBrowser } from '@authcli/test-support/http';

const DEPLOY = 'https://deploy.example.com/api';
const BILLING = 'https://billing.example.com';
const CALLBACK = 'https://app.example/callback';

describe('resource definitions (validation)', () => {
  it('an identifier is an absolute http(s) URI without a fragment (RFC 8707 §2)', () => {
    expect(resourceIdProblem('https://api.example.com')).toBeUndefined();
    expect(resourceIdProblem('http://127.0.0.1:8080/v1')).toBeUndefined();
    for (const bad of [
      'api.example.com',
      '/relative',
      'https://api.example.com/#frag',
      'urn:x:y',
      'ftp://x',
      '',
      `https://x/${'a'.repeat(300)}`,
    ]) {
      expect(resourceIdProblem(bad), bad).toBeDefined();
    }
  });

  it('scopes: NAME=DESCRIPTION, names of their own (not OpenID Connect scopes), each once, at least one', () => {
    expect(parseScopeArgument('deploy:write=Deploy to production')).toEqual({ name: 'deploy:write', description: 'Deploy to production' });
    expect(parseScopeArgument('deploy:read')).toEqual({ name: 'deploy:read', description: 'deploy:read' });
    const ok = validateResource({ id: DEPLOY, name: 'Deploy API', scopes: [parseScopeArgument('deploy:write=Deploy')] });
    expect(ok.scopes).toEqual([{ name: 'deploy:write', description: 'Deploy' }]);
    const bad: [string[], RegExp][] = [
      [[], /at least one scope/],
      [['openid=who you are'], /OpenID Connect scope/],
      [['a b=x'], /not a scope name/],
      [['say"hi"=x'], /not a scope name/],
      [['x=one', 'x=two'], /given twice/],
      [['x=\u202egnp.exe'], /control characters/],
    ];
    for (const [scopes, message] of bad) {
      expect(() => validateResource({ id: DEPLOY, name: 'Deploy', scopes: scopes.map(parseScopeArgument) }), scopes.join()).toThrow(
        message,
      );
    }
    expect(() => validateResource({ id: DEPLOY, name: '\u0007', scopes: [parseScopeArgument('x')] })).toThrow(/resource name/);
  });
});

for (const dialect of dialects()) {
  describe(`RFC 8707 resources (${dialect})`, () => {
    let server: TestServer;
    let clientId: string;
    let confidential: { id: string; secret: string };
    let inspector: { id: string; secret: string };

    beforeAll(async () => {
      server = await startServer(dialect);
      await seedUser(server, 'alice');
      await server.store.resources.create(
        {
          id: DEPLOY,
          name: 'Deploy API',
          scopes: [
            { name: 'deploy:read', description: 'See deployments' },
            { name: 'deploy:write', description: 'Deploy to production' },
          ],
        },
        server.clock.now(),
      );
      await server.store.resources.create(
        { id: BILLING, name: 'Billing', scopes: [{ name: 'invoices:read', description: 'Read invoices' }] },
        server.clock.now(),
      );
      ({
        app: { clientId },
      } = await seedApp(server, {
        scopes: ['openid', 'profile', 'offline_access', 'deploy:read', 'deploy:write', 'invoices:read'],
        grantTypes: ['authorization_code', 'refresh_token', DEVICE_GRANT],
      }));
      const c = await seedApp(server, { kind: 'confidential', scopes: ['openid', 'deploy:read'] });
      confidential = { id: c.app.clientId, secret: c.clientSecret! };
      const i = await seedApp(server, { kind: 'confidential', scopes: ['openid'], introspection: 'all' });
      inspector = { id: i.app.clientId, secret: i.clientSecret! };
    });
    afterAll(() => server?.close());

    /** A code for the scope and resources asked, approved by alice. */
    async function codeFor(scope: string, resources: string[] = [], client = clientId) {
      const browser = await signedInBrowser(server, 'alice');
      const { url, verifier } = await authorizeUrl({ clientId: client, redirectUri: CALLBACK, scope });
      const withResources = url + resources.map((r) => `&resource=${encodeURIComponent(r)}`).join('');
      const callback = new URL(await approveInBrowser(browser, server.url + withResources, 'alice', 'unused', 'approve'));
      return { callback, verifier };
    }

    const exchange = (code: string, verifier: string, extra: Record<string, string> = {}) =>
      tokenRequest(server, {
        grant_type: 'authorization_code',
        code,
        redirect_uri: CALLBACK,
        client_id: clientId,
        code_verifier: verifier,
        ...extra,
      });

    const jwks = () => createRemoteJWKSet(new URL(`${server.url}/oauth/jwks`));

    it('a code flow naming the API gives an access token for it alone: aud the API, scope only its scopes; the ID token as before', async () => {
      const { callback, verifier } = await codeFor('openid profile deploy:write', [DEPLOY]);
      const res = await exchange(callback.searchParams.get('code')!, verifier);
      expect(res.status).toBe(200);
      expect(res.json.scope).toBe('deploy:write');
      expect(res.json.id_token).toBeTypeOf('string');
      const { payload } = await jwtVerify(res.json.access_token as string, jwks(), {
        audience: DEPLOY,
        issuer: server.config.issuer,
        typ: 'at+jwt',
      });
      expect(payload).toMatchObject({ aud: DEPLOY, scope: 'deploy:write', client_id: clientId });
      // Another API's verifier refuses it.
      await expect(jwtVerify(res.json.access_token as string, jwks(), { audience: BILLING })).rejects.toThrow(/aud/);
      // So does the UserInfo endpoint, which takes only tokens for this server; introspection sees it as it is.
      const userinfo = await fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${res.json.access_token}` } });
      expect(userinfo.status).toBe(401);
      const introspected = await postForm(
        server,
        '/oauth/introspect',
        { token: res.json.access_token as string },
        {
          authorization: basic(inspector.id, inspector.secret),
        },
      );
      expect(introspected.json).toMatchObject({ active: true, aud: DEPLOY, scope: 'deploy:write', client_id: clientId });
    });

    it("an API's scopes imply it: no resource parameter, the same token", async () => {
      const { callback, verifier } = await codeFor('openid deploy:read');
      const res = await exchange(callback.searchParams.get('code')!, verifier);
      expect(res.status).toBe(200);
      expect(decodeJwt(res.json.access_token as string)).toMatchObject({ aud: DEPLOY, scope: 'deploy:read' });
    });

    it('OpenID Connect scopes alone: the token is as it always was (aud the issuer, every scope)', async () => {
      const { callback, verifier } = await codeFor('openid profile');
      const res = await exchange(callback.searchParams.get('code')!, verifier);
      expect(decodeJwt(res.json.access_token as string)).toMatchObject({ aud: server.config.issuer, scope: 'openid profile' });
      expect(res.json.scope).toBe('openid profile');
      const userinfo = await fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${res.json.access_token}` } });
      expect(userinfo.status).toBe(200);
    });

    it('RFC 8707 §2.2: a grant covering two APIs needs one named; a refresh names either and gets a token for it alone', async () => {
      const { callback, verifier } = await codeFor('openid offline_access deploy:write invoices:read', [DEPLOY, BILLING]);
      const code = callback.searchParams.get('code')!;
      const unnamed = await exchange(code, verifier);
      expect(unnamed.status).toBe(400);
      expect(unnamed.json.error).toBe('invalid_target');
      expect(unnamed.json.error_description).toContain(DEPLOY);
      // Refused before the code was used up: the same code, naming one, works.
      const first = await exchange(code, verifier, { resource: BILLING });
      expect(first.status).toBe(200);
      expect(decodeJwt(first.json.access_token as string)).toMatchObject({ aud: BILLING, scope: 'invoices:read' });
      const refreshed = await tokenRequest(server, {
        grant_type: 'refresh_token',
        refresh_token: first.json.refresh_token as string,
        client_id: clientId,
        resource: DEPLOY,
      });
      expect(refreshed.status).toBe(200);
      expect(refreshed.json.scope).toBe('deploy:write');
      expect(decodeJwt(refreshed.json.access_token as string)).toMatchObject({ aud: DEPLOY, scope: 'deploy:write' });
      // A resource the grant does not cover, an unknown one, a malformed one, two at once: invalid_target, and the refresh token still works.
      for (const resource of ['https://elsewhere.example', 'not a uri', [DEPLOY, BILLING]] as const) {
        const body = new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: refreshed.json.refresh_token as string,
          client_id: clientId,
        });
        for (const r of typeof resource === 'string' ? [resource] : resource) body.append('resource', r);
        const refused = await tokenRequest(server, body.toString());
        expect(refused.status, String(resource)).toBe(400);
        expect(refused.json.error).toBe('invalid_target');
      }
      const narrowed = await tokenRequest(server, {
        grant_type: 'refresh_token',
        refresh_token: refreshed.json.refresh_token as string,
        client_id: clientId,
        resource: BILLING,
        scope: 'invoices:read',
      });
      expect(narrowed.status).toBe(200);
      expect(decodeJwt(narrowed.json.access_token as string)).toMatchObject({ aud: BILLING, scope: 'invoices:read' });
    });

    it('invalid_target at the authorization endpoint for an unknown API, or one the application has no scope of', async () => {
      const browser = await signedInBrowser(server, 'alice');
      const { url } = await authorizeUrl({ clientId: confidential.id, redirectUri: CALLBACK, scope: 'openid' });
      // DEPLOY: the application is allowed one of its scopes, but none is asked for: nothing of it would be approved.
      for (const resource of ['https://unknown.example', BILLING, 'relative/path', DEPLOY]) {
        const res = await browser.get(`${url}&resource=${encodeURIComponent(resource)}`);
        expect(res.status, resource).toBe(303);
        const location = new URL(res.headers.get('location')!);
        expect(location.searchParams.get('error'), resource).toBe('invalid_target');
      }
    });

    it('an API scope the application is not allowed is invalid_scope; one no API has is ignored, as OIDC says', async () => {
      const browser = await signedInBrowser(server, 'alice');
      const { url } = await authorizeUrl({ clientId: confidential.id, redirectUri: CALLBACK, scope: 'openid deploy:write' });
      const res = await browser.get(url);
      expect(new URL(res.headers.get('location')!).searchParams.get('error')).toBe('invalid_scope');
      const { url: ignored } = await authorizeUrl({ clientId: confidential.id, redirectUri: CALLBACK, scope: 'openid nobody:knows' });
      expect((await browser.get(ignored)).headers.get('location') ?? '').not.toContain('error=');
    });

    it('PAR carries the resources: the pushed request gives the API token', async () => {
      const { url, verifier } = await authorizeUrl({ clientId, redirectUri: CALLBACK, scope: 'openid deploy:read' });
      const body = new URLSearchParams(url.split('?')[1]);
      body.append('resource', DEPLOY);
      const pushed = await postForm(server, '/oauth/par', body.toString());
      expect(pushed.status).toBe(201);
      const browser = await signedInBrowser(server, 'alice');
      const start = `${server.url}/oauth/authorize?client_id=${clientId}&request_uri=${encodeURIComponent(pushed.json.request_uri as string)}`;
      const callback = new URL(await approveInBrowser(browser, start, 'alice', 'unused', 'approve'));
      const res = await exchange(callback.searchParams.get('code')!, verifier);
      expect(decodeJwt(res.json.access_token as string)).toMatchObject({ aud: DEPLOY, scope: 'deploy:read' });
      const unknown = new URLSearchParams(url.split('?')[1]);
      unknown.append('resource', 'https://unknown.example');
      const refused = await postForm(server, '/oauth/par', unknown.toString());
      expect(refused.status).toBe(400);
      expect(refused.json.error).toBe('invalid_target');
    });

    it('the device flow: resource at device authorization; the confirmation page shows the API and its scope descriptions', async () => {
      const started = await postForm(server, '/oauth/device/authorization', {
        client_id: clientId,
        scope: 'openid deploy:write',
        resource: DEPLOY,
      });
      expect(started.status).toBe(200);
      const browser = await signedInBrowser(server, 'alice');
      const entry = await browser.get('/device');
      const page = await browser.postForm('/device', {
        _csrf: entry.text.match(/name="_csrf" value="([^"]+)"/)![1]!,
        user_code: started.json.user_code as string,
      });
      expect(page.text).toContain('Deploy API');
      expect(page.text).toContain(DEPLOY);
      expect(page.text).toContain('Deploy to production');
      expect((await decideOnDevicePage(browser, started.json.user_code as string, 'approve')).status).toBeLessThan(400);
      const res = await tokenRequest(server, {
        grant_type: DEVICE_GRANT,
        device_code: started.json.device_code as string,
        client_id: clientId,
      });
      expect(res.status).toBe(200);
      expect(decodeJwt(res.json.access_token as string)).toMatchObject({ aud: DEPLOY, scope: 'deploy:write' });
      const refused = await postForm(server, '/oauth/device/authorization', {
        client_id: clientId,
        scope: 'openid',
        resource: 'https://unknown.example',
      });
      expect(refused.json.error).toBe('invalid_target');
    });

    it('the consent page shows each API scope under its API name, with its description', async () => {
      const { app } = await seedApp(server, { scopes: ['openid', 'deploy:write'] });
      const browser = await signedInBrowser(server, 'alice');
      const { url } = await authorizeUrl({ clientId: app.clientId, redirectUri: CALLBACK, scope: 'openid deploy:write' });
      const page = await browser.get(url);
      expect(page.status).toBe(200);
      expect(page.text).toMatch(/Deploy API[\s\S]*deploy:write[\s\S]*Deploy to production/);
    });

    it('discovery lists every API scope after OpenID Connect’s (brought up to date behind the answer)', async () => {
      const scopes = async () =>
        ((await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as { scopes_supported: string[] }).scopes_supported;
      await expect
        .poll(scopes, { interval: 20, timeout: 2000 })
        .toEqual(expect.arrayContaining(['openid', 'deploy:read', 'deploy:write', 'invoices:read']));
      expect((await scopes()).slice(0, 6)).toEqual(['openid', 'profile', 'email', 'address', 'phone', 'offline_access']);
    });

    it('twenty parallel exchanges of one API code: one token, the rest invalid_grant', async () => {
      const { callback, verifier } = await codeFor('openid deploy:read', [DEPLOY]);
      const code = callback.searchParams.get('code')!;
      const answers = await Promise.all(Array.from({ length: 20 }, () => exchange(code, verifier)));
      expect(tally(answers)).toEqual({ 200: 1, 400: 19 });
    });

    it('removing an API ends its tokens at the next refresh and takes its scopes from applications; store rules hold', async () => {
      const now = server.clock.now();
      await server.store.resources.create(
        { id: 'https://temp.example', name: 'Temp', scopes: [{ name: 'temp:use', description: 'Use' }] },
        now,
      );
      await expect(
        server.store.resources.create({ id: 'https://temp.example', name: 'Again', scopes: [{ name: 'other:x', description: 'x' }] }, now),
      ).rejects.toMatchObject({ code: 'duplicate', message: expect.stringContaining('already exists') });
      await expect(
        server.store.resources.create(
          { id: 'https://temp2.example', name: 'Steal', scopes: [{ name: 'deploy:read', description: 'x' }] },
          now,
        ),
      ).rejects.toMatchObject({ code: 'duplicate', message: expect.stringContaining(DEPLOY) });
      const { app } = await seedApp(server, { scopes: ['openid', 'offline_access', 'temp:use'] });
      const { callback, verifier } = await codeFor('openid offline_access temp:use', [], app.clientId);
      const first = await tokenRequest(server, {
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code')!,
        redirect_uri: CALLBACK,
        client_id: app.clientId,
        code_verifier: verifier,
      });
      expect(decodeJwt(first.json.access_token as string)).toMatchObject({ aud: 'https://temp.example' });
      await server.store.resources.remove('https://temp.example', now);
      await expect(server.store.resources.remove('https://temp.example', now)).rejects.toMatchObject({ code: 'not_found' });
      expect((await server.store.applications.get(app.clientId))?.scopes).toBeDefined();
      const reread = (await server.store.applications.list()).find((a) => a.clientId === app.clientId)!;
      expect(reread.scopes).toEqual(['openid', 'offline_access']);
      const refreshed = await tokenRequest(server, {
        grant_type: 'refresh_token',
        refresh_token: first.json.refresh_token as string,
        client_id: app.clientId,
      });
      expect(refreshed.json.error).toBe('invalid_target');
      // Updating scopes withdraws the ones left out from applications too.
      await server.store.resources.update(BILLING, { scopes: [{ name: 'invoices:read', description: 'Read invoices' }] }, now);
      expect((await server.store.resources.catalog()).byId.get(BILLING)?.scopes.map((s) => s.name)).toEqual(['invoices:read']);
      await expect(server.store.resources.update('https://nope.example', { name: 'x' }, now)).rejects.toMatchObject({ code: 'not_found' });
    });

    it('a scope taken from the application (apps update --scope) is left out of its next token: none left for the API is invalid_target', async () => {
      const { app } = await seedApp(server, { scopes: ['openid', 'offline_access', 'invoices:read'] });
      const { callback, verifier } = await codeFor('openid offline_access invoices:read', [], app.clientId);
      const first = await tokenRequest(server, {
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code')!,
        redirect_uri: CALLBACK,
        client_id: app.clientId,
        code_verifier: verifier,
      });
      expect(decodeJwt(first.json.access_token as string)).toMatchObject({ aud: BILLING, scope: 'invoices:read' });
      await server.store.applications.update(app.clientId, { scopes: ['openid', 'offline_access'] }, server.clock.now());
      const refreshed = await tokenRequest(server, {
        grant_type: 'refresh_token',
        refresh_token: first.json.refresh_token as string,
        client_id: app.clientId,
      });
      expect(refreshed.json.error).toBe('invalid_target');
    });

    it('applications may be allowed API scopes only once the API exists', async () => {
      await expect(seedApp(server, { scopes: ['openid', 'nobody:knows'] })).rejects.toThrow(/unknown scope nobody:knows .*deploy:read/);
      await expect(seedApp(server, { scopes: ['openid', 'invoices:read'] })).resolves.toBeDefined();
    });
  });
}

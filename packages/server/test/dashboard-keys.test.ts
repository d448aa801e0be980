import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertion, assertionFields, type ClientKey, clientKey, jwksOf, seedKeyApp } from './client-assertions.js';
import {
  basic,
  type Browser,
  dialects,
  hidden,
  postForm,
  type Res,
  seedUser,
  signedInBrowser,
  startServer,
  type TestServer,
} from './helpers.js';

/**
 * The dashboard's application form and private_key_jwt (RFC 7523): a confidential application with a JWK Set
 * pasted or a jwks_uri gets no secret; the keys follow a registering client's rules; emptying them gives the
 * application a new secret, shown once; an operator's jwks_uri is kept when the form is saved unchanged.
 */
describe.each(dialects())('dashboard: applications authenticating with keys (%s)', (dialect) => {
  let server: TestServer;
  let key: ClientKey;

  beforeAll(async () => {
    server = await startServer(dialect);
    await seedUser(server, 'alice');
    await seedUser(server, 'root', { admin: true });
    key = await clientKey('ES256');
  });
  afterAll(async () => server.close());

  const form = (b: Browser, path: string, fields: Record<string, string>) =>
    b.get(path).then((page) =>
      b.request(
        'POST',
        path === '/dashboard/apps/new' ? '/dashboard/apps' : path,
        new URLSearchParams({
          _csrf: hidden(page.text, '_csrf'),
          name: 'Keyed backend',
          kind: 'confidential',
          callback_urls: 'https://app.example/cb',
          id_token_alg: 'RS256',
          scope: 'openid',
          grant: 'authorization_code',
          ...fields,
        }).toString(),
        { 'content-type': 'application/x-www-form-urlencoded' },
      ),
    );
  const clientIdOf = (res: Res) => decodeURIComponent(res.location!.split('/')[3]!);
  const introspectWith = async (clientId: string) =>
    (await postForm(server, '/oauth/introspect', { token: 'x', ...assertionFields(await assertion(server, clientId, key)) })).status;

  it('a pasted JWK Set: no secret page, the keys stored, no secret to rotate; its assertions authenticate', async () => {
    const b = await signedInBrowser(server, 'alice');
    const res = await form(b, '/dashboard/apps/new', { jwks: JSON.stringify(jwksOf(key)) });
    expect(res.status).toBe(303);
    expect(res.location).toMatch(/^\/dashboard\/apps\/[^/]+$/);
    const id = clientIdOf(res);
    expect(await server.store.applications.get(id)).toMatchObject({
      kind: 'confidential',
      secretHash: null,
      clientKeys: { jwks: jwksOf(key) },
    });
    const page = await b.get(res.location!);
    expect(page.text).toContain('private_key_jwt');
    expect(page.text).not.toContain('Rotate secret');
    expect((await b.get(`${res.location}/rotate-secret`)).status).toBe(303);
    expect(await introspectWith(id)).toBe(200);
  });

  it('keys follow the rules of a registering client: https on a public host, public keys, a confidential application', async () => {
    const b = await signedInBrowser(server, 'alice');
    const refusals: [Record<string, string>, string][] = [
      [{ jwks_uri: 'http://keys.example/jwks' }, 'jwks_uri must be an https URL'],
      [{ jwks_uri: 'https://127.0.0.1:8443/jwks' }, 'jwks_uri must be on a public host'],
      [{ jwks: '{"keys": [' }, 'the JWK Set is not JSON'],
      [{ jwks: JSON.stringify({ keys: [{ ...key.publicJwk, d: 'AAAA' }] }) }, 'jwks must hold public keys only'],
      [{ kind: 'public', jwks: JSON.stringify(jwksOf(key)) }, 'only a confidential application authenticates with keys'],
    ];
    for (const [fields, message] of refusals) {
      const res = await form(b, '/dashboard/apps/new', fields);
      expect(res.status, message).toBe(400);
      expect(res.text).toContain(message);
    }
  });

  it('emptying the keys gives a new secret, shown once; filling them in again ends the secret', async () => {
    const b = await signedInBrowser(server, 'alice');
    const id = clientIdOf(await form(b, '/dashboard/apps/new', { jwks: JSON.stringify(jwksOf(key)) }));
    const path = `/dashboard/apps/${encodeURIComponent(id)}`;
    const cleared = await form(b, path, { jwks: '', jwks_uri: '' });
    expect([cleared.status, cleared.location]).toEqual([303, `${path}/secret`]);
    const secret = /id="client_secret"[^>]*value="([^"]+)"/.exec((await b.get(cleared.location!)).text)![1]!;
    expect(await server.store.applications.get(id)).toMatchObject({ clientKeys: null });
    const bySecret = () => postForm(server, '/oauth/introspect', { token: 'x' }, { authorization: basic(id, secret) });
    expect((await bySecret()).status).toBe(200);
    expect(await introspectWith(id)).toBe(401);

    const keyed = await form(b, path, { jwks: JSON.stringify(jwksOf(key)) });
    expect([keyed.status, keyed.location]).toEqual([303, path]);
    expect((await bySecret()).status).toBe(401);
    expect(await introspectWith(id)).toBe(200);
  });

  it("an operator's http jwks_uri and algorithm are kept when an administrator saves the form unchanged", async () => {
    const clientKeys = { jwksUri: 'http://10.0.0.7:8080/jwks', anyAddress: true, signingAlg: 'ES256' };
    const id = await seedKeyApp(server, clientKeys, 'Operator backend');
    const b = await signedInBrowser(server, 'root');
    const path = `/dashboard/apps/${encodeURIComponent(id)}`;
    const page = await b.get(path);
    expect(page.text).toContain('value="http://10.0.0.7:8080/jwks"');
    const saved = await form(b, path, { name: 'Operator backend, renamed', jwks_uri: clientKeys.jwksUri, jwks: '' });
    expect(saved.status, saved.text).toBe(303);
    expect(await server.store.applications.get(id)).toMatchObject({ name: 'Operator backend, renamed', clientKeys });
    // Changed in the dashboard, it is held to the dashboard's rules.
    const changed = await form(b, path, { jwks_uri: 'http://10.0.0.8:8080/jwks' });
    expect([changed.status, changed.text.includes('jwks_uri must be an https URL')]).toEqual([400, true]);
  });
});

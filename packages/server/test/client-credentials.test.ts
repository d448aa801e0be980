import * as oauth from 'oauth4webapi';
import { calculateJwkThumbprint, decodeJwt, exportJWK, generateKeyPair } from 'jose';
import { LIMITS } from '../src/config/defaults.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerApplication } from '../src/oauth/registration.js';
import { clientKey, jwksOf, type ClientKey } from './client-assertions.js';
import { basic, dialects, postForm, seedApp, startServer, tally, tokenRequest, type TestServer } from './helpers.js';

const DEPLOY = 'https://deploy.example.com';
const BILLING = 'https://billing.example.com';
const CC = 'client_credentials';
const LIMIT = LIMITS['client-auth-ip'].limit;

for (const dialect of dialects()) {
  describe(`rfc6749 §4.4 client credentials (${dialect})`, () => {
    let server: TestServer;
    let as: oauth.AuthorizationServer;
    let machine: { id: string; secret: string };
    let keyed: { id: string; key: ClientKey };
    let inspector: { id: string; secret: string };

    const confidential = async (scopes: string[], extra: { grantTypes?: string[]; requireDpop?: boolean } = {}) => {
      const { app, clientSecret } = await registerApplication(
        server.store,
        {
          name: 'Machine',
          kind: 'confidential',
          callbackUrls: [],
          scopes,
          grantTypes: extra.grantTypes ?? [CC],
          ...(extra.requireDpop && { requireDpop: true }),
        },
        server.clock.now(),
      );
      return { id: app.clientId, secret: clientSecret! };
    };

    beforeAll(async () => {
      server = await startServer(dialect);
      const now = server.clock.now();
      await server.store.resources.create(
        {
          id: DEPLOY,
          name: 'Deploy API',
          scopes: [
            { name: 'deploy:read', description: 'See deployments' },
            { name: 'deploy:write', description: 'Deploy' },
          ],
        },
        now,
      );
      await server.store.resources.create({ id: BILLING, name: 'Billing', scopes: [{ name: 'invoices:read', description: 'Read' }] }, now);
      machine = await confidential(['deploy:read', 'deploy:write', 'invoices:read']);
      const key = await clientKey('ES256');
      const { app } = await registerApplication(
        server.store,
        {
          name: 'Keyed machine',
          kind: 'confidential',
          callbackUrls: [],
          scopes: ['deploy:read'],
          grantTypes: [CC],
          clientKeys: { jwks: jwksOf(key) },
        },
        now,
      );
      keyed = { id: app.clientId, key };
      const i = await seedApp(server, { kind: 'confidential', scopes: ['openid'], introspection: 'all' });
      inspector = { id: i.app.clientId, secret: i.clientSecret! };
      as = await oauth.processDiscoveryResponse(
        new URL(server.url),
        await oauth.discoveryRequest(new URL(server.url), { algorithm: 'oauth2', [oauth.allowInsecureRequests]: true }),
      );
    });
    afterAll(() => server?.close());

    const options = { [oauth.allowInsecureRequests]: true } as const;

    it('oauth4webapi with a secret: an RFC 9068 token for the API, sub the client_id, no refresh or ID token; validateJwtAccessToken accepts it for the API only', async () => {
      expect(as.grant_types_supported).toContain(CC);
      const client: oauth.Client = { client_id: machine.id };
      const res = await oauth.clientCredentialsGrantRequest(
        as,
        client,
        oauth.ClientSecretBasic(machine.secret),
        { scope: 'deploy:write', resource: DEPLOY },
        options,
      );
      const tokens = await oauth.processClientCredentialsResponse(as, client, res);
      expect(tokens).toMatchObject({ token_type: 'bearer', scope: 'deploy:write' });
      expect(tokens.refresh_token).toBeUndefined();
      expect(tokens.id_token).toBeUndefined();
      const claims = decodeJwt(tokens.access_token);
      expect(claims).toMatchObject({
        sub: machine.id,
        client_id: machine.id,
        aud: DEPLOY,
        scope: 'deploy:write',
        iss: server.config.issuer,
      });
      expect(claims.gid).toBeUndefined();
      const request = new Request('https://deploy.example.com/releases', { headers: { authorization: `Bearer ${tokens.access_token}` } });
      await expect(oauth.validateJwtAccessToken(as, request, DEPLOY, options)).resolves.toMatchObject({ sub: machine.id });
      await expect(oauth.validateJwtAccessToken(as, request.clone(), BILLING, options)).rejects.toThrow();
      // Introspection answers it (no username: no person), and after revocation it is inactive.
      const active = await postForm(
        server,
        '/oauth/introspect',
        { token: tokens.access_token },
        { authorization: basic(inspector.id, inspector.secret) },
      );
      expect(active.json).toMatchObject({ active: true, sub: machine.id, aud: DEPLOY, scope: 'deploy:write' });
      expect(active.json.username).toBeUndefined();
      const revoked = await postForm(
        server,
        '/oauth/revoke',
        { token: tokens.access_token },
        { authorization: basic(machine.id, machine.secret) },
      );
      expect(revoked.status).toBe(200);
      const inactive = await postForm(
        server,
        '/oauth/introspect',
        { token: tokens.access_token },
        { authorization: basic(inspector.id, inspector.secret) },
      );
      expect(inactive.json).toEqual({ active: false });
      // UserInfo is about a person: an application's own token is refused there.
      expect((await fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).status).toBe(
        401,
      );
    });

    it('oauth4webapi with private_key_jwt and a DPoP key: a DPoP-bound token (cnf.jkt) for the API', async () => {
      const client: oauth.Client = { client_id: keyed.id };
      const dpopKeys = await generateKeyPair('ES256', { extractable: true });
      const DPoP = oauth.DPoP(client, dpopKeys);
      const auth = oauth.PrivateKeyJwt({ key: keyed.key.privateKey, kid: keyed.key.kid });
      let res = await oauth.clientCredentialsGrantRequest(as, client, auth, { resource: DEPLOY }, { ...options, DPoP });
      let tokens: oauth.TokenEndpointResponse;
      try {
        tokens = await oauth.processClientCredentialsResponse(as, client, res);
      } catch (err) {
        // A server nonce, when the server asks for one (RFC 9449 §8): once more with it.
        if (!oauth.isDPoPNonceError(err)) throw err;
        res = await oauth.clientCredentialsGrantRequest(as, client, auth, { resource: DEPLOY }, { ...options, DPoP });
        tokens = await oauth.processClientCredentialsResponse(as, client, res);
      }
      expect(tokens.token_type).toBe('dpop');
      const claims = decodeJwt(tokens.access_token) as { cnf?: { jkt?: string } };
      expect(claims).toMatchObject({ sub: keyed.id, aud: DEPLOY, scope: 'deploy:read' });
      expect(claims.cnf?.jkt).toBe(await calculateJwkThumbprint(await exportJWK(dpopKeys.publicKey)));
    });

    it('scope left out: every scope the application has of the API named, or of its one API; several APIs need one named', async () => {
      const auth = { authorization: basic(machine.id, machine.secret) };
      const named = await tokenRequest(server, { grant_type: CC, resource: BILLING }, auth);
      expect(named.json).toMatchObject({ scope: 'invoices:read' });
      expect(decodeJwt(named.json.access_token as string)).toMatchObject({ aud: BILLING });
      const unnamed = await tokenRequest(server, { grant_type: CC }, auth);
      expect(unnamed.status).toBe(400);
      expect(unnamed.json.error).toBe('invalid_target');
      const one = await confidential(['deploy:read']);
      const implied = await tokenRequest(server, { grant_type: CC }, { authorization: basic(one.id, one.secret) });
      expect(decodeJwt(implied.json.access_token as string)).toMatchObject({ aud: DEPLOY, scope: 'deploy:read' });
    });

    it('every refusal is standard: unauthorized_client, invalid_scope, invalid_target, invalid_client', async () => {
      const auth = { authorization: basic(machine.id, machine.secret) };
      const cases: [Record<string, string>, Record<string, string>, number, string][] = [
        [{ scope: 'openid deploy:read' }, auth, 400, 'invalid_scope'],
        [{ scope: 'deploy:read invoices:read' }, auth, 400, 'invalid_target'],
        [{ resource: 'https://unknown.example' }, auth, 400, 'invalid_target'],
        [{ resource: 'not a uri' }, auth, 400, 'invalid_target'],
        [{}, { authorization: basic(machine.id, 'wrong secret') }, 401, 'invalid_client'],
      ];
      for (const [fields, headers, status, error] of cases) {
        const res = await tokenRequest(server, { grant_type: CC, ...fields }, headers);
        expect([res.status, res.json.error], JSON.stringify(fields)).toEqual([status, error]);
      }
      const twice = await tokenRequest(
        server,
        `grant_type=${CC}&resource=${encodeURIComponent(DEPLOY)}&resource=${encodeURIComponent(BILLING)}`,
        auth,
      );
      expect(twice.json.error).toBe('invalid_target');
      // An application not allowed the grant, and one with no API scope.
      const coder = await confidential(['openid', 'deploy:read'], { grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'] });
      const refused = await tokenRequest(server, { grant_type: CC }, { authorization: basic(coder.id, coder.secret) });
      expect(refused.json.error).toBe('unauthorized_client');
      const personal = await confidential(['openid'], { grantTypes: [CC] });
      const none = await tokenRequest(server, { grant_type: CC }, { authorization: basic(personal.id, personal.secret) });
      expect(none.json.error).toBe('invalid_scope');
      // A public application cannot be registered for it, nor ask by naming itself.
      await expect(
        registerApplication(
          server.store,
          { name: 'Public', kind: 'public', callbackUrls: [], scopes: ['deploy:read'], grantTypes: [CC] },
          server.clock.now(),
        ),
      ).rejects.toThrow(/confidential applications only/);
      const publicApp = await seedApp(server, { scopes: ['openid'] });
      const byName = await tokenRequest(server, { grant_type: CC, client_id: publicApp.app.clientId });
      expect(byName.json.error).toBe('unauthorized_client');
    });

    it('an application that requires DPoP gets no Bearer token', async () => {
      const bound = await confidential(['deploy:read'], { requireDpop: true });
      const res = await tokenRequest(server, { grant_type: CC }, { authorization: basic(bound.id, bound.secret) });
      expect(res.json.error).toBe('invalid_dpop_proof');
    });

    it('wrong secrets in parallel, with a forged X-Forwarded-For each, are counted by the one client-authentication limit', async () => {
      // A server of its own: its address ends up over the limit.
      const own = await startServer(dialect);
      try {
        await own.store.resources.create(
          { id: DEPLOY, name: 'Deploy', scopes: [{ name: 'deploy:read', description: 'x' }] },
          own.clock.now(),
        );
        const { app, clientSecret } = await registerApplication(
          own.store,
          { name: 'M', kind: 'confidential', callbackUrls: [], scopes: ['deploy:read'], grantTypes: [CC] },
          own.clock.now(),
        );
        const answers = await Promise.all(
          Array.from({ length: LIMIT + 30 }, (_, i) =>
            tokenRequest(
              own,
              { grant_type: CC },
              { authorization: basic(app.clientId, `wrong ${i}`), 'x-forwarded-for': `198.51.100.${i % 250}` },
            ),
          ),
        );
        expect(tally(answers)).toEqual({ 401: LIMIT, 429: 30 });
        // Past the limit the right secret is refused too, until the window ends.
        const right = await tokenRequest(own, { grant_type: CC }, { authorization: basic(app.clientId, clientSecret!) });
        expect(right.status).toBe(429);
      } finally {
        await own.close();
      }
    });

    it('scopes of another API than the one named: invalid_target, never a token without them', async () => {
      const res = await tokenRequest(
        server,
        { grant_type: CC, scope: 'deploy:read', resource: BILLING },
        { authorization: basic(machine.id, machine.secret) },
      );
      expect(res.json.error).toBe('invalid_target');
    });
  });
}

import { decodeJwt, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerApplication } from '../src/oauth/registration.js';
import { matchesPattern } from '../src/oauth/workloads.js';
import { forged } from './client-assertions.js';
import { type CiIssuer, ciIssuer, MAIN_BRANCH_SUBJECT } from '@authcli/test-support/ci-issuer';
import { basic, dialects, postForm, seedApp, startServer, tally, tokenRequest, type TestServer } from './helpers.js';

const TE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const JWT_TYPE = 'urn:ietf:params:oauth:token-type:jwt';
const DEPLOY = 'https://deploy.example.com';
const AUDIENCE = 'https://authcli.example/ci';
const MAIN = MAIN_BRANCH_SUBJECT;

describe('trust-policy patterns', () => {
  it('* matches any run of characters, nothing else is special', () => {
    expect(matchesPattern(MAIN, MAIN)).toBe(true);
    expect(matchesPattern('repo:acme/*:ref:refs/heads/main', MAIN)).toBe(true);
    expect(matchesPattern('repo:acme/*', 'repo:acme/deploy:pull_request')).toBe(true);
    expect(matchesPattern('repo:acme/deploy:ref:refs/heads/*', 'repo:acme/deploy:pull_request')).toBe(false);
    expect(matchesPattern('repo:acme/*:ref:refs/heads/main', 'repo:acme-evil/x:ref:refs/heads/main')).toBe(false);
    expect(matchesPattern('repo:acme/.*', 'repo:acme/x')).toBe(false);
    expect(matchesPattern('a*b*c', 'abc')).toBe(true);
    expect(matchesPattern('a*b*c', 'ac')).toBe(false);
    expect(matchesPattern('ab*ba', 'aba')).toBe(false);
  });
});

for (const dialect of dialects()) {
  describe(`rfc8693 token exchange of a CI token under a trust policy (${dialect})`, () => {
    let server: TestServer;
    let ci: CiIssuer;
    let clientId: string;
    let inspector: { id: string; secret: string };

    beforeAll(async () => {
      server = await startServer(dialect);
      ci = await ciIssuer({ audience: AUDIENCE });
      const now = server.clock.now();
      await server.store.resources.create(
        {
          id: DEPLOY,
          name: 'Deploy API',
          scopes: [
            { name: 'deploy:write', description: 'Deploy' },
            { name: 'deploy:read', description: 'See' },
          ],
        },
        now,
      );
      const { app } = await registerApplication(
        server.store,
        { name: 'CI deployer', kind: 'public', callbackUrls: [], scopes: ['deploy:write', 'deploy:read'], grantTypes: [TE] },
        now,
      );
      clientId = app.clientId;
      await server.store.workloads.create(
        {
          id: 'deploy-main',
          issuer: ci.issuer,
          audience: AUDIENCE,
          subject: MAIN,
          claims: { repository_owner: 'acme' },
          clientId,
          scopes: ['deploy:write'],
          tokenLifetimeSeconds: 300,
        },
        now,
      );
      const i = await seedApp(server, { kind: 'confidential', scopes: ['openid'], introspection: 'all' });
      inspector = { id: i.app.clientId, secret: i.clientSecret! };
    });
    afterAll(async () => {
      await ci?.close();
      await server?.close();
    });

    const exchange = (subjectToken: string, extra: Record<string, string> = {}) =>
      tokenRequest(server, { grant_type: TE, client_id: clientId, subject_token: subjectToken, subject_token_type: JWT_TYPE, ...extra });

    it('a GitHub Actions token of the trusted branch becomes a token for the API: the upstream sub, the policy, its lifetime, no refresh token', async () => {
      const res = await exchange(await ci.token(server.clock.now()));
      expect(res.status, JSON.stringify(res.json)).toBe(200);
      expect(res.json).toMatchObject({
        issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        token_type: 'Bearer',
        expires_in: 300,
        scope: 'deploy:write',
      });
      expect(res.json.refresh_token).toBeUndefined();
      const claims = decodeJwt(res.json.access_token as string);
      expect(claims).toMatchObject({ sub: MAIN, aud: DEPLOY, client_id: clientId, workload: 'deploy-main', upstream_iss: ci.issuer });
      expect(claims.exp! - claims.iat!).toBe(300);
      const introspected = await postForm(
        server,
        '/oauth/introspect',
        { token: res.json.access_token as string },
        {
          authorization: basic(inspector.id, inspector.secret),
        },
      );
      expect(introspected.json).toMatchObject({ active: true, sub: MAIN, aud: DEPLOY });
    });

    it('each refusal: replay, pull_request, another repository or owner, another audience, expired, foreign key, alg none, HS256, unknown issuer', async () => {
      const now = server.clock.now();
      const used = await ci.token(now);
      expect((await exchange(used)).status).toBe(200);
      const { privateKey: foreignKey } = await generateKeyPair('RS256');
      const hmacKey = new TextEncoder().encode(JSON.stringify(ci.publicJwk));
      const header = Buffer.from(JSON.stringify({ alg: 'HS256', kid: 'gh-1', typ: 'JWT' })).toString('base64url');
      const claimsOf = (t: string) => t.split('.')[1]!;
      const plain = await ci.token(now);
      const hs = await new SignJWT(decodeJwt(plain)).setProtectedHeader({ alg: 'HS256', kid: 'gh-1' }).sign(hmacKey);
      const cases: [string, string][] = [
        ['replay', used],
        ['pull_request', await ci.token(now, { sub: 'repo:acme/deploy:pull_request', event_name: 'pull_request' })],
        ['another repository', await ci.token(now, { sub: 'repo:other/deploy:ref:refs/heads/main', repository: 'other/deploy' })],
        ['another owner', await ci.token(now, { repository_owner: 'evil' })],
        ['another audience', await ci.token(now, { aud: 'https://someone-else.example' })],
        ['expired', await ci.token(now - 3_600_000)],
        ['foreign key under the right kid', await ci.token(now, {}, foreignKey)],
        ['alg none', forged({ alg: 'none', kid: 'gh-1' }, decodeJwt(await ci.token(now)))],
        ['HS256 keyed with the public JWK', hs],
        ['HS256, hand-made', `${header}.${claimsOf(plain)}.${Buffer.alloc(32).toString('base64url')}`],
        ['not a JWT', 'not-a-jwt'],
      ];
      for (const [name, token] of cases) {
        const res = await exchange(token);
        expect([res.status, res.json.error], name).toEqual([400, 'invalid_request']);
      }
      // An issuer no policy names: refused without a single request to it.
      const stranger = await ciIssuer({ audience: AUDIENCE });
      try {
        const res = await exchange(await stranger.token(now));
        expect(res.json.error).toBe('invalid_request');
        expect(stranger.requests()).toBe(0);
      } finally {
        await stranger.close();
      }
    });

    it('scope within the policy, one API, well-formed requests; an application not allowed the grant is refused', async () => {
      const now = server.clock.now();
      expect((await exchange(await ci.token(now), { scope: 'deploy:read' })).json.error).toBe('invalid_scope');
      expect((await exchange(await ci.token(now), { resource: 'https://unknown.example' })).json.error).toBe('invalid_target');
      expect((await exchange(await ci.token(now), { audience: DEPLOY })).json.error).toBe('invalid_target');
      const named = await exchange(await ci.token(now), { scope: 'deploy:write', resource: DEPLOY });
      expect(named.status).toBe(200);
      for (const [fields, error] of [
        [{ subject_token_type: 'urn:ietf:params:oauth:token-type:saml2' }, 'invalid_request'],
        [{ requested_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' }, 'invalid_request'],
        [{ actor_token: 'x', actor_token_type: JWT_TYPE }, 'invalid_request'],
      ] as const) {
        expect((await exchange(await ci.token(now), fields)).json.error, JSON.stringify(fields)).toBe(error);
      }
      const missing = await tokenRequest(server, { grant_type: TE, client_id: clientId, subject_token_type: JWT_TYPE });
      expect(missing.json.error).toBe('invalid_request');
      const other = await seedApp(server, { scopes: ['openid'] });
      const refused = await tokenRequest(server, {
        grant_type: TE,
        client_id: other.app.clientId,
        subject_token: await ci.token(now),
        subject_token_type: JWT_TYPE,
      });
      expect(refused.json.error).toBe('unauthorized_client');
    });

    it('ten parallel exchanges of one CI token: one access token, nine invalid_request (RFC 8693 §2.2.2)', async () => {
      const token = await ci.token(server.clock.now());
      const answers = await Promise.all(Array.from({ length: 10 }, () => exchange(token)));
      expect(tally(answers)).toEqual({ 200: 1, 400: 9 });
      for (const a of answers.filter((x) => x.status === 400)) expect(a.json.error).toBe('invalid_request');
    });
  });
}

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oauth from 'oauth4webapi';
import { addApp, addUsers } from '@authcli/test-support/seed';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';
import { approveInBrowser, Browser } from '@authcli/test-support/http';

const PASSWORD = 'e2e password 1';
const REDIRECT = 'http://127.0.0.1:9/cb';
const insecure = { [oauth.allowInsecureRequests]: true };

/** RFC 7662 introspection with a third-party client (oauth4webapi) as the oracle, against a started server process. */
describe('token introspection with oauth4webapi against a started authcli-server process', () => {
  let server: ServerProcess;
  let as: oauth.AuthorizationServer;
  let rp: { client_id: string; client_secret: string };
  let otherRp: { client_id: string; client_secret: string };
  let pub: { client_id: string };

  /** An application seeded in-process. */
  async function seedApp(name: string, kind: 'confidential' | 'public') {
    return (await addApp(server.env, {
      name,
      kind,
      callbackUrls: [REDIRECT],
      scopes: ['openid', 'profile', 'offline_access'],
    })) as { client_id: string; client_secret: string };
  }

  /** An application added by `apps add --json` with `extra` flags, for a test about one of them. */
  async function addAppByCommand(name: string, kind: 'confidential' | 'public', ...extra: string[]) {
    const res = await serverCommand(
      [
        'apps',
        'add',
        '--name',
        name,
        '--kind',
        kind,
        '--callback',
        REDIRECT,
        '--scope',
        'openid profile offline_access',
        '--json',
        ...extra,
      ],
      server.env,
    );
    expect(res.code, res.stderr).toBe(0);
    return JSON.parse(res.stdout) as { client_id: string; client_secret: string };
  }

  beforeAll(async () => {
    server = await startServerProcess();
    await addUsers(server.env, [{ username: 'alice', password: PASSWORD }]);
    rp = await seedApp('Introspecting RP', 'confidential');
    otherRp = await seedApp('Other RP', 'confidential');
    pub = await seedApp('Public RP', 'public');
    const issuer = new URL(server.issuer);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
  });
  afterAll(async () => server?.stop());

  /** The code flow by oauth4webapi: tokens of `client`, with a refresh token. */
  async function login(client: { client_id: string; client_secret: string }) {
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      scope: 'openid profile offline_access',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    const callback = new URL(await approveInBrowser(new Browser(server.issuer), url.href, 'alice', PASSWORD));
    const c: oauth.Client = { client_id: client.client_id };
    const params = oauth.validateAuthResponse(as, c, callback, state);
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      c,
      oauth.ClientSecretBasic(client.client_secret),
      params,
      REDIRECT,
      verifier,
      insecure,
    );
    return oauth.processAuthorizationCodeResponse(as, c, response);
  }

  function introspect(client: { client_id: string; client_secret: string }, token: string, hint?: string) {
    const c: oauth.Client = { client_id: client.client_id };
    return oauth
      .introspectionRequest(as, c, oauth.ClientSecretBasic(client.client_secret), token, {
        ...insecure,
        ...(hint && { additionalParameters: { token_type_hint: hint } }),
      })
      .then((res) => oauth.processIntrospectionResponse(as, c, res));
  }

  it("rfc7662 §2.1 a resource server an operator allowed every token (apps add --introspection all) sees another app's tokens", async () => {
    const gateway = await addAppByCommand('API gateway', 'confidential', '--introspection', 'all');
    const tokens = await login(rp);
    for (const token of [tokens.access_token, tokens.refresh_token!]) {
      expect(await introspect(gateway, token)).toMatchObject({ active: true, client_id: rp.client_id, username: 'alice' });
      // The application itself keeps its own view only.
      expect((await introspect(otherRp, token)).active).toBe(false);
    }
  });

  it('rfc8414 discovery gives oauth4webapi the introspection endpoint', () => {
    expect(as.introspection_endpoint).toBe(`${server.issuer}/oauth/introspect`);
  });

  it('rfc7662 §2.2 oauth4webapi reads an active access token and an active refresh token', async () => {
    const tokens = await login(rp);
    const access = await introspect(rp, tokens.access_token, 'access_token');
    expect(access.active).toBe(true);
    expect(access.client_id).toBe(rp.client_id);
    expect(access.username).toBe('alice');
    expect(access.token_type).toBe('Bearer');
    expect(access.iss).toBe(server.issuer);
    expect(access.scope).toBe('openid profile offline_access');
    expect(typeof access.exp).toBe('number');
    const refresh = await introspect(rp, tokens.refresh_token!, 'refresh_token');
    expect(refresh.active).toBe(true);
    expect(refresh.sub).toBe(access.sub);
  });

  it('rfc7662 §2.2 another client is told only {"active":false}, as for a token that does not exist', async () => {
    const tokens = await login(rp);
    for (const token of [tokens.access_token, tokens.refresh_token!]) expect(await introspect(otherRp, token)).toEqual({ active: false });
    expect(await introspect(otherRp, 'no-such-token')).toEqual({ active: false });
  });

  it('rfc7662 §2.2 a revoked refresh token is inactive for its own client', async () => {
    const tokens = await login(rp);
    const c: oauth.Client = { client_id: rp.client_id };
    const revoked = await oauth.revocationRequest(as, c, oauth.ClientSecretBasic(rp.client_secret), tokens.refresh_token!, insecure);
    await oauth.processRevocationResponse(revoked);
    expect(await introspect(rp, tokens.refresh_token!)).toEqual({ active: false });
    expect(await introspect(rp, tokens.access_token)).toEqual({ active: false });
  });

  it('rfc7662 §2.3 a public client, or a wrong secret, is invalid_client', async () => {
    const tokens = await login(rp);
    const c: oauth.Client = { client_id: pub.client_id };
    const res = await oauth.introspectionRequest(as, c, oauth.None(), tokens.access_token, insecure);
    // The 401 carries a WWW-Authenticate challenge (RFC 6749 §5.2), which oauth4webapi reports as such.
    const challenge = {
      status: 401,
      cause: [expect.objectContaining({ scheme: 'basic', parameters: expect.objectContaining({ error: 'invalid_client' }) })],
    };
    await expect(oauth.processIntrospectionResponse(as, c, res)).rejects.toMatchObject(challenge);
    await expect(introspect({ client_id: rp.client_id, client_secret: 'wrong' }, tokens.access_token)).rejects.toMatchObject(challenge);
  });
});

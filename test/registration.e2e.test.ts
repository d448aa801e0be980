import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oauth from 'oauth4webapi';
import { addUsers } from '@authcli/test-support/seed';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';
import { approveInBrowser, Browser, hidden, signInFields } from '@authcli/test-support/http';

const PASSWORD = 'e2e password 1';
const REDIRECT = 'http://127.0.0.1:9/cb';
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const insecure = { [oauth.allowInsecureRequests]: true };

interface CreatedToken {
  id: string;
  token: string;
  expires_at: string;
}

interface ListedToken {
  id: string;
  state: string;
  client_id: string;
}

/**
 * Dynamic client registration (RFC 7591) against a started authcli-server
 * process with AUTHCLI_REGISTRATION=token: the operator's initial access
 * tokens, and oauth4webapi as a third-party client that registers itself and
 * then signs in with the client it registered.
 */
describe('dynamic client registration against a started authcli-server process (AUTHCLI_REGISTRATION=token)', () => {
  let server: ServerProcess;
  let as: oauth.AuthorizationServer;

  const run = (args: string[]) => serverCommand(args, server.env);

  async function createToken(extra: string[] = []): Promise<CreatedToken> {
    const res = await run(['registration', 'token', 'create', '--json', ...extra]);
    expect(res.code, res.stderr).toBe(0);
    return JSON.parse(res.stdout) as CreatedToken;
  }

  async function listTokens(): Promise<ListedToken[]> {
    const res = await run(['registration', 'token', 'list', '--json']);
    expect(res.code, res.stderr).toBe(0);
    return JSON.parse(res.stdout) as ListedToken[];
  }

  beforeAll(async () => {
    server = await startServerProcess({ env: { AUTHCLI_REGISTRATION: 'token', AUTHCLI_DEVICE_POLL_INTERVAL: '1' } });
    await addUsers(server.env, [{ username: 'alice', password: PASSWORD }]);
    const issuer = new URL(server.issuer);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...insecure }));
  });
  afterAll(async () => server?.stop());

  it('operator: registration token create, list and revoke, on a running server', async () => {
    const text = await run(['registration', 'token', 'create', '--expires-in', '3600']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^id: {6}[0-9a-f]{16}\ntoken: {3}[A-Za-z0-9_-]{43}\nexpires: (\S+)\n\(shown once/);
    const expires = Date.parse(/expires: (\S+)/.exec(text.stdout)![1]!);
    expect(Math.abs(expires - (Date.now() + 3_600_000))).toBeLessThan(60_000);
    for (const bad of ['0', 'abc', '99999999']) {
      const refused = await run(['registration', 'token', 'create', '--expires-in', bad]);
      expect(refused.code, bad).toBe(1);
      expect(refused.stderr, bad).toMatch(/^authcli-server: --expires-in must be a whole number of seconds/);
    }

    const used = await createToken();
    const revoked = await createToken();
    const registered = await fetch(`${server.issuer}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${used.token}` },
      body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'Registered by curl' }),
    });
    expect(registered.status).toBe(201);
    const { client_id } = (await registered.json()) as { client_id: string };

    const revoke = await run(['registration', 'token', 'revoke', revoked.id]);
    expect(revoke.code, revoke.stderr).toBe(0);
    expect(revoke.stdout).toBe(`revoked ${revoked.id}\n`);
    const unknown = await run(['registration', 'token', 'revoke', 'ffffffffffffffff']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no initial access token ffffffffffffffff/);

    const list = await run(['registration', 'token', 'list']);
    expect(list.code, list.stderr).toBe(0);
    const [header, ...rows] = list.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^ID\s+STATE\s+CREATED\s+EXPIRES\s+CLIENT ID$/);
    expect(rows.some((r) => r.startsWith(used.id) && /\sused\s/.test(r) && r.endsWith(client_id))).toBe(true);
    expect(rows.some((r) => r.startsWith(revoked.id) && /\srevoked\s/.test(r))).toBe(true);
    const json = await listTokens();
    expect(json.find((t) => t.id === used.id)).toMatchObject({ state: 'used', client_id });
    expect(json.find((t) => t.id === revoked.id)).toMatchObject({ state: 'revoked', client_id: '' });

    // The revoked token registers nothing; neither does the used one again.
    for (const token of [revoked.token, used.token]) {
      const res = await fetch(`${server.issuer}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ redirect_uris: [REDIRECT] }),
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="authcli", error="invalid_token"/);
    }
    // The client it registered shows in `apps list` as registered by the client, with no owner.
    const apps = JSON.parse((await run(['apps', 'list', '--json'])).stdout) as { client_id: string; registered_by: string }[];
    expect(apps.find((a) => a.client_id === client_id)?.registered_by).toBe('client');
    expect(apps.find((a) => a.client_id === 'authcli')?.registered_by).toBe('operator');
  });

  it('rfc7591 §3 oauth4webapi registers a confidential client with an initial access token, then runs the code flow with PKCE and a refresh', async () => {
    expect(as.registration_endpoint).toBe(`${server.issuer}/oauth/register`);
    const { token } = await createToken();
    const registration = await oauth.dynamicClientRegistrationRequest(
      as,
      {
        redirect_uris: [REDIRECT],
        client_name: 'oauth4webapi RP',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        scope: 'openid profile offline_access',
        id_token_signed_response_alg: 'ES256',
      },
      { initialAccessToken: token, ...insecure },
    );
    const client = await oauth.processDynamicClientRegistrationResponse(registration);
    expect(client).toMatchObject({
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: 'ES256',
      client_secret_expires_at: 0,
    });
    const secret = client.client_secret as string;
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const nonce = oauth.generateRandomNonce();
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      scope: 'openid profile offline_access',
      state,
      nonce,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    const callback = new URL(await approveInBrowser(new Browser(server.issuer), url.href, 'alice', PASSWORD));
    const params = oauth.validateAuthResponse(as, client, callback, state);
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.ClientSecretBasic(secret),
      params,
      REDIRECT,
      verifier,
      insecure,
    );
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, response, { expectedNonce: nonce, requireIdToken: true });
    expect(oauth.getValidatedIdTokenClaims(tokens)).toMatchObject({ aud: client.client_id, iss: server.issuer });
    expect(tokens.refresh_token).toBeTruthy();
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.ClientSecretBasic(secret), tokens.refresh_token!, insecure),
    );
    expect(refreshed.access_token).toBeTruthy();
  });

  it('rfc8252 / rfc8628 a native public client registered like oidc-agent runs the device flow with HTTP Basic and an empty secret', async () => {
    const { token } = await createToken();
    const client = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(
        as,
        {
          application_type: 'native',
          token_endpoint_auth_method: 'none',
          redirect_uris: ['http://127.0.0.1/redirect'],
          grant_types: [DEVICE_GRANT, 'refresh_token', 'authorization_code'],
          scope: 'openid profile offline_access',
          client_name: 'oidc-agent:e2e',
        },
        { initialAccessToken: token, ...insecure },
      ),
    );
    expect(client).not.toHaveProperty('client_secret');
    // oidc-agent always sends `Authorization: Basic base64(client_id:)`, a public client's id with an empty secret.
    const basicEmptySecret: oauth.ClientAuth = (_as, c, _body, headers) => {
      headers.set('authorization', `Basic ${Buffer.from(`${encodeURIComponent(c.client_id)}:`).toString('base64')}`);
    };
    const device = await oauth.processDeviceAuthorizationResponse(
      as,
      client,
      await oauth.deviceAuthorizationRequest(as, client, basicEmptySecret, { scope: 'openid profile offline_access' }, insecure),
    );

    const browser = new Browser(server.issuer);
    const signin = await browser.get('/signin');
    expect((await browser.postForm('/signin', signInFields(signin.text, 'alice', PASSWORD))).status).toBe(303);
    const entry = await browser.get('/device');
    const confirm = await browser.postForm('/device', { _csrf: hidden(entry.text, '_csrf'), user_code: device.user_code });
    expect(confirm.status).toBe(200);
    const decided = await browser.postForm('/device/decision', {
      _csrf: hidden(confirm.text, '_csrf'),
      user_code: hidden(confirm.text, 'user_code'),
      // The box a person ticks: their device shows this code.
      code_confirmed: hidden(confirm.text, 'code_confirmed'),
      decision: 'approve',
    });
    expect(decided.status).toBe(200);

    // Approved already, and never polled: the first poll is on time (RFC 8628 §3.5) and gets the tokens.
    const tokens = await oauth.processDeviceCodeResponse(
      as,
      client,
      await oauth.deviceCodeGrantRequest(as, client, basicEmptySecret, device.device_code, insecure),
    );
    expect(tokens.access_token).toBeTruthy();
    expect(tokens.refresh_token).toBeTruthy();
    const revoked = await oauth.revocationRequest(as, client, basicEmptySecret, tokens.refresh_token!, insecure);
    await oauth.processRevocationResponse(revoked);
  });

  it('rfc7591 §3 oauth4webapi without an initial access token, or with a made-up one, is refused with a Bearer challenge', async () => {
    for (const options of [insecure, { initialAccessToken: 'made-up', ...insecure }]) {
      const res = await oauth.dynamicClientRegistrationRequest(as, { redirect_uris: [REDIRECT] }, options);
      await expect(oauth.processDynamicClientRegistrationResponse(res)).rejects.toMatchObject({
        status: 401,
        cause: [expect.objectContaining({ scheme: 'bearer' })],
      });
    }
  });
});

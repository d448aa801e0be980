import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oauth from 'oauth4webapi';
import { addApp, addUsers } from '@authcli/test-support/seed';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';
import { approveInBrowser, Browser } from '@authcli/test-support/http';

const PASSWORD = 'e2e password par';
const REDIRECT = 'http://127.0.0.1:9/cb';
const insecure = { [oauth.allowInsecureRequests]: true };

/** RFC 9126 pushed authorization requests with a third-party client (oauth4webapi) as the oracle, against a started server process. */
describe('pushed authorization requests with oauth4webapi against a started authcli-server process', () => {
  let server: ServerProcess;
  let as: oauth.AuthorizationServer;

  /** An application seeded in-process (what `apps add --json` gives). */
  async function seedApp(name: string, kind: 'confidential' | 'public') {
    return addApp(server.env, { name, kind, callbackUrls: [REDIRECT], scopes: ['openid', 'profile'] });
  }

  beforeAll(async () => {
    server = await startServerProcess();
    await addUsers(
      server.env,
      ['alice', 'bob'].map((username) => ({ username, password: PASSWORD })),
    );
    const issuer = new URL(server.issuer);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...insecure }));
  });
  afterAll(async () => server?.stop());

  /** Push, send the browser with the request_uri, exchange the code: all by oauth4webapi. */
  async function signInWithPar(client: oauth.Client, auth: oauth.ClientAuth, username: string) {
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const nonce = oauth.generateRandomNonce();
    const pushed = await oauth.pushedAuthorizationRequest(
      as,
      client,
      auth,
      {
        response_type: 'code',
        redirect_uri: REDIRECT,
        scope: 'openid profile',
        state,
        nonce,
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      },
      insecure,
    );
    const { request_uri, expires_in } = await oauth.processPushedAuthorizationResponse(as, client, pushed);
    expect(expires_in).toBeGreaterThan(0);
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({ client_id: client.client_id, request_uri }).toString();
    const callback = new URL(await approveInBrowser(new Browser(server.issuer), url.href, username, PASSWORD));
    const params = oauth.validateAuthResponse(as, client, callback, state);
    const response = await oauth.authorizationCodeGrantRequest(as, client, auth, params, REDIRECT, verifier, insecure);
    return { tokens: await oauth.processAuthorizationCodeResponse(as, client, response, { expectedNonce: nonce }), url };
  }

  it('rfc9126 §5 discovery advertises the endpoint; not required of every client by default', () => {
    expect(as.pushed_authorization_request_endpoint).toBe(`${server.issuer}/oauth/par`);
    expect(as.require_pushed_authorization_requests).toBe(false);
  });

  it('rfc9126 §2 a confidential client (client_secret_basic) pushes, signs in by reference and gets tokens', async () => {
    // apps add itself (not a seed): the one test of its --require-par.
    const added = await serverCommand(
      [
        'apps',
        'add',
        '--name',
        'PAR web app',
        '--kind',
        'confidential',
        '--callback',
        REDIRECT,
        '--scope',
        'openid profile',
        '--require-par',
        '--json',
      ],
      server.env,
    );
    expect(added.code, added.stderr).toBe(0);
    const app = JSON.parse(added.stdout) as { client_id: string; client_secret: string };
    const client: oauth.Client = { client_id: app.client_id };
    const { tokens, url } = await signInWithPar(client, oauth.ClientSecretBasic(app.client_secret!), 'alice');
    expect(tokens.token_type).toBe('bearer');
    expect(oauth.getValidatedIdTokenClaims(tokens)!.sub).toBeTruthy();
    // The request_uri is used up.
    const again = await new Browser(server.issuer).get(url.href);
    expect(again.status).toBe(400);
    expect(again.text).toContain('invalid_request_uri');
  });

  it('rfc9126 §2 a public client pushes with its client_id alone', async () => {
    const app = await seedApp('PAR native app', 'public');
    const { tokens } = await signInWithPar({ client_id: app.client_id }, oauth.None(), 'bob');
    expect(tokens.access_token).toBeTruthy();
  });

  it('rfc9126 §2.3 oauth4webapi reads a refused push as an OAuth error', async () => {
    const app = await seedApp('PAR refused', 'confidential');
    const client: oauth.Client = { client_id: app.client_id };
    const pushed = await oauth.pushedAuthorizationRequest(
      as,
      client,
      oauth.ClientSecretBasic(app.client_secret!),
      { response_type: 'code', redirect_uri: 'https://evil.example/cb', scope: 'openid' },
      insecure,
    );
    const error = await oauth.processPushedAuthorizationResponse(as, client, pushed).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(oauth.ResponseBodyError);
    expect((error as oauth.ResponseBodyError).error).toBe('invalid_request');
    expect((error as oauth.ResponseBodyError).status).toBe(400);
  });
});

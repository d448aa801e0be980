import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as client from 'openid-client';
import { authorizationRequest } from './openid-rp.js';
import { addUsers } from '@authcli/test-support/seed';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';
import { approveInBrowser, Browser } from '@authcli/test-support/http';

const PASSWORD = 'e2e password 1';
const REDIRECT = 'http://127.0.0.1:9/cb';
const LOGGED_OUT = 'http://127.0.0.1:9/logged-out';

/** OpenID Connect RP-Initiated Logout 1.0 with openid-client's buildEndSessionUrl as the oracle, against a started server. */
describe('RP-initiated logout with openid-client against a started authcli-server process', () => {
  let server: ServerProcess;
  let config: client.Configuration;

  beforeAll(async () => {
    server = await startServerProcess();
    await addUsers(server.env, [{ username: 'alice', password: PASSWORD }]);
    // apps add itself (not a seed): the one test of its --post-logout-redirect-uri taking a URI.
    const added = await serverCommand(
      [
        'apps',
        'add',
        '--name',
        'Logout RP',
        '--kind',
        'confidential',
        '--callback',
        REDIRECT,
        '--post-logout-redirect-uri',
        LOGGED_OUT,
        '--scope',
        'openid profile',
        '--json',
      ],
      server.env,
    );
    expect(added.code, added.stderr).toBe(0);
    const app = JSON.parse(added.stdout) as { client_id: string; client_secret: string };
    config = await client.discovery(new URL(server.issuer), app.client_id, app.client_secret, client.ClientSecretBasic(app.client_secret), {
      execute: [client.allowInsecureRequests],
    });
  });
  afterAll(async () => server?.stop());

  async function login(b: Browser) {
    const { url, verifier, state } = await authorizationRequest(config, { redirect_uri: REDIRECT, scope: 'openid profile' });
    const callback = await approveInBrowser(b, url.href, 'alice', PASSWORD);
    return client.authorizationCodeGrant(config, new URL(callback), {
      pkceCodeVerifier: verifier,
      expectedState: state,
      idTokenExpected: true,
    });
  }

  it('openid-client builds the end-session URL from discovery; following it ends the session and returns with state', async () => {
    expect(config.serverMetadata().end_session_endpoint).toBe(`${server.issuer}/oauth/logout`);
    const b = new Browser(server.issuer);
    const tokens = await login(b);
    expect((await b.get('/signout')).status).toBe(200);
    const url = client.buildEndSessionUrl(config, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: LOGGED_OUT, state: 'bye' });
    const res = await b.get(url.href);
    expect(res.status).toBe(303);
    expect(res.location).toBe(`${LOGGED_OUT}?state=bye`);
    expect((await b.get('/signout')).status).toBe(303);
  });

  it('openid-client end-session URL with an unregistered post_logout_redirect_uri gets an error page and the session stays', async () => {
    const b = new Browser(server.issuer);
    const tokens = await login(b);
    const url = client.buildEndSessionUrl(config, {
      id_token_hint: tokens.id_token!,
      post_logout_redirect_uri: 'http://127.0.0.1:9/elsewhere',
    });
    const res = await b.get(url.href);
    expect(res.status).toBe(400);
    expect(res.location).toBeNull();
    expect((await b.get('/signout')).status).toBe(200);
  });

  it('apps list --json shows the registered post-logout redirect URIs', async () => {
    const list = await serverCommand(['apps', 'list', '--json'], server.env);
    const apps = JSON.parse(list.stdout) as { name: string; post_logout_redirect_uris: string[] }[];
    expect(apps.find((a) => a.name === 'Logout RP')?.post_logout_redirect_uris).toEqual([LOGGED_OUT]);
    expect(apps.find((a) => a.name !== 'Logout RP')?.post_logout_redirect_uris).toEqual([]);
  });

  it('apps add refuses a post-logout redirect URI that breaks the callback URL rules', async () => {
    const res = await serverCommand(
      [
        'apps',
        'add',
        '--name',
        'Bad',
        '--kind',
        'public',
        '--callback',
        REDIRECT,
        '--post-logout-redirect-uri',
        'http://evil.example/bye',
        '--scope',
        'openid',
      ],
      server.env,
    );
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('post-logout redirect URI');
  });
});

import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { createLocalJWKSet, type JSONWebKeySet, jwtVerify } from 'jose';
import { approveInBrowser } from '@authcli/test-support/http';
import type { LogoutReceiver } from '@authcli/test-support/logout-receiver';
import { registerApplication } from '../src/oauth/registration.js';
import { authorizeUrl, basic, type Browser, hidden, PASSWORD, seedUser, tokenRequest, type TestServer } from './helpers.js';

/** The event member of every logout token (OpenID Connect Back-Channel Logout 1.0 §2.4). */
export const EVENT = 'http://schemas.openid.net/event/backchannel-logout';
export const REDIRECT = 'https://rp.example/callback';
export const NATIVE_REDIRECT = 'http://127.0.0.1/callback';
/** Short waits, so a receiver that fails is given up on within a test. */
export const FAST = {
  timeoutMs: 1500,
  retryDelaysMs: [50, 100],
  retryMaxMs: 100,
  sessionDeadlineMs: 60_000,
  accessDeadlineMs: 60_000,
  concurrency: 4,
  pendingPerClient: 1000,
  pollMs: 1000,
};

export interface Client {
  id: string;
  secret?: string;
  path: string;
}

/**
 * The relying parties of the back-channel logout tests, on a started server and a logout receiver (both made in
 * a beforeAll, so they are asked for when used): applications registered through the store, sign-ins through the
 * code flow, and logout tokens verified as a relying party must.
 */
export function backchannelParties(get: () => { server: TestServer; receiver: LogoutReceiver }) {
  let jwks: ReturnType<typeof createLocalJWKSet> | undefined;
  const keys = async () => {
    jwks ??= createLocalJWKSet((await (await fetch(`${get().server.url}/oauth/jwks`)).json()) as JSONWebKeySet);
    return jwks;
  };
  /** A user of this test alone (each test's sessions and grants are its own). */
  async function newUser(): Promise<string> {
    const username = `u${randomUUID().slice(0, 8)}`;
    await seedUser(get().server, username);
    return username;
  }

  /** A confidential web application; with `backchannel`, it is told of logouts at a receiver path of its own. */
  async function webApp(opts: { backchannel?: boolean; sessionRequired?: boolean; alg?: 'RS256' | 'ES256' } = {}): Promise<Client> {
    const path = `/bcl/${randomUUID()}`;
    const { app, clientSecret } = await registerApplication(
      get().server.store,
      {
        name: 'Web RP',
        kind: 'confidential',
        callbackUrls: [REDIRECT],
        scopes: ['openid', 'profile', 'offline_access'],
        idTokenAlg: opts.alg ?? 'RS256',
        ...(opts.backchannel !== false && { backchannelLogoutUri: `${get().receiver.url}${path}` }),
        backchannelLogoutSessionRequired: opts.sessionRequired ?? false,
      },
      get().server.clock.now(),
    );
    return { id: app.clientId, secret: clientSecret!, path };
  }

  /** A public native application (loopback redirect): it gets a refresh token without offline_access. */
  async function nativeApp(): Promise<Client> {
    const path = `/bcl/${randomUUID()}`;
    const { app } = await registerApplication(
      get().server.store,
      {
        name: 'Native RP',
        kind: 'public',
        callbackUrls: [NATIVE_REDIRECT],
        scopes: ['openid', 'offline_access'],
        backchannelLogoutUri: `${get().receiver.url}${path}`,
      },
      get().server.clock.now(),
    );
    return { id: app.clientId, path };
  }

  /** Signs the browser's user in to `client` through the code flow; the token response. */
  async function signInTo(b: Browser, client: Client, scope = 'openid offline_access') {
    const redirectUri = client.secret ? REDIRECT : NATIVE_REDIRECT;
    const { url, verifier } = await authorizeUrl({ clientId: client.id, redirectUri, scope });
    const callback = new URL(await approveInBrowser(b, get().server.url + url, 'nobody', PASSWORD));
    const res = await tokenRequest(
      get().server,
      {
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code')!,
        redirect_uri: redirectUri,
        code_verifier: verifier,
        ...(!client.secret && { client_id: client.id }),
      },
      client.secret ? { authorization: basic(client.id, client.secret) } : {},
    );
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    return res.json as { id_token: string; refresh_token?: string; access_token: string };
  }

  const refresh = (client: Client, token: string) =>
    tokenRequest(
      get().server,
      { grant_type: 'refresh_token', refresh_token: token, ...(!client.secret && { client_id: client.id }) },
      client.secret ? { authorization: basic(client.id, client.secret) } : {},
    );

  async function signOut(b: Browser) {
    const page = await b.get('/signout');
    expect(page.status).toBe(200);
    const started = performance.now();
    const res = await b.postForm('/signout', { _csrf: hidden(page.text, '_csrf') });
    expect(res.status).toBe(200);
    expect(res.text).toContain('signed out');
    return performance.now() - started;
  }

  /** Verifies a logout token as a relying party must (§2.6) with jose against the server's JWKS; its claims. */
  async function verifyLogoutToken(token: string, client: Client) {
    const { payload, protectedHeader } = await jwtVerify(token, await keys(), {
      issuer: get().server.url,
      audience: client.id,
      typ: 'logout+jwt',
      currentDate: new Date(get().server.clock.now()),
      requiredClaims: ['iat', 'exp', 'jti', 'sub', 'events'],
    });
    expect(protectedHeader.kid).toBeTypeOf('string');
    expect(payload.events).toEqual({ [EVENT]: {} });
    expect(payload).not.toHaveProperty('nonce');
    expect(payload.iat).toBe(Math.floor(get().server.clock.now() / 1000));
    expect(payload.exp! - payload.iat!).toBe(120);
    return payload;
  }

  /** Waits a little for anything late, then the tokens `path` got. */
  async function settled(path: string): Promise<string[]> {
    await new Promise((r) => setTimeout(r, 150));
    return get().receiver.tokens(path);
  }

  return { newUser, webApp, nativeApp, signInTo, refresh, signOut, verifyLogoutToken, settled };
}

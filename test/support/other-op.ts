/// <reference path="./types/oidc-provider.d.ts" />
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import Provider from 'oidc-provider';
import type { Page } from 'playwright-core';
import { freePort } from './http.js';

/** What the provider did, as its events tell it (see startOtherProvider's `events`). */
export type ProviderEvent =
  | { name: 'access_token.saved'; jti: string; jkt: string | undefined; gty: string | undefined }
  | { name: 'grant.success'; grantType: string | undefined }
  | {
      name: 'grant.error' | 'userinfo.error' | 'pushed_authorization_request.error';
      error: string | undefined;
      grantType: string | undefined;
    }
  | { name: 'pushed_authorization_request.success'; clientId: string | undefined; params: Record<string, unknown> };

export interface OtherProviderOptions {
  /**
   * RFC 9449 DPoP (ES256), with a nonce required on every proof (§8, §9), and RFC 9126 pushed
   * authorization requests; with `requirePar` the CLI's client may use the authorization endpoint
   * only through PAR. Off by default: a Bearer-only server without PAR, as most are.
   */
  dpop?: boolean;
  requirePar?: boolean;
  /**
   * The `interval` of its device authorization answers (RFC 8628 §3.2), in seconds. node-oidc-provider sends
   * none, so a device polls every 5 s (the RFC's default); tests that wait for device logins ask for 1.
   */
  deviceInterval?: number;
  /**
   * A confidential web client for a relying party of ours (an authcli-server connector): its id, secret and
   * redirect URI. People sign in with any login; one with an @ is their email (verified), else login@example.com.
   */
  webClient?: { clientId: string; clientSecret: string; redirectUri: string };
  /**
   * OpenID Connect Back-Channel Logout 1.0 for `webClient`: logout tokens naming the session (`sid`, required) go
   * to this URI, which may be on loopback (node-oidc-provider refuses special-use addresses by default: the
   * plain `fetch` here lets its logout tokens reach a test's receiver), and RP-initiated logout ends the session.
   */
  backchannelLogoutUri?: string;
  /**
   * A confidential web client that authenticates with private_key_jwt (RFC 7523 §2.2): its id, its public keys
   * (a JWK Set) and redirect URI; it gets a refresh token with every code.
   */
  keyClient?: { clientId: string; jwks: { keys: object[] }; redirectUri: string };
}

/**
 * Another standard OpenID Connect server, not written here: panva's
 * node-oidc-provider, with its built-in development sign-in pages (any
 * login and password), a public native client for the CLI, PKCE and the
 * device flow enabled; DPoP and PAR as `opts` say.
 */
export async function startOtherProvider(
  opts: OtherProviderOptions = {},
): Promise<{ issuer: string; close: () => Promise<void>; events: ProviderEvent[] }> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const dpop = opts.dpop === true;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'authcli',
        application_type: 'native',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
        response_types: ['code'],
        redirect_uris: ['http://127.0.0.1/callback'],
        ...(opts.requirePar && { require_pushed_authorization_requests: true }),
      },
      ...(opts.webClient
        ? [
            {
              client_id: opts.webClient.clientId,
              client_secret: opts.webClient.clientSecret,
              token_endpoint_auth_method: 'client_secret_basic',
              grant_types: ['authorization_code'],
              response_types: ['code'],
              redirect_uris: [opts.webClient.redirectUri],
              ...(opts.backchannelLogoutUri && {
                backchannel_logout_uri: opts.backchannelLogoutUri,
                backchannel_logout_session_required: true,
              }),
            },
          ]
        : []),
      ...(opts.keyClient
        ? [
            {
              client_id: opts.keyClient.clientId,
              token_endpoint_auth_method: 'private_key_jwt',
              jwks: opts.keyClient.jwks,
              grant_types: ['authorization_code', 'refresh_token'],
              response_types: ['code'],
              redirect_uris: [opts.keyClient.redirectUri],
            },
          ]
        : []),
    ],
    features: {
      devInteractions: { enabled: true },
      deviceFlow: { enabled: true },
      revocation: { enabled: true },
      // Both are on by default in node-oidc-provider 9: the plain server turns them off.
      dPoP: dpop ? { enabled: true, nonceSecret: randomBytes(32), requireNonce: () => true } : { enabled: false },
      pushedAuthorizationRequests: { enabled: dpop },
      backchannelLogout: { enabled: opts.backchannelLogoutUri !== undefined },
    },
    ...(opts.backchannelLogoutUri && {
      fetch: (url: URL | string, init: RequestInit & { dispatcher?: unknown }) => {
        const { dispatcher: _ssrfGuard, ...plain } = init;
        return fetch(url, plain);
      },
    }),
    // A refresh token for every sign-in of a client allowed the grant (not only with offline_access and consent).
    ...((dpop || opts.keyClient) && {
      issueRefreshToken: async (_ctx: unknown, client: { grantTypeAllowed(t: string): boolean }) =>
        client.grantTypeAllowed('refresh_token'),
    }),
    scopes: ['openid', 'profile', 'email', 'offline_access'],
    claims: { openid: ['sub'], profile: ['preferred_username', 'name'], email: ['email', 'email_verified'] },
    findAccount: async (_ctx: unknown, id: string) => ({
      accountId: id,
      claims: async () => ({
        sub: id,
        preferred_username: id.split('@')[0],
        name: `Person ${id.split('@')[0]}`,
        email: id.includes('@') ? id : `${id}@example.com`,
        email_verified: true,
      }),
    }),
  });
  const events: ProviderEvent[] = [];
  type Ctx = { oidc?: { params?: Record<string, unknown> } };
  const grantType = (ctx: Ctx) => ctx.oidc?.params?.grant_type as string | undefined;
  provider.on('access_token.saved', (t: { jti: string; jkt?: string; gty?: string }) =>
    events.push({ name: 'access_token.saved', jti: t.jti, jkt: t.jkt, gty: t.gty }),
  );
  provider.on('grant.success', (ctx: Ctx) => events.push({ name: 'grant.success', grantType: grantType(ctx) }));
  for (const name of ['grant.error', 'userinfo.error', 'pushed_authorization_request.error'] as const) {
    provider.on(name, (ctx: Ctx, err: { error?: string }) => events.push({ name, error: err.error, grantType: grantType(ctx) }));
  }
  provider.on('pushed_authorization_request.success', (ctx: Ctx, client: { clientId?: string }) =>
    events.push({ name: 'pushed_authorization_request.success', clientId: client.clientId, params: { ...ctx.oidc?.params } }),
  );
  if (opts.deviceInterval !== undefined) {
    const interval = opts.deviceInterval;
    provider.use(async (ctx, next) => {
      await next();
      const body = ctx.body as Record<string, unknown> | undefined;
      if (body && typeof body === 'object' && typeof body.device_code === 'string' && typeof body.user_code === 'string') {
        body.interval = interval;
      }
    });
  }
  const server: Server = provider.listen(port, '127.0.0.1') as unknown as Server;
  await new Promise<void>((resolve) => (server.listening ? resolve() : server.once('listening', () => resolve())));
  return { issuer, events, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** Signs in on node-oidc-provider's development pages (any login and password) and answers its consent page. */
export async function approveAtOtherProvider(page: Page, user: string, done: () => boolean = () => false): Promise<void> {
  // Its pages come in its own order (sign-in, consent, device confirmation): answer whichever is shown.
  for (let step = 0; step < 8 && !done(); step++) {
    await page.waitForLoadState();
    if (await page.locator('input[name=login]').count()) {
      await page.locator('input[name=login]').fill(user);
      await page.locator('input[name=password]').fill('any password');
      await page.locator('button[type=submit]').click();
    } else if (await page.getByRole('button', { name: 'Continue' }).count()) {
      await page.getByRole('button', { name: 'Continue' }).first().click();
    } else {
      break;
    }
  }
}

/** Enters the device flow's user code at node-oidc-provider's verification page, then signs in and approves. */
export async function approveDeviceAtOtherProvider(
  page: Page,
  url: string,
  code: string,
  user: string,
  done: () => boolean,
): Promise<void> {
  await page.goto(url);
  await page.locator('input[name=user_code]').fill(code);
  await page.getByRole('button', { name: 'Continue' }).click();
  await approveAtOtherProvider(page, user, done);
}

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BrowserContext, Browser as Chromium, Page } from 'playwright-core';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import { challengeS256, generateNonce, generateState, generateVerifier } from '@authcli/pkce';
import { launchChromium, screenshotPath } from '@authcli/test-support/chromium';
import { addApp, addUsers } from '@authcli/test-support/seed';
import { startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const PASSWORD = 'rp logout conformance password';

/**
 * The OpenID Foundation's RP-Initiated Logout OP plan (`oidcc-rp-initiated-logout-certification-test-plan`),
 * module by module, named as the suite names them, in Chromium against a started server. Each module signs
 * in (code flow, PKCE S256 as this server requires), then sends the browser to the end_session_endpoint as
 * the module does (AbstractOIDCCRpInitiatedLogout): the modules that expect a logout then check the redirect
 * to the registered post_logout_redirect_uri (with `state` and nothing else, CheckForUnexpectedParametersIn
 * PostLogoutRedirect) or the signed-out page, and that `prompt=none` afterwards is `login_required`; the
 * modules that expect an error page (the suite asks for its screenshot; test-output/ keeps them) check that
 * the post_logout_redirect_uri is never called. Where OpenID Connect RP-Initiated Logout 1.0 §2 lets the OP
 * ask the user to confirm (no id_token_hint), the user confirms, as a person at the suite would.
 */
describe('OpenID Connect RP-Initiated Logout OP plan (oidcc-rp-initiated-logout-certification-test-plan) in Chromium', () => {
  let server: ServerProcess;
  let chromium: Chromium;
  let rpServer: Server;
  let origin: string;
  let redirectUri: string;
  let postLogoutRedirectUri: string;
  let rp: { client_id: string; client_secret: string };
  /** The Back-Channel Logout plan's client: a backchannel_logout_uri on the relying party, sid required. */
  let bc: { client_id: string; client_secret: string };
  /** The form bodies POSTed to the relying party's back-channel logout URI. */
  const backchannel: URLSearchParams[] = [];
  let meta: Record<string, unknown>;
  /** Every request the relying party got: its path and query. */
  const received: string[] = [];

  beforeAll(async () => {
    rpServer = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        received.push(req.url ?? '');
        if (req.method === 'POST' && req.url === '/backchannel') backchannel.push(new URLSearchParams(body));
        // §2.8: the RP answers 200 with Cache-Control: no-store.
        res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'no-store' }).end('the client received it');
      });
    });
    await new Promise<void>((r) => rpServer.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(rpServer.address() as AddressInfo).port}`;
    redirectUri = `${origin}/callback`;
    // The plan's static client registers the redirect URI with its last part replaced by /post_logout_redirect.
    postLogoutRedirectUri = `${origin}/post_logout_redirect`;
    [server, chromium] = await Promise.all([startServerProcess(), launchChromium()]);
    rp = (await addApp(server.env, {
      name: 'Logout conformance RP',
      kind: 'confidential',
      callbackUrls: [redirectUri],
      postLogoutRedirectUris: [postLogoutRedirectUri],
      scopes: ['openid', 'profile'],
    })) as { client_id: string; client_secret: string };
    bc = (await addApp(server.env, {
      name: 'Back-channel conformance RP',
      kind: 'confidential',
      callbackUrls: [redirectUri],
      postLogoutRedirectUris: [postLogoutRedirectUri],
      scopes: ['openid', 'profile'],
      backchannelLogoutUri: `${origin}/backchannel`,
      backchannelLogoutSessionRequired: true,
    })) as { client_id: string; client_secret: string };
    await addUsers(server.env, [{ username: 'giles', password: PASSWORD }]);
    meta = (await (await fetch(`${server.issuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
  });
  afterAll(async () => {
    await chromium?.close();
    await server?.stop();
    rpServer?.close();
  });

  /** The relying party's requests since `from` to `path`, as URLs. */
  const at = (path: string, from: number) =>
    received
      .slice(from)
      .map((u) => new URL(u, origin))
      .filter((u) => u.pathname === path);

  /** One authorization in `page`: `prompt` none or a sign-in and consent as asked; the callback URL the client got. */
  async function authorize(
    page: Page,
    extra: Record<string, string> = {},
    client: { client_id: string } = rp,
  ): Promise<{ callback: URL; verifier: string }> {
    const verifier = generateVerifier();
    const state = generateState();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirectUri,
      scope: 'openid',
      state,
      nonce: generateNonce(),
      code_challenge: await challengeS256(verifier),
      code_challenge_method: 'S256',
      ...extra,
    });
    await page.goto(`${meta.authorization_endpoint as string}?${query}`);
    for (let step = 0; step < 4 && new URL(page.url()).origin !== origin; step++) {
      if (await page.getByLabel('Password').count()) {
        await page.getByLabel('Username').fill('giles');
        await page.getByLabel('Password').fill(PASSWORD);
        await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Sign in' }).click()]);
      } else if (await page.getByRole('button', { name: 'Approve' }).count()) {
        await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Approve' }).click()]);
      } else {
        throw new Error(`the authorization stopped at ${page.url()}`);
      }
    }
    const callback = new URL(page.url());
    expect(callback.origin + callback.pathname).toBe(redirectUri);
    expect(callback.searchParams.get('state')).toBe(state);
    return { callback, verifier };
  }

  /** Round 1: a signed-in browser (its own context) and the ID token the client got for it. */
  async function signedIn(client = rp): Promise<{ context: BrowserContext; page: Page; idToken: string }> {
    const context = await chromium.newContext();
    const page = await context.newPage();
    const { callback, verifier } = await authorize(page, {}, client);
    const res = await fetch(meta.token_endpoint as string, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code')!,
        redirect_uri: redirectUri,
        code_verifier: verifier,
      }),
    });
    expect(res.status).toBe(200);
    return { context, page, idToken: ((await res.json()) as { id_token: string }).id_token };
  }

  /** Round 2: the browser sent to the end_session_endpoint with `params`. */
  async function endSession(page: Page, params: Record<string, string>) {
    return page.goto(`${meta.end_session_endpoint as string}?${new URLSearchParams(params)}`);
  }

  /** Round 3: prompt=none must now be login_required at the redirect URI (the user was logged out). */
  async function expectLoggedOut(page: Page) {
    const { callback } = await authorize(page, { prompt: 'none' });
    expect(callback.searchParams.get('error')).toBe('login_required');
    expect(callback.searchParams.get('code')).toBeNull();
  }

  /** The redirect to the post_logout_redirect_uri: `state` when one was sent, and no other parameter. */
  function expectPostLogoutRedirect(from: number, state: string | undefined) {
    const [back, ...more] = at('/post_logout_redirect', from);
    expect(more).toEqual([]);
    expect(back, 'expected the redirect to the post_logout_redirect_uri').toBeDefined();
    expect([...back!.searchParams.keys()]).toEqual(state === undefined ? [] : ['state']);
    if (state !== undefined) expect(back!.searchParams.get('state')).toBe(state);
  }

  /** The modules that expect an error page: one is shown (its screenshot kept), and the client hears nothing. */
  async function expectErrorPage(page: Page, status: number | undefined, from: number, name: string) {
    expect(status).toBe(400);
    expect(new URL(page.url()).origin).toBe(server.issuer);
    await page.getByRole('heading').first().waitFor();
    await page.screenshot({ path: screenshotPath(`conformance-${name}`) });
    expect(at('/post_logout_redirect', from)).toEqual([]);
  }

  /** The confirmation page of §2 (no id_token_hint): the user signs out. */
  async function confirm(page: Page) {
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Sign out' }).click()]);
  }

  it('oidcc-rp-initiated-logout-discovery-endpoint-verification: end_session_endpoint in discovery, on this issuer', () => {
    expect(meta.issuer).toBe(server.issuer);
    expect(meta.end_session_endpoint).toBe(`${server.issuer}/oauth/logout`);
  });

  it('oidcc-rp-initiated-logout: id_token_hint, post_logout_redirect_uri and state: back with the state; prompt=none fails after', async () => {
    const { context, page, idToken } = await signedIn();
    try {
      const from = received.length;
      const state = generateState();
      await endSession(page, { id_token_hint: idToken, post_logout_redirect_uri: postLogoutRedirectUri, state });
      expectPostLogoutRedirect(from, state);
      await expectLoggedOut(page);
    } finally {
      await context.close();
    }
  });

  it('oidcc-rp-initiated-logout-no-state: back without a state', async () => {
    const { context, page, idToken } = await signedIn();
    try {
      const from = received.length;
      await endSession(page, { id_token_hint: idToken, post_logout_redirect_uri: postLogoutRedirectUri });
      expectPostLogoutRedirect(from, undefined);
      await expectLoggedOut(page);
    } finally {
      await context.close();
    }
  });

  it('oidcc-rp-initiated-logout-no-post-logout-redirect-uri: the signed-out page, no redirect; prompt=none fails after', async () => {
    const { context, page, idToken } = await signedIn();
    try {
      const from = received.length;
      const res = await endSession(page, { id_token_hint: idToken, state: generateState() });
      expect(res?.status()).toBe(200);
      await page.getByRole('heading', { name: 'Signed out' }).waitFor();
      await page.screenshot({ path: screenshotPath('conformance-oidcc-rp-initiated-logout-no-post-logout-redirect-uri') });
      expect(at('/post_logout_redirect', from)).toEqual([]);
      await expectLoggedOut(page);
    } finally {
      await context.close();
    }
  });

  it('oidcc-rp-initiated-logout-only-state: state alone: the user confirms, the signed-out page, no redirect', async () => {
    const { context, page } = await signedIn();
    try {
      const from = received.length;
      await endSession(page, { state: generateState() });
      await confirm(page);
      await page.getByRole('heading', { name: 'Signed out' }).waitFor();
      expect(at('/post_logout_redirect', from)).toEqual([]);
      await expectLoggedOut(page);
    } finally {
      await context.close();
    }
  });

  it('oidcc-rp-initiated-logout-no-params: no parameters: the user confirms and is signed out', async () => {
    const { context, page } = await signedIn();
    try {
      await endSession(page, {});
      await page.screenshot({ path: screenshotPath('conformance-oidcc-rp-initiated-logout-no-params') });
      await confirm(page);
      await page.getByRole('heading', { name: 'Signed out' }).waitFor();
      await expectLoggedOut(page);
    } finally {
      await context.close();
    }
  });

  it('oidcc-rp-initiated-logout-no-id-token-hint: client_id and post_logout_redirect_uri without a hint: asked first, then back with the state', async () => {
    const { context, page } = await signedIn();
    try {
      const from = received.length;
      const state = generateState();
      await endSession(page, { client_id: rp.client_id, post_logout_redirect_uri: postLogoutRedirectUri, state });
      // Not yet: a link alone cannot sign anyone out (§2); the page names the application.
      expect(at('/post_logout_redirect', from)).toEqual([]);
      expect(await page.locator('main').innerText()).toContain('Logout conformance RP');
      await confirm(page);
      expectPostLogoutRedirect(from, state);
      await expectLoggedOut(page);
    } finally {
      await context.close();
    }
  });

  for (const [name, params] of [
    [
      'oidcc-rp-initiated-logout-bad-post-logout-redirect-uri',
      (idToken: string) => ({ id_token_hint: idToken, post_logout_redirect_uri: `${origin}/not_registered`, state: generateState() }),
    ],
    [
      'oidcc-rp-initiated-logout-query-added-to-post-logout-redirect-uri',
      (idToken: string) => ({
        id_token_hint: idToken,
        post_logout_redirect_uri: `${postLogoutRedirectUri}?foo=bar`,
        state: generateState(),
      }),
    ],
    [
      // The signature's last characters changed (the suite's InvalidateIdTokenHintSignature).
      'oidcc-rp-initiated-logout-modified-id-token-hint',
      (idToken: string) => ({
        id_token_hint: `${idToken.slice(0, -6)}${idToken.endsWith('AAAAAA') ? 'BBBBBB' : 'AAAAAA'}`,
        post_logout_redirect_uri: postLogoutRedirectUri,
        state: generateState(),
      }),
    ],
    [
      'oidcc-rp-initiated-logout-bad-id-token-hint',
      () => ({ id_token_hint: 'not-a-jwt', post_logout_redirect_uri: postLogoutRedirectUri, state: generateState() }),
    ],
  ] as const) {
    it(`${name}: an error page, never the post_logout_redirect_uri`, async () => {
      const { context, page, idToken } = await signedIn();
      try {
        const from = received.length;
        const res = await endSession(page, params(idToken));
        await expectErrorPage(page, res?.status(), from, name);
      } finally {
        await context.close();
      }
    });
  }

  // ---- oidcc-backchannel-rp-initiated-logout-certification-test-plan -------------------------------------------

  it('oidcc-backchannel-logout-discovery-endpoint-verification: back-channel logout and its sid advertised', () => {
    expect(meta.backchannel_logout_supported).toBe(true);
    expect(meta.backchannel_logout_session_supported).toBe(true);
    expect(meta.end_session_endpoint).toBe(`${server.issuer}/oauth/logout`);
  });

  it("oidcc-backchannel-rp-initiated-logout: a logout token for the ID token's sid and sub POSTed to the client, the browser back, prompt=none fails", async () => {
    const { context, page, idToken } = await signedIn(bc);
    try {
      const signedInAs = decodeJwt(idToken);
      expect(signedInAs.sid, 'the ID token carries the session ID').toEqual(expect.any(String));
      const from = received.length;
      const before = backchannel.length;
      const state = generateState();
      await endSession(page, { id_token_hint: idToken, post_logout_redirect_uri: postLogoutRedirectUri, state });
      expectPostLogoutRedirect(from, state);
      await expect.poll(() => backchannel.length, { timeout: 10_000 }).toBeGreaterThan(before);
      const [posted, ...more] = backchannel.slice(before);
      expect(more).toEqual([]);
      // The logout token (Back-Channel Logout §2.4, checked as the suite's RP does): signed by the issuer's key, typ
      // logout+jwt, for this client, with iat, jti, the event, the ID token's sid and sub, and no nonce.
      const { payload, protectedHeader } = await jwtVerify(
        posted!.get('logout_token')!,
        createRemoteJWKSet(new URL(meta.jwks_uri as string)),
        {
          issuer: server.issuer,
          audience: bc.client_id,
          typ: 'logout+jwt',
        },
      );
      expect(protectedHeader.alg).not.toBe('none');
      expect(payload).toMatchObject({
        sid: signedInAs.sid,
        sub: signedInAs.sub,
        events: { 'http://schemas.openid.net/event/backchannel-logout': {} },
      });
      expect(payload.iat).toEqual(expect.any(Number));
      expect(payload.jti).toEqual(expect.any(String));
      expect(payload).not.toHaveProperty('nonce');
      await expectLoggedOut(page);
    } finally {
      await context.close();
    }
  });
});

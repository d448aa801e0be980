import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser as Chromium, Page, Response } from 'playwright-core';
import { createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet, type JWTPayload, jwtVerify } from 'jose';
import { challengeS256, generateNonce, generateState, generateVerifier } from '@authcli/pkce';
import { launchChromium, screenshotPath } from '@authcli/test-support/chromium';
import { addApp, addUsers } from '@authcli/test-support/seed';
import { withStore } from '@authcli/server';
import { testRows } from '@authcli/server/testing';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';
import { entropyBits, ID_TOKEN_CLAIMS } from '@authcli/test-support/suite-oracle';

/**
 * The OpenID Foundation's Basic OP certification plan
 * (`oidcc-basic-certification-test-plan`: response_type=code,
 * client_secret_basic, a static client, discovery), module by module, against
 * a started server over loopback with Chromium as the user. Each test is
 * named after its module and checks what the module's conditions check
 * (conformance-suite, `net.openid.conformance.openid.OIDCC*` and the
 * `Validate*` / `Check*` / `Ensure*` conditions they call), failures and
 * warnings alike, so a pass here is a pass with no warning there.
 *
 * The one deliberate difference from the plan: every authorization request
 * carries PKCE S256 (this server requires it of every client, RFC 9700
 * §2.1.1), and every code exchange the verifier.
 *
 * Every test opens its own browser context (its own session) and the driver
 * signs in and approves consent whenever the server asks, so no test depends
 * on another's sign-in or consent: the order vitest shuffles them into
 * does not matter.
 */

const PASSWORD = 'conformance password 1';
const ALL_SCOPES = 'openid profile email address phone offline_access';

/** Every OIDC Core §5.1 claim set, so each scope module finds all its claims (VerifyScopesReturnedInUserInfoClaims). */
const CLAIMS = {
  name: 'Buffy Anne Summers',
  given_name: 'Buffy',
  family_name: 'Summers',
  middle_name: 'Anne',
  nickname: 'Buff',
  profile: 'https://sunnydale.example/buffy',
  picture: 'https://sunnydale.example/buffy.png',
  website: 'https://buffy.example',
  gender: 'female',
  birthdate: '1981-01-19',
  zoneinfo: 'America/Los_Angeles',
  locale: 'en-US',
  email: 'buffy@sunnydale.example',
  email_verified: true,
  phone_number: '+15555550123',
  phone_number_verified: true,
  address: {
    formatted: '1630 Revello Drive\nSunnydale, CA 95037\nUSA',
    street_address: '1630 Revello Drive',
    locality: 'Sunnydale',
    region: 'CA',
    postal_code: '95037',
    country: 'USA',
  },
};

/** The suite's scope-to-claims table (AbstractVerifyScopesReturnedInClaims.SCOPE_STANDARD_CLAIMS), not the server's: the oracle. */
const SCOPE_CLAIMS: Record<string, string[]> = {
  openid: ['sub'],
  profile: [
    'name',
    'given_name',
    'family_name',
    'middle_name',
    'nickname',
    'profile',
    'picture',
    'website',
    'gender',
    'birthdate',
    'zoneinfo',
    'locale',
    'updated_at',
    'preferred_username',
  ],
  email: ['email', 'email_verified'],
  address: ['address'],
  phone: ['phone_number', 'phone_number_verified'],
  offline_access: [],
};

/**
 * RFC 6749 §4.1.2.1, §5.2 `error_description`: the suite fails anything outside `%x09-0A / %x0D / %x20-21 /
 * %x23-5B / %x5D-7E` (ValidateErrorDescriptionFrom*ResponseError) and warns on tab, CR or LF
 * (CheckErrorDescriptionFrom*ResponseErrorContainsCRLFTAB), so no warning means RFC 6749's set exactly.
 */
const ERROR_DESCRIPTION = /^[\x20-\x21\x23-\x5B\x5D-\x7E]+$/;
/** The suite's clock skew allowance (ValidateIdToken). */
const SKEW_S = 5 * 60;

interface Client {
  client_id: string;
  client_secret: string;
}

interface Flow {
  /** The authorization request as sent. */
  request: Record<string, string>;
  verifier: string;
  /** The response at the client: the redirect's URL, or for form_post the redirect URI with the posted fields as its query. */
  callback: URL;
  /** How the response reached the client: a redirect (GET) or an auto-submitted form (POST). */
  method: string;
  /** The pages the user saw on the way, in order. */
  seen: ('sign-in' | 'consent')[];
}

interface Tokens {
  access_token: string;
  token_type: string;
  expires_in: number;
  id_token: string;
  refresh_token?: string;
  scope?: string;
}

/** The ID token claims this file reads (OIDC Core §2). */
type IdToken = JWTPayload & { auth_time?: number; nonce?: string; acr?: string; amr?: string[]; azp?: string; at_hash?: string };

interface TokenAnswer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** OIDC Core §3.1.3.6 at_hash for an RS256/ES256 token (AbstractValidateHash). */
const leftHalfSha256 = (value: string) => createHash('sha256').update(value, 'ascii').digest().subarray(0, 16).toString('base64url');

const isText = (v: unknown) => typeof v === 'string' && v.trim() !== '' && v.toLowerCase() !== 'null';
const isBirthdate = (v: unknown) => {
  if (!isText(v)) return false;
  const s = v as string;
  const year = Number(s.slice(0, 4));
  const sane = (y: number) => y >= 1850 && y <= new Date().getUTCFullYear();
  if (/^\d{4}$/.test(s)) return sane(year);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(s)) return false;
  const d = new Date(`${year === 0 ? '2000' : s.slice(0, 4)}${s.slice(4)}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(5, 10) === s.slice(5, 10) && (year === 0 || sane(year));
};
const ADDRESS_CHECKS: Record<string, (v: unknown) => boolean> = Object.fromEntries(
  ['formatted', 'street_address', 'locality', 'region', 'postal_code', 'country'].map((k) => [k, isText]),
);
/** AbstractValidateOpenIdStandardClaims: each standard claim present has its §5.1 type; unknown claims are skipped. */
const CLAIM_CHECKS: Record<string, (v: unknown) => boolean> = {
  ...Object.fromEntries(
    [
      'sub',
      'name',
      'given_name',
      'family_name',
      'middle_name',
      'nickname',
      'preferred_username',
      'profile',
      'picture',
      'website',
      'email',
      'gender',
      'zoneinfo',
      'locale',
      'phone_number',
      'txn',
    ].map((k) => [k, isText]),
  ),
  email_verified: (v) => typeof v === 'boolean',
  phone_number_verified: (v) => typeof v === 'boolean',
  birthdate: isBirthdate,
  updated_at: (v) => typeof v === 'number',
  address: (v) => typeof v === 'object' && v !== null && Object.keys(v).length > 0 && invalidClaims(v, ADDRESS_CHECKS).length === 0,
  _claim_names: (v) => typeof v === 'object' && v !== null,
  _claim_sources: (v) => typeof v === 'object' && v !== null,
};
function invalidClaims(claims: object, checks: Record<string, (v: unknown) => boolean> = CLAIM_CHECKS): string[] {
  return Object.entries(claims)
    .filter(([k, v]) => checks[k] !== undefined && !checks[k]!(v))
    .map(([k]) => k);
}

/** AbstractUpdatedAtValid: seconds, not in the future, not before 1990. */
function expectUpdatedAtValid(claims: Record<string, unknown>): void {
  if (claims.updated_at === undefined) return;
  const now = Date.now() / 1000;
  expect(claims.updated_at as number).toBeLessThanOrEqual(now + SKEW_S);
  expect(claims.updated_at as number).toBeGreaterThanOrEqual(Date.UTC(1990, 0, 1) / 1000);
}

/**
 * The plan, and its Form Post twin (`oidcc-formpost-basic-certification-test-plan`: the same modules with
 * `response_mode=form_post` in every authorization request, each response, error or code, posted to the client
 * by the authorization server's auto-submitting page; OAuth 2.0 Form Post Response Mode).
 */
const PLANS = [
  { mode: 'query', plan: 'oidcc-basic-certification-test-plan' },
  { mode: 'form_post', plan: 'oidcc-formpost-basic-certification-test-plan' },
] as const;

describe.each(PLANS)('OpenID Connect Basic OP plan ($plan), PKCE S256 added, against a started server in Chromium', ({ mode }) => {
  const formPost = mode === 'form_post';
  let server: ServerProcess;
  let chromium: Chromium;
  /** The client's redirect URI, on a loopback listener of the test's that records every request it gets. */
  let callbackServer: Server;
  /** Every request the client's listener got: its URL, with a POSTed form's fields as the query. */
  const received: { method: string; url: string }[] = [];
  let callbackOrigin: string;
  let redirectUri: string;
  let rp: Client;
  /** The plan's second static client (`client2`), used by oidcc-refresh-token. */
  let rp2: Client;
  let meta: Record<string, unknown>;
  let jwks: JSONWebKeySet;
  let keySet: ReturnType<typeof createLocalJWKSet>;

  /** A confidential application seeded in-process, with every scope and the code and refresh grants. */
  const seedApp = async (name: string): Promise<Client> =>
    (await addApp(server.env, {
      name,
      kind: 'confidential',
      callbackUrls: [redirectUri],
      scopes: ALL_SCOPES.split(' '),
      grantTypes: ['authorization_code', 'refresh_token'],
    })) as Client;

  /** Gives a seeded user claims, as an operator does (`users update --claims-json`). */
  const setClaims = async (username: string, claims: object): Promise<void> => {
    const updated = await serverCommand(['users', 'update', username, '--claims-json', '-'], server.env, JSON.stringify(claims));
    expect(updated.code, updated.stderr).toBe(0);
  };

  beforeAll(async () => {
    callbackServer = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        received.push({ method: req.method ?? '', url: req.method === 'POST' ? `${req.url ?? ''}?${body}` : (req.url ?? '') });
        res.writeHead(200, { 'content-type': 'text/plain' }).end('the client received the callback');
      });
    });
    await new Promise<void>((r) => callbackServer.listen(0, '127.0.0.1', r));
    callbackOrigin = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}`;
    redirectUri = `${callbackOrigin}/cb`;
    // Dynamic registration is on for the two modules the plan runs with a dynamically registered client only.
    [server, chromium] = await Promise.all([startServerProcess({ env: { AUTHCLI_REGISTRATION: 'open' } }), launchChromium()]);
    // One after another: each seed opens the store by itself.
    rp = await seedApp('Conformance RP');
    rp2 = await seedApp('Conformance RP 2');
    await addUsers(server.env, [
      { username: 'buffy', password: PASSWORD },
      { username: 'willow', password: PASSWORD },
    ]);
    await setClaims('buffy', CLAIMS);
    meta = (await (await fetch(`${server.issuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    jwks = (await (await fetch(meta.jwks_uri as string)).json()) as JSONWebKeySet;
    keySet = createLocalJWKSet(jwks);
  });
  afterAll(async () => {
    await chromium?.close();
    await server?.stop();
    callbackServer?.close();
  });

  // ---- the suite's client, step by step -------------------------------------------------------------------------

  /** A fresh browser (context), and the requests the client's listener gets meanwhile (tests in a file run one at a time). */
  async function withBrowser<T>(use: (page: Page, callbacks: () => string[]) => Promise<T>): Promise<T> {
    const context = await chromium.newContext();
    const from = received.length;
    const callbacks = () => received.slice(from).map((r) => r.url);
    try {
      return await use(await context.newPage(), callbacks);
    } finally {
      await context.close();
    }
  }

  /** CreateAuthorizationRequestSteps with state, nonce and PKCE S256; `omit` leaves parameters out, `extra` adds some. */
  async function authorizationRequest(
    opts: { client?: Client; scope?: string; extra?: Record<string, string>; omit?: string[]; stateLength?: number } = {},
  ): Promise<{ request: Record<string, string>; verifier: string }> {
    const verifier = generateVerifier();
    const request: Record<string, string> = {
      client_id: (opts.client ?? rp).client_id,
      redirect_uri: redirectUri,
      scope: opts.scope ?? 'openid',
      state: opts.stateLength ? randomBytes(opts.stateLength).toString('base64url').slice(0, opts.stateLength) : generateState(),
      nonce: generateNonce(),
      response_type: 'code',
      code_challenge: await challengeS256(verifier),
      code_challenge_method: 'S256',
      ...(formPost && { response_mode: 'form_post' }),
      ...opts.extra,
    };
    for (const name of opts.omit ?? []) delete request[name];
    return { request, verifier };
  }

  const authorizeUrl = (request: Record<string, string>) => `${meta.authorization_endpoint as string}?${new URLSearchParams(request)}`;

  /** Clicks and waits for the navigation it starts (through any redirects). */
  async function navigateBy(page: Page, action: () => Promise<unknown>): Promise<Response | null> {
    const [response] = await Promise.all([page.waitForNavigation(), action()]);
    return response;
  }

  /**
   * The user in Chromium: opens the authorization request (GET, or POST as a form, OIDC Core §3.1.2.1), signs in
   * as `username` when the sign-in page shows, approves when the consent page shows, until the browser is at the
   * client's redirect URI. Anything else is a page the flow stopped at: returned with its HTTP status.
   * `screenshot` names a screenshot of the sign-in page, as the plan asks of some modules.
   */
  async function userAgent(
    page: Page,
    request: Record<string, string>,
    opts: { username?: string; method?: 'GET' | 'POST'; screenshot?: string } = {},
  ): Promise<{ callback?: URL; method?: string; seen: Flow['seen']; status: number | undefined }> {
    let response =
      opts.method === 'POST'
        ? await navigateBy(page, () =>
            page.evaluate(
              ({ action, fields }) => {
                const form = document.createElement('form');
                form.method = 'post';
                form.action = action;
                for (const [name, value] of Object.entries(fields)) {
                  const input = document.createElement('input');
                  input.type = 'hidden';
                  input.name = name;
                  input.value = value;
                  form.append(input);
                }
                document.body.append(form);
                form.submit();
              },
              { action: meta.authorization_endpoint as string, fields: request },
            ),
          )
        : await page.goto(authorizeUrl(request));
    const seen: Flow['seen'] = [];
    for (let step = 0; step < 4; step++) {
      const at = new URL(page.url());
      if (at.origin === callbackOrigin) {
        // A POSTed response: the fields the listener received for this request's state (the last POST when it has none).
        const posted = [...received]
          .reverse()
          .find(
            (r) =>
              r.method === 'POST' &&
              (request.state === undefined || new URL(r.url, callbackOrigin).searchParams.get('state') === request.state),
          );
        if (!at.search && posted)
          return { callback: new URL(posted.url, callbackOrigin), method: 'POST', seen, status: response?.status() };
        return { callback: at, method: 'GET', seen, status: response?.status() };
      }
      if (at.pathname === '/signin' && (await page.getByLabel('Password').count())) {
        seen.push('sign-in');
        // The plan asks for a screenshot of some sign-in pages (ExpectSecondLoginPage); test-output/ keeps them.
        if (opts.screenshot) await page.screenshot({ path: screenshotPath(opts.screenshot) });
        const username = page.getByLabel('Username');
        if ((await username.inputValue()) !== (opts.username ?? 'buffy')) await username.fill(opts.username ?? 'buffy');
        await page.getByLabel('Password').fill(PASSWORD);
        response = await navigateBy(page, () => page.getByRole('button', { name: 'Sign in' }).click());
      } else if (await page.getByRole('button', { name: 'Approve' }).count()) {
        seen.push('consent');
        response = await navigateBy(page, () => page.getByRole('button', { name: 'Approve' }).click());
      } else {
        return { seen, status: response?.status() };
      }
    }
    throw new Error(`the flow did not end: at ${page.url()}`);
  }

  /** A whole authorization in a fresh browser, ending at the client's redirect URI (AbstractOIDCCServerTest.performAuthorizationFlow). */
  async function authorize(
    opts: Parameters<typeof authorizationRequest>[0] & Parameters<typeof userAgent>[2] = {},
    page?: Page,
  ): Promise<Flow> {
    const { request, verifier } = await authorizationRequest(opts);
    const run = async (p: Page) => {
      const result = await userAgent(p, request, opts);
      if (!result.callback) throw new Error(`the flow stopped at ${p.url()} (${result.status}): ${await p.locator('main').innerText()}`);
      return { request, verifier, callback: result.callback, method: result.method!, seen: result.seen };
    };
    return page ? run(page) : withBrowser(run);
  }

  /**
   * onAuthorizationCallbackResponse for a success: `iss` (RFC 9207, ValidateIssIfPresentInAuthorizationResponse),
   * no error, `state` unchanged, a code of at least 128 bits and 96 bits of estimated entropy
   * (EnsureMinimumAuthorizationCodeLength, EnsureMinimumAuthorizationCodeEntropy).
   */
  function expectCode(flow: Flow): string {
    // The plan's response mode: a redirect, or (Form Post) a POST by the server's page (its CSP allowed the script).
    expect(flow.method).toBe(formPost ? 'POST' : 'GET');
    const params = flow.callback.searchParams;
    expect(flow.callback.origin + flow.callback.pathname).toBe(redirectUri);
    expect(params.get('error'), params.get('error_description') ?? '').toBeNull();
    expect(params.get('iss')).toBe(server.issuer);
    expect(params.get('state')).toBe(flow.request.state);
    const code = params.get('code')!;
    expect(Buffer.byteLength(code) * 8).toBeGreaterThanOrEqual(128);
    expect(entropyBits(code)).toBeGreaterThan(96);
    return code;
  }

  /**
   * performGenericAuthorizationEndpointErrorResponseValidation: an error redirected with the request's `state`,
   * this issuer's `iss`, no code, no parameter beyond those of OIDC Core §3.1.2.6 and RFC 9207, and an
   * `error_description` in RFC 6749's character set. Returns the error.
   */
  function expectAuthorizationError(
    result: { callback?: URL | undefined; method?: string | undefined },
    state: string | undefined,
  ): string {
    const { callback } = result;
    expect(callback, 'expected a redirect to the client').toBeDefined();
    expect(result.method).toBe(formPost ? 'POST' : 'GET');
    const params = callback!.searchParams;
    expect(callback!.origin + callback!.pathname).toBe(redirectUri);
    expect(
      [...params.keys()].filter((k) => !['error', 'error_description', 'error_uri', 'state', 'session_state', 'iss'].includes(k)),
    ).toEqual([]);
    expect(params.get('code')).toBeNull();
    expect(params.get('iss')).toBe(server.issuer);
    expect(params.get('state') ?? undefined).toBe(state);
    const description = params.get('error_description');
    if (description !== null) expect(description).toMatch(ERROR_DESCRIPTION);
    return params.get('error')!;
  }

  /** The token endpoint with client_secret_basic (RFC 6749 §2.3.1: each part form-encoded) or client_secret_post. */
  async function tokenRequest(client: Client, fields: Record<string, string>, auth: 'basic' | 'post' = 'basic'): Promise<TokenAnswer> {
    const basic = Buffer.from(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`).toString('base64');
    const res = await fetch(meta.token_endpoint as string, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(auth === 'basic' && { authorization: `Basic ${basic}` }) },
      body: new URLSearchParams({
        ...fields,
        ...(auth === 'post' && { client_id: client.client_id, client_secret: client.client_secret }),
      }),
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
  }

  /**
   * CreateTokenEndpointRequestForAuthorizationCodeGrant (+ the code_verifier), then requestAuthorizationCode:
   * 200, JSON, `Cache-Control: no-store`, a bearer access token with a sane `expires_in` (ValidateExpiresIn), an
   * ID token.
   */
  async function exchange(flow: Flow, client: Client = rp, auth: 'basic' | 'post' = 'basic'): Promise<Tokens> {
    const answer = await tokenRequest(
      client,
      { grant_type: 'authorization_code', code: expectCode(flow), redirect_uri: redirectUri, code_verifier: flow.verifier },
      auth,
    );
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expectTokenResponse(answer);
    expect(answer.body.id_token).toEqual(expect.any(String));
    return answer.body as unknown as Tokens;
  }

  /** RFC 6749 §5.1 as the suite checks it (CheckTokenEndpointCacheHeaders, CheckTokenTypeIsBearer, ValidateExpiresIn, entropy). */
  function expectTokenResponse(answer: TokenAnswer): void {
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    expect(
      answer.headers
        .get('cache-control')
        ?.split(',')
        .map((s) => s.trim()),
    ).toContain('no-store');
    const body = answer.body as unknown as Tokens;
    expect(body.token_type.toLowerCase()).toBe('bearer');
    expect(body.access_token).toMatch(/^[\x20-\x7E]+$/);
    expect(entropyBits(body.access_token)).toBeGreaterThan(96);
    expect(body.expires_in).toBeGreaterThan(0);
    expect(body.expires_in).toBeLessThanOrEqual(31_536_000);
  }

  /**
   * PerformStandardIdTokenChecks and oidcc-server's own: the signature against the JWKS with a `kid` it holds
   * (ValidateIdTokenSignature), `iss`, `aud`, `exp`, `iat`, `auth_time`, `acr` (ValidateIdToken), `sub`, the
   * nonce sent or none (ValidateIdTokenNonce), §5.1 types (ValidateIdTokenStandardClaims), `updated_at`, a
   * correct `at_hash`, no `c_hash` (code flow), no `name` (EnsureIdTokenDoesNotContainName), and nothing
   * beyond the §2 claims and those of the requested scopes (EnsureIdTokenDoesNotContainNonRequestedClaims).
   */
  async function expectIdToken(tokens: Tokens, flow: Flow, client: Client = rp): Promise<IdToken> {
    const header = decodeProtectedHeader(tokens.id_token);
    expect(header.alg).not.toBe('none');
    expect(meta.id_token_signing_alg_values_supported).toContain(header.alg);
    expect(header.kid).toEqual(expect.any(String));
    expect(jwks.keys.map((k) => k.kid)).toContain(header.kid);
    const { payload } = await jwtVerify(tokens.id_token, keySet, {
      issuer: server.issuer,
      audience: client.client_id,
      clockTolerance: SKEW_S,
    });
    const now = Date.now() / 1000;
    expect(payload.aud === client.client_id || (Array.isArray(payload.aud) && payload.aud.includes(client.client_id))).toBe(true);
    expect(payload.exp).toBeGreaterThan(now - SKEW_S);
    expect(payload.exp).toBeLessThan(now + 50 * 365 * 86_400);
    expect(payload.iat).toBeGreaterThan(now - SKEW_S);
    expect(payload.iat).toBeLessThan(now + SKEW_S);
    if (payload.auth_time !== undefined) {
      expect(payload.auth_time).toBeGreaterThan(now - 365 * 86_400);
      expect(payload.auth_time).toBeLessThan(now + SKEW_S);
    }
    if (payload.acr !== undefined) expect(payload.acr).toMatch(/.+/);
    expect(payload.sub).toMatch(/.+/);
    expect(payload.nonce).toBe(flow.request.nonce);
    expect(invalidClaims(payload)).toEqual([]);
    expectUpdatedAtValid(payload);
    expect(payload.at_hash).toBe(leftHalfSha256(tokens.access_token));
    expect(payload.c_hash).toBeUndefined();
    expect(payload.name).toBeUndefined();
    const allowed = new Set([...ID_TOKEN_CLAIMS, ...flow.request.scope!.split(' ').flatMap((s) => SCOPE_CLAIMS[s] ?? [])]);
    expect(Object.keys(payload).filter((k) => !allowed.has(k))).toEqual([]);
    return payload as IdToken;
  }

  /** CallUserInfoEndpoint (GET with the bearer header, or POST with it, or POST with the token in the body). */
  async function userinfo(accessToken: string, how: 'get' | 'post-header' | 'post-body' = 'get'): Promise<globalThis.Response> {
    const url = meta.userinfo_endpoint as string;
    if (how === 'get') return fetch(url, { headers: { authorization: `Bearer ${accessToken}` } });
    if (how === 'post-header') return fetch(url, { method: 'POST', headers: { authorization: `Bearer ${accessToken}` } });
    return fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ access_token: accessToken }),
    });
  }

  /**
   * AbstractOIDCCUserInfoTest / AbstractOIDCCReturnedClaimsServerTest: 200, JSON, §5.1 types
   * (ValidateUserInfoStandardClaims), `sub` the ID token's, `updated_at` sane, and every claim of every
   * requested scope (VerifyScopesReturnedInUserInfoClaims).
   */
  async function expectUserInfo(res: globalThis.Response, idToken: JWTPayload, scope: string): Promise<Record<string, unknown>> {
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const info = (await res.json()) as Record<string, unknown>;
    expect(invalidClaims(info)).toEqual([]);
    expect(info.sub).toBe(idToken.sub);
    expectUpdatedAtValid(info);
    expect(info._claim_names).toBeUndefined();
    const expected = scope.split(' ').flatMap((s) => SCOPE_CLAIMS[s] ?? []);
    expect(expected.filter((c) => !(c in info))).toEqual([]);
    return info;
  }

  /** The flow of AbstractOIDCCServerTest end to end: authorize, callback checks, code exchange, ID token checks. */
  async function happyFlow(
    opts: Parameters<typeof authorize>[0] = {},
    client: Client = opts.client ?? rp,
    auth: 'basic' | 'post' = 'basic',
  ) {
    const flow = await authorize(opts);
    const tokens = await exchange(flow, client, auth);
    const idToken = await expectIdToken(tokens, flow, client);
    return { flow, tokens, idToken };
  }

  /**
   * A scope module (AbstractOIDCCReturnedClaimsServerTest): the scope is advertised, the flow passes, userinfo has its
   * claims. Returns the userinfo answer and the ID token.
   */
  async function scopeModule(scope: string) {
    for (const s of scope.split(' ')) expect(meta.scopes_supported).toContain(s);
    const { tokens, idToken } = await happyFlow({ scope });
    return { info: await expectUserInfo(await userinfo(tokens.access_token), idToken, scope), idToken };
  }

  /** Waits until the clock has passed `epochSeconds`' second: the next `iat` or `auth_time` differs from it. */
  const untilAfterSecond = async (epochSeconds: number) => sleep(Math.max(0, (epochSeconds + 1) * 1000 - Date.now() + 20));

  /**
   * AbstractOIDCCSameAuthTwiceServerTest: two authorizations in one browser, the second answered without the user
   * (no sign-in, no consent) for the same `sub` with the same `auth_time` (CheckIdTokenSubConsistentForSecondAuthorization,
   * CheckIdTokenAuthTimeClaimsSameIfPresent). Returns both ID tokens.
   */
  async function sameAuthTwice(firstExtra: Record<string, string>, secondExtra: (first: Tokens) => Record<string, string>) {
    return withBrowser(async (page) => {
      const first = await authorize({ extra: firstExtra }, page);
      const firstTokens = await exchange(first);
      const firstToken = await expectIdToken(firstTokens, first);
      const second = await authorize({ extra: secondExtra(firstTokens) }, page);
      expect(second.seen).toEqual([]);
      const secondToken = await expectIdToken(await exchange(second), second);
      expect(secondToken.sub).toBe(firstToken.sub);
      expect(secondToken.auth_time).toBe(firstToken.auth_time);
      return [firstToken, secondToken] as const;
    });
  }

  // ---- the modules, in the plan's order ---------------------------------------------------------------------------

  it('oidcc-server: discovery, JWKS, code flow, token response, ID token, userinfo', async () => {
    // CheckServerConfiguration, and what the plan's discovery variant reads.
    expect(meta.issuer).toBe(server.issuer);
    for (const key of ['authorization_endpoint', 'token_endpoint', 'issuer', 'jwks_uri', 'userinfo_endpoint']) {
      expect(() => new URL(meta[key] as string), key).not.toThrow();
    }
    expect(meta.response_types_supported).toContain('code');
    expect(meta.subject_types_supported).toEqual(expect.arrayContaining(['public']));
    expect(meta.id_token_signing_alg_values_supported).toContain('RS256');
    expect(meta.token_endpoint_auth_methods_supported).toEqual(expect.arrayContaining(['client_secret_basic', 'client_secret_post']));
    expect(meta.scopes_supported).toContain('openid');
    // FetchServerKeys, CheckServerKeysIsValid, ValidateJwksSequence, CheckForKeyIdInServerJWKs, CheckDistinctKeyIdValueInServerJWKs.
    expect(jwks.keys.length).toBeGreaterThan(0);
    const kids = jwks.keys.map((k) => k.kid);
    expect(kids.every((k) => typeof k === 'string' && k.length > 0)).toBe(true);
    expect(new Set(kids).size).toBe(kids.length);
    for (const key of jwks.keys) {
      for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k']) expect(key, `${key.kid} ${secret}`).not.toHaveProperty(secret);
      expect(key.kty === 'RSA' || (key.kty === 'EC' && key.crv === 'P-256'), key.kid).toBe(true);
    }

    const { tokens, idToken } = await happyFlow();
    expect(tokens.expires_in).toEqual(expect.any(Number));
    expect((await userinfo(tokens.access_token)).status).toBe(200);
    expect(idToken.auth_time).toEqual(expect.any(Number));
  });

  it('oidcc-response-type-missing: the error goes back to the client (invalid_request) with state and iss, no code', async () => {
    const { request } = await authorizationRequest({ omit: ['response_type'] });
    await withBrowser(async (page) => {
      const result = await userAgent(page, request);
      expect(result.seen).toEqual([]);
      expect(['invalid_request', 'unsupported_response_type']).toContain(expectAuthorizationError(result, request.state));
    });
  });

  it('oidcc-idtoken-signature: a client registered without id_token_signed_response_alg gets RS256 ID tokens with a kid', async () => {
    // The plan runs this module with a dynamically registered client only (VariantNotApplicable static_client).
    const res = await fetch(meta.registration_endpoint as string, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'oidcc-idtoken-signature', redirect_uris: [redirectUri], scope: 'openid' }),
    });
    expect(res.status).toBe(201);
    const registered = (await res.json()) as Client & { id_token_signed_response_alg: string };
    expect(registered.id_token_signed_response_alg).toBe('RS256');
    const { tokens } = await happyFlow({ client: registered });
    const header = decodeProtectedHeader(tokens.id_token);
    expect(header.alg).toBe('RS256');
    expect(header.kid).toEqual(expect.any(String));
  });

  it('oidcc-idtoken-unsigned: none is not offered (the module is skipped, as certification allows) and cannot be registered', async () => {
    // OIDCCIdTokenUnsigned.skipTestIfSigningAlgorithmNotSupported: skipped when discovery does not list none.
    expect(meta.id_token_signing_alg_values_supported).not.toContain('none');
    const res = await fetch(meta.registration_endpoint as string, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [redirectUri], id_token_signed_response_alg: 'none' }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('invalid_client_metadata');
  });

  it('oidcc-userinfo-get: GET with the bearer header', async () => {
    const { tokens, idToken } = await happyFlow();
    await expectUserInfo(await userinfo(tokens.access_token, 'get'), idToken, 'openid');
  });

  it('oidcc-userinfo-post-header: POST with the bearer header', async () => {
    const { tokens, idToken } = await happyFlow();
    await expectUserInfo(await userinfo(tokens.access_token, 'post-header'), idToken, 'openid');
  });

  it('oidcc-userinfo-post-body: POST with the access token in a form body (RFC 6750 §2.2), no warning', async () => {
    const { tokens, idToken } = await happyFlow();
    await expectUserInfo(await userinfo(tokens.access_token, 'post-body'), idToken, 'openid');
  });

  it('oidcc-ensure-request-without-nonce-succeeds-for-code-flow: a code without nonce, and an ID token without one', async () => {
    const { tokens, idToken, flow } = await happyFlow({ omit: ['nonce'] });
    expect(flow.request.nonce).toBeUndefined();
    expect(idToken.nonce).toBeUndefined();
    expect(tokens.access_token).toBeTruthy();
  });

  it('oidcc-scope-profile: every profile claim at userinfo', async () => {
    const { info } = await scopeModule('openid profile');
    expect(info).toMatchObject({ name: CLAIMS.name, preferred_username: 'buffy', birthdate: CLAIMS.birthdate });
    expect(info.email).toBeUndefined();
  });

  it('oidcc-scope-email: email and email_verified at userinfo, neither email nor name in the ID token (OIDC Core §5.4)', async () => {
    const { info, idToken } = await scopeModule('openid email');
    expect(info).toMatchObject({ email: CLAIMS.email, email_verified: true });
    // EnsureIdTokenDoesNotContainEmailForScopeEmail (a warning): an access token was issued, so the claims are at userinfo.
    expect(idToken.email).toBeUndefined();
    expect(idToken.email_verified).toBeUndefined();
    // EnsureUserInfoDoesNotContainName (a warning): only the scope's claims.
    expect(info.name).toBeUndefined();
  });

  it('oidcc-scope-address: the structured address claim at userinfo', async () => {
    const { info } = await scopeModule('openid address');
    expect(info.address).toEqual(CLAIMS.address);
  });

  it('oidcc-scope-phone: phone_number and phone_number_verified at userinfo', async () => {
    const { info } = await scopeModule('openid phone');
    expect(info).toMatchObject({ phone_number: CLAIMS.phone_number, phone_number_verified: true });
  });

  it('oidcc-scope-all: profile, email, address and phone claims together', async () => {
    const { info } = await scopeModule('openid email phone address profile');
    expect(info).toMatchObject({ ...CLAIMS, preferred_username: 'buffy' });
  });

  it('oidcc-alternate-happy-flow (formerly oidcc-ensure-other-scope-order-succeeds): scope values and parameters in another order', async () => {
    // ReverseScopeOrderInAuthorizationEndpointRequest and BuildPlainRedirectToAuthorizationEndpointReorderedParams:
    // the request object's keys are reversed, so the query's order is too.
    const { request, verifier } = await authorizationRequest({ scope: 'email openid' });
    const reordered = Object.fromEntries(Object.entries(request).reverse());
    expect(Object.keys(reordered)[0]).toBe(formPost ? 'response_mode' : 'code_challenge_method');
    await withBrowser(async (page) => {
      const result = await userAgent(page, reordered);
      const flow: Flow = { request, verifier, callback: result.callback!, method: result.method!, seen: result.seen };
      const tokens = await exchange(flow);
      const idToken = await expectIdToken(tokens, flow);
      expect(idToken.email).toBeUndefined();
      const info = await expectUserInfo(await userinfo(tokens.access_token), idToken, 'email openid');
      expect(info.name).toBeUndefined();
    });
  });

  it('oidcc-display-page: display=page is accepted', async () => {
    const { flow } = await happyFlow({ extra: { display: 'page' } });
    expect(flow.seen[0]).toBe('sign-in');
  });

  it('oidcc-display-popup: display=popup is accepted', async () => {
    const { flow } = await happyFlow({ extra: { display: 'popup' } });
    expect(flow.seen[0]).toBe('sign-in');
  });

  it('oidcc-prompt-login: a second authorization with prompt=login asks for the password again; auth_time is later', async () => {
    await withBrowser(async (page) => {
      const first = await authorize({}, page);
      const firstToken = await expectIdToken(await exchange(first), first);
      await untilAfterSecond(firstToken.auth_time!);
      const second = await authorize({ extra: { prompt: 'login' }, screenshot: 'conformance-prompt-login' }, page);
      // ExpectSecondLoginPage: the user is asked to sign in although the session is live.
      expect(second.seen[0]).toBe('sign-in');
      const secondToken = await expectIdToken(await exchange(second), second);
      // CheckSecondIdTokenAuthTimeIsLaterIfPresent
      expect(secondToken.auth_time).toBeGreaterThan(firstToken.auth_time!);
      expect(secondToken.sub).toBe(firstToken.sub);
    });
  });

  it('oidcc-prompt-none-not-logged-in: login_required at the redirect URI with the 128-character state and iss', async () => {
    const { request } = await authorizationRequest({ extra: { prompt: 'none' }, stateLength: 128 });
    expect(request.state).toHaveLength(128);
    await withBrowser(async (page) => {
      const result = await userAgent(page, request);
      expect(result.seen).toEqual([]);
      const error = expectAuthorizationError(result, request.state);
      // CheckErrorFromAuthorizationEndpointIsOneThatRequiredAUserInterface
      expect(['interaction_required', 'login_required', 'account_selection_required', 'consent_required']).toContain(error);
      expect(error).toBe('login_required');
    });
  });

  it('oidcc-prompt-none-logged-in: prompt=none with a session answers at once, same sub and auth_time', async () => {
    await sameAuthTwice({}, () => ({ prompt: 'none' }));
  });

  it('oidcc-max-age-1: after more than a second, max_age=1 asks for the password again; auth_time present, later and recent', async () => {
    await withBrowser(async (page) => {
      const first = await authorize({}, page);
      const firstToken = await expectIdToken(await exchange(first), first);
      // The module waits 2 s; more than max_age (1 s) since the sign-in is what makes it stale. The browser session's
      // sign-in is moved 2 s back in the server's store instead of waited for.
      const [cookie] = (await page.context().cookies(server.issuer)).filter((c) => c.name === 'authcli_session');
      const idHash = createHash('sha256').update(cookie!.value).digest('hex');
      const aged = await withStore(server.env.DATABASE_URL!, async (store) => {
        const rows = testRows(store);
        const [session] = await rows.select('sessions', { id_hash: idHash });
        return rows.update('sessions', { id_hash: idHash }, { auth_time: Number(session!.auth_time) - 2_000 });
      });
      expect(aged).toBe(1);
      // The new sign-in's auth_time is a later second than the first one's (under a second of waiting).
      await untilAfterSecond(firstToken.auth_time!);
      const second = await authorize({ extra: { max_age: '1' }, screenshot: 'conformance-max-age-1' }, page);
      expect(second.seen[0]).toBe('sign-in');
      const secondToken = await expectIdToken(await exchange(second), second);
      // CheckIdTokenAuthTimeClaimPresentDueToMaxAge, CheckSecondIdTokenAuthTimeIsLaterIfPresent, CheckIdTokenAuthTimeIsRecentIfPresent
      expect(secondToken.auth_time).toEqual(expect.any(Number));
      expect(secondToken.auth_time).toBeGreaterThan(firstToken.auth_time!);
      expect(secondToken.auth_time).toBeGreaterThanOrEqual(Date.now() / 1000 - SKEW_S - 1);
    });
  });

  it('oidcc-max-age-10000: max_age=15000 then max_age=10000 with the session: no sign-in, the same auth_time', async () => {
    // CheckIdTokenAuthTimeClaimPresentDueToMaxAge, both times.
    const [first, second] = await sameAuthTwice({ max_age: '15000' }, () => ({ max_age: '10000' }));
    expect(first.auth_time).toEqual(expect.any(Number));
    expect(second.auth_time).toEqual(expect.any(Number));
  });

  it('oidcc-ensure-request-with-unknown-parameter-succeeds: extra=foobar is ignored (RFC 6749 §3.1)', async () => {
    await happyFlow({ extra: { extra: 'foobar' } });
  });

  it('oidcc-id-token-hint: prompt=none with the first ID token as id_token_hint answers at once for the same user', async () => {
    await sameAuthTwice({}, (first) => ({ prompt: 'none', id_token_hint: first.id_token }));
  });

  it('oidcc-login-hint: the sign-in page fills in the hinted username (OIDC Core §3.1.2.1); odd hints are never an error', async () => {
    await withBrowser(async (page) => {
      const { request, verifier } = await authorizationRequest({ extra: { login_hint: 'willow' } });
      await page.goto(authorizeUrl(request));
      expect(await page.getByLabel('Username').inputValue()).toBe('willow');
      // The password is what is left to type, so it has the focus (autofocus is applied at the page's next
      // rendering, which on a busy machine can come after the load event page.goto waits for).
      await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('password');
      const result = await userAgent(page, request, { username: 'willow' });
      const flow: Flow = { request, verifier, callback: result.callback!, method: result.method!, seen: result.seen };
      await expectIdToken(await exchange(flow), flow);
    });
    // The suite's default hint (buffy@<issuer host>), markup, a control character, an over-long value: filled in
    // as text when it could be a username, else left out, never an error.
    const hints: [string, string][] = [
      [`buffy@${new URL(server.issuer).hostname}`, `buffy@${new URL(server.issuer).hostname}`],
      ['"><script>document.title="owned"</script>', '"><script>document.title="owned"</script>'],
      ['wil\nlow', ''],
      ['w'.repeat(129), ''],
    ];
    await withBrowser(async (page) => {
      for (const [hint, shown] of hints) {
        const { request } = await authorizationRequest({ extra: { login_hint: hint } });
        const response = await page.goto(authorizeUrl(request));
        expect(response?.status()).toBe(200);
        expect(new URL(page.url()).pathname).toBe('/signin');
        expect(await page.getByLabel('Username').inputValue()).toBe(shown);
        expect(await page.title()).not.toBe('owned');
      }
    });
  });

  it('oidcc-ui-locales: ui_locales=se is accepted', async () => {
    await happyFlow({ extra: { ui_locales: 'se' } });
  });

  it('oidcc-claims-locales: claims_locales=se is accepted', async () => {
    const { tokens, idToken } = await happyFlow({ scope: 'openid profile', extra: { claims_locales: 'se' } });
    await expectUserInfo(await userinfo(tokens.access_token), idToken, 'openid profile');
  });

  it('oidcc-ensure-request-with-acr-values-succeeds: acr_values_supported requested, that acr returned, amr pwd', async () => {
    // OIDCCAddAcrValuesToAuthorizationEndpointRequest: every advertised value, space-separated.
    const supported = meta.acr_values_supported as string[];
    expect(supported).toEqual(['phr', 'urn:authcli:acr:password', 'urn:authcli:acr:federated']);
    // A password sign-in meets one of them (acr_values is a list to choose from, OIDC Core §3.1.2.1).
    const { idToken } = await happyFlow({ extra: { acr_values: supported.join(' ') } });
    // ValidateIdTokenACRClaimAgainstAcrValuesRequest (a warning when missing or not requested).
    expect(supported).toContain(idToken.acr);
    expect(idToken.acr).toBe('urn:authcli:acr:password');
    expect(idToken.amr).toEqual(['pwd']);
  });

  /** AbstractOIDCCAuthCodeReuse.checkResponse, then the access token of the first use at userinfo (RFC 6749 §4.1.2). */
  async function expectCodeReuseRefused(flow: Flow, tokens: Tokens): Promise<void> {
    const again = await tokenRequest(rp, {
      grant_type: 'authorization_code',
      code: flow.callback.searchParams.get('code')!,
      redirect_uri: redirectUri,
      code_verifier: flow.verifier,
    });
    expect(again.status).toBe(400);
    expect(again.headers.get('content-type')).toMatch(/^application\/json/);
    expect(again.body.error).toBe('invalid_grant');
    if (again.body.error_description !== undefined) expect(again.body.error_description).toMatch(ERROR_DESCRIPTION);
    expect(again.body.error_uri).toBeUndefined();
    const revoked = await userinfo(tokens.access_token);
    expect(revoked.status).toBe(401);
    expect(revoked.headers.get('www-authenticate')).toMatch(/^Bearer /);
  }

  it('oidcc-codereuse: a second use at once is invalid_grant, and the first use’s access token is revoked', async () => {
    const { flow, tokens } = await happyFlow();
    expect((await userinfo(tokens.access_token)).status).toBe(200);
    await expectCodeReuseRefused(flow, tokens);
  });

  it('oidcc-codereuse-30seconds: a second use 30 seconds later is invalid_grant, and the access token is revoked', async () => {
    const { flow, tokens } = await happyFlow();
    // WaitFor30Seconds: 30 s after the first use, within the code's 60 s lifetime. The code's times are moved back
    // 30 s in the server's store instead of waited for: issued, used and expiring as if that had been 30 s ago.
    const codeHash = createHash('sha256').update(flow.callback.searchParams.get('code')!).digest('hex');
    const aged = await withStore(server.env.DATABASE_URL!, async (store) => {
      const rows = testRows(store);
      const [code] = await rows.select('authorization_codes', { code_hash: codeHash });
      expect(code?.consumed_at).toEqual(expect.any(Number));
      const back = (t: number | string) => Number(t) - 30_000;
      expect(back(code!.expires_at)).toBeGreaterThan(Date.now());
      return rows.update(
        'authorization_codes',
        { code_hash: codeHash },
        { created_at: back(code!.created_at), consumed_at: back(code!.consumed_at!), expires_at: back(code!.expires_at) },
      );
    });
    expect(aged).toBe(1);
    await expectCodeReuseRefused(flow, tokens);
  });

  it('oidcc-ensure-registered-redirect-uri: an unregistered redirect URI gets an error page, never a redirect', async () => {
    // CreateBadRedirectUriByAppending: a random path under the client's base URL.
    const bad = `${callbackOrigin}/callback/${randomBytes(8).toString('hex')}`;
    const { request } = await authorizationRequest({ extra: { redirect_uri: bad } });
    await withBrowser(async (page, callbacks) => {
      const result = await userAgent(page, request);
      expect(result.callback).toBeUndefined();
      expect(callbacks()).toEqual([]);
      expect(result.status).toBe(400);
      expect(await page.locator('main').innerText()).toMatch(/redirect_uri is not registered/);
      await page.screenshot({ path: screenshotPath('conformance-redirect-uri-error') });
    });
  });

  it('oidcc-ensure-post-request-succeeds: the authorization request POSTed as a form (OIDC Core §3.1.2.1)', async () => {
    await happyFlow({ method: 'POST' });
  });

  it('oidcc-server-client-secret-post: the happy flow with client_secret_post at the token endpoint', async () => {
    const { tokens, idToken } = await happyFlow({}, rp, 'post');
    await expectUserInfo(await userinfo(tokens.access_token), idToken, 'openid');
  });

  it('oidcc-request-uri-unsigned-supported-correctly-or-rejected-as-unsupported: request_uri_not_supported', async () => {
    // The plan runs it with dynamic clients only; the answer a static client gets is the one the module accepts.
    expect(meta.request_uri_parameter_supported).toBe(false);
    const { request } = await authorizationRequest({ extra: { request_uri: `${callbackOrigin}/request.jwt#${generateState()}` } });
    await withBrowser(async (page) => {
      const result = await userAgent(page, request);
      expect(expectAuthorizationError(result, request.state)).toBe('request_uri_not_supported');
    });
  });

  /** SerializeRequestObjectWithNullAlgorithm: an unsigned JWT of the request's parameters. */
  const unsignedRequestObject = (claims: Record<string, string>) =>
    `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`;

  /** BuildRequestObjectByValueRedirectToAuthorizationEndpoint: the object, with response_type, client_id, scope and redirect_uri repeated outside. */
  const byValue = (inside: Record<string, string>, outside: Record<string, string>) => ({
    request: unsignedRequestObject(inside),
    response_type: outside.response_type!,
    client_id: outside.client_id!,
    scope: outside.scope!,
    redirect_uri: outside.redirect_uri!,
    ...(outside.response_mode !== undefined && { response_mode: outside.response_mode }),
  });

  it('oidcc-unsigned-request-object-supported-correctly-or-rejected-as-unsupported: request_not_supported', async () => {
    expect(meta.request_parameter_supported).toBe(false);
    const { request } = await authorizationRequest();
    await withBrowser(async (page) => {
      const result = await userAgent(page, byValue(request, request));
      // state was only inside the object, so none comes back (the module does not check it then).
      expect(expectAuthorizationError(result, undefined)).toBe('request_not_supported');
    });
  });

  it('oidcc-claims-essential: name requested as an essential userinfo claim with scope openid is returned there', async () => {
    const claims = JSON.stringify({ userinfo: { name: { essential: true } } });
    const { tokens, idToken } = await happyFlow({ extra: { claims } });
    const info = await expectUserInfo(await userinfo(tokens.access_token), idToken, 'openid');
    // EnsureUserInfoContainsName, EnsureIdTokenDoesNotContainName
    expect(info.name).toBe(CLAIMS.name);
    expect(idToken.name).toBeUndefined();
  });

  it('oidcc-ensure-request-object-with-redirect-uri: an invalid redirect_uri outside the object is an error page, never a redirect', async () => {
    const { request } = await authorizationRequest();
    // AddInvalidRedirectUriToAuthorizationRequest: the registered URI with a path segment appended.
    const outside = { ...request, redirect_uri: `${redirectUri}/_invalid` };
    await withBrowser(async (page, callbacks) => {
      const result = await userAgent(page, byValue(request, outside));
      expect(result.callback).toBeUndefined();
      expect(callbacks()).toEqual([]);
      expect(result.status).toBe(400);
      await page.screenshot({ path: screenshotPath('conformance-request-object-redirect-uri-error') });
    });
  });

  it('oidcc-refresh-token: refresh with each client, ID token claims kept (OIDC Core §12.2), another client’s token refused', async () => {
    // SetScopeInClientConfigurationToOpenIdOfflineAccessIfServerSupportsOfflineAccess, and prompt=consent with it.
    expect(meta.scopes_supported).toContain('offline_access');
    expect(meta.grant_types_supported).toContain('refresh_token');
    const refreshed: Record<string, string> = {};
    for (const [client, nonce] of [
      [rp, undefined],
      [rp2, generateNonce().slice(0, 43)],
    ] as const) {
      const flow = await authorize({
        client,
        scope: 'openid offline_access',
        extra: { prompt: 'consent', ...(nonce && { nonce }) },
      });
      expect(flow.seen).toContain('consent');
      const tokens = await exchange(flow, client);
      const first = await expectIdToken(tokens, flow, client);
      const refreshToken = tokens.refresh_token!;
      expect(refreshToken).toMatch(/^[\x20-\x7E]+$/);
      expect(entropyBits(refreshToken)).toBeGreaterThan(96);
      await untilAfterSecond(first.iat!);
      const answer = await tokenRequest(client, {
        grant_type: 'refresh_token',
        refresh_token: refreshToken,
        ...(client === rp && { scope: 'openid offline_access' }),
      });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expectTokenResponse(answer);
      const second = answer.body as unknown as Tokens;
      expect(second.access_token).not.toBe(tokens.access_token);
      expect(entropyBits(second.refresh_token!)).toBeGreaterThan(96);
      // CompareIdTokenClaims
      const { payload } = await jwtVerify(second.id_token, keySet, { issuer: server.issuer, audience: client.client_id });
      expect(payload.sub).toBe(first.sub);
      expect(payload.aud).toEqual(first.aud);
      expect(payload.iat).not.toBe(first.iat);
      expect(payload.auth_time).toBe(first.auth_time);
      expect(payload.azp).toBe(first.azp);
      await expectUserInfo(await userinfo(second.access_token), first, 'openid');
      refreshed[client.client_id] = second.refresh_token!;
    }
    // performSecondClientTests: client 2's refresh token presented by client 1.
    const stolen = await tokenRequest(rp, {
      grant_type: 'refresh_token',
      refresh_token: refreshed[rp2.client_id]!,
      scope: 'openid offline_access',
    });
    expect(stolen.status).toBe(400);
    expect(stolen.headers.get('content-type')).toMatch(/^application\/json/);
    expect(stolen.body.error).toBe('invalid_grant');
  });

  it('oidcc-ensure-request-with-valid-pkce-succeeds: S256 is advertised and a valid verifier redeems the code; a wrong one does not', async () => {
    expect(meta.code_challenge_methods_supported).toEqual(['S256']);
    await happyFlow();
    // The plan's difference: a request without PKCE is refused at the redirect URI, with state and iss.
    const { request } = await authorizationRequest({ omit: ['code_challenge', 'code_challenge_method'] });
    await withBrowser(async (page) => {
      const result = await userAgent(page, request);
      expect(expectAuthorizationError(result, request.state)).toBe('invalid_request');
      const flow = await authorize({}, page);
      const wrong = await tokenRequest(rp, {
        grant_type: 'authorization_code',
        code: expectCode(flow),
        redirect_uri: redirectUri,
        code_verifier: generateVerifier(),
      });
      expect(wrong.status).toBe(400);
      expect(wrong.body.error).toBe('invalid_grant');
    });
  });
});

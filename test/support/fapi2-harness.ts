/**
 * The FAPI 2.0 Security Profile server plan's flow, as AbstractFAPI2SPFinalServerTestModule runs it, against a
 * started authcli-server: a pushed authorization request (private_key_jwt, optionally a DPoP proof), the browser
 * sent with the request_uri (a user signs in and consents), the code exchanged (private_key_jwt and a DPoP proof),
 * and the resource (userinfo for openid_connect; for plain_oauth the deployment's own API stands behind it, so the
 * client asks this server's introspection whether the token is active and bound to its key). Each step returns
 * what came back; the check* functions assert what the suite's conditions assert, failures and warnings alike.
 */
import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import { generateVerifier } from '@authcli/pkce';
import { createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet, type JWTPayload, jwtVerify } from 'jose';
import {
  type Answer,
  alphanumeric,
  type AssertionOptions,
  clientAuth,
  DpopKey,
  type FapiClient,
  formPost,
  NonceKeeper,
  type ProofOptions,
} from './fapi2-client.js';
import { approveInBrowser, Browser } from './http.js';
import { checkCallback, checkParResponse, expectSecret } from './fapi2-checks.js';
import { ID_TOKEN_CLAIMS } from './suite-oracle.js';

export type Variant = 'openid_connect' | 'plain_oauth';

/** ValidateIdToken's clock skew allowance. */
const SKEW_S = 5 * 60;
/** FAPI2CheckDiscEndpointIdTokenSigningAlgValuesSupported.FAPI2_ALLOWED_ALGS (FAPI 2.0 SP §5.4.1). */
export const FAPI2_ALGS = ['PS256', 'ES256', 'EdDSA', 'Ed25519'];

/** One run of the flow: what was pushed and where the browser came back. */
export interface Flow {
  client: FapiClient;
  params: Record<string, string>;
  verifier: string;
  par: Answer;
  requestUri?: string;
  authorizationUrl?: string;
  callback?: URL;
  /** The browser that signed in (still signed in: a later request in it is the same person's). */
  browser?: Browser;
}

export interface FlowOptions {
  /** Change the pushed parameters (the suite's makeCreateAuthorizationRequestSteps variations). */
  edit?: (params: Record<string, string>) => void;
  /** A DPoP proof with the push (useDpopAuthCodeBinding), by this key. */
  parDpop?: DpopKey;
  parProof?: ProofOptions;
  assertion?: AssertionOptions;
  /** Build the authorization URL: duplicates (the default), only client_id + request_uri, or reversed order. */
  redirect?: 'duplicates' | 'without-duplicates' | 'reordered';
  /** Parameters added to the authorization URL besides the pushed ones (a different nonce or state). */
  extra?: Record<string, string>;
  /** The client_id sent with the request_uri (another client's, for the binding test). */
  clientId?: string;
  decision?: 'approve' | 'deny';
  /** Who signs in (the variant's user by default). */
  user?: { username: string; password: string };
  /** Stop after the push: no browser. */
  pushOnly?: boolean;
}

/** A server under test and the accounts of one variant. */
export class Fapi2Harness {
  /** The authorization server's DPoP nonce (PAR, token, introspection). */
  readonly nonces = new NonceKeeper();
  /** The resource's own (RFC 9449 §9), kept apart as the suite keeps it: the first call carries none. */
  readonly resourceNonces = new NonceKeeper();
  private keySet: ReturnType<typeof createLocalJWKSet> | undefined;

  constructor(
    readonly issuer: string,
    readonly meta: Record<string, string>,
    readonly variant: Variant,
    readonly user: { username: string; password: string },
  ) {}

  get openid(): boolean {
    return this.variant === 'openid_connect';
  }

  async jwks(): Promise<ReturnType<typeof createLocalJWKSet>> {
    this.keySet ??= createLocalJWKSet((await (await fetch(this.meta.jwks_uri!)).json()) as JSONWebKeySet);
    return this.keySet;
  }

  /** CreateAuthorizationRequestSteps: code, state (128 characters for the second client), nonce, PKCE S256. */
  requestParams(client: FapiClient, second = false): { params: Record<string, string>; verifier: string } {
    const verifier = generateVerifier();
    const params: Record<string, string> = {
      client_id: client.client_id,
      redirect_uri: client.redirectUri,
      scope: client.scope,
      response_type: 'code',
      state: alphanumeric(second ? 128 : 32),
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    };
    if (this.openid) params.nonce = alphanumeric(second ? 43 : 32);
    return { params, verifier };
  }

  /** POST to the PAR endpoint (CallPAREndpoint / ...AllowingDpopNonceError): a fresh assertion (and proof) per attempt. */
  push(client: FapiClient, params: Record<string, string>, options: FlowOptions & { method?: string } = {}): Promise<Answer> {
    const url = this.meta.pushed_authorization_request_endpoint!;
    return this.nonces.send(async (nonce) => {
      const headers: Record<string, string> = {};
      if (options.parDpop) {
        headers.dpop = await options.parDpop.proof('POST', url, { ...(nonce && { nonce }), ...options.parProof });
      }
      return formPost(url, { ...params, ...(await clientAuth(client, this.issuer, options.assertion)) }, headers, options.method);
    });
  }

  /** BuildRequestObjectByReferenceRedirectToAuthorizationEndpoint and its WithoutDuplicates / ReorderedParams forms. */
  authorizationUrl(flow: Flow, options: FlowOptions): string {
    const p = flow.params;
    let query: [string, string][] = [
      ['client_id', options.clientId ?? p.client_id!],
      ['request_uri', flow.requestUri!],
    ];
    if (options.redirect !== 'without-duplicates') {
      for (const name of ['response_type', 'scope', 'redirect_uri'] as const) if (p[name] !== undefined) query.push([name, p[name]!]);
      query.push(...Object.entries(options.extra ?? {}));
      query.sort(([a], [b]) => a.localeCompare(b));
      if (options.redirect === 'reordered') query = query.reverse();
    }
    const url = new URL(this.meta.authorization_endpoint!);
    url.search = new URLSearchParams(query).toString();
    return url.href;
  }

  /** The flow up to the callback (performAuthorizationFlow, processParResponse, performRedirect). */
  async authorize(client: FapiClient, options: FlowOptions = {}, second = false): Promise<Flow> {
    const { params, verifier } = this.requestParams(client, second);
    options.edit?.(params);
    const par = await this.push(client, params, options);
    const flow: Flow = { client, params, verifier, par };
    if (options.pushOnly || par.status !== 201) return flow;
    checkParResponse(par);
    flow.requestUri = par.body.request_uri as string;
    flow.authorizationUrl = this.authorizationUrl(flow, options);
    const browser = new Browser(this.issuer);
    flow.browser = browser;
    flow.callback = new URL(
      await approveInBrowser(
        browser,
        flow.authorizationUrl,
        (options.user ?? this.user).username,
        (options.user ?? this.user).password,
        options.decision,
      ),
    );
    return flow;
  }

  /** The token endpoint (callSenderConstrainedTokenEndpoint): a fresh assertion and proof per attempt. */
  token(
    client: FapiClient,
    fields: Record<string, string>,
    options: { dpop?: DpopKey | undefined; assertion?: AssertionOptions; auth?: 'assertion' | 'client_id' | 'none'; as?: FapiClient } = {},
  ): Promise<Answer> {
    const url = this.meta.token_endpoint!;
    const auth = options.auth ?? 'assertion';
    return this.nonces.send(async (nonce) => {
      const headers: Record<string, string> = {};
      if (options.dpop) headers.dpop = await options.dpop.proof('POST', url, nonce ? { nonce } : {});
      const authFields =
        auth === 'assertion'
          ? await clientAuth(options.as ?? client, this.issuer, options.assertion)
          : auth === 'client_id'
            ? { client_id: client.client_id }
            : {};
      return formPost(url, { ...fields, ...authFields }, headers);
    });
  }

  /** CreateTokenEndpointRequestForAuthorizationCodeGrant with the PKCE verifier (AddCodeVerifierToTokenEndpointRequest). */
  exchange(flow: Flow, dpop: DpopKey | undefined, options: Parameters<Fapi2Harness['token']>[2] & { verifier?: string | null } = {}) {
    const fields: Record<string, string> = {
      grant_type: 'authorization_code',
      code: flow.callback!.searchParams.get('code')!,
      redirect_uri: flow.client.redirectUri,
    };
    if (options.verifier !== null) fields.code_verifier = options.verifier ?? flow.verifier;
    return this.token(flow.client, fields, { dpop, ...options });
  }

  /**
   * The protected resource with the access token (CallProtectedResourceAllowingDpopNonceError): userinfo with
   * `Authorization: <scheme> <token>` and a proof (ath) by `dpop`, GET.
   */
  resource(
    accessToken: string,
    dpop: DpopKey | undefined,
    options: { scheme?: string; proof?: ProofOptions; headers?: Record<string, string> } = {},
  ) {
    const url = this.meta.userinfo_endpoint!;
    const ath = createHash('sha256').update(accessToken).digest('base64url');
    return this.resourceNonces.send(async (nonce) => {
      const headers: Record<string, string> = { authorization: `${options.scheme ?? 'DPoP'} ${accessToken}`, ...options.headers };
      if (dpop) headers.dpop = await dpop.proof('GET', url, { ath, ...(nonce && { nonce }), ...options.proof });
      return new Request(url, { headers });
    });
  }

  /**
   * The rest of a module's default flow once the browser is back: the callback checked, the code exchanged with a
   * proof by `dpop` (a new key when none), the tokens checked, the resource called.
   */
  async complete(flow: Flow, dpop?: DpopKey) {
    checkParResponse(flow.par);
    checkCallback(flow, this.issuer);
    const key = dpop ?? (await DpopKey.create('ES256'));
    const tokens = await this.exchange(flow, key);
    const idToken = await this.checkTokens(tokens, flow, key);
    await this.checkResource(flow.client, tokens.body.access_token as string, key);
    return { tokens, idToken, key, accessToken: tokens.body.access_token as string };
  }

  /** plain_oauth: the resource is the deployment's own API, which asks this server (RFC 7662) about the token. */
  introspect(client: FapiClient, token: string): Promise<Answer> {
    return this.nonces.send(async () => formPost(this.meta.introspection_endpoint!, { token, ...(await clientAuth(client, this.issuer)) }));
  }

  /**
   * requestProtectedResource: 200 (EnsureHttpStatusCodeIs200or201) with a Date header (CheckForDateHeaderInResourceResponse),
   * no x-fapi-interaction-id unless it echoes ours. For plain_oauth: active and bound to the key (cnf.jkt).
   */
  async checkResource(client: FapiClient, accessToken: string, dpop: DpopKey): Promise<void> {
    if (!this.openid) {
      const info = await this.introspect(client, accessToken);
      expect(info.status).toBe(200);
      expect(info.body).toMatchObject({ active: true, client_id: client.client_id, cnf: { jkt: dpop.jkt } });
      return;
    }
    const interactionId = crypto.randomUUID();
    const res = await this.resource(accessToken, dpop, {
      headers: {
        'x-fapi-auth-date': new Date().toUTCString(),
        'x-fapi-customer-ip-address': '198.51.100.119',
        'x-fapi-interaction-id': interactionId,
      },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('date')).toBeTruthy();
    const echoed = res.headers.get('x-fapi-interaction-id');
    if (echoed !== null) expect(echoed).toBe(interactionId);
  }

  /**
   * processTokenEndpointResponse: 200, an access token of 128 bits and entropy, expires_in a positive number (a
   * warning when absent), a refresh token of 128 bits when there is one, token_type DPoP; for openid_connect an
   * ID token checked as PerformStandardIdTokenChecks, EnsureIdTokenContainsKid, FAPI2ValidateIdTokenSigningAlg
   * and the hashes do; for plain_oauth none (ExpectNoIdTokenInTokenResponse).
   */
  async checkTokens(answer: Answer, flow: Flow, dpop: DpopKey): Promise<JWTPayload | undefined> {
    expect(answer.status, answer.text).toBe(200);
    const body = answer.body;
    expectSecret(body.access_token, 'access_token');
    expect(String(body.token_type).toLowerCase()).toBe('dpop');
    expect(typeof body.expires_in).toBe('number');
    expect(body.expires_in as number).toBeGreaterThan(0);
    expect(body.expires_in as number).toBeLessThanOrEqual(31_536_000);
    if (body.refresh_token !== undefined) expectSecret(body.refresh_token, 'refresh_token');
    expect(answer.headers.get('cache-control')).toMatch(/no-store/);
    const [, payload] = (body.access_token as string).split('.');
    expect(JSON.parse(Buffer.from(payload!, 'base64url').toString()).cnf).toEqual({ jkt: dpop.jkt });
    if (!this.openid) {
      expect(body.id_token).toBeUndefined();
      return undefined;
    }
    return this.checkIdToken(body.id_token as string, flow, body.access_token as string);
  }

  /** PerformStandardIdTokenChecks with the FAPI 2.0 algorithm rule and EnsureIdTokenDoesNotContainNonRequestedClaims. */
  async checkIdToken(idToken: string, flow: Flow, accessToken?: string): Promise<JWTPayload> {
    expect(typeof idToken).toBe('string');
    const header = decodeProtectedHeader(idToken);
    expect(header.kid).toBeTruthy();
    expect(FAPI2_ALGS).toContain(header.alg);
    const { payload } = await jwtVerify(idToken, await this.jwks(), { issuer: this.issuer, audience: flow.client.client_id });
    const now = Date.now() / 1000;
    expect(payload.sub).toBeTruthy();
    expect(payload.exp!).toBeGreaterThan(now - SKEW_S);
    expect(Math.abs(payload.iat! - now)).toBeLessThan(SKEW_S);
    if (Array.isArray(payload.aud) && payload.aud.length > 1) expect(payload.azp).toBe(flow.client.client_id);
    expect(payload.nonce).toBe(flow.params.nonce);
    if (payload.at_hash !== undefined && accessToken) {
      const digest = createHash(header.alg === 'ES256' || header.alg === 'PS256' ? 'sha256' : 'sha512')
        .update(accessToken)
        .digest();
      expect(payload.at_hash).toBe(digest.subarray(0, digest.length / 2).toString('base64url'));
    }
    expect(payload.c_hash).toBeUndefined();
    return payload;
  }

  /** EnsureIdTokenDoesNotContainNonRequestedClaims (a warning): only the ID token's own claims and the scopes'. */
  expectOnlyRequestedIdTokenClaims(payload: JWTPayload, scopeClaims: readonly string[]): void {
    const unasked = Object.keys(payload).filter((c) => !ID_TOKEN_CLAIMS.includes(c) && !scopeClaims.includes(c));
    expect(unasked).toEqual([]);
  }
}

import { isValidChallenge } from '@authcli/pkce';
import { AUTHORIZE_STATE_MAX, CONTINUATION_TTL_MS, NONCE_MAX, SIGNIN_USERNAME_MAX } from '../config/defaults.js';
import type { OAuthContext } from './context.js';
import { FormError, parseForm, repeatedParameter } from '../http/form.js';
import type { Application, User } from '../store/store.js';
import { randomToken, sha256Hex } from '../util/crypto.js';
import {
  AccessDenied,
  ConsentRequired,
  InvalidRequest,
  LoginRequired,
  OAuthError,
  RequestNotSupported,
  RequestUriNotSupported,
  UnauthorizedClient,
  UnsupportedResponseType,
} from './errors.js';
import {
  type ClaimsRequest,
  claimsScopes,
  essentialAcrUnmet,
  parseClaimsRequest,
  requestedSubject,
  serializeClaimsRequest,
} from './claims-request.js';
import { JKT_PATTERN } from './dpop.js';
import { verifyIdTokenHint } from './id-token-hint.js';
import { matchRedirectUri } from './redirect-uri.js';
import { parseScope } from './scopes.js';

/** RFC 9126 §2.2: a pushed request's request_uri is this URN and 256 random bits (base64url). */
export const PUSHED_REQUEST_URI_PREFIX = 'urn:ietf:params:oauth:request_uri:';

/** The SHA-256 a pushed request is stored by, of a request_uri this server could have made; undefined for any other value. */
export function pushedRequestHash(requestUri: string): string | undefined {
  if (!requestUri.startsWith(PUSHED_REQUEST_URI_PREFIX)) return undefined;
  const random = requestUri.slice(PUSHED_REQUEST_URI_PREFIX.length);
  return /^[A-Za-z0-9_-]{43}$/.test(random) ? sha256Hex(random) : undefined;
}

/** Where a request that was pushed first (RFC 9126) came from. */
export interface PushedOrigin {
  requestUri: string;
  /** When it was pushed (epoch ms): a sign-in after this is a sign-in for this request. */
  createdAt: number;
  /** The `prompt` as pushed. */
  prompt: ReadonlySet<string>;
}

/** An authorization request that passed every check (RFC 6749 §4.1.1, RFC 7636 §4.3, OIDC Core §3.1.2.1). */
export interface AuthorizationRequest {
  app: Application;
  redirectUri: string;
  state: string | undefined;
  scopes: string[];
  nonce: string | undefined;
  codeChallenge: string;
  prompt: ReadonlySet<string>;
  maxAge: number | undefined;
  /** The `claims` parameter (OIDC Core §5.5), reduced to the claims this application may be given. */
  claims: ClaimsRequest | undefined;
  /** The `id_token_hint` as sent (OIDC Core §3.1.2.1): carried along when the request is resumed. */
  idTokenHint: string | undefined;
  /** `login_hint` (OIDC Core §3.1.2.1) when it could be a username ({@link loginHint}): the sign-in page fills it in. */
  loginHint: string | undefined;
  /**
   * The only user this request may be answered for: the subject of `id_token_hint`, or of a `sub` value in
   * the claims request (§3.1.2.2). A session of anyone else counts as no session.
   */
  subject: string | undefined;
  /** RFC 9449 §10 `dpop_jkt`: the thumbprint of the DPoP key the code's token request must prove. */
  dpopJkt: string | undefined;
  /**
   * The query string as received, carried through sign-in and consent and validated again there. For a pushed
   * request only `client_id` and `request_uri`: its parameters never reach the browser (RFC 9126 §1).
   */
  rawQuery: string;
  /** Set when the request was pushed (RFC 9126): it is answered once, and its parameters stay on the server. */
  pushed: PushedOrigin | undefined;
}

/**
 * An error that must not be redirected (RFC 6749 §4.1.2.1): the client or
 * redirect_uri is unknown or invalid, so the user sees an error page.
 */
export class AuthorizationPageError extends Error {
  override name = 'AuthorizationPageError';
  constructor(
    readonly error: string,
    readonly description: string,
  ) {
    super(description);
  }
}

/** An error returned to the client at its validated redirect_uri. */
export class AuthorizationRedirectError extends Error {
  override name = 'AuthorizationRedirectError';
  constructor(
    readonly oauthError: OAuthError,
    readonly redirectUri: string,
    readonly state: string | undefined,
  ) {
    super(oauthError.description);
  }
}

const PROMPTS = new Set(['none', 'login', 'consent', 'select_account']);

type Params = Readonly<Record<string, string>>;

// ---- checks before the redirect_uri is trusted: failures are shown, never redirected ----

async function checkClient(ctx: OAuthContext, params: Params, repeated: ReadonlySet<string>): Promise<Application> {
  if (repeated.has('client_id')) throw new AuthorizationPageError('invalid_request', 'client_id is repeated');
  const clientId = params.client_id;
  if (!clientId) throw new AuthorizationPageError('invalid_request', 'client_id is missing');
  const app = await ctx.store.applications.get(clientId);
  if (!app) throw new AuthorizationPageError('invalid_client', 'The application is not registered with this server (unknown client_id).');
  return app;
}

function checkRedirectUri(app: Application, params: Params, repeated: ReadonlySet<string>): string {
  if (repeated.has('redirect_uri')) throw new AuthorizationPageError('invalid_request', 'redirect_uri is repeated');
  const redirectUri = params.redirect_uri;
  if (!redirectUri) throw new AuthorizationPageError('invalid_request', 'redirect_uri is missing');
  if (!matchRedirectUri(redirectUri, app.callbackUrls)) {
    throw new AuthorizationPageError(
      'invalid_request',
      'The redirect_uri is not registered for this application, so the result cannot be sent back to it.',
    );
  }
  return redirectUri;
}

// ---- checks after: failures go back to the client ----

/** RFC 6749 §3.1: a parameter may not be repeated. */
function checkNoRepeats(repeated: ReadonlySet<string>): void {
  const [first] = repeated;
  if (first !== undefined) throw new InvalidRequest(repeatedParameter(first));
}

function checkNoRequestObjects(params: Params): void {
  if (params.request !== undefined) throw new RequestNotSupported('request objects are not supported');
  if (params.request_uri !== undefined) throw new RequestUriNotSupported('request_uri is not supported');
}

function checkResponseType(app: Application, params: Params): void {
  if (params.response_type === undefined) throw new InvalidRequest('response_type is missing');
  if (params.response_type !== 'code') throw new UnsupportedResponseType('only response_type=code is supported');
  if (params.response_mode !== undefined && params.response_mode !== 'query') {
    throw new InvalidRequest('only response_mode=query is supported');
  }
  if (!app.grantTypes.includes('authorization_code')) {
    throw new UnauthorizedClient('this application may not use the authorization code grant');
  }
}

/** RFC 7636 §4.3 with S256 mandatory (RFC 9700 §2.1.1): `plain` and a missing method are refused. */
function checkPkce(params: Params): string {
  const method = params.code_challenge_method;
  const challenge = params.code_challenge;
  if (challenge === undefined) throw new InvalidRequest('code_challenge is required (PKCE, RFC 7636)');
  if (method === undefined) throw new InvalidRequest('code_challenge_method is required and must be S256');
  if (method !== 'S256') throw new InvalidRequest('code_challenge_method must be S256 (plain and other methods are not supported)');
  if (!isValidChallenge(challenge)) throw new InvalidRequest('code_challenge must be 43 base64url characters (RFC 7636 §4.2)');
  return challenge;
}

function checkPrompt(params: Params): { prompt: Set<string>; maxAge: number | undefined } {
  const prompt = new Set((params.prompt ?? '').split(' ').filter(Boolean));
  for (const p of prompt) {
    if (!PROMPTS.has(p))
      throw new InvalidRequest(`prompt has a value this server does not support (it supports ${[...PROMPTS].join(', ')})`);
  }
  if (prompt.has('none') && prompt.size > 1) throw new InvalidRequest('prompt=none cannot be combined with other values');
  let maxAge: number | undefined;
  if (params.max_age !== undefined) {
    if (!/^\d{1,9}$/.test(params.max_age)) throw new InvalidRequest('max_age must be a non-negative integer');
    maxAge = Number(params.max_age);
  }
  return { prompt, maxAge };
}

/**
 * OIDC Core §3.1.2.1 `id_token_hint`: an ID token this server issued to
 * this client names the user the client expects; with a `sub` value in the
 * claims request (§3.1.2.2) as well, both must name the same user.
 */
async function checkSubject(
  ctx: OAuthContext,
  app: Application,
  params: Params,
  claims: ClaimsRequest | undefined,
): Promise<string | undefined> {
  const claimed = requestedSubject(claims);
  if (params.id_token_hint === undefined) return claimed;
  const hint = await verifyIdTokenHint(ctx, params.id_token_hint);
  if (!hint || hint.aud !== app.clientId) throw new InvalidRequest('id_token_hint is not an ID token this server issued to this client');
  if (claimed !== undefined && claimed !== hint.sub) throw new InvalidRequest('id_token_hint and the requested sub name different users');
  return hint.sub;
}

/**
 * OIDC Core §3.1.2.1 `login_hint`: a hint, never a reason to refuse. Kept
 * only when it could be a username (trimmed, 1 to {@link SIGNIN_USERNAME_MAX}
 * characters, no control characters); anything else is ignored. The sign-in
 * page renders it as an escaped attribute value, like any text.
 */
export function loginHint(value: string | null | undefined): string | undefined {
  const hint = value?.trim();
  if (!hint || hint.length > SIGNIN_USERNAME_MAX || /\p{Cc}/u.test(hint)) return undefined;
  return hint;
}

/**
 * RFC 9449 §10 `dpop_jkt`: a JWK SHA-256 thumbprint (RFC 7638), base64url.
 * https://www.rfc-editor.org/rfc/rfc9449#section-10
 */
function checkDpopJkt(params: Params): string | undefined {
  const jkt = params.dpop_jkt;
  if (jkt !== undefined && !JKT_PATTERN.test(jkt))
    throw new InvalidRequest('dpop_jkt must be a base64url SHA-256 JWK thumbprint (RFC 9449 §10)');
  return jkt;
}

function checkLengths(params: Params): void {
  if (params.state !== undefined && params.state.length > AUTHORIZE_STATE_MAX) throw new InvalidRequest('state is too long');
  if (params.nonce !== undefined && params.nonce.length > NONCE_MAX) throw new InvalidRequest('nonce is too long');
}

function parseQuery(rawQuery: string) {
  try {
    return parseForm(rawQuery);
  } catch (err) {
    if (err instanceof FormError) throw new AuthorizationPageError('invalid_request', err.message);
    throw err;
  }
}

/**
 * Validates an authorization request, in the order RFC 6749 §4.1.2.1
 * requires: client and redirect_uri first (errors shown as a page), then
 * everything else (errors redirected with state and iss). A `request_uri`
 * of this server's stands for a pushed request (RFC 9126 §4).
 */
export async function validateAuthorizationRequest(ctx: OAuthContext, rawQuery: string): Promise<AuthorizationRequest> {
  const { params, repeated } = parseQuery(rawQuery);
  const app = await checkClient(ctx, params, repeated);
  if (params.request_uri?.startsWith(PUSHED_REQUEST_URI_PREFIX)) return openPushedRequest(ctx, app, params, repeated);
  const mustBePushed = app.requirePushedAuthorizationRequests || ctx.config.requirePushedAuthorizationRequests;
  return validateParams(ctx, app, params, repeated, rawQuery, mustBePushed);
}

/**
 * A request pushed to the PAR endpoint (RFC 9126 §2.1), by a client already
 * authenticated: validated exactly as at the authorization endpoint. The
 * caller answers every error as JSON (§2.3), a redirect_uri error included.
 */
export function validatePushedParams(
  ctx: OAuthContext,
  app: Application,
  params: Params,
  repeated: ReadonlySet<string>,
): Promise<AuthorizationRequest> {
  return validateParams(ctx, app, params, repeated, '', false);
}

/**
 * RFC 9126 §4: the authorization request by reference. The request_uri must
 * be live, unused and pushed by this client; its stored parameters are
 * validated again (a key or user may have changed since) and the other
 * parameters of the query are ignored, except the server's own "continue
 * as" link, which may drop `select_account` from `prompt` (nothing else).
 * The first time a browser opens it, it lives as long as a sign-in may take.
 */
async function openPushedRequest(
  ctx: OAuthContext,
  app: Application,
  params: Params,
  repeated: ReadonlySet<string>,
): Promise<AuthorizationRequest> {
  if (repeated.has('request_uri')) throw new AuthorizationPageError('invalid_request', 'request_uri is repeated');
  const requestUri = params.request_uri!;
  const hash = pushedRequestHash(requestUri);
  const now = ctx.config.now();
  const row = hash === undefined ? undefined : await ctx.store.pushedRequests.find(hash);
  if (!row || row.clientId !== app.clientId || row.usedAt !== null || now >= row.expiresAt) {
    throw new AuthorizationPageError(
      'invalid_request_uri',
      'This sign-in request is unknown, has expired or was already answered. Start again from the application.',
    );
  }
  if (row.openedAt === null) await ctx.store.pushedRequests.open(hash!, now, now + CONTINUATION_TTL_MS);
  const stored = parseQuery(row.query);
  const inner = await validateParams(ctx, app, stored.params, stored.repeated, row.query, false);
  let prompt = inner.prompt;
  if (params.prompt !== undefined && !repeated.has('prompt')) {
    const asked = new Set(params.prompt.split(' ').filter(Boolean));
    const narrowed = [...asked].every((p) => inner.prompt.has(p)) && [...inner.prompt].every((p) => asked.has(p) || p === 'select_account');
    if (narrowed) prompt = asked;
  }
  const rawQuery = new URLSearchParams({ client_id: app.clientId, request_uri: requestUri }).toString();
  return { ...inner, prompt, rawQuery, pushed: { requestUri, createdAt: row.createdAt, prompt: inner.prompt } };
}

/** Everything after the client: the redirect_uri (errors shown), then the rest (errors redirected with state and iss). */
async function validateParams(
  ctx: OAuthContext,
  app: Application,
  params: Params,
  repeated: ReadonlySet<string>,
  rawQuery: string,
  mustBePushed: boolean,
): Promise<AuthorizationRequest> {
  const redirectUri = checkRedirectUri(app, params, repeated);
  const state = repeated.has('state') ? undefined : params.state;
  try {
    checkNoRepeats(repeated);
    checkNoRequestObjects(params);
    if (mustBePushed) {
      throw new InvalidRequest(
        'this application must push its authorization requests first (RFC 9126): use the pushed_authorization_request_endpoint',
      );
    }
    checkResponseType(app, params);
    checkLengths(params);
    const codeChallenge = checkPkce(params);
    const scopes = parseScope(params.scope, app.scopes);
    const { prompt, maxAge } = checkPrompt(params);
    const claims = parseClaimsRequest(params.claims, app.scopes);
    if (essentialAcrUnmet(claims)) throw new AccessDenied('the requested authentication context class cannot be satisfied');
    const subject = await checkSubject(ctx, app, params, claims);
    const dpopJkt = checkDpopJkt(params);
    return {
      app,
      redirectUri,
      state,
      scopes,
      nonce: params.nonce,
      codeChallenge,
      prompt,
      maxAge,
      claims,
      idTokenHint: params.id_token_hint,
      loginHint: loginHint(params.login_hint),
      subject,
      dpopJkt,
      rawQuery,
      pushed: undefined,
    };
  } catch (err) {
    if (err instanceof OAuthError) throw new AuthorizationRedirectError(err, redirectUri, state);
    throw err;
  }
}

/** Adds parameters to a redirect_uri, keeping its own query (RFC 6749 §3.1.2). */
export function callbackUrl(redirectUri: string, params: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.append(k, v);
  return url.href;
}

/** RFC 6749 §4.1.2.1 error redirect, with `iss` (RFC 9207 §2). */
export function errorCallback(ctx: OAuthContext, err: AuthorizationRedirectError): string {
  return callbackUrl(err.redirectUri, {
    error: err.oauthError.error,
    error_description: err.oauthError.description,
    state: err.state,
    iss: ctx.config.issuer,
  });
}

export function denied(req: AuthorizationRequest): AuthorizationRedirectError {
  return new AuthorizationRedirectError(new AccessDenied('the user denied the request'), req.redirectUri, req.state);
}

/**
 * Issues an authorization code (256-bit, stored only as its SHA-256, 60 s,
 * bound to client, redirect_uri, challenge, scope, nonce, user and the
 * `dpop_jkt` key if one was named, RFC 9449 §10) and
 * returns the callback URL carrying `code`, `state` and `iss` (RFC 9207).
 */
export async function issueCode(ctx: OAuthContext, req: AuthorizationRequest, user: User, authTime: number): Promise<string> {
  const now = ctx.config.now();
  if (!(await usePushedRequest(ctx, req))) {
    throw new AuthorizationPageError('invalid_request_uri', 'This sign-in request was already answered. Start again from the application.');
  }
  const code = randomToken(32);
  await ctx.store.codes.insert({
    code_hash: sha256Hex(code),
    client_id: req.app.clientId,
    user_id: user.id,
    redirect_uri: req.redirectUri,
    code_challenge: req.codeChallenge,
    code_challenge_method: 'S256',
    scope: req.scopes.join(' '),
    nonce: req.nonce ?? null,
    claims: serializeClaimsRequest(req.claims),
    dpop_jkt: req.dpopJkt ?? null,
    auth_time: authTime,
    created_at: now,
    expires_at: now + ctx.config.codeTtlSeconds * 1000,
  });
  return callbackUrl(req.redirectUri, { code, state: req.state, iss: ctx.config.issuer });
}

/**
 * A pushed request gets one authorization response (RFC 9126 §4, one-time
 * use): true for the one caller that used it up (and for a request that was
 * not pushed), false when it was already answered or has expired.
 */
export async function usePushedRequest(ctx: OAuthContext, req: AuthorizationRequest): Promise<boolean> {
  if (!req.pushed) return true;
  return ctx.store.pushedRequests.use(pushedRequestHash(req.pushed.requestUri)!, ctx.config.now());
}

/** The user's sign-in an authorization request may rest on: who, and when they authenticated. */
export interface Authentication {
  user: User;
  /** Epoch ms of the sign-in (OIDC Core §2 `auth_time`). */
  authTime: number;
}

/** What the authorization endpoint does next with a validated request. */
export type AuthorizationStep =
  /** Send the browser to sign in, then resume the request. */
  | { next: 'sign-in' }
  /**
   * `prompt=select_account` (OIDC Core §3.1.2.1) with a live session: offer to continue as the signed-in user
   * (`continueAs`, the request again without select_account) or to sign in as someone else.
   */
  | { next: 'select-account'; continueAs: string }
  /** Ask the signed-in user to approve the application and scopes. */
  | { next: 'consent' }
  /** Done: send the browser back to the client with a fresh code. */
  | { next: 'redirect'; location: string };

/**
 * The authorization endpoint's decision (OIDC Core §3.1.2.3–3.1.2.4, RFC
 * 6749 §4.1.1): a sign-in when there is none, `prompt=login` asks for one,
 * it is older than `max_age`, or it is not the user the request names
 * (`id_token_hint`, a `sub` value; §3.1.2.2); the account chooser for `prompt=select_account`;
 * consent unless the user approved these scopes
 * for this application before and `prompt=consent` is absent; otherwise a
 * code. With `prompt=none` (§3.1.2.6) a step that needs the user is the
 * error `login_required` or `consent_required`, redirected to the client.
 * A pushed request (RFC 9126) keeps its parameters on the server, so a sign-in
 * made after it was pushed is what satisfies its `prompt=login`,
 * `select_account` and `max_age` (a direct request's resumed query drops them).
 */
export async function nextAuthorizationStep(
  ctx: OAuthContext,
  req: AuthorizationRequest,
  signedIn: Authentication | undefined,
): Promise<AuthorizationStep> {
  const signedInForThis = signedIn !== undefined && req.pushed !== undefined && signedIn.authTime >= req.pushed.createdAt;
  const stale =
    signedIn !== undefined && !signedInForThis && req.maxAge !== undefined && ctx.config.now() - signedIn.authTime > req.maxAge * 1000;
  const someoneElse = signedIn !== undefined && req.subject !== undefined && signedIn.user.id !== req.subject;
  if (!signedIn || (req.prompt.has('login') && !signedInForThis) || stale || someoneElse) {
    if (req.prompt.has('none'))
      throw new AuthorizationRedirectError(new LoginRequired('the user is not signed in'), req.redirectUri, req.state);
    return { next: 'sign-in' };
  }
  if (req.prompt.has('select_account') && !signedInForThis) {
    return { next: 'select-account', continueAs: `/oauth/authorize?${requestQuery(withoutPrompt(req, 'select_account'))}` };
  }
  if (!req.prompt.has('consent') && (await ctx.store.consents.covers(signedIn.user.id, req.app.clientId, consentScopes(req)))) {
    return { next: 'redirect', location: await issueCode(ctx, req, signedIn.user, signedIn.authTime) };
  }
  if (req.prompt.has('none')) {
    throw new AuthorizationRedirectError(new ConsentRequired('the user has not approved this application'), req.redirectUri, req.state);
  }
  return { next: 'consent' };
}

/**
 * The user approved the request on the consent page: the approval is
 * remembered for this application and scope set, and a code issued; returns
 * the callback URL.
 */
export async function approveAuthorization(ctx: OAuthContext, req: AuthorizationRequest, signedIn: Authentication): Promise<string> {
  await ctx.store.consents.add(signedIn.user.id, req.app.clientId, consentScopes(req), ctx.config.now());
  return issueCode(ctx, req, signedIn.user, signedIn.authTime);
}

/**
 * What the user approves: the requested scopes, and the scopes of the claims
 * the request names one by one (OIDC Core §5.5), so a claim is never
 * released without the user's approval of its scope.
 */
export function consentScopes(req: AuthorizationRequest): string[] {
  return [...new Set([...req.scopes, ...claimsScopes(req.claims)])];
}

/**
 * The validated request serialized again by the server, every field it uses
 * kept (`prompt` and `max_age` included): what a POSTed request (OIDC Core
 * §3.1.2.1) is redirected to the GET endpoint with.
 */
export function requestQuery(req: AuthorizationRequest): string {
  if (req.pushed) {
    // By reference (RFC 9126 §4); a prompt the server narrowed ("continue as") goes along, as openPushedRequest allows.
    const query = new URLSearchParams({ client_id: req.app.clientId, request_uri: req.pushed.requestUri });
    const pushedPrompt = req.pushed.prompt;
    if (req.prompt.size !== pushedPrompt.size || [...req.prompt].some((p) => !pushedPrompt.has(p)))
      query.set('prompt', [...req.prompt].join(' '));
    return query.toString();
  }
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: req.app.clientId,
    redirect_uri: req.redirectUri,
    scope: req.scopes.join(' '),
    code_challenge: req.codeChallenge,
    code_challenge_method: 'S256',
  });
  if (req.state !== undefined) query.set('state', req.state);
  if (req.nonce !== undefined) query.set('nonce', req.nonce);
  if (req.prompt.size) query.set('prompt', [...req.prompt].join(' '));
  if (req.maxAge !== undefined) query.set('max_age', String(req.maxAge));
  if (req.claims !== undefined) query.set('claims', serializeClaimsRequest(req.claims)!);
  if (req.idTokenHint !== undefined) query.set('id_token_hint', req.idTokenHint);
  if (req.loginHint !== undefined) query.set('login_hint', req.loginHint);
  if (req.dpopJkt !== undefined) query.set('dpop_jkt', req.dpopJkt);
  return query.toString();
}

/**
 * The query of the authorization request a sign-in resumes, serialized by the
 * server from the validated fields, never the query as received: parameters
 * this server does not use are left behind, `login` and `select_account`
 * leave `prompt` and `max_age` goes (the sign-in that follows satisfies all
 * three, so they must not ask again). GET /oauth/authorize validates the
 * result again when it runs.
 */
export function resumeQuery(req: AuthorizationRequest): string {
  // A pushed request is resumed by reference; the sign-in itself satisfies its prompt and max_age (nextAuthorizationStep).
  if (req.pushed) return requestQuery(req);
  return requestQuery({ ...withoutPrompt(req, 'login', 'select_account'), maxAge: undefined });
}

/** The request without the given `prompt` values. */
export function withoutPrompt(req: AuthorizationRequest, ...values: string[]): AuthorizationRequest {
  return { ...req, prompt: new Set([...req.prompt].filter((p) => !values.includes(p))) };
}

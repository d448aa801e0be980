/**
 * The authorization endpoint's checks (RFC 6749 §4.1.2.1, RFC 7636 §4.3, OIDC
 * Core §3.1.2.1), one parameter or rule each. authorize.ts composes them, in
 * the order the RFC requires: the client and the redirect_uri first (a failure
 * is shown to the user), then the rest (a failure goes back to the client).
 */
import { isValidChallenge } from '@authcli/pkce';
import { AUTHORIZE_STATE_MAX, NONCE_MAX, SIGNIN_USERNAME_MAX } from '../config/defaults.js';
import { repeatedParameter } from '../http/form.js';
import type { Application } from '../store/store.js';
import { AuthorizationPageError, type ResponseMode } from './authorization-request.js';
import { type ClaimsRequest, requestedSubject } from './claims-request.js';
import type { OAuthContext } from './context.js';
import { JKT_PATTERN } from './dpop.js';
import { InvalidRequest, RequestNotSupported, RequestUriNotSupported, UnauthorizedClient, UnsupportedResponseType } from './errors.js';
import { verifyIdTokenHint } from './id-token-hint.js';
import { matchRedirectUri } from './redirect-uri.js';

const PROMPTS = new Set(['none', 'login', 'consent', 'select_account']);

type Params = Readonly<Record<string, string>>;

// ---- checks before the redirect_uri is trusted: failures are shown, never redirected ----

/** The application `client_id` names: unknown, it is shown, as there is no redirect_uri to trust yet. */
export async function checkClient(ctx: OAuthContext, params: Params, repeated: ReadonlySet<string>): Promise<Application> {
  if (repeated.has('client_id')) throw new AuthorizationPageError('invalid_request', 'client_id is repeated');
  const clientId = params.client_id;
  if (!clientId) throw new AuthorizationPageError('invalid_request', 'client_id is missing');
  const app = await ctx.store.applications.get(clientId);
  if (!app) throw new AuthorizationPageError('invalid_client', 'The application is not registered with this server (unknown client_id).');
  return app;
}

/** The redirect_uri, one registered for the application (RFC 6749 §3.1.2.3, redirect-uri.ts). */
export function checkRedirectUri(app: Application, params: Params, repeated: ReadonlySet<string>): string {
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
export function checkNoRepeats(repeated: ReadonlySet<string>): void {
  // RFC 8707 §2: `resource` may be repeated, once per API.
  for (const name of repeated) if (name !== 'resource') throw new InvalidRequest(repeatedParameter(name));
}

/** Request objects (OIDC Core §6) are not supported: `request`, nor a `request_uri` that is not a pushed request of this server's. */
export function checkNoRequestObjects(params: Params): void {
  if (params.request !== undefined) throw new RequestNotSupported('request objects are not supported');
  if (params.request_uri !== undefined) throw new RequestUriNotSupported('request_uri is not supported');
}

/** The response modes this server answers in (discovery's `response_modes_supported`). */
export const RESPONSE_MODES: readonly ResponseMode[] = ['query', 'form_post'];

/**
 * The response mode errors and the code go back in: `form_post` when the request asks for it (once), else
 * `query`, the default of the `code` response type (OAuth 2.0 Multiple Response Types §2.1). Read before the
 * other checks, so their errors are posted too.
 */
export function responseModeOf(params: Params, repeated: ReadonlySet<string>): ResponseMode {
  return !repeated.has('response_mode') && params.response_mode === 'form_post' ? 'form_post' : 'query';
}

/** `response_type=code` only (RFC 6749 §3.1.1), answered in the query, for an application allowed the authorization code grant. */
export function checkResponseType(app: Application, params: Params): void {
  if (params.response_type === undefined) throw new InvalidRequest('response_type is missing');
  if (params.response_type !== 'code') throw new UnsupportedResponseType('only response_type=code is supported');
  if (params.response_mode !== undefined && !RESPONSE_MODES.includes(params.response_mode as ResponseMode)) {
    throw new InvalidRequest(`response_mode must be ${RESPONSE_MODES.join(' or ')}`);
  }
  if (!app.grantTypes.includes('authorization_code')) {
    throw new UnauthorizedClient('this application may not use the authorization code grant');
  }
}

/** RFC 7636 §4.3 with S256 mandatory (RFC 9700 §2.1.1): `plain` and a missing method are refused. */
export function checkPkce(params: Params): string {
  const method = params.code_challenge_method;
  const challenge = params.code_challenge;
  if (challenge === undefined) throw new InvalidRequest('code_challenge is required (PKCE, RFC 7636)');
  if (method === undefined) throw new InvalidRequest('code_challenge_method is required and must be S256');
  if (method !== 'S256') throw new InvalidRequest('code_challenge_method must be S256 (plain and other methods are not supported)');
  if (!isValidChallenge(challenge)) throw new InvalidRequest('code_challenge must be 43 base64url characters (RFC 7636 §4.2)');
  return challenge;
}

/** OIDC Core §3.1.2.1 `prompt` (values this server supports, `none` alone) and `max_age` (whole seconds). */
export function checkPrompt(params: Params): { prompt: Set<string>; maxAge: number | undefined } {
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
export async function checkSubject(
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
export function checkDpopJkt(params: Params): string | undefined {
  const jkt = params.dpop_jkt;
  if (jkt !== undefined && !JKT_PATTERN.test(jkt))
    throw new InvalidRequest('dpop_jkt must be a base64url SHA-256 JWK thumbprint (RFC 9449 §10)');
  return jkt;
}

/** `state` and `nonce` within their bounds (config/defaults.ts). */
export function checkLengths(params: Params): void {
  if (params.state !== undefined && params.state.length > AUTHORIZE_STATE_MAX) throw new InvalidRequest('state is too long');
  if (params.nonce !== undefined && params.nonce.length > NONCE_MAX) throw new InvalidRequest('nonce is too long');
}

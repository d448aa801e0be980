/**
 * The authorization response (RFC 6749 §4.1.2, §4.1.2.1): the client's
 * redirect_uri with a new code, or with an error, `state` and `iss` (RFC 9207)
 * beside it. Issuing the code is also what uses up a pushed request.
 */
import { storedResources } from './resources.js';
import type { Authentication } from './authorization-step.js';
import { randomToken, sha256Hex } from '../util/crypto.js';
import {
  AuthorizationPageError,
  type AuthorizationRequest,
  AuthorizationRedirectError,
  type ResponseMode,
} from './authorization-request.js';
import { serializeClaimsRequest } from './claims-request.js';
import type { OAuthContext } from './context.js';
import { AccessDenied } from './errors.js';
import { usePushedRequest } from './pushed-request-uri.js';

/** Adds parameters to a redirect_uri, keeping its own query (RFC 6749 §3.1.2). */
export function callbackUrl(redirectUri: string, params: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.append(k, v);
  return url.href;
}

/** An authorization response: what goes back to the client's redirect URI, and how (its response mode). */
export interface AuthorizationResponse {
  redirectUri: string;
  /** `code` or `error` (+ `error_description`), `state` when the request had one, `iss` (RFC 9207). */
  params: Record<string, string>;
  mode: ResponseMode;
}

function response(redirectUri: string, mode: ResponseMode, params: Record<string, string | undefined>): AuthorizationResponse {
  const defined = Object.fromEntries(Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined));
  return { redirectUri, params: defined, mode };
}

/** RFC 6749 §4.1.2.1 error response, with `iss` (RFC 9207 §2), in the request's response mode. */
export function errorResponse(ctx: OAuthContext, err: AuthorizationRedirectError): AuthorizationResponse {
  return response(err.redirectUri, err.responseMode, {
    error: err.oauthError.error,
    error_description: err.oauthError.description,
    state: err.state,
    iss: ctx.config.issuer,
  });
}

/** The user's refusal on the consent page: access_denied, redirected to the client (RFC 6749 §4.1.2.1). */
export function denied(req: AuthorizationRequest): AuthorizationRedirectError {
  return new AuthorizationRedirectError(new AccessDenied('the user denied the request'), req.redirectUri, req.state, req.responseMode);
}

/**
 * Issues an authorization code (256-bit, stored only as its SHA-256, 60 s,
 * bound to client, redirect_uri, challenge, scope, nonce, user and the
 * `dpop_jkt` key if one was named, RFC 9449 §10) and
 * returns the response carrying `code`, `state` and `iss` (RFC 9207).
 */
export async function issueCode(ctx: OAuthContext, req: AuthorizationRequest, signedIn: Authentication): Promise<AuthorizationResponse> {
  const { user, authTime } = signedIn;
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
    resource: storedResources(req.resources),
    nonce: req.nonce ?? null,
    claims: serializeClaimsRequest(req.claims),
    dpop_jkt: req.dpopJkt ?? null,
    auth_time: authTime,
    amr: signedIn.amr ?? null,
    acr: signedIn.acr ?? null,
    sid: signedIn.sid ?? null,
    created_at: now,
    expires_at: now + ctx.config.codeTtlSeconds * 1000,
  });
  return response(req.redirectUri, req.responseMode, { code, state: req.state, iss: ctx.config.issuer });
}

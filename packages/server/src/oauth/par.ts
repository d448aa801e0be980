/**
 * Pushed Authorization Requests (RFC 9126,
 * {@link https://www.rfc-editor.org/rfc/rfc9126}): a client sends the
 * authorization request to the server directly, authenticated as at the
 * token endpoint, and sends the browser to the authorization endpoint with
 * only `client_id` and the `request_uri` it got back, so the request's
 * parameters never travel through the browser and cannot be altered there.
 */

import { PAR_REQUEST_TTL_SECONDS } from '../config/defaults.js';
import { randomToken, sha256Hex } from '../util/crypto.js';
import { AuthorizationPageError, AuthorizationRedirectError } from './authorization-request.js';
import { requestQuery } from './authorization-query.js';
import { validatePushedParams } from './authorize.js';
import { authenticateClient } from './client-auth.js';
import type { OAuthContext } from './context.js';
import { validateDpopProof } from './dpop.js';
import { InvalidDpopProof, InvalidRequest, TemporarilyUnavailable } from './errors.js';
import { PUSHED_REQUEST_URI_PREFIX } from './pushed-request-uri.js';

/** Where clients push authorization requests (RFC 9126 §2). */
export const PAR_PATH = '/oauth/par';

/** RFC 9126 §2.2: the successful response. */
export interface PushedAuthorizationResponse {
  request_uri: string;
  expires_in: number;
}

/** The client authentication parameters (RFC 6749 §2.3.1), which are not part of the authorization request. */
const CLIENT_AUTH_PARAMS = new Set(['client_secret']);

/**
 * POST /oauth/par (RFC 9126 §2). The client authenticates as at the token
 * endpoint (§2, public clients by `client_id`); the request is validated as
 * the authorization endpoint would (§2.1), its errors answered as JSON in
 * the token endpoint's format (§2.3), a redirect_uri error included (never a
 * redirect: the client is the one asking). A `request_uri` inside the push
 * is invalid_request (§2.1). The stored request is the server's own
 * serialization of the validated one, under the SHA-256 of 256 random bits.
 * A DPoP proof sent with the push binds the code to its key, as `dpop_jkt`
 * would (RFC 9449 §10.1); with both, they must name the same key.
 */
export async function pushAuthorizationRequest(
  ctx: OAuthContext,
  params: Readonly<Record<string, string>>,
  authorization: string | undefined,
  clientIp: string,
  dpopHeader?: readonly string[] | undefined,
  resources: readonly string[] = [],
): Promise<PushedAuthorizationResponse> {
  const app = await authenticateClient(ctx, authorization, params, clientIp);
  if (params.request_uri !== undefined) throw new InvalidRequest('request_uri cannot be pushed (RFC 9126 §2.1)');
  const request = Object.fromEntries(Object.entries(params).filter(([name]) => !CLIENT_AUTH_PARAMS.has(name)));
  const proof = await validateDpopProof(ctx, {
    header: dpopHeader,
    method: 'POST',
    path: PAR_PATH,
    requireNonce: ctx.config.dpopNonce,
    resource: false,
  });
  if (proof) {
    if (request.dpop_jkt !== undefined && request.dpop_jkt !== proof.jkt) {
      throw new InvalidDpopProof('dpop_jkt and the DPoP proof name different keys (RFC 9449 §10.1)');
    }
    request.dpop_jkt = proof.jkt;
  }
  let validated;
  try {
    validated = await validatePushedParams(ctx, app, request, new Set(), resources);
  } catch (err) {
    if (err instanceof AuthorizationRedirectError) throw err.oauthError;
    if (err instanceof AuthorizationPageError) throw new InvalidRequest(err.description);
    throw err;
  }
  const admission = await ctx.limits.pushedAuthorization(clientIp, app);
  if (!admission.admitted) {
    throw new TemporarilyUnavailable('too many pushed authorization requests; retry later', admission.retryAfterSeconds, { status: 429 });
  }
  const random = randomToken(32);
  const now = ctx.config.now();
  await ctx.store.pushedRequests.insert(sha256Hex(random), {
    clientId: app.clientId,
    query: requestQuery(validated),
    createdAt: now,
    expiresAt: now + PAR_REQUEST_TTL_SECONDS * 1000,
  });
  return { request_uri: `${PUSHED_REQUEST_URI_PREFIX}${random}`, expires_in: PAR_REQUEST_TTL_SECONDS };
}

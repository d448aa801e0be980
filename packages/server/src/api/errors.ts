import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendErrorAnswer } from '../http/errors.js';
import { FormError } from '../http/form.js';
import { JsonBodyError } from '../http/json.js';
import { InvalidClientMetadata, InvalidRequest, OAuthError, STORE_UNAVAILABLE, ServerError } from '../oauth/errors.js';
import { isStoreUnavailable } from '../store/unavailable.js';

/**
 * Maps anything thrown in a JSON endpoint to an RFC 6749 §5.2 error; never
 * leaks internals. A store that failed or did not answer in time is a 503
 * the client may retry; any other unexpected error is a 500.
 */
export function toOAuthError(err: Error & { statusCode?: number; code?: string }): OAuthError {
  if (err instanceof OAuthError) return err;
  if (isStoreUnavailable(err)) return STORE_UNAVAILABLE;
  if (err instanceof FormError) return new InvalidRequest(err.message);
  if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return new InvalidRequest('the request body must be application/x-www-form-urlencoded');
  }
  if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return new InvalidRequest('the request body is too large', { status: 413 });
  }
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
    // Fastify's own messages can quote the request (a content type, a header): not echoed (RFC 6749 §5.2 text).
    return new InvalidRequest(`the request could not be read (HTTP ${err.statusCode})`, { status: err.statusCode });
  }
  return new ServerError('the server could not complete the request');
}

/**
 * The client registration endpoints' mapping (RFC 7591 §3.2.2): a body that
 * is not a JSON object of metadata (another content type, invalid JSON, too
 * large) is 400 invalid_client_metadata, 413 when too large, like every
 * other registration error, so a client reads one kind of answer; the rest as
 * {@link toOAuthError}.
 */
export function toRegistrationError(err: Error & { statusCode?: number; code?: string }): OAuthError {
  if (err instanceof JsonBodyError || err instanceof FormError || err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return new InvalidClientMetadata(err instanceof JsonBodyError ? err.message : 'the request body must be application/json');
  }
  if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new InvalidClientMetadata('the request body is too large', { status: 413 });
  return toOAuthError(err);
}

/**
 * A JSON endpoint context's error handler: maps what was thrown (with `map`),
 * logs store outages as warnings and other server errors with their stack,
 * and sends the error's own answer.
 */
export function apiErrorHandler(map: (err: Error & { statusCode?: number; code?: string }) => OAuthError = toOAuthError) {
  return async (err: Error & { statusCode?: number; code?: string }, req: FastifyRequest, reply: FastifyReply) => {
    const oauthErr = map(err);
    if (oauthErr === STORE_UNAVAILABLE) req.log.warn({ reqId: req.id, reason: err.message }, 'store unavailable');
    else if (oauthErr.status >= 500) req.log.error({ err, reqId: req.id }, 'request failed');
    return sendErrorAnswer(reply, oauthErr);
  };
}

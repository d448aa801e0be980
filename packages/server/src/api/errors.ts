import { FormError } from '../http/form.js';
import { InvalidRequest, OAuthError, STORE_UNAVAILABLE, ServerError } from '../oauth/errors.js';
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

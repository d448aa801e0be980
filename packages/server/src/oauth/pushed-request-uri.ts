/**
 * The request_uri of a pushed request (RFC 9126 §2.2, §4): the URN this
 * server hands out, the SHA-256 the request is stored by, and its one use.
 * par.ts makes them, authorize.ts opens them, and the answer to the request
 * (authorization-response.ts) uses them up.
 */
import { sha256Hex } from '../util/crypto.js';
import type { AuthorizationRequest } from './authorization-request.js';
import type { OAuthContext } from './context.js';

/** RFC 9126 §2.2: a pushed request's request_uri is this URN and 256 random bits (base64url). */
export const PUSHED_REQUEST_URI_PREFIX = 'urn:ietf:params:oauth:request_uri:';

/** The SHA-256 a pushed request is stored by, of a request_uri this server could have made; undefined for any other value. */
export function pushedRequestHash(requestUri: string): string | undefined {
  if (!requestUri.startsWith(PUSHED_REQUEST_URI_PREFIX)) return undefined;
  const random = requestUri.slice(PUSHED_REQUEST_URI_PREFIX.length);
  return /^[A-Za-z0-9_-]{43}$/.test(random) ? sha256Hex(random) : undefined;
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

import type { Store, Application } from '../store/store.js';
import { hashesEqual, sha256Hex } from '../util/crypto.js';
import { InvalidClient, InvalidRequest } from './errors.js';

/** The one answer to a client that did not authenticate (built once; its response is constant). */
const CLIENT_AUTHENTICATION_FAILED = new InvalidClient('client authentication failed');

/** The client credentials a request presented, before checking them (RFC 6749 §2.3). */
export interface PresentedClient {
  clientId: string;
  secret: string | undefined;
  method: 'client_secret_basic' | 'client_secret_post' | 'none';
}

function formDecode(s: string): string {
  // RFC 6749 §2.3.1: id and secret are form-urlencoded before Basic encoding.
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    throw new InvalidClient('malformed client credentials in the Authorization header');
  }
}

/** Reads client credentials from `Authorization: Basic` or the form body; rejects using two methods at once. */
export function presentedClient(authorization: string | undefined, params: Readonly<Record<string, string>>): PresentedClient {
  if (authorization !== undefined) {
    const m = /^Basic ([A-Za-z0-9+/]+={0,2})$/i.exec(authorization.trim());
    if (!m) throw new InvalidClient('only HTTP Basic client authentication is supported in the Authorization header');
    const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 1) throw new InvalidClient('malformed HTTP Basic credentials');
    const clientId = formDecode(decoded.slice(0, colon));
    const secret = formDecode(decoded.slice(colon + 1));
    if (params.client_secret !== undefined) {
      throw new InvalidRequest('use one client authentication method, not HTTP Basic and client_secret together');
    }
    if (params.client_id !== undefined && params.client_id !== clientId) {
      throw new InvalidRequest('client_id in the body differs from the authenticated client');
    }
    return { clientId, secret, method: 'client_secret_basic' };
  }
  const clientId = params.client_id;
  if (clientId === undefined || clientId === '') throw new InvalidClient('client authentication failed: no client_id', 'Basic');
  if (params.client_secret !== undefined) return { clientId, secret: params.client_secret, method: 'client_secret_post' };
  return { clientId, secret: undefined, method: 'none' };
}

/**
 * Authenticates the client of a token, device or revocation request:
 * confidential clients with `client_secret_basic` or `client_secret_post`
 * (secret compared as SHA-256 in constant time), public clients with
 * `client_id` alone (token_endpoint_auth_method `none`). A public client may
 * also send its id as HTTP Basic with an empty password, as oidc-agent
 * always does (`Basic base64(client_id:)`): that identifies it exactly like
 * `client_id` in the body and authenticates nothing. A confidential client
 * with an empty password is refused like any wrong secret.
 * @throws InvalidClient (401 with WWW-Authenticate) or InvalidRequest
 */
export async function authenticateClient(
  store: Store,
  authorization: string | undefined,
  params: Readonly<Record<string, string>>,
): Promise<Application> {
  const presented = presentedClient(authorization, params);
  const app = await store.applications.get(presented.clientId);
  // One answer for every failure: which client ids exist, and of which kind, is not for an unauthenticated caller
  // to learn (RFC 6749 §5.2 invalid_client covers them all).
  if (!app) throw CLIENT_AUTHENTICATION_FAILED;
  if (app.kind === 'public') {
    const identifiedOnly = presented.secret === undefined || (presented.method === 'client_secret_basic' && presented.secret === '');
    if (!identifiedOnly) throw CLIENT_AUTHENTICATION_FAILED;
    return app;
  }
  if (presented.secret === undefined) throw CLIENT_AUTHENTICATION_FAILED;
  if (!app.secretHash || !hashesEqual(sha256Hex(presented.secret), app.secretHash)) throw CLIENT_AUTHENTICATION_FAILED;
  return app;
}

import type { Application } from '../store/store.js';
import { hashesEqual, sha256Hex } from '../util/crypto.js';
import { verifyClientAssertion, type PresentedAssertion } from './client-assertion.js';
import type { OAuthContext } from './context.js';
import { InvalidClient, InvalidRequest, TemporarilyUnavailable } from './errors.js';
import { fapi2Problem } from './fapi2.js';

/** The one answer to a client that did not authenticate (built once; its response is constant). */
const CLIENT_AUTHENTICATION_FAILED = new InvalidClient('client authentication failed');

/** The client credentials a request presented, before checking them (RFC 6749 §2.3; RFC 7523 §2.2: an assertion). */
export type PresentedClient =
  | { clientId: string; secret: string | undefined; method: 'client_secret_basic' | 'client_secret_post' | 'none' }
  | ({ method: 'private_key_jwt' } & PresentedAssertion);

/** One method per request (RFC 6749 §2.3). */
const ONE_METHOD = 'use one client authentication method, not HTTP Basic, client_secret or client_assertion together';

function formDecode(s: string): string {
  // RFC 6749 §2.3.1: id and secret are form-urlencoded before Basic encoding. Most have nothing encoded.
  if (s.indexOf('%') === -1 && s.indexOf('+') === -1) return s;
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    throw new InvalidClient('malformed client credentials in the Authorization header');
  }
}

/** Reads client credentials from `Authorization: Basic` or the form body; rejects using two methods at once. */
export function presentedClient(authorization: string | undefined, params: Readonly<Record<string, string>>): PresentedClient {
  if (params.client_assertion !== undefined || params.client_assertion_type !== undefined) {
    if (authorization !== undefined || params.client_secret !== undefined) throw new InvalidRequest(ONE_METHOD);
    return {
      method: 'private_key_jwt',
      assertionType: params.client_assertion_type,
      assertion: params.client_assertion,
      clientId: params.client_id,
    };
  }
  if (authorization !== undefined) {
    const m = /^Basic ([A-Za-z0-9+/]+={0,2})$/i.exec(authorization.trim());
    if (!m) throw new InvalidClient('only HTTP Basic client authentication is supported in the Authorization header');
    const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 1) throw new InvalidClient('malformed HTTP Basic credentials');
    const clientId = formDecode(decoded.slice(0, colon));
    const secret = formDecode(decoded.slice(colon + 1));
    if (params.client_secret !== undefined) {
      throw new InvalidRequest(ONE_METHOD);
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
 * Authenticates the client of a token, introspection, revocation, PAR or
 * device authorization request: confidential clients with
 * `client_secret_basic` or `client_secret_post` (secret compared as SHA-256
 * in constant time), public clients with `client_id` alone
 * (token_endpoint_auth_method `none`). A public client may also send its id
 * as HTTP Basic with an empty password, as oidc-agent always does
 * (`Basic base64(client_id:)`): that identifies it exactly like `client_id`
 * in the body and authenticates nothing. A confidential client with an empty
 * password is refused like any wrong secret. A client with registered keys
 * authenticates with `private_key_jwt` only (client-assertion.ts), never a
 * secret.
 *
 * A secret or an assertion that does not authenticate counts against
 * `client-auth-ip` of the caller's address (oauth/limits.ts); past it every
 * secret and assertion from there is answered 429 before it is checked, the
 * right one too.
 * @throws InvalidClient (401 with WWW-Authenticate), InvalidRequest, or TemporarilyUnavailable (429)
 */
export async function authenticateClient(
  ctx: Pick<OAuthContext, 'store' | 'limits' | 'config' | 'clientJwks'>,
  authorization: string | undefined,
  params: Readonly<Record<string, string>>,
  clientIp: string,
): Promise<Application> {
  // One async function on the common path (a secret from an address with no failure known, a client found in the
  // lookup cache): the gate and the lookup answer synchronously then, and are awaited only when they did not.
  const presented = presentedClient(authorization, params);
  let app: Application | undefined;
  if (presented.method === 'private_key_jwt') app = await byAssertion(ctx, presented, clientIp);
  else {
    const { clientId, secret } = presented;
    // One answer for every failure: which client ids exist, and of which kind, is not for an unauthenticated caller
    // to learn (RFC 6749 §5.2 invalid_client covers them all).
    if (secret === undefined || (presented.method === 'client_secret_basic' && secret === '')) {
      // A client that only names itself: nothing to guess, nothing counted.
      app = ctx.store.applications.cached(clientId) ?? (await ctx.store.applications.get(clientId));
      if (app?.kind !== 'public') throw CLIENT_AUTHENTICATION_FAILED;
    } else {
      const pending = ctx.limits.clientSecret(clientIp);
      const gate = pending instanceof Promise ? await pending : pending;
      if (!gate.admitted) throw tooManyFailures(gate.retryAfterSeconds);
      app = ctx.store.applications.cached(clientId) ?? (await ctx.store.applications.get(clientId));
      if (!(app?.kind === 'confidential' && !app.clientKeys && app.secretHash && hashesEqual(sha256Hex(secret), app.secretHash))) {
        const counted = await gate.failed();
        if (!counted.admitted) throw tooManyFailures(counted.retryAfterSeconds);
        throw CLIENT_AUTHENTICATION_FAILED;
      }
    }
  }
  // FAPI 2.0 (AUTHCLI_FAPI2=on): an application the profile forbids (public, a secret, RS256 ID tokens) gets no
  // token, whatever it was registered with before the mode was turned on; said only once it has authenticated.
  const problem = ctx.config.fapi2 ? fapi2Problem(app) : undefined;
  if (problem) throw new InvalidClient(problem);
  return app;
}

/** private_key_jwt: gated and counted as a secret is; every failure is invalid_client with its own description. */
async function byAssertion(
  ctx: Pick<OAuthContext, 'store' | 'limits' | 'config' | 'clientJwks'>,
  presented: PresentedAssertion,
  clientIp: string,
): Promise<Application> {
  const gate = await ctx.limits.clientSecret(clientIp);
  if (!gate.admitted) throw tooManyFailures(gate.retryAfterSeconds);
  try {
    return await verifyClientAssertion(ctx, presented);
  } catch (err) {
    if (!(err instanceof InvalidClient)) throw err;
    const counted = await gate.failed();
    if (!counted.admitted) throw tooManyFailures(counted.retryAfterSeconds);
    throw err;
  }
}

const tooManyFailures = (retryAfterSeconds: number) =>
  new TemporarilyUnavailable('too many failed client authentications from this address; retry later', retryAfterSeconds, {
    status: 429,
  });

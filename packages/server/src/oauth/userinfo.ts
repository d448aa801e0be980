import { verifyAccessToken } from './access-token.js';
import type { OAuthContext } from './context.js';
import { InsufficientScope, InvalidRequest } from './errors.js';
import { standardClaims } from './claims.js';
import { CLAIM_SCOPE_NAMES, pickClaims, storedClaimsRequest } from './claims-request.js';

/** Where a userinfo request carried its credentials. */
export interface UserinfoRequest {
  /** The Authorization header, if any. */
  authorization: string | undefined;
  /** The `access_token` parameter of a form-encoded POST body (RFC 6750 §2.2), if one was sent. */
  bodyToken: string | undefined;
  /** The body named `access_token` more than once. */
  bodyTokenRepeated: boolean;
  /** An `access_token` query parameter was sent (RFC 6750 §2.3). */
  tokenInQuery: boolean;
}

/** RFC 6750 §2.1: `b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`. */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * The UserInfo answer (OIDC Core §5.3) for a Bearer access token in the
 * Authorization header (RFC 6750 §2.1) or in a form-encoded POST body
 * (§2.2), never in the query string (§2.3 is not supported: URLs end up in
 * logs): `sub` and the claims of the token's scopes. A request must use one
 * method only (§2). Undefined when the request carries no credentials at
 * all: RFC 6750 §3.1 answers that with the bare challenge. Errors (RFC 6750
 * §3) are thrown as OAuthError.
 */
export async function userinfo(ctx: OAuthContext, req: UserinfoRequest): Promise<Record<string, unknown> | undefined> {
  const { authorization, bodyToken, bodyTokenRepeated, tokenInQuery } = req;
  if (authorization === undefined && bodyToken === undefined && !tokenInQuery) return undefined;
  if (tokenInQuery) throw new InvalidRequest('the access token must not be sent in the query string');
  if (authorization !== undefined && bodyToken !== undefined) {
    throw new InvalidRequest('send the access token by one method only: the Authorization header or the request body');
  }
  let token: string;
  if (bodyToken !== undefined) {
    if (bodyTokenRepeated) throw new InvalidRequest('the access_token parameter is repeated');
    if (!B64TOKEN.test(bodyToken)) throw new InvalidRequest('the access_token parameter is not a bearer token');
    token = bodyToken;
  } else {
    const m = /^Bearer (\S+)$/i.exec(authorization!.trim());
    if (!m || !B64TOKEN.test(m[1]!)) throw new InvalidRequest("the Authorization header must be 'Bearer <token>'");
    token = m[1]!;
  }
  const { payload, user, grant } = await verifyAccessToken(ctx, token);
  const scopes = payload.scope.split(' ');
  if (!scopes.includes('openid')) throw new InsufficientScope('userinfo needs the openid scope', 'openid');
  // OIDC Core §5.4 the claims of the granted scopes, and §5.5 those the sign-in's claims request named here.
  const named = pickClaims(standardClaims(user, CLAIM_SCOPE_NAMES), storedClaimsRequest(grant.claims)?.userinfo);
  return { sub: user.id, ...standardClaims(user, scopes), ...named };
}

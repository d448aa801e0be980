import { verifyAccessToken } from './access-token.js';
import type { OAuthContext } from './context.js';
import { InsufficientScope, InvalidRequest } from './errors.js';
import { standardClaims } from './claims.js';

/** Where a userinfo request carried its credentials. */
export interface UserinfoRequest {
  /** The Authorization header, if any. */
  authorization: string | undefined;
  /** An `access_token` form parameter was sent (RFC 6750 §2.2). */
  tokenInBody: boolean;
  /** An `access_token` query parameter was sent (RFC 6750 §2.3). */
  tokenInQuery: boolean;
}

/**
 * The UserInfo answer (OIDC Core §5.3) for a Bearer access token in the
 * Authorization header (RFC 6750 §2.1): `sub` and the claims of the token's
 * scopes. Undefined when the request carries no credentials at all: RFC 6750
 * §3.1 answers that with the bare challenge. Errors (RFC 6750 §3) are thrown
 * as OAuthError.
 */
export async function userinfo(ctx: OAuthContext, req: UserinfoRequest): Promise<Record<string, unknown> | undefined> {
  const { authorization, tokenInBody, tokenInQuery } = req;
  if (authorization === undefined && !tokenInBody && !tokenInQuery) return undefined;
  if (tokenInBody || tokenInQuery) throw new InvalidRequest('send the access token in the Authorization header');
  const m = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/i.exec(authorization?.trim() ?? '');
  if (!m) throw new InvalidRequest('the Authorization header must be "Bearer <token>"');
  const { payload, user } = await verifyAccessToken(ctx, m[1]!);
  const scopes = payload.scope.split(' ');
  if (!scopes.includes('openid')) throw new InsufficientScope('userinfo needs the openid scope', 'openid');
  return { sub: user.id, ...standardClaims(user, scopes) };
}

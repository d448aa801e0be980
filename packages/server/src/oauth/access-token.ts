import { errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { OAuthContext } from './context.js';
import type { Grant, User } from '../store/store.js';
import { InvalidToken } from './errors.js';

/** The claims of an access token issued here; `gid` names the grant of a person's, and an application's own has none. */
export type AccessTokenClaims = JWTPayload & {
  client_id: string;
  scope: string;
  jti: string;
  gid?: string;
  sub: string;
  aud: string;
  cnf?: { jkt?: unknown };
};

export interface VerifiedAccessToken {
  payload: AccessTokenClaims & { gid: string };
  user: User;
  /** The grant (sign-in) the token belongs to. */
  grant: Grant;
}

/**
 * Which tokens an endpoint takes: `issuer`, those for this server itself (UserInfo: `aud` the issuer), or
 * `any` it issued, an API's included (introspection and revocation answer for every token, RFC 7662, 7009).
 */
export type AcceptedAudience = 'issuer' | 'any';

/**
 * Verifies an access token issued here (RFC 9068 §4): signature against our
 * published keys, `typ` at+jwt, issuer, audience, expiry; then that neither
 * the token (RFC 7009) nor its grant has been revoked and that the account
 * is still enabled.
 * @throws InvalidToken
 */
export async function verifyAccessToken(
  ctx: OAuthContext,
  token: string,
  audience: AcceptedAudience = 'issuer',
): Promise<VerifiedAccessToken> {
  return personToken(ctx, await verifyAccessTokenJwt(ctx, token, audience));
}

/**
 * The revocation checks of a person's access token whose JWT verified (verifyAccessTokenJwt): the token, its grant,
 * the account. An application's own token (no grant) is refused here.
 * @throws InvalidToken
 */
export async function personToken(ctx: OAuthContext, payload: AccessTokenClaims): Promise<VerifiedAccessToken> {
  if (payload.gid === undefined) throw new InvalidToken("the access token is an application's own, not a person's");
  if (await ctx.store.grants.isAccessTokenRevoked(payload.jti)) throw new InvalidToken('the access token has been revoked');
  const grant = await ctx.store.grants.find(payload.gid);
  if (!grant || grant.revoked_at !== null) throw new InvalidToken('the access token has been revoked');
  const user = await ctx.store.users.findById(payload.sub);
  if (!user || user.disabled_at !== null) throw new InvalidToken('the account is disabled or no longer exists');
  return { payload: payload as VerifiedAccessToken['payload'], user, grant };
}

/**
 * An application's own access token (client credentials, RFC 6749 §4.4), verified: not revoked, and the
 * application still registered. Undefined for a person's token (verifyAccessToken).
 * @throws InvalidToken
 */
export async function verifyClientAccessToken(ctx: OAuthContext, payload: AccessTokenClaims): Promise<AccessTokenClaims | undefined> {
  if (payload.gid !== undefined) return undefined;
  if (await ctx.store.grants.isAccessTokenRevoked(payload.jti)) throw new InvalidToken('the access token has been revoked');
  if (!(await ctx.store.applications.get(payload.client_id))) throw new InvalidToken('the application no longer exists');
  return payload;
}

/** The JWT checks alone (RFC 9068 §4), without looking at revocation. */
export async function verifyAccessTokenJwt(
  ctx: OAuthContext,
  token: string,
  audience: AcceptedAudience = 'issuer',
): Promise<AccessTokenClaims> {
  let payload: AccessTokenClaims;
  try {
    ({ payload } = (await jwtVerify(token, await ctx.keys.verificationKeys(), {
      issuer: ctx.config.issuer,
      ...(audience === 'issuer' && { audience: ctx.config.issuer }),
      typ: 'at+jwt',
      algorithms: ['ES256', 'RS256'],
      currentDate: new Date(ctx.config.now()),
      requiredClaims: ['sub', 'jti', 'client_id', 'exp', 'iat'],
    })) as { payload: AccessTokenClaims });
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired) throw new InvalidToken('the access token has expired');
    if (err instanceof joseErrors.JOSEError || err instanceof TypeError) throw new InvalidToken('the access token is invalid');
    throw err;
  }
  if (typeof payload.scope !== 'string' || typeof payload.aud !== 'string') throw new InvalidToken('the access token is invalid');
  // A person's token names its grant; an application's own (client credentials) has none, and its subject is itself.
  // A CI workload's (token exchange) names the upstream subject, and its policy as `workload`.
  const own = payload.gid === undefined && (payload.sub === payload.client_id || typeof payload.workload === 'string');
  if (typeof payload.gid !== 'string' && !own) {
    throw new InvalidToken('the access token is invalid');
  }
  return payload;
}

/** RFC 9449 §6.1: the JWK thumbprint a verified access token is bound to (`cnf.jkt`), or undefined for a Bearer token. */
export function boundJkt(payload: AccessTokenClaims): string | undefined {
  const jkt = payload.cnf?.jkt;
  return typeof jkt === 'string' ? jkt : undefined;
}

import { PRESENTED_SECRET_MAX, PRESENTED_TOKEN_MAX } from '../config/defaults.js';
import type { OAuthContext } from './context.js';
import type { Application } from '../store/store.js';
import { sha256Hex } from '../util/crypto.js';
import { type AccessTokenClaims, boundJkt, personToken, verifyAccessTokenJwt, verifyClientAccessToken } from './access-token.js';
import { authenticateClient } from './client-auth.js';
import { InvalidClient, InvalidRequest, InvalidToken } from './errors.js';

/** RFC 7662 §2.2: the whole answer for a token that is not active, or that this caller may not see. */
const INACTIVE = Object.freeze({ active: false });

/** RFC 7662 §2.2: the introspection response. */
export type Introspection = Record<string, unknown> & { active: boolean };

/**
 * Whether `caller` may see a token issued to `clientId` (RFC 7662 §2.1 leaves
 * the rule to the server), by the caller's introspection setting: its own
 * tokens; those of every application of the same dashboard user (a resource
 * server beside its apps; an application no user owns has no such siblings);
 * or every token.
 */
async function mayIntrospect(ctx: OAuthContext, caller: Application, clientId: string): Promise<boolean> {
  if (clientId === caller.clientId || caller.introspection === 'all') return true;
  if (caller.introspection !== 'owner' || caller.ownerId === null) return false;
  const issuedTo = await ctx.store.applications.get(clientId);
  return issuedTo !== undefined && issuedTo.ownerId === caller.ownerId;
}

/** An access token issued here (RFC 9068), verified and still valid, or undefined. */
async function introspectAccessToken(ctx: OAuthContext, client: Application, token: string): Promise<Introspection | undefined> {
  if (token.split('.').length !== 3) return undefined;
  let payload: AccessTokenClaims;
  let username: string | undefined;
  try {
    payload = await verifyAccessTokenJwt(ctx, token, 'any');
    // A person's token (its grant and account still live), or an application's own (client credentials).
    if (payload.gid === undefined) await verifyClientAccessToken(ctx, payload);
    else username = (await personToken(ctx, payload)).user.username;
  } catch (err) {
    if (err instanceof InvalidToken) return undefined;
    throw err;
  }
  const jkt = boundJkt(payload);
  // A token the caller may not see is answered as inactive, exactly as an unknown one (§2.2): nothing tells it the token exists.
  if (!(await mayIntrospect(ctx, client, payload.client_id))) return undefined;
  return {
    active: true,
    scope: payload.scope,
    client_id: payload.client_id,
    ...(username !== undefined && { username }),
    // RFC 9449 §6.2: a DPoP-bound token is introspected with its type and the key's thumbprint.
    token_type: jkt !== undefined ? 'DPoP' : 'Bearer',
    ...(jkt !== undefined && { cnf: { jkt } }),
    exp: payload.exp,
    iat: payload.iat,
    nbf: payload.nbf ?? payload.iat,
    sub: payload.sub,
    aud: payload.aud,
    iss: payload.iss,
    jti: payload.jti,
    // A CI workload's token (RFC 8693): the trust policy and the CI provider its subject is of.
    ...(typeof payload.workload === 'string' && { workload: payload.workload, upstream_iss: payload.upstream_iss }),
  };
}

/**
 * A refresh token (stored as its SHA-256), active while its grant is neither
 * revoked nor expired, it has not been rotated, and the account is enabled:
 * exactly when the refresh grant would accept it.
 */
async function introspectRefreshToken(ctx: OAuthContext, client: Application, token: string): Promise<Introspection | undefined> {
  if (token.length > PRESENTED_SECRET_MAX) return undefined;
  const row = await ctx.store.grants.findRefreshToken(sha256Hex(token));
  if (!row) return undefined;
  const grant = await ctx.store.grants.find(row.grant_id);
  if (!grant || !(await mayIntrospect(ctx, client, grant.client_id))) return undefined;
  const now = ctx.config.now();
  if (grant.revoked_at !== null || row.used_at !== null || now >= row.expires_at || now >= grant.expires_at) return undefined;
  const user = await ctx.store.users.findById(grant.user_id);
  if (!user || user.disabled_at !== null) return undefined;
  // No token_type: RFC 7662 §2.2 defines it as the access token type of RFC 6749 §5.1, which a refresh token has not.
  return {
    active: true,
    scope: grant.scope,
    client_id: grant.client_id,
    username: user.username,
    exp: Math.floor(Math.min(row.expires_at, grant.expires_at) / 1000),
    iat: Math.floor(row.created_at / 1000),
    sub: user.id,
    iss: ctx.config.issuer,
  };
}

/**
 * POST /oauth/introspect (RFC 7662). Only confidential clients, authenticated
 * as at the token endpoint, may ask (§2.1), about the tokens their
 * introspection setting covers (by default their own; see mayIntrospect): a
 * token that is unknown, expired, revoked, rotated, of a disabled account or
 * outside that setting is `{"active":false}` alike (§2.2), so the answer
 * never tells another client that a token exists. Public clients get
 * invalid_client (§2.3), described exactly like every other failed
 * authentication, so the answer does not tell which client ids are public.
 */
export async function introspect(
  ctx: OAuthContext,
  params: Readonly<Record<string, string>>,
  authorization: string | undefined,
  clientIp: string,
): Promise<Introspection> {
  const client = await authenticateClient(ctx, authorization, params, clientIp);
  if (client.kind !== 'confidential') throw new InvalidClient('client authentication failed');
  const token = params.token;
  if (token === undefined || token === '') throw new InvalidRequest('token is missing');
  if (token.length > PRESENTED_TOKEN_MAX) return INACTIVE;
  // token_type_hint only orders the look-ups (§2.1: a server that does not find the token by the hint MUST look further).
  const order =
    params.token_type_hint === 'refresh_token'
      ? [introspectRefreshToken, introspectAccessToken]
      : [introspectAccessToken, introspectRefreshToken];
  for (const look of order) {
    const found = await look(ctx, client, token);
    if (found) return found;
  }
  return INACTIVE;
}

import type { ServerConfig } from '../config/config.js';
import type { Application, Grant, RefreshToken } from '../store/store.js';
import { randomToken, sha256Hex, timeOrderedId } from '../util/crypto.js';

/** How a grant came about, for deciding whether it gets a refresh token. */
export type GrantOrigin = { kind: 'device' } | { kind: 'code'; nativeLoopback: boolean };

/**
 * Refresh tokens go to applications allowed the refresh_token grant, for
 * device logins and public native (loopback) logins, and whenever
 * `offline_access` was requested and allowed (OIDC Core §11).
 */
export function wantsRefreshToken(app: Application, scopes: readonly string[], origin: GrantOrigin): boolean {
  if (!app.grantTypes.includes('refresh_token')) return false;
  if (scopes.includes('offline_access')) return true;
  return origin.kind === 'device' || (origin.nativeLoopback && app.kind === 'public');
}

/** A fresh refresh token of a family (grant); it lives no longer than the grant's absolute lifetime. */
export function newRefreshToken(grant: Grant, now: number): { token: string; row: RefreshToken } {
  const token = randomToken(32);
  return { token, row: { token_hash: sha256Hex(token), grant_id: grant.id, created_at: now, expires_at: grant.expires_at, used_at: null } };
}

/** A new grant row: the family every token of one sign-in belongs to. */
export function newGrant(
  config: ServerConfig,
  input: { clientId: string; userId: string; scope: string; claims?: string | null; authTime: number },
  now: number,
): Grant {
  return {
    id: timeOrderedId(now),
    client_id: input.clientId,
    user_id: input.userId,
    scope: input.scope,
    claims: input.claims ?? null,
    auth_time: input.authTime,
    created_at: now,
    expires_at: now + config.grantTtlSeconds * 1000,
    revoked_at: null,
  };
}

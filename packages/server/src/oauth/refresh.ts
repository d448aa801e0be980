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

/**
 * The DPoP key a new grant's refresh tokens are bound to: a public client's
 * proof key (RFC 9449 §5: a public client's refresh tokens MUST be bound);
 * a confidential client's refresh tokens are not, as it authenticates.
 * https://www.rfc-editor.org/rfc/rfc9449#section-5
 */
export function refreshBinding(app: Application, dpop: { jkt: string } | undefined): string | undefined {
  return app.kind === 'public' ? dpop?.jkt : undefined;
}

/** A new grant row: the family every token of one sign-in belongs to. */
export function newGrant(
  config: ServerConfig,
  input: {
    clientId: string;
    userId: string;
    scope: string;
    claims?: string | null;
    authTime: number;
    amr?: string | null | undefined;
    acr?: string | null | undefined;
    dpopJkt?: string | undefined;
    /** The browser session whose code it redeems (Back-Channel Logout §2.1); none for a device's grant. */
    sid?: string | null | undefined;
    /** The resources it covers, as stored (oauth/resources.ts); none for OpenID Connect scopes alone. */
    resource?: string | null | undefined;
    /** The application's own sign-in lifetime (seconds); the server's when null. */
    ttlSeconds: number | null;
  },
  now: number,
): Grant {
  return {
    id: timeOrderedId(now),
    client_id: input.clientId,
    user_id: input.userId,
    scope: input.scope,
    resource: input.resource ?? null,
    claims: input.claims ?? null,
    auth_time: input.authTime,
    created_at: now,
    expires_at: now + (input.ttlSeconds ?? config.grantTtlSeconds) * 1000,
    revoked_at: null,
    dpop_jkt: input.dpopJkt ?? null,
    amr: input.amr ?? null,
    acr: input.acr ?? null,
    sid: input.sid ?? null,
  };
}

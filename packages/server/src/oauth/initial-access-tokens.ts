/**
 * Initial access tokens (RFC 7591 §3) for AUTHCLI_REGISTRATION=token, on the
 * operator's side: made by `authcli-server registration token create` and
 * listed by `registration token list`. Registration itself checks and uses
 * them up (dynamic-registration.ts `registerClient`).
 */
import { INITIAL_ACCESS_TOKEN_TTL_MAX_SECONDS } from '../config/defaults.js';
import type { InitialAccessToken, Store } from '../store/store.js';
import { randomHex, randomToken, sha256Hex } from '../util/crypto.js';
import { InputError } from '../util/input-error.js';

/** A new initial access token, shown once. */
export interface NewInitialAccessToken {
  id: string;
  token: string;
  expiresAt: number;
}

/**
 * Creates an initial access token (RFC 7591 §3) for AUTHCLI_REGISTRATION=token
 * (`authcli-server registration token create`): 256 random bits, stored as
 * their SHA-256, good for one registration until it expires.
 */
export async function createInitialAccessToken(store: Store, expiresInSeconds: number, now: number): Promise<NewInitialAccessToken> {
  if (!Number.isInteger(expiresInSeconds) || expiresInSeconds < 1 || expiresInSeconds > INITIAL_ACCESS_TOKEN_TTL_MAX_SECONDS) {
    throw new InputError(`--expires-in must be a whole number of seconds from 1 to ${INITIAL_ACCESS_TOKEN_TTL_MAX_SECONDS}`);
  }
  const token = randomToken(32);
  const id = randomHex(8);
  const expiresAt = now + expiresInSeconds * 1000;
  await store.initialAccessTokens.create({ id, tokenHash: sha256Hex(token), createdAt: now, expiresAt });
  return { id, token, expiresAt };
}

/** What became of an initial access token, as `registration token list` shows it. */
export function initialAccessTokenState(t: InitialAccessToken, now: number): 'active' | 'used' | 'revoked' | 'expired' {
  if (t.usedAt !== null) return 'used';
  if (t.revokedAt !== null) return 'revoked';
  return now >= t.expiresAt ? 'expired' : 'active';
}

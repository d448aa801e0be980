import type { Kysely } from 'kysely';
import {
  BACKCHANNEL_LOGOUT_KEPT_MS,
  INITIAL_ACCESS_TOKENS_KEPT_MS,
  RATE_LIMIT_ROWS_KEPT_MS,
  REPLAY_EVIDENCE_MS,
} from '../config/defaults.js';
import type { Database } from './schema.js';

/**
 * Deletes what has expired in every table: sessions, revoked-access-token
 * records, grants (with their refresh tokens), continuations at expiry;
 * codes and device authorizations only {@link REPLAY_EVIDENCE_MS} after it,
 * so that a late replay still finds its row; rate-limit counters
 * {@link RATE_LIMIT_ROWS_KEPT_MS} after their window began; initial access
 * tokens {@link INITIAL_ACCESS_TOKENS_KEPT_MS} after expiry (the operator
 * still sees what became of them); pushed authorization requests at expiry;
 * DPoP proof `jti`s once their `iat` is out of the window (RFC 9449 §11.1:
 * such a proof is refused anyway) and client assertion `jti`s at the
 * assertion's expiry (RFC 7523 §3). Sign-in records are audit rows, kept for
 * the audit trail's retention (Store.purgeExpired).
 */
export async function purgeExpired(db: Kysely<Database>, now: number): Promise<void> {
  await db.deleteFrom('sessions').where('expires_at', '<=', now).execute();
  // Keep codes for a while past expiry: a late replay still finds the row and revokes its grant.
  await db
    .deleteFrom('authorization_codes')
    .where('expires_at', '<=', now - REPLAY_EVIDENCE_MS)
    .execute();
  await db
    .deleteFrom('device_authorizations')
    .where('expires_at', '<=', now - REPLAY_EVIDENCE_MS)
    .execute();
  await db.deleteFrom('revoked_access_tokens').where('expires_at', '<=', now).execute();
  await db
    .deleteFrom('rate_limits')
    .where('window_start', '<=', now - RATE_LIMIT_ROWS_KEPT_MS)
    .execute();
  // Expired grants take their refresh tokens with them (ON DELETE CASCADE).
  await db.deleteFrom('grants').where('expires_at', '<=', now).execute();
  // Sign-in continuations: nothing to keep once expired, a late use goes to `/` anyway.
  await db.deleteFrom('continuations').where('expires_at', '<=', now).execute();
  // WebAuthn challenges: a ceremony not finished in time cannot be finished.
  await db.deleteFrom('webauthn_challenges').where('expires_at', '<=', now).execute();
  // A round trip to an upstream that did not come back in time cannot come back.
  await db.deleteFrom('connector_states').where('expires_at', '<=', now).execute();
  // Pushed authorization requests (RFC 9126): nothing to keep once expired, a late use is refused alike.
  await db.deleteFrom('pushed_requests').where('expires_at', '<=', now).execute();
  await db
    .deleteFrom('initial_access_tokens')
    .where('expires_at', '<=', now - INITIAL_ACCESS_TOKENS_KEPT_MS)
    .execute();
  await db.deleteFrom('dpop_proofs').where('expires_at', '<=', now).execute();
  // Client assertions (RFC 7523): one past its exp is refused anyway.
  await db.deleteFrom('client_assertions').where('expires_at', '<=', now).execute();
  // CI tokens exchanged (RFC 8693): one past its exp is refused anyway.
  await db.deleteFrom('subject_tokens').where('expires_at', '<=', now).execute();
  // Logout deliveries delivered or given up: kept a while for `authcli-server logouts`; pending ones never.
  await db
    .deleteFrom('logout_outbox')
    .where('finished_at', '<=', now - BACKCHANNEL_LOGOUT_KEPT_MS)
    .execute();
}

import { hash } from 'node:crypto';
import type { Engine } from '../engine.js';
import type { NewSession, Session, User } from '../schema.js';

export type { Session } from '../schema.js';

/**
 * The session ID of a session (OpenID Connect Back-Channel Logout 1.0 §2.1, the `sid` claim): its own random
 * one, or for a session made before sessions had one, one derived from its id hash by SHA-256 under a label of
 * its own (the id hash, which opens nothing by itself, cannot be found from it either).
 */
export function sidOf(session: Pick<Session, 'sid' | 'id_hash'>): string {
  return session.sid ?? hash('sha256', `authcli session id\0${session.id_hash}`, 'base64url');
}

/** Browser sessions, stored by the cookie value's SHA-256 only. */
export interface Sessions {
  create(session: NewSession): Promise<void>;
  /** The live session with this id hash, with its (enabled) user. */
  find(idHash: string, now: number): Promise<{ session: Session; user: User } | undefined>;
  /** Deletes a session; the row it deleted, if there was one (live or not). */
  delete(idHash: string): Promise<Session | undefined>;
}

/** {@link Sessions} on Kysely. */
export class KyselySessions implements Sessions {
  constructor(private readonly engine: Engine) {}

  async create(session: NewSession): Promise<void> {
    await this.engine.db.insertInto('sessions').values(session).execute();
  }

  async find(idHash: string, now: number): Promise<{ session: Session; user: User } | undefined> {
    const row = await this.engine.db
      .selectFrom('sessions')
      .innerJoin('users', 'users.id', 'sessions.user_id')
      .selectAll('sessions')
      .select([
        'users.id as u_id',
        'users.username as u_username',
        'users.password_hash as u_password_hash',
        'users.claims as u_claims',
        'users.claims_updated_at as u_claims_updated_at',
        'users.is_admin as u_is_admin',
        'users.disabled_at as u_disabled_at',
        'users.created_at as u_created_at',
      ])
      .where('sessions.id_hash', '=', idHash)
      .where('sessions.expires_at', '>', now)
      .where('users.disabled_at', 'is', null)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      session: {
        id_hash: row.id_hash,
        user_id: row.user_id,
        auth_time: row.auth_time,
        created_at: row.created_at,
        expires_at: row.expires_at,
        amr: row.amr,
        acr: row.acr,
        sid: sidOf(row),
      },
      user: {
        id: row.u_id,
        username: row.u_username,
        password_hash: row.u_password_hash,
        claims: row.u_claims,
        claims_updated_at: row.u_claims_updated_at,
        is_admin: row.u_is_admin,
        disabled_at: row.u_disabled_at,
        created_at: row.u_created_at,
      },
    };
  }

  async delete(idHash: string): Promise<Session | undefined> {
    return this.engine.db.deleteFrom('sessions').where('id_hash', '=', idHash).returningAll().executeTakeFirst();
  }
}

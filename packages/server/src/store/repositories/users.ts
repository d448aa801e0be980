import { sql } from 'kysely';
import { CLAIMS_UPDATE_ATTEMPTS } from '../../config/defaults.js';
import type { Engine } from '../engine.js';
import { isUniqueViolation, StoreError } from '../errors.js';
import { Prepared } from '../prepared.js';
import type { NewUser, User } from '../schema.js';
import { sidOf } from './sessions.js';

export type { NewUser, User } from '../schema.js';

/** The structured address claim (OIDC Core §5.1.1). */
export interface AddressClaim {
  formatted?: string;
  street_address?: string;
  locality?: string;
  region?: string;
  postal_code?: string;
  country?: string;
}

/**
 * The standard claims a user has (OIDC Core §5.1) besides `sub` (the user id),
 * `preferred_username` (the username) and `updated_at` (kept by the store):
 * only those that are set, never an empty string or null. What each may hold
 * is checked in oauth/claims.ts before it reaches the store.
 */
export interface UserClaims {
  name?: string;
  given_name?: string;
  family_name?: string;
  middle_name?: string;
  nickname?: string;
  profile?: string;
  picture?: string;
  website?: string;
  email?: string;
  email_verified?: boolean;
  gender?: string;
  birthdate?: string;
  zoneinfo?: string;
  locale?: string;
  phone_number?: string;
  phone_number_verified?: boolean;
  address?: AddressClaim;
}

/** A user's claims, read from their JSON column. */
export function claimsOf(user: Pick<User, 'claims'>): UserClaims {
  return JSON.parse(user.claims) as UserClaims;
}

/** The JSON the claims column holds: keys sorted at every level, so equal claims are equal text. */
export function serializeClaims(claims: UserClaims): string {
  const sorted = (o: object): Record<string, unknown> =>
    Object.fromEntries(
      Object.entries(o)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => [k, v !== null && typeof v === 'object' ? sorted(v as object) : v]),
    );
  return JSON.stringify(sorted(claims));
}

/** The people who sign in. Usernames are unique without regard to (ASCII) case. */
export interface Users {
  /** Creates a user; `duplicate` when the username is taken. */
  create(user: NewUser): Promise<User>;
  findById(id: string): Promise<User | undefined>;
  /** Matched without regard to (ASCII) case: the `users_username_lower` index serves this. */
  findByUsername(username: string): Promise<User | undefined>;
  /** Every user, oldest first (`users list`). */
  list(): Promise<User[]>;
  count(): Promise<number>;
  /** Makes a user an administrator of the dashboard and admin API, or not. */
  setAdmin(userId: string, admin: boolean): Promise<void>;
  /** Deletes a user and, by the foreign keys' cascades, their sessions, grants, passkeys and links; their applications stay, the operator's. */
  delete(userId: string): Promise<boolean>;
  /** Disables (a time) or enables (null) a user; `not_found` when there is none. */
  setDisabled(username: string, disabledAt: number | null): Promise<void>;
  /**
   * Replaces a user's password hash: a reset, or (with `replacing`) an upgrade
   * to current parameters that applies only if the hash is still the one that
   * was checked, so it never undoes a reset made in between.
   */
  setPasswordHash(userId: string, passwordHash: string, replacing?: string): Promise<void>;
  /**
   * A password reset by the operator: the new hash, and every session of the
   * user ended in the same transaction, so whoever knew the old password is
   * signed out of the browser where they used it. Returns the session IDs (`sid`) of the sessions ended, for
   * back-channel logout.
   */
  resetPassword(userId: string, passwordHash: string): Promise<string[]>;
  /**
   * Replaces a user's claims with what `change` makes of the current ones,
   * and sets `claims_updated_at` to `now` when they differ. A read and a
   * conditional write (only over the claims that were read), tried again when
   * another update came in between: concurrent updates of different claims,
   * from any process or instance, all take effect. `change` may throw to
   * refuse (nothing is written). `not_found` when there is no such user.
   */
  updateClaims(userId: string, change: (current: UserClaims) => UserClaims, now: number): Promise<User>;
  /**
   * A password change by the user: the new hash, and every other session of
   * the user (all but `keepSession`, an id hash) ended in the same
   * transaction. Returns the session IDs (`sid`) of the sessions ended, for back-channel logout.
   */
  changePassword(userId: string, passwordHash: string, keepSession: string): Promise<string[]>;
}

/** {@link Users} on Kysely; the lookup by id is prepared (the code exchange makes it). */
export class KyselyUsers implements Users {
  private readonly byId = new Prepared<'id', User>('user_by_id', ['id'], (db, p) =>
    db.selectFrom('users').selectAll().where('id', '=', p.id),
  );

  constructor(private readonly engine: Engine) {}

  async create(user: NewUser): Promise<User> {
    try {
      await this.engine.db.insertInto('users').values(user).execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw new StoreError('duplicate', `user ${user.username} already exists`);
      throw err;
    }
    return (await this.findById(user.id))!;
  }

  async findById(id: string): Promise<User | undefined> {
    return (await this.engine.run(this.byId, { id })).rows[0];
  }

  async findByUsername(username: string): Promise<User | undefined> {
    return this.engine.db.selectFrom('users').selectAll().where(sql`lower(username)`, '=', username.toLowerCase()).executeTakeFirst();
  }

  async list(): Promise<User[]> {
    return this.engine.db.selectFrom('users').selectAll().orderBy('created_at').orderBy('username').execute();
  }

  async count(): Promise<number> {
    const r = await this.engine.db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<string | number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async setDisabled(username: string, disabledAt: number | null): Promise<void> {
    const r = await this.engine.db
      .updateTable('users')
      .set({ disabled_at: disabledAt })
      .where(sql`lower(username)`, '=', username.toLowerCase())
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) throw new StoreError('not_found', `no user ${username}`);
  }

  async setAdmin(userId: string, admin: boolean): Promise<void> {
    await this.engine.db
      .updateTable('users')
      .set({ is_admin: admin ? 1 : 0 })
      .where('id', '=', userId)
      .execute();
  }

  async delete(userId: string): Promise<boolean> {
    const r = await this.engine.db.deleteFrom('users').where('id', '=', userId).executeTakeFirst();
    return Number(r.numDeletedRows) === 1;
  }

  async setPasswordHash(userId: string, passwordHash: string, replacing?: string): Promise<void> {
    let q = this.engine.db.updateTable('users').set({ password_hash: passwordHash }).where('id', '=', userId);
    if (replacing !== undefined) q = q.where('password_hash', '=', replacing);
    await q.execute();
  }

  async resetPassword(userId: string, passwordHash: string): Promise<string[]> {
    return this.engine.transaction(async (trx) => {
      await trx.updateTable('users').set({ password_hash: passwordHash }).where('id', '=', userId).execute();
      const ended = await trx.deleteFrom('sessions').where('user_id', '=', userId).returning(['id_hash', 'sid']).execute();
      return ended.map(sidOf);
    });
  }

  async changePassword(userId: string, passwordHash: string, keepSession: string): Promise<string[]> {
    return this.engine.transaction(async (trx) => {
      await trx.updateTable('users').set({ password_hash: passwordHash }).where('id', '=', userId).execute();
      const ended = await trx
        .deleteFrom('sessions')
        .where('user_id', '=', userId)
        .where('id_hash', '!=', keepSession)
        .returning(['id_hash', 'sid'])
        .execute();
      return ended.map(sidOf);
    });
  }

  async updateClaims(userId: string, change: (current: UserClaims) => UserClaims, now: number): Promise<User> {
    for (let attempt = 1; ; attempt++) {
      const user = await this.findById(userId);
      if (!user) throw new StoreError('not_found', `no user ${userId}`);
      const claims = serializeClaims(change(claimsOf(user)));
      if (claims === user.claims) return user;
      const r = await this.engine.db
        .updateTable('users')
        .set({ claims, claims_updated_at: now })
        .where('id', '=', userId)
        .where('claims', '=', user.claims)
        .executeTakeFirst();
      if (Number(r.numUpdatedRows) === 1) return { ...user, claims, claims_updated_at: now };
      if (attempt >= CLAIMS_UPDATE_ATTEMPTS) {
        throw new StoreError('unavailable', `the claims of user ${user.username} kept changing under ${attempt} attempts to update them`);
      }
    }
  }
}

import { sql } from 'kysely';
import type { Engine } from '../engine.js';
import { isUniqueViolation, StoreError } from '../errors.js';
import { Prepared } from '../prepared.js';
import type { NewUser, User } from '../schema.js';

export type { NewUser, User } from '../schema.js';

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
   * signed out of the browser where they used it. Returns the sessions ended.
   */
  resetPassword(userId: string, passwordHash: string): Promise<number>;
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

  async setPasswordHash(userId: string, passwordHash: string, replacing?: string): Promise<void> {
    let q = this.engine.db.updateTable('users').set({ password_hash: passwordHash }).where('id', '=', userId);
    if (replacing !== undefined) q = q.where('password_hash', '=', replacing);
    await q.execute();
  }

  async resetPassword(userId: string, passwordHash: string): Promise<number> {
    return this.engine.transaction(async (trx) => {
      await trx.updateTable('users').set({ password_hash: passwordHash }).where('id', '=', userId).execute();
      const r = await trx.deleteFrom('sessions').where('user_id', '=', userId).executeTakeFirst();
      return Number(r.numDeletedRows);
    });
  }
}

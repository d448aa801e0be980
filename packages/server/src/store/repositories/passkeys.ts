import { sql } from 'kysely';
import type { Engine } from '../engine.js';
import type { Passkey, WebauthnChallengesTable } from '../schema.js';
import { sidOf } from './sessions.js';

export type { Passkey } from '../schema.js';
export type WebauthnChallenge = WebauthnChallengesTable;

/** Users' passkeys and the single-use challenges of WebAuthn ceremonies. */
export interface Passkeys {
  /** A user's passkeys, oldest first. */
  listByUser(userId: string): Promise<Passkey[]>;
  find(credentialId: string): Promise<Passkey | undefined>;
  /**
   * Adds a passkey, in one transaction that first locks the user's row, so that parallel additions see each
   * other: `registered` when that credential id is already registered (to anyone), `full` when the user has
   * `max` passkeys already, `not-first` when `onlyFirst` and the user has one already (a password sign-in may
   * add the first passkey only: oauth/credential-change.ts).
   */
  insert(passkey: Passkey, rule: { max: number; onlyFirst: boolean }): Promise<'added' | 'registered' | 'full' | 'not-first'>;
  /**
   * Records a sign-in with it: when, the backup state, and the signature counter, which only moves forward (two
   * parallel sign-ins of one authenticator may land in either order).
   */
  recordUse(credentialId: string, seen: { newCounter: number; backedUp: boolean; at: number }): Promise<void>;
  /** Removes one of this user's passkeys: the passkey removed; undefined when it was not theirs or is gone. */
  delete(userId: string, credentialId: string): Promise<Passkey | undefined>;
  /**
   * Removes every passkey of a user (a lost device) and ends the browser sessions signed in with one (the device
   * may have one open): how many passkeys there were, and the session IDs (`sid`) of the sessions ended, for
   * back-channel logout.
   */
  deleteAll(userId: string): Promise<{ passkeys: number; sessions: string[] }>;
  /** Stores a ceremony's challenge (by its hash). */
  addChallenge(challenge: WebauthnChallenge): Promise<void>;
  /** Uses a challenge up: the row if it was live, of that purpose and this browser, and nobody used it before. */
  takeChallenge(
    challengeHash: string,
    purpose: WebauthnChallenge['purpose'],
    browserHash: string,
    now: number,
  ): Promise<WebauthnChallenge | undefined>;
}

/** {@link Passkeys} on Kysely. */
export class KyselyPasskeys implements Passkeys {
  constructor(private readonly engine: Engine) {}

  listByUser(userId: string): Promise<Passkey[]> {
    return this.engine.db.selectFrom('passkeys').selectAll().where('user_id', '=', userId).orderBy('created_at').orderBy('id').execute();
  }

  find(credentialId: string): Promise<Passkey | undefined> {
    return this.engine.db.selectFrom('passkeys').selectAll().where('id', '=', credentialId).executeTakeFirst();
  }

  insert(passkey: Passkey, rule: { max: number; onlyFirst: boolean }): Promise<'added' | 'registered' | 'full' | 'not-first'> {
    return this.engine.transaction(async (trx) => {
      // A write to the user's row takes its lock on PostgreSQL (held to the commit): a parallel addition for the
      // same user waits here, and its count below, a new statement under READ COMMITTED, sees this one's passkey.
      // SQLite runs one write transaction at a time anyway.
      await trx.updateTable('users').set({ id: sql`id` }).where('id', '=', passkey.user_id).execute();
      const held = await trx
        .selectFrom('passkeys')
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('user_id', '=', passkey.user_id)
        .executeTakeFirstOrThrow();
      const n = Number(held.n);
      if (rule.onlyFirst && n > 0) return 'not-first';
      if (n >= rule.max) return 'full';
      const r = await trx
        .insertInto('passkeys')
        .values(passkey)
        .onConflict((oc) => oc.column('id').doNothing())
        .executeTakeFirst();
      return Number(r.numInsertedOrUpdatedRows ?? 0n) === 1 ? 'added' : 'registered';
    });
  }

  async recordUse(credentialId: string, seen: { newCounter: number; backedUp: boolean; at: number }): Promise<void> {
    await this.engine.db
      .updateTable('passkeys')
      .set({
        counter: sql<number>`case when counter < ${seen.newCounter} then ${seen.newCounter} else counter end`,
        backed_up: seen.backedUp ? 1 : 0,
        last_used_at: seen.at,
      })
      .where('id', '=', credentialId)
      .execute();
  }

  delete(userId: string, credentialId: string): Promise<Passkey | undefined> {
    return this.engine.db
      .deleteFrom('passkeys')
      .where('id', '=', credentialId)
      .where('user_id', '=', userId)
      .returningAll()
      .executeTakeFirst();
  }

  deleteAll(userId: string): Promise<{ passkeys: number; sessions: string[] }> {
    return this.engine.transaction(async (trx) => {
      const p = await trx.deleteFrom('passkeys').where('user_id', '=', userId).executeTakeFirst();
      const s = await trx
        .deleteFrom('sessions')
        .where('user_id', '=', userId)
        .where('amr', 'is not', null)
        .where('amr', '!=', 'pwd')
        .returning(['id_hash', 'sid'])
        .execute();
      return { passkeys: Number(p.numDeletedRows), sessions: s.map(sidOf) };
    });
  }

  async addChallenge(challenge: WebauthnChallenge): Promise<void> {
    await this.engine.db.insertInto('webauthn_challenges').values(challenge).execute();
  }

  takeChallenge(
    challengeHash: string,
    purpose: WebauthnChallenge['purpose'],
    browserHash: string,
    now: number,
  ): Promise<WebauthnChallenge | undefined> {
    // One statement: of parallel answers to one challenge, exactly one deletes the row and gets it back.
    return this.engine.db
      .deleteFrom('webauthn_challenges')
      .where('challenge_hash', '=', challengeHash)
      .where('purpose', '=', purpose)
      .where('browser_hash', '=', browserHash)
      .where('expires_at', '>', now)
      .returningAll()
      .executeTakeFirst();
  }
}

import type { Kysely } from 'kysely';
import type { ContinuationsTable, Database } from './schema.js';

/**
 * The `continuations` table (see web/continuation.ts for what a row means).
 * A repository of its own rather than more methods on Store: it needs nothing
 * of Store's prepared statements or group commit, and every lookup is keyed
 * by both hashes, so a row is only ever seen by the browser that made it.
 */
export class ContinuationStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(row: ContinuationsTable): Promise<void> {
    await this.db.insertInto('continuations').values(row).execute();
  }

  /** The live row's target, left in place: the sign-in page shows it while the person types. */
  async peek(idHash: string, browserHash: string, now: number): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('continuations')
      .select('target')
      .where('id_hash', '=', idHash)
      .where('browser_hash', '=', browserHash)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return row?.target;
  }

  /**
   * Uses the row up: one DELETE ... RETURNING, so of two concurrent sign-ins
   * (two tabs, two instances) only one gets the target. Another browser's
   * attempt deletes nothing, so it cannot spend the owner's continuation.
   */
  async take(idHash: string, browserHash: string, now: number): Promise<string | undefined> {
    const row = await this.db
      .deleteFrom('continuations')
      .where('id_hash', '=', idHash)
      .where('browser_hash', '=', browserHash)
      .where('expires_at', '>', now)
      .returning('target')
      .executeTakeFirst();
    return row?.target;
  }
}

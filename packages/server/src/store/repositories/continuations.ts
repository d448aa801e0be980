import type { Engine } from '../engine.js';
import type { ContinuationsTable } from '../schema.js';

/** One stored sign-in continuation (see web/continuation.ts for what it means). */
export type ContinuationRow = ContinuationsTable;

/**
 * The `continuations` table (see web/continuation.ts for what a row means).
 * Every lookup is keyed by both hashes, so a row is only ever seen by the
 * browser that made it.
 */
export interface Continuations {
  insert(row: ContinuationRow): Promise<void>;
  /** The live row's target, left in place: the sign-in page shows it while the person types. */
  peek(idHash: string, browserHash: string, now: number): Promise<string | undefined>;
  /**
   * Uses the row up: one DELETE ... RETURNING, so of two concurrent sign-ins
   * (two tabs, two instances) only one gets the target. Another browser's
   * attempt deletes nothing, so it cannot spend the owner's continuation.
   */
  take(idHash: string, browserHash: string, now: number): Promise<string | undefined>;
}

/** {@link Continuations} on Kysely. */
export class KyselyContinuations implements Continuations {
  constructor(private readonly engine: Engine) {}

  async insert(row: ContinuationRow): Promise<void> {
    await this.engine.db.insertInto('continuations').values(row).execute();
  }

  async peek(idHash: string, browserHash: string, now: number): Promise<string | undefined> {
    const row = await this.engine.db
      .selectFrom('continuations')
      .select('target')
      .where('id_hash', '=', idHash)
      .where('browser_hash', '=', browserHash)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return row?.target;
  }

  async take(idHash: string, browserHash: string, now: number): Promise<string | undefined> {
    const row = await this.engine.db
      .deleteFrom('continuations')
      .where('id_hash', '=', idHash)
      .where('browser_hash', '=', browserHash)
      .where('expires_at', '>', now)
      .returning('target')
      .executeTakeFirst();
    return row?.target;
  }
}

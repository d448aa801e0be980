import type { Engine } from '../engine.js';
import { Prepared } from '../prepared.js';

/** The tables of single-use `jti`s: a primary key `jti_hash` and the `expires_at` housekeeping.ts purges them at. */
export type SingleUseTable = 'dpop_proofs' | 'client_assertions' | 'subject_tokens';

/**
 * A single-use record (a DPoP proof's or a client assertion's `jti`):
 * recorded by one INSERT on the primary key, which changes nothing when the
 * key is there already, so of any number of concurrent uses, on any instance,
 * exactly one records it. The insert is prepared (every request carrying one
 * runs it) and, on the embedded store, shares its event-loop turn's commit
 * with the grants' writes (group commit) instead of committing alone.
 */
export class SingleUseRecords {
  private readonly insert: Prepared<'hash' | 'expiresAt', never>;

  constructor(
    private readonly engine: Engine,
    table: SingleUseTable,
    private readonly operation: string,
  ) {
    this.insert = new Prepared<'hash' | 'expiresAt', never>(operation, ['hash', 'expiresAt'], (db, p) =>
      db
        .insertInto(table as 'dpop_proofs')
        .values({ jti_hash: p.hash, expires_at: p.expiresAt })
        .onConflict((oc) => oc.column('jti_hash').doNothing()),
    );
  }

  /**
   * Records `jtiHash` until `expiresAt` (rounded up to a whole millisecond: it comes from a JWT's NumericDate,
   * which may have a fraction, and PostgreSQL's bigint takes none); false when it was recorded already, i.e. a replay.
   */
  async use(jtiHash: string, expiresAt: number): Promise<boolean> {
    const values = { hash: jtiHash, expiresAt: Math.ceil(expiresAt) };
    const grouped = this.engine.grouped;
    if (!grouped) return this.useAlone(values);
    return grouped.run(this.operation, {
      now: () => grouped.now(this.insert, values).changes === 1,
      alone: () => this.useAlone(values),
    });
  }

  private async useAlone(values: { hash: string; expiresAt: number }): Promise<boolean> {
    return (await this.engine.run(this.insert, values)).changes === 1;
  }
}

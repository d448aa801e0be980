import type { Engine } from '../engine.js';
import { Prepared } from '../prepared.js';

/**
 * The DPoP proofs accepted (RFC 9449 §11.1), for `jti` uniqueness across
 * instances: a proof is recorded by one INSERT on the primary key, which
 * fails (changes nothing) for a second proof with the same key and `jti`,
 * so of any number of concurrent requests with one proof, on any instance,
 * exactly one records it.
 */
export interface DpopProofs {
  /**
   * Records a proof (`jtiHash`: SHA-256 of key thumbprint and jti) until
   * `expiresAt`; false when it was recorded already, i.e. a replay.
   */
  use(jtiHash: string, expiresAt: number): Promise<boolean>;
}

/**
 * {@link DpopProofs} on Kysely; the insert is prepared (every DPoP request
 * runs it) and, on the embedded store, shares its event-loop turn's commit
 * with the grants' writes (group commit) instead of committing alone.
 */
export class KyselyDpopProofs implements DpopProofs {
  private readonly insert = new Prepared<'hash' | 'expiresAt', never>('dpop_proof_use', ['hash', 'expiresAt'], (db, p) =>
    db
      .insertInto('dpop_proofs')
      .values({ jti_hash: p.hash, expires_at: p.expiresAt })
      .onConflict((oc) => oc.column('jti_hash').doNothing()),
  );

  constructor(private readonly engine: Engine) {}

  async use(jtiHash: string, expiresAt: number): Promise<boolean> {
    const values = { hash: jtiHash, expiresAt };
    const grouped = this.engine.grouped;
    if (!grouped) return this.useAlone(values);
    return grouped.run('dpop_proof_use', {
      now: () => grouped.now(this.insert, values).changes === 1,
      alone: () => this.useAlone(values),
    });
  }

  private async useAlone(values: { hash: string; expiresAt: number }): Promise<boolean> {
    return (await this.engine.run(this.insert, values)).changes === 1;
  }
}

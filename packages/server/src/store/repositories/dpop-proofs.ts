import type { Engine } from '../engine.js';
import { SingleUseRecords } from './single-use.js';

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

/** {@link DpopProofs} on Kysely (single-use.ts: one prepared INSERT, group commit on the embedded store). */
export class KyselyDpopProofs extends SingleUseRecords implements DpopProofs {
  constructor(engine: Engine) {
    super(engine, 'dpop_proofs', 'dpop_proof_use');
  }
}

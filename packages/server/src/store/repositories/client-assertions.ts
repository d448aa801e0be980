import type { Engine } from '../engine.js';
import { SingleUseRecords } from './single-use.js';

/**
 * The client assertions accepted (RFC 7523 §3 (7), OIDC Core §9 `jti`), so
 * each is used once across instances: an assertion is recorded by one INSERT
 * on the primary key, which changes nothing for a second assertion of the
 * same client with the same `jti`, so of any number of concurrent requests
 * presenting one assertion, on any instance, exactly one records it.
 */
export interface ClientAssertions {
  /**
   * Records an assertion (`jtiHash`: SHA-256 of client_id and jti) until
   * `expiresAt`; false when it was recorded already, i.e. a replay.
   */
  use(jtiHash: string, expiresAt: number): Promise<boolean>;
}

/** {@link ClientAssertions} on Kysely (single-use.ts: one prepared INSERT, group commit on the embedded store). */
export class KyselyClientAssertions extends SingleUseRecords implements ClientAssertions {
  constructor(engine: Engine) {
    super(engine, 'client_assertions', 'client_assertion_use');
  }
}

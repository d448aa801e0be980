import type { Engine } from '../engine.js';
import { Prepared } from '../prepared.js';
import type { AuthorizationCode, Grant, RefreshToken } from '../schema.js';
import type { GrantStatements } from './grants.js';

export type { AuthorizationCode } from '../schema.js';

/** Authorization codes (RFC 6749 §4.1.2), stored by their SHA-256 only. */
export interface Codes {
  insert(code: NewAuthorizationCode): Promise<void>;
  find(codeHash: string): Promise<AuthorizationCode | undefined>;
  /**
   * Consumes an unexpired, unconsumed code and binds it to `grantId` in one
   * conditional UPDATE: among concurrent callers, across instances, exactly
   * one gets `true`.
   */
  consume(codeHash: string, grantId: string, now: number): Promise<boolean>;
  /**
   * Redeems a code into a new grant in one transaction: the grant row exists
   * only if this caller consumed the code, so a lost race leaves nothing
   * behind, and a replay always finds the winner's grant to revoke.
   */
  redeem(codeHash: string, grant: Grant, now: number, refresh?: RefreshToken): Promise<boolean>;
}

/** A code as issued: not yet redeemed; `amr` null or absent for a password sign-in; `sid` its browser session's. */
export type NewAuthorizationCode = Omit<AuthorizationCode, 'consumed_at' | 'grant_id' | 'amr' | 'acr' | 'sid'> & {
  amr?: string | null;
  acr?: string | null;
  sid?: string | null;
};

/** {@link Codes} on Kysely; lookup and redemption are prepared (the code exchange is a hot path). */
export class KyselyCodes implements Codes {
  private readonly byHash = new Prepared<'hash', AuthorizationCode>('code_by_hash', ['hash'], (db, p) =>
    db.selectFrom('authorization_codes').selectAll().where('code_hash', '=', p.hash),
  );
  private readonly consumeOne = new Prepared<'hash' | 'grantId' | 'now', never>('code_consume', ['hash', 'grantId', 'now'], (db, p) =>
    db
      .updateTable('authorization_codes')
      .set({ consumed_at: p.now, grant_id: p.grantId })
      .where('code_hash', '=', p.hash)
      .where('consumed_at', 'is', null)
      .where('expires_at', '>', p.now),
  );

  constructor(
    private readonly engine: Engine,
    private readonly grants: GrantStatements,
  ) {}

  async insert(code: NewAuthorizationCode): Promise<void> {
    await this.engine.db
      .insertInto('authorization_codes')
      .values({ ...code, consumed_at: null, grant_id: null })
      .execute();
  }

  async find(codeHash: string): Promise<AuthorizationCode | undefined> {
    return (await this.engine.run(this.byHash, { hash: codeHash })).rows[0];
  }

  async consume(codeHash: string, grantId: string, now: number): Promise<boolean> {
    return (await this.engine.run(this.consumeOne, { hash: codeHash, grantId, now })).changes === 1;
  }

  async redeem(codeHash: string, grant: Grant, now: number, refresh?: RefreshToken): Promise<boolean> {
    return this.engine.atomically('code_redemption', [
      { q: this.grants.insertGrant, values: grant },
      { q: this.consumeOne, values: { hash: codeHash, grantId: grant.id, now }, mustChange: true },
      ...(refresh ? [{ q: this.grants.insertRefreshToken, values: refresh }] : []),
    ]);
  }
}

import type { Engine } from '../engine.js';
import type { SigningKeyRow } from '../schema.js';

export type { SigningKeyRow } from '../schema.js';

/** The signing keys (RFC 7517 JWKs), active and retired; private parts possibly encrypted at rest (oauth/keys.ts). */
export interface SigningKeys {
  insert(key: SigningKeyRow): Promise<void>;
  /** Every stored key, retired ones included, newest first (the key-encryption check at start covers them all). */
  listAll(): Promise<SigningKeyRow[]>;
  /** Keys that are active, or retired after `publishedSince` (still verifying issued tokens), newest first. */
  list(publishedSince: number): Promise<SigningKeyRow[]>;
  /**
   * Replaces a key's stored private part, only if it still is `expected`:
   * instances encrypting the same plaintext row at once store one ciphertext.
   * Returns whether this call replaced it.
   */
  replacePrivate(kid: string, expected: string, privateJwk: string): Promise<boolean>;
  /**
   * Replaces the active keys of the given algorithms by `fresh` in one
   * transaction: old keys are retired (still published until their tokens
   * expire), new keys become the signing keys.
   */
  rotate(fresh: SigningKeyRow[], now: number): Promise<void>;
}

/** {@link SigningKeys} on Kysely. */
export class KyselySigningKeys implements SigningKeys {
  constructor(private readonly engine: Engine) {}

  async insert(key: SigningKeyRow): Promise<void> {
    await this.engine.db.insertInto('signing_keys').values(key).execute();
  }

  async listAll(): Promise<SigningKeyRow[]> {
    return this.engine.db.selectFrom('signing_keys').selectAll().orderBy('created_at', 'desc').orderBy('kid').execute();
  }

  async list(publishedSince: number): Promise<SigningKeyRow[]> {
    return this.engine.db
      .selectFrom('signing_keys')
      .selectAll()
      .where((eb) => eb.or([eb('retired_at', 'is', null), eb('retired_at', '>', publishedSince)]))
      .orderBy('created_at', 'desc')
      .orderBy('kid')
      .execute();
  }

  async replacePrivate(kid: string, expected: string, privateJwk: string): Promise<boolean> {
    const r = await this.engine.db
      .updateTable('signing_keys')
      .set({ private_jwk: privateJwk })
      .where('kid', '=', kid)
      .where('private_jwk', '=', expected)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async rotate(fresh: SigningKeyRow[], now: number): Promise<void> {
    await this.engine.transaction(async (trx) => {
      await trx
        .updateTable('signing_keys')
        .set({ retired_at: now })
        .where('retired_at', 'is', null)
        .where(
          'alg',
          'in',
          fresh.map((k) => k.alg),
        )
        .execute();
      for (const k of fresh) await trx.insertInto('signing_keys').values(k).execute();
    });
  }
}

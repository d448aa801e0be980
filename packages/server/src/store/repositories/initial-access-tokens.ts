import type { Engine } from '../engine.js';
import { isUniqueViolation, StoreError } from '../errors.js';
import type { InitialAccessTokensTable } from '../schema.js';

/** An initial access token as the operator sees it (never the token: only its SHA-256 is stored). */
export interface InitialAccessToken {
  id: string;
  createdAt: number;
  expiresAt: number;
  usedAt: number | null;
  revokedAt: number | null;
  /** The client registered with it. */
  clientId: string | null;
}

/**
 * Initial access tokens (RFC 7591 §3) for `AUTHCLI_REGISTRATION=token`. A
 * token registers one client: it is used up by one conditional UPDATE, so
 * of any number of parallel registrations presenting it, across instances,
 * exactly one gets it.
 */
export interface InitialAccessTokens {
  /** Stores a new token by its SHA-256; `duplicate` when the id or hash is taken. */
  create(row: { id: string; tokenHash: string; createdAt: number; expiresAt: number }): Promise<void>;
  /** The token with this SHA-256 while it is usable (not used, revoked or expired); undefined otherwise. */
  findUsable(tokenHash: string, now: number): Promise<InitialAccessToken | undefined>;
  /**
   * Uses the token up for the registration of `clientId`: true for the one
   * request that changed the row, false when it was already used, revoked,
   * expired or unknown.
   */
  use(tokenHash: string, clientId: string, now: number): Promise<boolean>;
  /** Gives a token back after the registration it was used for failed (the client was not created). */
  giveBack(tokenHash: string, clientId: string): Promise<void>;
  /** Every token kept (see housekeeping.ts), newest first. */
  list(): Promise<InitialAccessToken[]>;
  /** Revokes the token with this id; `not_found` when there is none. Revoking a used or expired one changes nothing else. */
  revoke(id: string, now: number): Promise<InitialAccessToken>;
}

function toToken(row: Omit<InitialAccessTokensTable, 'token_hash'>): InitialAccessToken {
  return {
    id: row.id,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    usedAt: row.used_at,
    revokedAt: row.revoked_at,
    clientId: row.client_id,
  };
}

const COLUMNS = ['id', 'created_at', 'expires_at', 'used_at', 'revoked_at', 'client_id'] as const;

/** {@link InitialAccessTokens} on Kysely. */
export class KyselyInitialAccessTokens implements InitialAccessTokens {
  constructor(private readonly engine: Engine) {}

  async create(row: { id: string; tokenHash: string; createdAt: number; expiresAt: number }): Promise<void> {
    try {
      await this.engine.db
        .insertInto('initial_access_tokens')
        .values({
          id: row.id,
          token_hash: row.tokenHash,
          created_at: row.createdAt,
          expires_at: row.expiresAt,
          used_at: null,
          revoked_at: null,
          client_id: null,
        })
        .execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw new StoreError('duplicate', `initial access token ${row.id} already exists`);
      throw err;
    }
  }

  async findUsable(tokenHash: string, now: number): Promise<InitialAccessToken | undefined> {
    const row = await this.engine.db
      .selectFrom('initial_access_tokens')
      .select(COLUMNS)
      .where('token_hash', '=', tokenHash)
      .where('used_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return row && toToken(row);
  }

  async use(tokenHash: string, clientId: string, now: number): Promise<boolean> {
    const r = await this.engine.db
      .updateTable('initial_access_tokens')
      .set({ used_at: now, client_id: clientId })
      .where('token_hash', '=', tokenHash)
      .where('used_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async giveBack(tokenHash: string, clientId: string): Promise<void> {
    await this.engine.db
      .updateTable('initial_access_tokens')
      .set({ used_at: null, client_id: null })
      .where('token_hash', '=', tokenHash)
      .where('client_id', '=', clientId)
      .execute();
  }

  async list(): Promise<InitialAccessToken[]> {
    const rows = await this.engine.db
      .selectFrom('initial_access_tokens')
      .select(COLUMNS)
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .execute();
    return rows.map(toToken);
  }

  async revoke(id: string, now: number): Promise<InitialAccessToken> {
    await this.engine.db
      .updateTable('initial_access_tokens')
      .set({ revoked_at: now })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .execute();
    const row = await this.engine.db.selectFrom('initial_access_tokens').select(COLUMNS).where('id', '=', id).executeTakeFirst();
    if (!row) throw new StoreError('not_found', `no initial access token ${id}`);
    return toToken(row);
  }
}

import type { Engine } from '../engine.js';
import type { PushedRequestsTable } from '../schema.js';

/** A pushed authorization request (RFC 9126 §2), as stored. */
export interface PushedRequest {
  clientId: string;
  /** The validated request, serialized by the server. */
  query: string;
  createdAt: number;
  expiresAt: number;
  openedAt: number | null;
  usedAt: number | null;
}

function toPushed(row: PushedRequestsTable): PushedRequest {
  return {
    clientId: row.client_id,
    query: row.query,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    openedAt: row.opened_at === null ? null : Number(row.opened_at),
    usedAt: row.used_at === null ? null : Number(row.used_at),
  };
}

/**
 * Pushed authorization requests (RFC 9126), by the SHA-256 of their
 * request_uri. Each is used up by one conditional UPDATE, so of any number
 * of parallel authorization responses for one request_uri, across
 * instances, exactly one is given (§4: one-time use).
 */
export interface PushedRequests {
  insert(requestUriHash: string, row: Omit<PushedRequest, 'openedAt' | 'usedAt'>): Promise<void>;
  /** The request with this hash, whatever its state (the caller checks client, expiry and use). */
  find(requestUriHash: string): Promise<PushedRequest | undefined>;
  /**
   * The first time a browser opens it: from then on it lives until `until`
   * (the time a sign-in may take) instead of its short `expires_in`. Only a
   * request still unopened, unused and unexpired changes.
   */
  open(requestUriHash: string, now: number, until: number): Promise<void>;
  /** Uses it up: true for the one request that changed the row; false when it was used, expired or unknown. */
  use(requestUriHash: string, now: number): Promise<boolean>;
}

/** {@link PushedRequests} on Kysely. */
export class KyselyPushedRequests implements PushedRequests {
  constructor(private readonly engine: Engine) {}

  async insert(requestUriHash: string, row: Omit<PushedRequest, 'openedAt' | 'usedAt'>): Promise<void> {
    await this.engine.db
      .insertInto('pushed_requests')
      .values({
        request_uri_hash: requestUriHash,
        client_id: row.clientId,
        query: row.query,
        created_at: row.createdAt,
        expires_at: row.expiresAt,
        opened_at: null,
        used_at: null,
      })
      .execute();
  }

  async find(requestUriHash: string): Promise<PushedRequest | undefined> {
    const row = await this.engine.db
      .selectFrom('pushed_requests')
      .selectAll()
      .where('request_uri_hash', '=', requestUriHash)
      .executeTakeFirst();
    return row && toPushed(row);
  }

  async open(requestUriHash: string, now: number, until: number): Promise<void> {
    await this.engine.db
      .updateTable('pushed_requests')
      .set({ opened_at: now, expires_at: until })
      .where('request_uri_hash', '=', requestUriHash)
      .where('opened_at', 'is', null)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .execute();
  }

  async use(requestUriHash: string, now: number): Promise<boolean> {
    const r = await this.engine.db
      .updateTable('pushed_requests')
      .set({ used_at: now })
      .where('request_uri_hash', '=', requestUriHash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }
}

import type { Engine } from '../engine.js';
import { Prepared } from '../prepared.js';
import type { Grant, RefreshToken } from '../schema.js';
import { insertRow } from './statements.js';

export type { Grant, RefreshToken } from '../schema.js';

/**
 * Grants and what is issued under them: a grant is a refresh-token family
 * (revoking it ends every token in it, RFC 9700 §4.14.2), its refresh tokens,
 * and the access tokens revoked before their expiry (RFC 7009).
 */
export interface Grants {
  insert(grant: Grant): Promise<void>;
  find(id: string): Promise<Grant | undefined>;
  /** Revokes a grant and with it every token issued under it. Idempotent. */
  revoke(id: string, now: number): Promise<void>;
  insertRefreshToken(row: RefreshToken): Promise<void>;
  findRefreshToken(hash: string): Promise<RefreshToken | undefined>;
  /**
   * Rotates a refresh token (RFC 9700 §4.14.2): marks the old one used and
   * stores its successor in one transaction. False when the old one was
   * already used, i.e. a reuse, which the caller answers by revoking the family.
   */
  rotateRefreshToken(oldHash: string, successor: RefreshToken, now: number): Promise<boolean>;
  /**
   * The applications a user has live grants with (not revoked, not
   * expired): per application, how many, the scopes they hold together and
   * the latest sign-in (`auth_time`).
   */
  liveByClient(userId: string, now: number): Promise<LiveGrants[]>;
  /**
   * Revokes every live grant of a user, or of a user and one application,
   * and with them every token issued under them; how many it revoked.
   */
  revokeForUser(userId: string, now: number, clientId?: string): Promise<number>;
  /** Records an access token as revoked until it expires (RFC 7009 §2). Idempotent. */
  revokeAccessToken(jti: string, expiresAt: number): Promise<void>;
  isAccessTokenRevoked(jti: string): Promise<boolean>;
}

/**
 * The prepared statements that create a grant and its first refresh token:
 * the code and device-code redemptions run them in their own transactions
 * (see codes.ts, device-grants.ts), so one set serves all three repositories.
 */
export function grantStatements() {
  return {
    insertGrant: insertRow('grants', [
      'id',
      'client_id',
      'user_id',
      'scope',
      'claims',
      'auth_time',
      'created_at',
      'expires_at',
      'revoked_at',
      'dpop_jkt',
    ] as const),
    insertRefreshToken: insertRow('refresh_tokens', ['token_hash', 'grant_id', 'created_at', 'expires_at', 'used_at'] as const),
  };
}

export type GrantStatements = ReturnType<typeof grantStatements>;

/** A user's live grants with one application (see {@link Grants.liveByClient}). */
export interface LiveGrants {
  clientId: string;
  grants: number;
  scopes: string[];
  lastAuthTime: number;
}

/** {@link Grants} on Kysely. */
export class KyselyGrants implements Grants {
  private readonly useRefreshToken = new Prepared<'hash' | 'now', never>('refresh_token_use', ['hash', 'now'], (db, p) =>
    db.updateTable('refresh_tokens').set({ used_at: p.now }).where('token_hash', '=', p.hash).where('used_at', 'is', null),
  );

  constructor(
    private readonly engine: Engine,
    private readonly q: GrantStatements,
  ) {}

  async insert(grant: Grant): Promise<void> {
    await this.engine.run(this.q.insertGrant, grant);
  }

  async find(id: string): Promise<Grant | undefined> {
    return this.engine.db.selectFrom('grants').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async liveByClient(userId: string, now: number): Promise<LiveGrants[]> {
    const rows = await this.engine.db
      .selectFrom('grants')
      .select(['client_id', 'scope', 'auth_time'])
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .execute();
    const byClient = new Map<string, LiveGrants>();
    for (const r of rows) {
      const live = byClient.get(r.client_id) ?? { clientId: r.client_id, grants: 0, scopes: [], lastAuthTime: 0 };
      byClient.set(r.client_id, live);
      live.grants += 1;
      live.lastAuthTime = Math.max(live.lastAuthTime, Number(r.auth_time));
      for (const s of r.scope.split(' ')) if (s && !live.scopes.includes(s)) live.scopes.push(s);
    }
    return [...byClient.values()];
  }

  async revokeForUser(userId: string, now: number, clientId?: string): Promise<number> {
    let q = this.engine.db.updateTable('grants').set({ revoked_at: now }).where('user_id', '=', userId).where('revoked_at', 'is', null);
    if (clientId !== undefined) q = q.where('client_id', '=', clientId);
    return Number((await q.executeTakeFirst()).numUpdatedRows);
  }

  async revoke(id: string, now: number): Promise<void> {
    await this.engine.db.updateTable('grants').set({ revoked_at: now }).where('id', '=', id).where('revoked_at', 'is', null).execute();
  }

  async insertRefreshToken(row: RefreshToken): Promise<void> {
    await this.engine.run(this.q.insertRefreshToken, row);
  }

  async findRefreshToken(hash: string): Promise<RefreshToken | undefined> {
    return this.engine.db.selectFrom('refresh_tokens').selectAll().where('token_hash', '=', hash).executeTakeFirst();
  }

  async rotateRefreshToken(oldHash: string, successor: RefreshToken, now: number): Promise<boolean> {
    return this.engine.atomically('refresh_rotation', [
      { q: this.useRefreshToken, values: { hash: oldHash, now }, mustChange: true },
      { q: this.q.insertRefreshToken, values: successor },
    ]);
  }

  async revokeAccessToken(jti: string, expiresAt: number): Promise<void> {
    await this.engine.db
      .insertInto('revoked_access_tokens')
      .values({ jti, expires_at: expiresAt })
      .onConflict((oc) => oc.column('jti').doNothing())
      .execute();
  }

  async isAccessTokenRevoked(jti: string): Promise<boolean> {
    const row = await this.engine.db.selectFrom('revoked_access_tokens').select('jti').where('jti', '=', jti).executeTakeFirst();
    return row !== undefined;
  }
}

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
   * The applications a user is signed in to: per application, its grants
   * that still hold a working token (an unused, unexpired refresh token, or
   * an access token issued within the application's own access token
   * lifetime, else `accessTtlMs`, the server's), the scopes they hold
   * together and when tokens were last issued under them.
   */
  liveByClient(userId: string, now: number, accessTtlMs: number): Promise<LiveGrants[]>;
  /**
   * Ends a user's access, to one application or to all of them, in one
   * transaction: codes not yet redeemed expire, approved device codes not
   * yet redeemed are denied (so neither can become tokens afterwards), then
   * every live grant is revoked, and with it every token issued under it.
   * The grants it ended that were live (not expired): the applications and
   * sessions to tell (back-channel logout), read by the same statement.
   */
  revokeForUser(userId: string, now: number, clientId?: string): Promise<GrantHolder[]>;
  /**
   * A browser session ended (OpenID Connect Back-Channel Logout 1.0 §2.7), in one transaction: the codes it
   * issued that are not yet redeemed expire, and its grants are revoked, with every token issued under them,
   * except those holding `offline_access`, which outlive the session by design. Returns the applications the
   * session signed in to (a code or a grant made in it, revoked or kept), each once.
   */
  endSession(sid: string, now: number): Promise<string[]>;
  /**
   * The live grants of a user, each application once per session it signed in from (`sid` null: a grant of no
   * browser session, a device's): whom to tell when the user is disabled.
   */
  holders(userId: string, now: number): Promise<GrantHolder[]>;
  /** Records an access token as revoked until it expires (RFC 7009 §2). Idempotent. */
  revokeAccessToken(jti: string, expiresAt: number): Promise<void>;
  isAccessTokenRevoked(jti: string): Promise<boolean>;
}

/** An application holding a grant of a user, and the browser session the grant came from (null: a device's). */
export interface GrantHolder {
  clientId: string;
  sid: string | null;
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
      'amr',
      'acr',
      'sid',
      'resource',
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
  /** When tokens were last issued under them (a sign-in or a refresh), epoch ms. */
  lastIssued: number;
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

  async liveByClient(userId: string, now: number, accessTtlMs: number): Promise<LiveGrants[]> {
    const rows = await this.engine.db
      .selectFrom('grants')
      .leftJoin('applications', 'applications.client_id', 'grants.client_id')
      .select(['grants.client_id', 'grants.scope', 'grants.created_at', 'applications.access_token_ttl'])
      .select((eb) =>
        eb
          .selectFrom('refresh_tokens')
          .select((r) => r.fn.max('refresh_tokens.created_at').as('at'))
          .whereRef('refresh_tokens.grant_id', '=', 'grants.id')
          .where('refresh_tokens.used_at', 'is', null)
          .where('refresh_tokens.expires_at', '>', now)
          .as('live_refresh_at'),
      )
      .where('grants.user_id', '=', userId)
      .where('grants.revoked_at', 'is', null)
      .where('grants.expires_at', '>', now)
      .execute();
    const byClient = new Map<string, LiveGrants>();
    for (const r of rows) {
      const created = Number(r.created_at);
      const refreshed = r.live_refresh_at === null ? undefined : Number(r.live_refresh_at);
      const ttlMs = r.access_token_ttl === null ? accessTtlMs : Number(r.access_token_ttl) * 1000;
      if (refreshed === undefined && created <= now - ttlMs) continue;
      const live = byClient.get(r.client_id) ?? { clientId: r.client_id, grants: 0, scopes: [], lastIssued: 0 };
      byClient.set(r.client_id, live);
      live.grants += 1;
      live.lastIssued = Math.max(live.lastIssued, created, refreshed ?? 0);
      for (const s of r.scope.split(' ')) if (s && !live.scopes.includes(s)) live.scopes.push(s);
    }
    return [...byClient.values()];
  }

  async revokeForUser(userId: string, now: number, clientId?: string): Promise<GrantHolder[]> {
    return this.engine.transaction(async (trx) => {
      // Codes and device codes first: on PostgreSQL these wait for a redemption under way to commit, so the
      // grant it makes is there for the last statement to revoke.
      let codes = trx
        .updateTable('authorization_codes')
        .set({ expires_at: now })
        .where('user_id', '=', userId)
        .where('consumed_at', 'is', null)
        .where('expires_at', '>', now);
      let devices = trx
        .updateTable('device_authorizations')
        .set({ status: 'denied' })
        .where('user_id', '=', userId)
        .where('status', '=', 'approved');
      let grants = trx.updateTable('grants').set({ revoked_at: now }).where('user_id', '=', userId).where('revoked_at', 'is', null);
      if (clientId !== undefined) {
        codes = codes.where('client_id', '=', clientId);
        devices = devices.where('client_id', '=', clientId);
        grants = grants.where('client_id', '=', clientId);
      }
      await codes.execute();
      await devices.execute();
      const revoked = await grants.returning(['client_id', 'sid', 'expires_at']).execute();
      return revoked.filter((g) => Number(g.expires_at) > now).map((g) => ({ clientId: g.client_id, sid: g.sid }));
    });
  }

  async endSession(sid: string, now: number): Promise<string[]> {
    return this.engine.transaction(async (trx) => {
      // Codes first, as in revokeForUser: on PostgreSQL the update waits for a redemption under way, whose grant
      // the select below then sees.
      await trx
        .updateTable('authorization_codes')
        .set({ expires_at: now })
        .where('sid', '=', sid)
        .where('consumed_at', 'is', null)
        .where('expires_at', '>', now)
        .execute();
      const codes = await trx.selectFrom('authorization_codes').select('client_id').where('sid', '=', sid).execute();
      const grants = await trx.selectFrom('grants').select(['id', 'client_id', 'scope', 'revoked_at']).where('sid', '=', sid).execute();
      const ending = grants.filter((g) => g.revoked_at === null && !g.scope.split(' ').includes('offline_access')).map((g) => g.id);
      if (ending.length > 0) {
        await trx.updateTable('grants').set({ revoked_at: now }).where('id', 'in', ending).where('revoked_at', 'is', null).execute();
      }
      return [...new Set([...codes, ...grants].map((r) => r.client_id))];
    });
  }

  async holders(userId: string, now: number): Promise<GrantHolder[]> {
    const rows = await this.engine.db
      .selectFrom('grants')
      .select(['client_id', 'sid'])
      .distinct()
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .execute();
    return rows.map((r) => ({ clientId: r.client_id, sid: r.sid }));
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

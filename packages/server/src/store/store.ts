import { DEFAULT_MIGRATION_TABLE, Migrator, sql, type Kysely } from 'kysely';
import { APPLICATION_CACHE_MS, RATE_LIMIT_ROWS_KEPT_MS, REPLAY_EVIDENCE_MS } from '../config/defaults.js';
import { migrationProvider } from './migrations.js';
import { GroupCommit } from './group-commit.js';
import { Prepared, type Rows, type SyncConnection } from './prepared.js';
import type {
  ApplicationRow,
  AuthorizationCode,
  Database,
  DeviceAuthorization,
  RefreshToken,
  Grant,
  NewUser,
  Session,
  SigningKeyRow,
  User,
} from './schema.js';

export type { User, Session, AuthorizationCode, Grant, SigningKeyRow, DeviceAuthorization, RefreshToken } from './schema.js';

/** Grant types an application may be allowed (RFC 6749 §4.1, §6; RFC 8628 §3.4). */
export const GRANT_TYPES = [
  'authorization_code',
  'refresh_token',
  'urn:ietf:params:oauth:grant-type:device_code',
] as const;
export type GrantType = (typeof GRANT_TYPES)[number];

/** A registered client application (RFC 6749 §2). */
export interface Application {
  clientId: string;
  ownerId: string | null;
  name: string;
  kind: 'public' | 'confidential';
  secretHash: string | null;
  callbackUrls: string[];
  scopes: string[];
  grantTypes: GrantType[];
  idTokenAlg: 'RS256' | 'ES256';
  createdAt: number;
  updatedAt: number;
  /** Where RP-initiated logout may send the browser back to, exact-matched (OpenID Connect RP-Initiated Logout 1.0 §3.1). */
  postLogoutRedirectUris: string[];
}

export type NewApplication = Omit<Application, 'updatedAt' | 'postLogoutRedirectUris'> & { postLogoutRedirectUris?: string[] };

/** Failure codes callers switch on; never the message text. */
export type StoreErrorCode = 'duplicate' | 'not_found' | 'unavailable';

export class StoreError extends Error {
  constructor(
    readonly code: StoreErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StoreError';
  }
}

export type Dialect = 'sqlite' | 'postgres';

function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** Rolls back a redemption that another request won. */
class LostRace extends Error {}

/** Every column of a table, checked at compile time so that a prepared insert never leaves one out. */
type AllColumns<T, L extends readonly (keyof T & string)[]> = Exclude<keyof T, L[number]> extends never ? L : never;

/** A prepared INSERT of one whole row of `table`. */
function insertRow<T extends keyof Database, L extends readonly (keyof Database[T] & string)[]>(
  table: T,
  columns: AllColumns<Database[T], L>,
): Prepared<L[number], never> {
  return new Prepared<L[number], never>(columns, (db, p) =>
    db.insertInto(table).values(Object.fromEntries(columns.map((c) => [c, p[c as L[number]]]))),
  );
}

/** How many applications an instance keeps (see APPLICATION_CACHE_MS). */
const APPLICATION_CACHE_SIZE = 1000;

function freezeApplication(app: Application): Application {
  Object.freeze(app.callbackUrls);
  Object.freeze(app.postLogoutRedirectUris);
  Object.freeze(app.scopes);
  Object.freeze(app.grantTypes);
  return Object.freeze(app);
}

/** What a device poll did: recorded on time, or too early (the interval it now has). */
export type DevicePoll = { slowed: false } | { slowed: true; interval_s: number };

const ON_TIME: DevicePoll = Object.freeze({ slowed: false });
const slowedDown = (row: { interval_s: number } | undefined): DevicePoll | undefined => row && { slowed: true, interval_s: row.interval_s };

type PollParams = Record<'hash' | 'clientId' | 'now', unknown>;

/** A pending, unexpired device authorization of this client: the rows a poll may change. */
function pendingOf(db: Kysely<Database>, p: PollParams, early: boolean) {
  const last = sql`last_poll_at is not null and last_poll_at + interval_s * 1000 > ${p.now}`;
  return db
    .updateTable('device_authorizations')
    .where('device_code_hash', '=', sql<string>`${p.hash}`)
    .where('client_id', '=', sql<string>`${p.clientId}`)
    .where('status', '=', 'pending')
    .where('expires_at', '>', sql<number>`${p.now}`)
    .where(early ? sql<boolean>`${last}` : sql<boolean>`not (${last})`);
}

/** One statement of an atomic sequence; `mustChange` steps that change no row roll the whole sequence back. */
interface Step {
  q: Prepared<string, unknown>;
  values: Record<string, unknown>;
  mustChange?: boolean;
}

function toApplication(row: ApplicationRow): Application {
  return {
    clientId: row.client_id,
    ownerId: row.owner_id,
    name: row.name,
    kind: row.kind,
    secretHash: row.secret_hash,
    callbackUrls: JSON.parse(row.callback_urls) as string[],
    scopes: row.scopes.split(' ').filter(Boolean),
    grantTypes: JSON.parse(row.grant_types) as GrantType[],
    idTokenAlg: row.id_token_alg,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    postLogoutRedirectUris: JSON.parse(row.post_logout_redirect_uris) as string[],
  };
}

/**
 * All persistent state of the authorization server, on Kysely. One
 * implementation serves SQLite and PostgreSQL; every single-use transition
 * (code consumption, key retirement) is a single conditional statement so it
 * stays atomic across server instances.
 */
export class Store {
  // Hot-path statements, compiled once per store (the SQL differs per dialect).
  private readonly q = {
    application: new Prepared<'clientId', ApplicationRow>(['clientId'], (db, p) =>
      db.selectFrom('applications').selectAll().where('client_id', '=', p.clientId),
    ),
    // RFC 8628 §3.5 as two exclusive conditional UPDATEs: an on-time poll (the common case: one statement, no
    // row to return) only becomes the previous poll; an early one also grows the interval by 5 s.
    devicePollOnTime: new Prepared<'hash' | 'clientId' | 'now', never>(['hash', 'clientId', 'now'], (db, p) =>
      pendingOf(db, p, false).set({ last_poll_at: sql<number>`${p.now}`, last_poll_slowed: 0 }),
    ),
    devicePollEarly: new Prepared<'hash' | 'clientId' | 'now', { interval_s: number }>(['hash', 'clientId', 'now'], (db, p) =>
      pendingOf(db, p, true)
        .set({ last_poll_at: sql<number>`${p.now}`, last_poll_slowed: 1, interval_s: sql<number>`interval_s + 5` })
        .returning(['interval_s']),
    ),
    code: new Prepared<'hash', AuthorizationCode>(['hash'], (db, p) =>
      db.selectFrom('authorization_codes').selectAll().where('code_hash', '=', p.hash),
    ),
    consumeCode: new Prepared<'hash' | 'grantId' | 'now', never>(['hash', 'grantId', 'now'], (db, p) =>
      db
        .updateTable('authorization_codes')
        .set({ consumed_at: p.now, grant_id: p.grantId })
        .where('code_hash', '=', p.hash)
        .where('consumed_at', 'is', null)
        .where('expires_at', '>', p.now),
    ),
    userById: new Prepared<'id', User>(['id'], (db, p) => db.selectFrom('users').selectAll().where('id', '=', p.id)),
    deviceByHash: new Prepared<'hash', DeviceAuthorization>(['hash'], (db, p) =>
      db.selectFrom('device_authorizations').selectAll().where('device_code_hash', '=', p.hash),
    ),
    redeemDevice: new Prepared<'hash' | 'grantId' | 'now', never>(['hash', 'grantId', 'now'], (db, p) =>
      db
        .updateTable('device_authorizations')
        .set({ status: 'consumed', grant_id: p.grantId })
        .where('device_code_hash', '=', p.hash)
        .where('status', '=', 'approved')
        .where('expires_at', '>', p.now),
    ),
    useRefreshToken: new Prepared<'hash' | 'now', never>(['hash', 'now'], (db, p) =>
      db.updateTable('refresh_tokens').set({ used_at: p.now }).where('token_hash', '=', p.hash).where('used_at', 'is', null),
    ),
    insertGrant: insertRow('grants', ['id', 'client_id', 'user_id', 'scope', 'auth_time', 'created_at', 'expires_at', 'revoked_at'] as const),
    insertRefreshToken: insertRow('refresh_tokens', ['token_hash', 'grant_id', 'created_at', 'expires_at', 'used_at'] as const),
    insertDevice: insertRow('device_authorizations', [
      'device_code_hash',
      'user_code',
      'client_id',
      'scope',
      'status',
      'user_id',
      'auth_time',
      'created_at',
      'expires_at',
      'interval_s',
      'last_poll_at',
      'last_poll_slowed',
      'grant_id',
    ] as const),
  };

  /** Recently read applications by client_id (see getApplication). */
  private readonly applications = new Map<string, { app: Application; at: number }>();

  /** Group commit on the embedded store: the writes of one event-loop turn share a transaction. */
  private readonly batch: GroupCommit | undefined;

  constructor(
    readonly db: Kysely<Database>,
    readonly dialect: Dialect,
    /** The embedded store's connection: hot-path statements run on it synchronously when no transaction is open. */
    private readonly sync?: SyncConnection,
    /** Runs before the connection closes (the embedded store's background checkpointer stops). */
    private readonly beforeClose?: () => Promise<void> | undefined,
  ) {
    this.batch = sync && new GroupCommit(sync);
  }

  /** Runs a prepared statement: synchronously on the embedded store when it is free, else through Kysely. */
  private async run<P extends string, R>(q: Prepared<P, R>, values: Record<P, unknown>): Promise<Rows<R>> {
    const conn = this.sync;
    if (conn && !conn.inTransaction) return q.executeSync(conn, this.db, values);
    return q.execute(this.db, values);
  }

  /**
   * Runs `steps` as one transaction. When a `mustChange` step (a conditional
   * UPDATE) changes no row, another request won the race: everything is rolled
   * back and the answer is false. On the embedded store the units of one
   * event-loop turn share one transaction (group commit), each in its own
   * savepoint, each answered after the commit.
   */
  private async atomically(steps: readonly Step[]): Promise<boolean> {
    try {
      if (this.batch) {
        const conn = this.sync!;
        await this.batch.run({
          severalStatements: true,
          now: () => {
            for (const s of steps) {
              if (s.q.executeSync(conn, this.db, s.values).changes !== 1 && s.mustChange) throw new LostRace();
            }
          },
          alone: () => this.atomicallyAsync(steps),
        });
      } else {
        await this.atomicallyAsync(steps);
      }
      return true;
    } catch (err) {
      if (err instanceof LostRace) return false;
      throw err;
    }
  }

  private async atomicallyAsync(steps: readonly Step[]): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      for (const s of steps) {
        if ((await s.q.execute(trx, s.values)).changes !== 1 && s.mustChange) throw new LostRace();
      }
    });
  }

  /** Brings the schema up to date; safe to run concurrently from several instances on PostgreSQL. */
  async migrate(): Promise<void> {
    // On PostgreSQL, Kysely looks for its migration tables in every schema unless told which: a database where
    // another schema holds a `kysely_migration_lock` (another Kysely application, or another instance's schema)
    // would make it skip creating its own and then fail. So it is told: the schema this connection uses.
    const schema =
      this.dialect === 'postgres'
        ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(this.db)).rows[0]?.schema
        : undefined;
    const migrator = new Migrator({ db: this.db, provider: migrationProvider, ...(schema && { migrationTableSchema: schema }) });
    const { error, results } = await migrator.migrateToLatest();
    if (error) {
      const failed = results?.find((r) => r.status === 'Error')?.migrationName;
      throw new StoreError('unavailable', `migration ${failed ?? ''} failed: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }

  async close(): Promise<void> {
    await this.beforeClose?.();
    await this.db.destroy();
  }

  /** One round trip to the database. */
  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  /** The newest migration this version knows (Kysely applies them in name order). */
  private latestMigration: string | undefined;

  /**
   * Readiness: whether the newest migration this version knows is recorded
   * as applied, in one round trip. False when it is not (a store never
   * migrated, or one an older version migrated and this one has not yet);
   * throws when the migration table is missing or the database fails. A
   * newer version's migrations beyond it do not matter here.
   */
  async schemaIsCurrent(): Promise<boolean> {
    this.latestMigration ??= Object.keys(await migrationProvider.getMigrations())
      .sort((a, b) => a.localeCompare(b))
      .at(-1);
    const row = await sql<{ name: string }>`select name from ${sql.table(DEFAULT_MIGRATION_TABLE)} where name = ${this.latestMigration}`.execute(this.db);
    return row.rows.length === 1;
  }

  // ---- users ---------------------------------------------------------------

  async createUser(user: NewUser): Promise<User> {
    try {
      await this.db.insertInto('users').values(user).execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw new StoreError('duplicate', `user ${user.username} already exists`);
      throw err;
    }
    return (await this.findUserById(user.id))!;
  }

  /** Usernames are unique and matched without regard to (ASCII) case: the `users_username_lower` index serves this. */
  async findUserByUsername(username: string): Promise<User | undefined> {
    return this.db.selectFrom('users').selectAll().where(sql`lower(username)`, '=', username.toLowerCase()).executeTakeFirst();
  }

  /** Every user, oldest first (`users list`). */
  async listUsers(): Promise<User[]> {
    return this.db.selectFrom('users').selectAll().orderBy('created_at').orderBy('username').execute();
  }

  /**
   * A password reset by the operator: the new hash, and every session of the
   * user ended in the same transaction, so whoever knew the old password is
   * signed out of the browser where they used it.
   */
  async resetPassword(userId: string, passwordHash: string): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      await trx.updateTable('users').set({ password_hash: passwordHash }).where('id', '=', userId).execute();
      const r = await trx.deleteFrom('sessions').where('user_id', '=', userId).executeTakeFirst();
      return Number(r.numDeletedRows);
    });
  }

  async findUserById(id: string): Promise<User | undefined> {
    return (await this.run(this.q.userById, { id })).rows[0];
  }

  async setUserDisabled(username: string, disabledAt: number | null): Promise<void> {
    const r = await this.db
      .updateTable('users')
      .set({ disabled_at: disabledAt })
      .where(sql`lower(username)`, '=', username.toLowerCase())
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) throw new StoreError('not_found', `no user ${username}`);
  }

  /**
   * Replaces a user's password hash: a reset, or (with `replacing`) an upgrade
   * to current parameters that applies only if the hash is still the one that
   * was checked, so it never undoes a reset made in between.
   */
  async setPasswordHash(userId: string, passwordHash: string, replacing?: string): Promise<void> {
    let q = this.db.updateTable('users').set({ password_hash: passwordHash }).where('id', '=', userId);
    if (replacing !== undefined) q = q.where('password_hash', '=', replacing);
    await q.execute();
  }

  async countUsers(): Promise<number> {
    const r = await this.db.selectFrom('users').select((eb) => eb.fn.countAll<string | number>().as('n')).executeTakeFirstOrThrow();
    return Number(r.n);
  }

  // ---- applications --------------------------------------------------------

  async createApplication(app: NewApplication): Promise<Application> {
    try {
      await this.db
        .insertInto('applications')
        .values({
          client_id: app.clientId,
          owner_id: app.ownerId,
          name: app.name,
          kind: app.kind,
          secret_hash: app.secretHash,
          callback_urls: JSON.stringify(app.callbackUrls),
          scopes: app.scopes.join(' '),
          grant_types: JSON.stringify(app.grantTypes),
          id_token_alg: app.idTokenAlg,
          created_at: app.createdAt,
          updated_at: app.createdAt,
          post_logout_redirect_uris: JSON.stringify(app.postLogoutRedirectUris ?? []),
        })
        .execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw new StoreError('duplicate', `client_id ${app.clientId} already exists`);
      throw err;
    }
    return (await this.reloadApplication(app.clientId))!;
  }

  /**
   * The application with this client_id. Every token, device and revocation
   * request looks its client up, so answers are kept for
   * {@link APPLICATION_CACHE_MS}; this instance's own changes take effect at
   * once, another instance's within that time.
   */
  async getApplication(clientId: string): Promise<Application | undefined> {
    const now = performance.now();
    const hit = this.applications.get(clientId);
    if (hit && now - hit.at < APPLICATION_CACHE_MS) return hit.app;
    const [row] = (await this.run(this.q.application, { clientId })).rows;
    if (!row) {
      this.applications.delete(clientId);
      return undefined;
    }
    const app = freezeApplication(toApplication(row));
    if (this.applications.size >= APPLICATION_CACHE_SIZE) this.applications.clear();
    this.applications.set(clientId, { app, at: now });
    return app;
  }

  /** Reads the application past the cache (after changing it). */
  private async reloadApplication(clientId: string): Promise<Application | undefined> {
    this.applications.delete(clientId);
    return this.getApplication(clientId);
  }

  /** Applications owned by `ownerId`, or all of them when `ownerId` is undefined. */
  async listApplications(ownerId?: string): Promise<Application[]> {
    let q = this.db.selectFrom('applications').selectAll().orderBy('created_at').orderBy('client_id');
    if (ownerId !== undefined) q = q.where('owner_id', '=', ownerId);
    return (await q.execute()).map(toApplication);
  }

  async updateApplication(
    clientId: string,
    patch: Partial<Pick<Application, 'name' | 'callbackUrls' | 'scopes' | 'grantTypes' | 'idTokenAlg' | 'secretHash' | 'postLogoutRedirectUris'>>,
    now: number,
  ): Promise<Application> {
    const r = await this.db
      .updateTable('applications')
      .set({
        ...(patch.name !== undefined && { name: patch.name }),
        ...(patch.callbackUrls !== undefined && { callback_urls: JSON.stringify(patch.callbackUrls) }),
        ...(patch.postLogoutRedirectUris !== undefined && { post_logout_redirect_uris: JSON.stringify(patch.postLogoutRedirectUris) }),
        ...(patch.scopes !== undefined && { scopes: patch.scopes.join(' ') }),
        ...(patch.grantTypes !== undefined && { grant_types: JSON.stringify(patch.grantTypes) }),
        ...(patch.idTokenAlg !== undefined && { id_token_alg: patch.idTokenAlg }),
        ...(patch.secretHash !== undefined && { secret_hash: patch.secretHash }),
        updated_at: now,
      })
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    this.applications.delete(clientId);
    if (Number(r.numUpdatedRows) === 0) throw new StoreError('not_found', `no application ${clientId}`);
    return (await this.reloadApplication(clientId))!;
  }

  async deleteApplication(clientId: string): Promise<void> {
    const r = await this.db.deleteFrom('applications').where('client_id', '=', clientId).executeTakeFirst();
    this.applications.delete(clientId);
    if (Number(r.numDeletedRows) === 0) throw new StoreError('not_found', `no application ${clientId}`);
  }

  // ---- sessions ------------------------------------------------------------

  async createSession(session: Session): Promise<void> {
    await this.db.insertInto('sessions').values(session).execute();
  }

  /** The live session with this id hash, with its (enabled) user. */
  async findSession(idHash: string, now: number): Promise<{ session: Session; user: User } | undefined> {
    const row = await this.db
      .selectFrom('sessions')
      .innerJoin('users', 'users.id', 'sessions.user_id')
      .selectAll('sessions')
      .select([
        'users.id as u_id',
        'users.username as u_username',
        'users.password_hash as u_password_hash',
        'users.name as u_name',
        'users.email as u_email',
        'users.is_admin as u_is_admin',
        'users.disabled_at as u_disabled_at',
        'users.created_at as u_created_at',
      ])
      .where('sessions.id_hash', '=', idHash)
      .where('sessions.expires_at', '>', now)
      .where('users.disabled_at', 'is', null)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      session: { id_hash: row.id_hash, user_id: row.user_id, auth_time: row.auth_time, created_at: row.created_at, expires_at: row.expires_at },
      user: {
        id: row.u_id,
        username: row.u_username,
        password_hash: row.u_password_hash,
        name: row.u_name,
        email: row.u_email,
        is_admin: row.u_is_admin,
        disabled_at: row.u_disabled_at,
        created_at: row.u_created_at,
      },
    };
  }

  async deleteSession(idHash: string): Promise<void> {
    await this.db.deleteFrom('sessions').where('id_hash', '=', idHash).execute();
  }

  // ---- consents ------------------------------------------------------------

  /** Records that the user approved exactly this scope set for the application. */
  async addConsent(userId: string, clientId: string, scopes: string[], now: number): Promise<void> {
    const scope = [...new Set(scopes)].sort().join(' ');
    await this.db
      .insertInto('consents')
      .values({ user_id: userId, client_id: clientId, scope, created_at: now })
      .onConflict((oc) => oc.columns(['user_id', 'client_id', 'scope']).doNothing())
      .execute();
  }

  /** True when some approved scope set of this user and application covers every requested scope. */
  async hasConsent(userId: string, clientId: string, scopes: string[]): Promise<boolean> {
    const rows = await this.db
      .selectFrom('consents')
      .select('scope')
      .where('user_id', '=', userId)
      .where('client_id', '=', clientId)
      .execute();
    return rows.some((r) => {
      const granted = new Set(r.scope.split(' '));
      return scopes.every((s) => granted.has(s));
    });
  }

  // ---- authorization codes -------------------------------------------------

  async insertCode(code: Omit<AuthorizationCode, 'consumed_at' | 'grant_id'>): Promise<void> {
    await this.db.insertInto('authorization_codes').values({ ...code, consumed_at: null, grant_id: null }).execute();
  }

  async findCode(codeHash: string): Promise<AuthorizationCode | undefined> {
    return (await this.run(this.q.code, { hash: codeHash })).rows[0];
  }

  /**
   * Consumes an unexpired, unconsumed code and binds it to `grantId` in one
   * conditional UPDATE: among concurrent callers, across instances, exactly
   * one gets `true`.
   */
  async consumeCode(codeHash: string, grantId: string, now: number): Promise<boolean> {
    return (await this.run(this.q.consumeCode, { hash: codeHash, grantId, now })).changes === 1;
  }

  /**
   * Redeems a code into a new grant in one transaction: the grant row exists
   * only if this caller consumed the code, so a lost race leaves nothing
   * behind, and a replay always finds the winner's grant to revoke.
   */
  async redeemCode(codeHash: string, grant: Grant, now: number, refresh?: RefreshToken): Promise<boolean> {
    return this.atomically([
      { q: this.q.insertGrant, values: grant },
      { q: this.q.consumeCode, values: { hash: codeHash, grantId: grant.id, now }, mustChange: true },
      ...(refresh ? [{ q: this.q.insertRefreshToken, values: refresh }] : []),
    ]);
  }

  // ---- grants --------------------------------------------------------------

  async insertGrant(grant: Grant): Promise<void> {
    await this.run(this.q.insertGrant, grant);
  }

  async findGrant(id: string): Promise<Grant | undefined> {
    return this.db.selectFrom('grants').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Revokes a grant and with it every token issued under it. Idempotent. */
  async revokeGrant(id: string, now: number): Promise<void> {
    await this.db.updateTable('grants').set({ revoked_at: now }).where('id', '=', id).where('revoked_at', 'is', null).execute();
  }

  // ---- device authorizations (RFC 8628) ---------------------------------------

  async insertDeviceAuthorization(row: DeviceAuthorization): Promise<void> {
    try {
      await this.run(this.q.insertDevice, row);
    } catch (err) {
      if (isUniqueViolation(err)) throw new StoreError('duplicate', 'user_code or device_code already in use');
      throw err;
    }
  }

  async findDeviceByCodeHash(hash: string): Promise<DeviceAuthorization | undefined> {
    return (await this.run(this.q.deviceByHash, { hash })).rows[0];
  }

  async findDeviceByUserCode(userCode: string): Promise<DeviceAuthorization | undefined> {
    return this.db.selectFrom('device_authorizations').selectAll().where('user_code', '=', userCode).executeTakeFirst();
  }

  /**
   * Records a poll of a pending, unexpired device code of this client (RFC
   * 8628 §3.5): a poll sooner than the current interval after the previous
   * poll is slowed (interval + 5 s); every poll becomes the new "previous
   * poll". On time and early are two exclusive conditional UPDATEs, each one
   * atomic step across instances (a poll that finds itself early because
   * another just landed is rightly early), so an on-time poll is never
   * slowed. Returns undefined when no such pending row exists (then the
   * caller looks at why).
   *
   * On the embedded store the polls that arrive in one turn of the event loop
   * are committed together (group commit): each poll is still its own
   * statements, and its answer is given only after the commit.
   */
  async recordDevicePoll(hash: string, clientId: string, now: number): Promise<DevicePoll | undefined> {
    const values = { hash, clientId, now };
    if (!this.batch) return this.pollDevice(values);
    const conn = this.sync!;
    const { devicePollOnTime: onTime, devicePollEarly: early } = this.q;
    return this.batch.run({
      now: () => (onTime.executeSync(conn, this.db, values).changes === 1 ? ON_TIME : slowedDown(early.executeSync(conn, this.db, values).rows[0])),
      alone: () => this.pollDevice(values),
    });
  }

  private async pollDevice(values: { hash: string; clientId: string; now: number }): Promise<DevicePoll | undefined> {
    if ((await this.q.devicePollOnTime.execute(this.db, values)).changes === 1) return ON_TIME;
    return slowedDown((await this.q.devicePollEarly.execute(this.db, values)).rows[0]);
  }

  /** Approves or denies a pending, unexpired device authorization; false when it was not pending. */
  async decideDevice(
    userCode: string,
    decision: { status: 'approved'; userId: string; authTime: number } | { status: 'denied'; userId: string },
    now: number,
  ): Promise<boolean> {
    const r = await this.db
      .updateTable('device_authorizations')
      .set({
        status: decision.status,
        user_id: decision.userId,
        auth_time: decision.status === 'approved' ? decision.authTime : null,
      })
      .where('user_code', '=', userCode)
      .where('status', '=', 'pending')
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /**
   * Redeems an approved device code into a new grant (and its first refresh
   * token) in one transaction; among concurrent pollers exactly one wins.
   */
  async redeemDevice(hash: string, grant: Grant, now: number, refresh?: RefreshToken): Promise<boolean> {
    return this.atomically([
      { q: this.q.insertGrant, values: grant },
      { q: this.q.redeemDevice, values: { hash, grantId: grant.id, now }, mustChange: true },
      ...(refresh ? [{ q: this.q.insertRefreshToken, values: refresh }] : []),
    ]);
  }

  // ---- refresh tokens ----------------------------------------------------------

  async insertRefreshToken(row: RefreshToken): Promise<void> {
    await this.run(this.q.insertRefreshToken, row);
  }

  async findRefreshToken(hash: string): Promise<RefreshToken | undefined> {
    return this.db.selectFrom('refresh_tokens').selectAll().where('token_hash', '=', hash).executeTakeFirst();
  }

  /**
   * Rotates a refresh token (RFC 9700 §4.14.2): marks the old one used and
   * stores its successor in one transaction. False when the old one was
   * already used, i.e. a reuse, which the caller answers by revoking the family.
   */
  async rotateRefreshToken(oldHash: string, successor: RefreshToken, now: number): Promise<boolean> {
    return this.atomically([
      { q: this.q.useRefreshToken, values: { hash: oldHash, now }, mustChange: true },
      { q: this.q.insertRefreshToken, values: successor },
    ]);
  }

  // ---- access token revocation (RFC 7009) -------------------------------------

  async revokeAccessToken(jti: string, expiresAt: number): Promise<void> {
    await this.db
      .insertInto('revoked_access_tokens')
      .values({ jti, expires_at: expiresAt })
      .onConflict((oc) => oc.column('jti').doNothing())
      .execute();
  }

  async isAccessTokenRevoked(jti: string): Promise<boolean> {
    const row = await this.db.selectFrom('revoked_access_tokens').select('jti').where('jti', '=', jti).executeTakeFirst();
    return row !== undefined;
  }

  // ---- rate limits ---------------------------------------------------------------

  /**
   * Counts one event under `key` in a fixed window and returns the window's
   * count, including this event: one `INSERT ... ON CONFLICT DO UPDATE ...
   * RETURNING` on both engines, so the increment and the read are one atomic
   * step across instances. Callers consume before the work the limit protects
   * and refuse when the answer is over the limit: N parallel requests get N
   * distinct counts, so at most `limit` of them ever pass.
   */
  async consumeRateLimit(key: string, windowMs: number, now: number): Promise<{ count: number; windowStart: number }> {
    const stale = sql<boolean>`rate_limits.window_start <= ${now - windowMs}`;
    const row = await this.db
      .insertInto('rate_limits')
      .values({ key, window_start: now, count: 1 })
      .onConflict((oc) =>
        oc.column('key').doUpdateSet({
          count: sql<number>`case when ${stale} then 1 else rate_limits.count + 1 end`,
          window_start: sql<number>`case when ${stale} then ${now} else rate_limits.window_start end`,
        }),
      )
      .returning(['count', 'window_start'])
      .executeTakeFirstOrThrow();
    return { count: row.count, windowStart: row.window_start };
  }

  /**
   * Gives one event back to the window it was counted in (a success that was
   * counted before it was known); nothing when that window has since ended
   * and another begun.
   */
  async releaseRateLimit(key: string, windowStart: number): Promise<void> {
    await this.db
      .updateTable('rate_limits')
      .set({ count: sql<number>`count - 1` })
      .where('key', '=', key)
      .where('window_start', '=', windowStart)
      .where('count', '>', 0)
      .execute();
  }

  /** Every counter (operator commands: what is limited now, and clearing it). */
  async listRateLimits(): Promise<{ key: string; window_start: number; count: number }[]> {
    return this.db.selectFrom('rate_limits').selectAll().orderBy('key').execute();
  }

  /** Deletes the counters with these keys; returns how many there were. */
  async deleteRateLimits(keys: readonly string[]): Promise<number> {
    let n = 0;
    // In slices: PostgreSQL and SQLite both cap the parameters of one statement.
    for (let i = 0; i < keys.length; i += 500) {
      const r = await this.db.deleteFrom('rate_limits').where('key', 'in', keys.slice(i, i + 500)).executeTakeFirst();
      n += Number(r.numDeletedRows);
    }
    return n;
  }

  // ---- signing keys --------------------------------------------------------

  async insertSigningKey(key: SigningKeyRow): Promise<void> {
    await this.db.insertInto('signing_keys').values(key).execute();
  }

  /** Every stored key, retired ones included (the key-encryption check at start covers them all). */
  async allSigningKeys(): Promise<SigningKeyRow[]> {
    return this.db.selectFrom('signing_keys').selectAll().orderBy('created_at', 'desc').orderBy('kid').execute();
  }

  /**
   * Replaces a key's stored private part, only if it still is `expected`:
   * instances encrypting the same plaintext row at once store one ciphertext.
   * Returns whether this call replaced it.
   */
  async replaceSigningKeyPrivate(kid: string, expected: string, privateJwk: string): Promise<boolean> {
    const r = await this.db
      .updateTable('signing_keys')
      .set({ private_jwk: privateJwk })
      .where('kid', '=', kid)
      .where('private_jwk', '=', expected)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /** Keys that are active, or retired after `publishedSince` (still verifying issued tokens). */
  async listSigningKeys(publishedSince: number): Promise<SigningKeyRow[]> {
    return this.db
      .selectFrom('signing_keys')
      .selectAll()
      .where((eb) => eb.or([eb('retired_at', 'is', null), eb('retired_at', '>', publishedSince)]))
      .orderBy('created_at', 'desc')
      .orderBy('kid')
      .execute();
  }

  /**
   * Replaces the active keys of the given algorithms by `fresh` in one
   * transaction: old keys are retired (still published until their tokens
   * expire), new keys become the signing keys.
   */
  async rotateSigningKeys(fresh: SigningKeyRow[], now: number): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
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

  // ---- settings ------------------------------------------------------------

  /**
   * The value stored under `key`, creating it from `make()` if absent. When
   * several instances race, all of them read back the one value that won.
   */
  async getOrCreateSetting(key: string, make: () => string): Promise<string> {
    await this.db
      .insertInto('settings')
      .values({ key, value: make() })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    const row = await this.db.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirstOrThrow();
    return row.value;
  }

  async setSetting(key: string, value: string): Promise<void> {
    await this.db
      .insertInto('settings')
      .values({ key, value })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
      .execute();
  }

  // ---- housekeeping --------------------------------------------------------

  /** Deletes expired sessions and codes; consumed codes are kept until expiry so replays are detected. */
  async purgeExpired(now: number): Promise<void> {
    await this.db.deleteFrom('sessions').where('expires_at', '<=', now).execute();
    // Keep codes for a while past expiry: a late replay still finds the row and revokes its grant.
    await this.db.deleteFrom('authorization_codes').where('expires_at', '<=', now - REPLAY_EVIDENCE_MS).execute();
    await this.db.deleteFrom('device_authorizations').where('expires_at', '<=', now - REPLAY_EVIDENCE_MS).execute();
    await this.db.deleteFrom('revoked_access_tokens').where('expires_at', '<=', now).execute();
    await this.db.deleteFrom('rate_limits').where('window_start', '<=', now - RATE_LIMIT_ROWS_KEPT_MS).execute();
    // Expired grants take their refresh tokens with them (ON DELETE CASCADE).
    await this.db.deleteFrom('grants').where('expires_at', '<=', now).execute();
    // Sign-in continuations (store/continuations.ts): nothing to keep once expired, a late use goes to `/` anyway.
    await this.db.deleteFrom('continuations').where('expires_at', '<=', now).execute();
  }
}

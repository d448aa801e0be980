import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type BetterSqlite3 from 'better-sqlite3';
import type pg from 'pg';
import { Kysely, PostgresDialect, SqliteDialect, type PostgresCursor, type PostgresPool, type PostgresPoolClient, type PostgresQueryResult } from 'kysely';
import { DB_TIMEOUT_MS } from '../config/defaults.js';
import { BackgroundCheckpointer } from './checkpointer.js';
import { secureDatabaseFiles } from './file-modes.js';
import type { SyncConnection } from './prepared.js';
import type { Database } from './schema.js';
import { Store, StoreError } from './store.js';
import { isQueryReadTimeout } from './unavailable.js';

/** Where a `DATABASE_URL` points: a PostgreSQL URL or an SQLite file. */
export type StoreLocation = { dialect: 'postgres'; url: string } | { dialect: 'sqlite'; path: string };

/**
 * Reads `DATABASE_URL`: `postgres://` / `postgresql://` URLs select
 * PostgreSQL; `sqlite:` URLs (`sqlite:./x.db`, `sqlite:///abs/x.db`) and
 * plain paths select the embedded SQLite store.
 */
export function parseDatabaseUrl(value: string): StoreLocation {
  const v = value.trim();
  if (v === '') throw new StoreError('unavailable', 'DATABASE_URL is empty');
  if (/^postgres(ql)?:\/\//i.test(v)) return { dialect: 'postgres', url: v };
  if (/^sqlite:/i.test(v)) {
    const rest = v.slice('sqlite:'.length);
    if (rest.startsWith('//')) return { dialect: 'sqlite', path: fileURLToPath(`file:${rest}`) };
    if (rest === '') throw new StoreError('unavailable', 'sqlite: URL without a path');
    return { dialect: 'sqlite', path: resolve(rest) };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(v)) {
    throw new StoreError('unavailable', `unsupported DATABASE_URL scheme in ${v.split(':')[0]}: (use postgres:// or a file path)`);
  }
  return { dialect: 'sqlite', path: v === ':memory:' ? v : resolve(v) };
}

/**
 * A better-sqlite3 connection as the store runs it synchronously: statements
 * cached by SQL text (Kysely prepares every query anew, and this saves that
 * work on every request), transactions that nest as savepoints.
 */
export function syncConnection(sqlite: BetterSqlite3.Database): SyncConnection & { prepare(sql: string): BetterSqlite3.Statement } {
  const statements = new Map<string, BetterSqlite3.Statement>();
  const prepare = (sql: string) => {
    let stmt = statements.get(sql);
    if (!stmt) {
      stmt = sqlite.prepare(sql);
      if (statements.size < 500) statements.set(sql, stmt);
    }
    return stmt;
  };
  const transaction = sqlite.transaction((work: () => unknown) => work());
  return {
    get inTransaction() {
      return sqlite.inTransaction;
    },
    prepare,
    atomically: <T>(work: () => T) => transaction(work) as T,
  };
}

/**
 * With background checkpoints, the most pages the write-ahead log may hold
 * (64 MiB of 4 KiB pages) before the commit that grows it past that finishes
 * the checkpoint itself.
 */
export const WAL_LIMIT_PAGES = 16_384;

export interface OpenOptions {
  /**
   * Embedded store only: checkpoint the write-ahead log from a background
   * thread instead of inside the commit that fills it (the server does this;
   * one-shot commands keep SQLite's automatic checkpoints).
   */
  backgroundCheckpoints?: boolean;
  /** With background checkpoints: see {@link WAL_LIMIT_PAGES} (tests set a small one). */
  walLimitPages?: number;
  /** With background checkpoints: how often the thread checkpoints (tests set a long one). */
  checkpointIntervalMs?: number;
  /**
   * PostgreSQL only: how long to wait for a connection (connecting, or a free
   * one from the pool) and for a statement's answer before the call fails;
   * see {@link postgresTimeouts}. Default {@link DB_TIMEOUT_MS}.
   */
  timeoutMs?: number;
}

/**
 * The pg settings that keep a stalled database from holding requests:
 * - `connectionTimeoutMillis`: pg-pool gives up on a caller that waited this
 *   long for a client (a full pool), and pg on a connect not done by then
 *   (a black-holed address accepts nothing and refuses nothing);
 * - `statement_timeout` (sent at connect): the server cancels a statement
 *   that ran this long (a lock wait, an overloaded server), SQLSTATE 57014,
 *   and the connection stays usable;
 * - `query_timeout`: pg gives up on an answer that did not come this long
 *   after the server's own cancellation should have (the server or the
 *   network is gone); the margin lets the server's cancellation, which leaves
 *   a healthy connection, come first;
 * - `idle_in_transaction_session_timeout`: the server ends a session whose
 *   transaction waits on us longer than a statement may run, so a partition
 *   mid-transaction does not leave its row locks held until TCP gives up;
 * - `keepAlive`: TCP keepalive on every connection, so a peer that vanished
 *   while a connection sat idle is found out.
 */
export function postgresTimeouts(timeoutMs: number) {
  return {
    connectionTimeoutMillis: timeoutMs,
    statement_timeout: timeoutMs,
    query_timeout: timeoutMs + QUERY_TIMEOUT_MARGIN_MS,
    idle_in_transaction_session_timeout: timeoutMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  };
}

/** See {@link postgresTimeouts}: enough for a cancellation to travel back over a working network. */
const QUERY_TIMEOUT_MARGIN_MS = 250;

/**
 * The pool as Kysely sees it. A client whose query pg gave up on (the
 * `query_timeout` above) still has that query on the wire, and the next
 * query on it would queue behind an answer that may never come: its further
 * queries in this checkout (a transaction's rollback) fail at once, and its
 * release hands pg-pool the error, which makes the pool close it (pg cuts a
 * connection with a query in flight) and connect a fresh one for the next
 * caller. The queries go through pg's callback form, which costs what the
 * promise form does.
 */
class GuardedClient implements PostgresPoolClient {
  private abandoned: Error | undefined;

  constructor(private readonly client: pg.PoolClient) {}

  query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query<R>(sqlOrCursor: string | PostgresCursor<R>, parameters?: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    // Kysely streams through a cursor only when the dialect is given a cursor class, and the store's is not.
    if (typeof sqlOrCursor !== 'string') throw new Error('the store does not stream query results');
    if (this.abandoned) return Promise.reject(this.abandoned);
    return new Promise((resolve, reject) => {
      this.client.query(sqlOrCursor, parameters as unknown[], (err: Error | undefined, result: pg.QueryResult) => {
        if (err) {
          if (isQueryReadTimeout(err)) this.abandoned = err;
          reject(err);
        } else {
          resolve(result as unknown as PostgresQueryResult<R>);
        }
      });
    });
  }

  release(): void {
    this.client.release(this.abandoned);
  }
}

function guardedPool(pool: pg.Pool): PostgresPool {
  // One wrapper per pg client for its whole life, so Kysely (which keeps a connection object per client) sees
  // the same one at every checkout.
  const guarded = new WeakMap<pg.PoolClient, GuardedClient>();
  return {
    async connect() {
      const client = await pool.connect();
      let g = guarded.get(client);
      if (!g) guarded.set(client, (g = new GuardedClient(client)));
      return g;
    },
    end: () => pool.end(),
  };
}

/**
 * Opens (without migrating) the store that `databaseUrl` names. An embedded
 * store's folder and files are made private first (see file-modes.ts).
 */
export async function openStore(databaseUrl: string, options: OpenOptions = {}): Promise<Store> {
  const loc = parseDatabaseUrl(databaseUrl);
  if (loc.dialect === 'postgres') {
    const pg = (await import('pg')).default;
    // bigint columns hold epoch milliseconds, well inside Number's safe range.
    const pool = new pg.Pool({
      connectionString: loc.url,
      max: 10,
      ...postgresTimeouts(options.timeoutMs ?? DB_TIMEOUT_MS),
      types: {
        getTypeParser: ((oid: number, format?: string) =>
          oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
      },
    });
    pool.on('error', () => {
      /* an idle client lost its connection; the pool replaces it */
    });
    return new Store(new Kysely<Database>({ dialect: new PostgresDialect({ pool: guardedPool(pool) }) }), 'postgres');
  }
  const BetterSqlite = (await import('better-sqlite3')).default;
  // Before SQLite sees the path: it would create the database file with its default mode (0644 less the umask).
  if (loc.path !== ':memory:') secureDatabaseFiles(loc.path);
  const sqlite = new BetterSqlite(loc.path);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  let checkpointer: BackgroundCheckpointer | undefined;
  if (options.backgroundCheckpoints && loc.path !== ':memory:') {
    // The thread copies the log into the database file, but the log only starts over when a writer finds it
    // completely copied, and under writes that never pause (a saturated server) the thread is always a few
    // commits behind: the log would grow for as long as the load lasts. So the commits never checkpoint until
    // the log passes the limit; then the next commit that can (the thread is not in a checkpoint just then)
    // copies what the thread has not, and the log starts over. Measured under saturating device polls:
    // the log stays at 64 MiB instead of growing by ~50 MB/s, at the same throughput.
    sqlite.pragma(`wal_autocheckpoint = ${Math.trunc(options.walLimitPages ?? WAL_LIMIT_PAGES)}`);
    // A log that grew past this (a long reader kept it from starting over) is cut back once it can be.
    sqlite.pragma('journal_size_limit = 67108864');
    checkpointer = new BackgroundCheckpointer(
      loc.path,
      () => {
        if (sqlite.open) sqlite.pragma('wal_autocheckpoint = 1000');
      },
      options.checkpointIntervalMs,
    );
  }
  const sync = syncConnection(sqlite);
  const database = { close: () => sqlite.close(), prepare: sync.prepare };
  return new Store(new Kysely<Database>({ dialect: new SqliteDialect({ database }) }), 'sqlite', sync, () => checkpointer?.stop());
}

import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import { BackgroundCheckpointer } from './checkpointer.js';
import { secureDatabaseFiles } from './file-modes.js';
import type { SyncConnection } from './prepared.js';
import type { Database } from './schema.js';
import { Store, StoreError } from './store.js';

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
      types: {
        getTypeParser: ((oid: number, format?: string) =>
          oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
      },
    });
    pool.on('error', () => {
      /* an idle client lost its connection; the pool replaces it */
    });
    return new Store(new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), 'postgres');
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

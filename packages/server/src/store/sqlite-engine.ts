import { SQLITE_BUSY_TIMEOUT_MS, WAL_LIMIT_PAGES, WAL_SIZE_LIMIT_BYTES } from '../config/defaults.js';
import type BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { BackgroundCheckpointer } from './checkpointer.js';
import { type Dialect, type Engine, type GroupedWork, LostRace, type Step, stepsInTransaction } from './engine.js';
import { secureDatabaseFiles } from './file-modes.js';
import { GroupCommit, type Unit } from './group-commit.js';
import { migrateToLatest } from './migrate.js';
import type { Prepared, Rows, SyncConnection } from './prepared.js';
import type { Database } from './schema.js';

/** How the embedded engine runs its file (see OpenOptions in open.ts). */
export interface SqliteOptions {
  backgroundCheckpoints?: boolean;
  walLimitPages?: number;
  checkpointIntervalMs?: number;
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
 * The embedded engine: one synchronous better-sqlite3 connection in WAL
 * mode. Hot-path statements run on it synchronously when no transaction is
 * open; writes of one event-loop turn share a commit (group commit); with
 * background checkpoints a thread of its own copies the log into the file.
 */
export class SqliteEngine implements Engine {
  readonly dialect: Dialect = 'sqlite';
  readonly db: Kysely<Database>;
  readonly grouped: GroupedWork;
  private readonly conn: SyncConnection;
  private readonly batch: GroupCommit;

  private constructor(
    private readonly sqlite: BetterSqlite3.Database,
    private readonly checkpointer: BackgroundCheckpointer | undefined,
  ) {
    const sync = syncConnection(sqlite);
    this.conn = sync;
    this.db = new Kysely<Database>({ dialect: new SqliteDialect({ database: { close: () => sqlite.close(), prepare: sync.prepare } }) });
    const batch = new GroupCommit(sync);
    this.batch = batch;
    const db = this.db;
    this.grouped = {
      run: <T>(_operation: string, unit: Unit<T>) => batch.run(unit),
      now: <P extends string, R>(q: Prepared<P, R>, values: Record<P, unknown>) => q.executeSync(sync, db, values),
    };
  }

  /** Opens the file at `path` (`:memory:` for none); its folder and files are made private first (see file-modes.ts). */
  static async open(path: string, options: SqliteOptions = {}): Promise<SqliteEngine> {
    const BetterSqlite = (await import('better-sqlite3')).default;
    // Before SQLite sees the path: it would create the database file with its default mode (0644 less the umask).
    if (path !== ':memory:') secureDatabaseFiles(path);
    const sqlite = new BetterSqlite(path);
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('foreign_keys = ON');
    sqlite.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
    let checkpointer: BackgroundCheckpointer | undefined;
    if (options.backgroundCheckpoints && path !== ':memory:') {
      // The thread copies the log into the database file, but the log only starts over when a writer finds it
      // completely copied, and under writes that never pause (a saturated server) the thread is always a few
      // commits behind: the log would grow for as long as the load lasts. So the commits never checkpoint until
      // the log passes the limit; then the next commit that can (the thread is not in a checkpoint just then)
      // copies what the thread has not, and the log starts over. Measured under saturating device polls:
      // the log stays at 64 MiB instead of growing by ~50 MB/s, at the same throughput.
      sqlite.pragma(`wal_autocheckpoint = ${Math.trunc(options.walLimitPages ?? WAL_LIMIT_PAGES)}`);
      sqlite.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
      checkpointer = new BackgroundCheckpointer(
        path,
        () => {
          if (sqlite.open) sqlite.pragma('wal_autocheckpoint = 1000');
        },
        options.checkpointIntervalMs,
      );
    }
    return new SqliteEngine(sqlite, checkpointer);
  }

  /** Runs a prepared statement: synchronously when the connection is free, else through Kysely (queued behind the open transaction). */
  async run<P extends string, R>(q: Prepared<P, R>, values: Record<P, unknown>): Promise<Rows<R>> {
    if (!this.conn.inTransaction) return q.executeSync(this.conn, this.db, values);
    return q.execute(this.db, values);
  }

  async atomically(_operation: string, steps: readonly Step[]): Promise<boolean> {
    try {
      await this.batch.run({
        severalStatements: true,
        now: () => {
          for (const s of steps) {
            if (s.q.executeSync(this.conn, this.db, s.values).changes !== 1 && s.mustChange) throw new LostRace();
          }
        },
        alone: () => stepsInTransaction(this.db, steps),
      });
      return true;
    } catch (err) {
      if (err instanceof LostRace) return false;
      throw err;
    }
  }

  transaction<T>(work: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(work);
  }

  migrate(): Promise<void> {
    return migrateToLatest(this.db);
  }

  async checkpoint(): Promise<void> {
    await sql`pragma wal_checkpoint(TRUNCATE)`.execute(this.db);
  }

  /** The value of a pragma, read on the store's own connection (diagnostics and tests). */
  pragma(name: string): unknown {
    return this.sqlite.pragma(name, { simple: true });
  }

  async close(): Promise<void> {
    await this.checkpointer?.stop();
    await this.db.destroy();
  }
}

import { POSTGRES_POOL_SIZE, QUERY_TIMEOUT_MARGIN_MS } from '../config/defaults.js';
import type pg from 'pg';
import {
  Kysely,
  PostgresDialect,
  sql,
  type PostgresCursor,
  type PostgresPool,
  type PostgresPoolClient,
  type PostgresQueryResult,
} from 'kysely';
import { type Dialect, type Engine, LostRace, type Step, stepsInTransaction } from './engine.js';
import { migrateToLatest } from './migrate.js';
import type { Prepared, Rows } from './prepared.js';
import type { Database } from './schema.js';
import { isQueryReadTimeout } from './unavailable.js';

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
  query<R>(
    sqlOrCursor: string | PostgresCursor<R>,
    parameters?: ReadonlyArray<unknown>,
  ): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
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
      if (!g) {
        g = new GuardedClient(client);
        guarded.set(client, g);
      }
      return g;
    },
    end: () => pool.end(),
  };
}

/**
 * The PostgreSQL engine: a pool of guarded pg connections (see
 * {@link GuardedClient}) with the timeouts of {@link postgresTimeouts}. No
 * group commit: each write is its own statement or transaction, and several
 * instances may share the database.
 */
/** SQLSTATEs of a catalog that changed under a listing: undefined column, table, schema; an internal cache miss. */
const INTROSPECTION_RACES = new Set(['42703', '42P01', '3F000', 'XX000']);
/** Tries of a migration whose table listing met another connection's schema change (see migrate). */
const MIGRATE_ATTEMPTS = 3;

export class PostgresEngine implements Engine {
  readonly dialect: Dialect = 'postgres';
  readonly grouped = undefined;

  private constructor(readonly db: Kysely<Database>) {}

  /** Opens a pool on `url` (connections are made on first use); `timeoutMs`: see {@link postgresTimeouts}. */
  static async open(url: string, timeoutMs: number): Promise<PostgresEngine> {
    const pg = (await import('pg')).default;
    // bigint columns hold epoch milliseconds, well inside Number's safe range.
    const pool = new pg.Pool({
      connectionString: url,
      max: POSTGRES_POOL_SIZE,
      ...postgresTimeouts(timeoutMs),
      types: {
        getTypeParser: ((oid: number, format?: string) =>
          oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
      },
    });
    pool.on('error', () => {
      /* an idle client lost its connection; the pool replaces it */
    });
    return new PostgresEngine(new Kysely<Database>({ dialect: new PostgresDialect({ pool: guardedPool(pool) }) }));
  }

  run<P extends string, R>(q: Prepared<P, R>, values: Record<P, unknown>): Promise<Rows<R>> {
    return q.execute(this.db, values);
  }

  async atomically(_operation: string, steps: readonly Step[]): Promise<boolean> {
    try {
      await stepsInTransaction(this.db, steps);
      return true;
    } catch (err) {
      if (err instanceof LostRace) return false;
      throw err;
    }
  }

  transaction<T>(work: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(work);
  }

  async migrate(): Promise<void> {
    // Kysely looks for its migration tables in every schema unless told which: a database where another schema
    // holds a `kysely_migration_lock` (another Kysely application, or another instance's schema) would make it
    // skip creating its own and then fail. So it is told: the schema this connection uses.
    const schema = (await sql<{ schema: string }>`select current_schema() as schema`.execute(this.db)).rows[0]?.schema;
    // Kysely's Migrator first lists the tables of every schema (its introspector); a schema that another
    // connection drops meanwhile (another application's, or a test's) can make that listing fail with an
    // undefined column, table or schema, or a catalog cache miss, though nothing is wrong here: tried again.
    for (let attempt = 1; ; attempt++) {
      try {
        await migrateToLatest(this.db, schema);
        return;
      } catch (err) {
        const code = (err as { cause?: { code?: string } }).cause?.code;
        if (attempt >= MIGRATE_ATTEMPTS || !code || !INTROSPECTION_RACES.has(code)) throw err;
        await new Promise((r) => setTimeout(r, 50 * attempt));
      }
    }
  }

  async checkpoint(): Promise<void> {
    // PostgreSQL checkpoints on its own; nothing here to copy.
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }
}

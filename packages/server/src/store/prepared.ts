import type { CompiledQuery, Kysely } from 'kysely';

/**
 * The embedded store's own connection, for running prepared statements
 * synchronously: a statement runs to completion before anything else can
 * touch the database, without Kysely's per-query promise chain.
 */
export interface SyncConnection {
  /** True while a (Kysely) transaction is open on the connection: synchronous work must then queue behind it. */
  readonly inTransaction: boolean;
  prepare(sql: string): {
    readonly reader: boolean;
    all(...params: unknown[]): unknown[];
    run(...params: unknown[]): { changes: number };
  };
  /** Runs `work` in one transaction (rolled back if it throws); nested, in a savepoint. */
  atomically<T>(work: () => T): T;
}

/** What a statement returned: its rows (SELECT, RETURNING) and how many rows it changed. */
export interface Rows<R> {
  rows: R[];
  changes: number;
}

/**
 * A query Kysely builds and compiles once, then runs with fresh parameter
 * values: the hot paths (client lookup, device polls, code redemption) skip
 * rebuilding and recompiling the same statement on every request. Parameters
 * are named by passing sentinels at build time; each sentinel's positions in
 * the compiled parameter list are filled at run time.
 */
/**
 * A Kysely instance of any schema: a prepared statement is built against the
 * store's typed instance, but its sentinels stand in for values of every type.
 */
// biome-ignore lint/suspicious/noExplicitAny: see above
type AnyDb = Kysely<any>;
// biome-ignore lint/suspicious/noExplicitAny: a sentinel stands in for a value of any column type
type Sentinels<P extends string> = Record<P, any>;

export class Prepared<P extends string, R> {
  private compiled: CompiledQuery | undefined;
  private slots: (P | undefined)[] = [];

  constructor(
    /** The statement's name in the store's metrics (`operation`): fixed, so the label's values are bounded. */
    readonly name: string,
    private readonly names: readonly P[],
    private readonly build: (db: AnyDb, p: Sentinels<P>) => { compile(): CompiledQuery },
  ) {}

  private compile(db: AnyDb): CompiledQuery {
    if (!this.compiled) {
      const sentinels = Object.fromEntries(this.names.map((n) => [n, `\u0000param:${n}\u0000`])) as Record<P, string>;
      this.compiled = this.build(db, sentinels).compile();
      this.slots = this.compiled.parameters.map((v) => this.names.find((n) => sentinels[n] === v));
    }
    return this.compiled;
  }

  private parameters(template: CompiledQuery, values: Record<P, unknown>): unknown[] {
    return template.parameters.map((v, i) => {
      const slot = this.slots[i];
      return slot === undefined ? v : values[slot];
    });
  }

  /** Runs through Kysely on `db` (the store's instance or a transaction of it). */
  async execute(db: AnyDb, values: Record<P, unknown>): Promise<Rows<R>> {
    const template = this.compile(db);
    const r = await db.executeQuery<R>({ ...template, parameters: this.parameters(template, values) });
    return { rows: r.rows, changes: Number(r.numAffectedRows ?? r.rows.length) };
  }

  /** Runs synchronously on the embedded store's connection (`db` only compiles the statement, once). */
  executeSync(conn: SyncConnection, db: AnyDb, values: Record<P, unknown>): Rows<R> {
    const template = this.compile(db);
    const stmt = conn.prepare(template.sql);
    const parameters = this.parameters(template, values);
    if (stmt.reader) {
      const rows = stmt.all(...parameters) as R[];
      return { rows, changes: rows.length };
    }
    return { rows: [], changes: stmt.run(...parameters).changes };
  }
}

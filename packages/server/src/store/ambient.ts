import { AsyncLocalStorage } from 'node:async_hooks';
import { type Kysely, sql } from 'kysely';
import { type Engine, type GroupedWork, LostRace, type Step } from './engine.js';
import type { Prepared, Rows } from './prepared.js';
import type { Database } from './schema.js';

/** One open ambient transaction: `done` once it committed or rolled back, so work it started later runs on its own. */
interface Scope {
  trx: Kysely<Database>;
  done: boolean;
  savepoints: number;
  /** What to run once the transaction committed (nothing if it rolled back). */
  committed: (() => void)[];
}

/**
 * An engine whose calls join the transaction that {@link within} opened, for
 * the code that runs inside it (an AsyncLocalStorage scope): a change and the
 * audit row that records it commit together, whichever repositories the
 * change goes through, and none of them needs to be handed a transaction.
 * Inside, group commit is off (its batches run outside any transaction),
 * nested transactions join the open one, and an atomic sequence runs in a
 * savepoint so that a lost race rolls back only its own steps. Outside, every
 * call goes straight to the engine below after one counter test, so the hot
 * paths pay nothing measurable for it.
 */
export class AmbientEngine implements Engine {
  readonly dialect: Engine['dialect'];
  private readonly scopes = new AsyncLocalStorage<Scope>();
  /** How many ambient transactions are open: while none is, nothing looks at the AsyncLocalStorage. */
  private open = 0;

  constructor(private readonly inner: Engine) {
    this.dialect = inner.dialect;
  }

  /** The open transaction of the calling code, if any. */
  private scope(): Scope | undefined {
    if (this.open === 0) return undefined;
    const s = this.scopes.getStore();
    return s && !s.done ? s : undefined;
  }

  /**
   * Runs `work` in one transaction that every store call made inside it joins; rolled back if it throws. On
   * the embedded store it begins IMMEDIATE: it takes the write lock first, so a read it makes cannot be
   * outdated by another process's commit before its writes (SQLite would refuse them, without waiting).
   */
  async within<T>(work: () => Promise<T>): Promise<T> {
    if (this.scope()) return work();
    this.open++;
    let scope: Scope | undefined;
    let value: T;
    try {
      value = await this.inner.db.connection().execute(async (conn) => {
        await sql.raw(this.dialect === 'sqlite' ? 'begin immediate' : 'begin').execute(conn);
        scope = { trx: conn, done: false, savepoints: 0, committed: [] };
        try {
          const v = await this.scopes.run(scope, work);
          await sql.raw('commit').execute(conn);
          return v;
        } catch (err) {
          await sql
            .raw('rollback')
            .execute(conn)
            .catch(() => undefined);
          throw err;
        }
      });
    } finally {
      if (scope) scope.done = true;
      // With no transaction open, the AsyncLocalStorage is switched off: while one is enabled, Node 20 runs a hook
      // on every promise of the process (measured: 10-19 % more instructions per token request after the first
      // sign-in), and none of that work needs it. The next `run` switches it on again.
      if (--this.open === 0) this.scopes.disable();
    }
    // What runs after the commit (shipping audit rows) cannot undo it: a failure there is its own to report.
    for (const f of scope?.committed ?? []) {
      try {
        f();
      } catch {
        /* the commit stands */
      }
    }
    return value;
  }

  /** Runs `f` once the calling code's ambient transaction commits; at once outside one. */
  afterCommit(f: () => void): void {
    const s = this.scope();
    if (s) s.committed.push(f);
    else f();
  }

  /** Whether the calling code runs inside an ambient transaction. */
  get inside(): boolean {
    return this.scope() !== undefined;
  }

  get db(): Kysely<Database> {
    return this.scope()?.trx ?? this.inner.db;
  }

  get grouped(): GroupedWork | undefined {
    return this.open === 0 || !this.scope() ? this.inner.grouped : undefined;
  }

  run<P extends string, R>(q: Prepared<P, R>, values: Record<P, unknown>): Promise<Rows<R>> {
    const s = this.scope();
    return s ? q.execute(s.trx, values) : this.inner.run(q, values);
  }

  async atomically(operation: string, steps: readonly Step[]): Promise<boolean> {
    const s = this.scope();
    if (!s) return this.inner.atomically(operation, steps);
    try {
      await this.inSavepoint(s, async () => {
        for (const step of steps) {
          if ((await step.q.execute(s.trx, step.values)).changes !== 1 && step.mustChange) throw new LostRace();
        }
      });
      return true;
    } catch (err) {
      if (err instanceof LostRace) return false;
      throw err;
    }
  }

  transaction<T>(work: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
    const s = this.scope();
    return s ? this.inSavepoint(s, () => work(s.trx)) : this.inner.transaction(work);
  }

  /** Runs `work` in a savepoint of the open transaction: a failure rolls back only its own statements. */
  private async inSavepoint<T>(s: Scope, work: () => Promise<T>): Promise<T> {
    const name = sql.raw(`ambient_${++s.savepoints}`);
    await sql`savepoint ${name}`.execute(s.trx);
    let value: T;
    try {
      value = await work();
    } catch (err) {
      // The error that made the rollback needed is the one to answer, whatever becomes of the rollback.
      await sql`rollback to savepoint ${name}`.execute(s.trx).catch(() => undefined);
      throw err;
    }
    await sql`release savepoint ${name}`.execute(s.trx);
    return value;
  }

  migrate(): Promise<void> {
    return this.inner.migrate();
  }

  checkpoint(): Promise<void> {
    return this.inner.checkpoint();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

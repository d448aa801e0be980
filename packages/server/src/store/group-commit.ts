import type { SyncConnection } from './prepared.js';

/** One piece of store work that may share a transaction with the others of its event-loop turn. */
export interface Unit<T> {
  /** Runs synchronously inside the batch's transaction. */
  now(): T;
  /** Runs on its own, when the connection is held by another transaction at flush time. */
  alone(): Promise<T>;
  /**
   * Several statements that must stand or fall together: they run in a
   * savepoint of their own, so that a unit that throws rolls back only its
   * own work. A single statement is atomic by itself and needs none.
   */
  severalStatements?: boolean;
}

interface Queued {
  unit: Unit<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; err: unknown };

/**
 * Group commit for the embedded store: the writes that arrive during one turn
 * of the event loop run together at the end of it, in one transaction, so
 * that one commit (one round of file locks, one WAL append of the pages they
 * share) serves them all. Each unit still gets its own answer: its value, or
 * its own error (its savepoint rolled back), and only after the commit; when
 * the commit itself fails, or a unit's failure ends the whole transaction,
 * every unit of the batch gets that error.
 */
export class GroupCommit {
  private queue: Queued[] = [];

  constructor(
    private readonly conn: SyncConnection,
    private readonly maxBatch = 256,
  ) {}

  run<T>(unit: Unit<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.queue.push({ unit, resolve: resolve as (v: unknown) => void, reject }) === 1) setImmediate(() => this.flush());
      else if (this.queue.length >= this.maxBatch) this.flush();
    });
  }

  private flush(): void {
    const batch = this.queue;
    if (batch.length === 0) return;
    this.queue = [];
    if (this.conn.inTransaction) {
      // A Kysely transaction holds the connection: each unit queues behind it on its own.
      for (const q of batch) q.unit.alone().then(q.resolve, q.reject);
      return;
    }
    if (batch.length === 1) {
      // Alone in its turn: its own transaction is all the isolation it needs, and a unit whose every statement
      // stands on its own needs none (SQLite's autocommit: BEGIN and COMMIT would only add two statements).
      const [q] = batch as [Queued];
      try {
        q.resolve(q.unit.severalStatements ? this.conn.atomically(() => q.unit.now()) : q.unit.now());
      } catch (err) {
        q.reject(err);
      }
      return;
    }
    const outcomes: Outcome[] = [];
    try {
      this.conn.atomically(() => {
        for (const { unit } of batch) {
          try {
            outcomes.push({ ok: true, value: unit.severalStatements ? this.conn.atomically(() => unit.now()) : unit.now() });
          } catch (err) {
            // Some failures (a full disk, an I/O error) make SQLite roll back the whole transaction: what ran
            // before is gone and what would run next would commit on its own. The batch fails as one.
            if (!this.conn.inTransaction) throw err;
            outcomes.push({ ok: false, err });
          }
        }
      });
    } catch (err) {
      for (const q of batch) q.reject(err);
      return;
    }
    batch.forEach((q, i) => {
      const o = outcomes[i]!;
      if (o.ok) q.resolve(o.value);
      else q.reject(o.err);
    });
  }
}

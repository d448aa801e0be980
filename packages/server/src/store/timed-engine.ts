import type { Kysely } from 'kysely';
import type { Engine, GroupedWork, Step } from './engine.js';
import type { Unit } from './group-commit.js';
import type { Prepared, Rows } from './prepared.js';
import type { Database } from './schema.js';

/** Where the store reports how long its operations took (util/metrics.ts `Metrics` is one). */
export interface StoreObserver {
  storeOperation(engine: string, operation: string, seconds: number): void;
}

/** Seconds since `start` (a `performance.now()` reading). */
const since = (start: number) => (performance.now() - start) / 1000;

/**
 * An engine that reports the time of each call the repositories make on the
 * hot paths: a prepared statement (by its name), an atomic sequence and a
 * grouped write (by the operation the repository names; on the embedded
 * store their time includes the shared commit, which is what the request
 * waits for), a transaction (`transaction`). Queries built with Kysely
 * directly (`db`: the operator commands, the pages' less frequent work) are
 * not timed. Only {@link openStore} with an observer wraps an engine, so a
 * server without metrics runs the engine itself, with nothing in between.
 */
export function timedEngine(engine: Engine, observer: StoreObserver): Engine {
  const dialect = engine.dialect;
  const observe = (operation: string, start: number) => observer.storeOperation(dialect, operation, since(start));
  const inner = engine.grouped;
  const grouped: GroupedWork | undefined = inner && {
    run: async <T>(operation: string, unit: Unit<T>): Promise<T> => {
      const start = performance.now();
      try {
        return await inner.run(operation, unit);
      } finally {
        observe(operation, start);
      }
    },
    now: (q, values) => inner.now(q, values),
  };
  return {
    dialect,
    db: engine.db,
    grouped,
    async run<P extends string, R>(q: Prepared<P, R>, values: Record<P, unknown>): Promise<Rows<R>> {
      const start = performance.now();
      try {
        return await engine.run(q, values);
      } finally {
        observe(q.name, start);
      }
    },
    async atomically(operation: string, steps: readonly Step[]): Promise<boolean> {
      const start = performance.now();
      try {
        return await engine.atomically(operation, steps);
      } finally {
        observe(operation, start);
      }
    },
    async transaction<T>(work: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
      const start = performance.now();
      try {
        return await engine.transaction(work);
      } finally {
        observe('transaction', start);
      }
    },
    migrate: () => engine.migrate(),
    checkpoint: () => engine.checkpoint(),
    close: () => engine.close(),
  };
}

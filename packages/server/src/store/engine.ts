import type { Kysely } from 'kysely';
import type { Unit } from './group-commit.js';
import type { Prepared, Rows } from './prepared.js';
import type { Database } from './schema.js';

/** Which database an engine runs on (for messages and operator advice, never for choosing SQL). */
export type Dialect = 'sqlite' | 'postgres';

/** One statement of an atomic sequence; `mustChange` steps that change no row roll the whole sequence back. */
export interface Step {
  q: Prepared<string, unknown>;
  values: Record<string, unknown>;
  mustChange?: boolean;
}

/**
 * Group commit, on an engine that has it: the units of one event-loop turn
 * share one transaction (see group-commit.ts).
 */
export interface GroupedWork {
  /** Queues `unit`; its answer comes after the commit of its batch. `operation` names it in the store's metrics. */
  run<T>(operation: string, unit: Unit<T>): Promise<T>;
  /** Runs a prepared statement synchronously: only from a unit's `now`, inside the batch's transaction. */
  now<P extends string, R>(q: Prepared<P, R>, values: Record<P, unknown>): Rows<R>;
}

/**
 * What the repositories need of a database, and all they may use: both
 * engines implement it, so every query is written once, in Kysely, and what
 * differs between SQLite and PostgreSQL (connections, group commit,
 * checkpoints, the migration schema) stays inside the engine.
 */
export interface Engine {
  readonly dialect: Dialect;
  /** The typed query builder, for the queries that are not on a hot path. */
  readonly db: Kysely<Database>;
  /** Runs a prepared (compile-once) statement: the hot paths. */
  run<P extends string, R>(q: Prepared<P, R>, values: Record<P, unknown>): Promise<Rows<R>>;
  /**
   * Runs `steps` as one transaction. When a `mustChange` step (a conditional
   * UPDATE) changes no row, another request won the race: everything is
   * rolled back and the answer is false. On the embedded store the units of
   * one event-loop turn share one transaction (group commit), each in its
   * own savepoint, each answered after the commit. `operation` names the
   * sequence in the store's metrics.
   */
  atomically(operation: string, steps: readonly Step[]): Promise<boolean>;
  /** Group commit, where the engine has it (the embedded store); undefined elsewhere. */
  readonly grouped: GroupedWork | undefined;
  /** Runs `work` in one transaction, rolled back if it throws. */
  transaction<T>(work: (trx: Kysely<Database>) => Promise<T>): Promise<T>;
  /**
   * True for the code running inside an ambient transaction (Store.changes, ambient.ts): what it reads may yet
   * roll back, so no per-instance cache may keep it.
   */
  readonly inside?: boolean;
  /** Runs `f` once the calling code's ambient transaction commits, at once outside one (a cache dropped then). */
  afterCommit?(f: () => void): void;
  /** Brings the schema up to date; safe to run concurrently from several instances on PostgreSQL. */
  migrate(): Promise<void>;
  /**
   * Copies the embedded store's write-ahead log into the database file and
   * empties it (so the file alone holds everything, e.g. to measure it);
   * nothing on PostgreSQL.
   */
  checkpoint(): Promise<void>;
  /** Stops the engine's background work, then closes its connections. */
  close(): Promise<void>;
}

/** Rolls back a sequence of steps that another request won. */
export class LostRace extends Error {
  readonly code = 'lost_race';
}

/** {@link Engine.atomically} as one Kysely transaction; throws {@link LostRace} when a `mustChange` step changed nothing. */
export async function stepsInTransaction(db: Kysely<Database>, steps: readonly Step[]): Promise<void> {
  await db.transaction().execute(async (trx) => {
    for (const s of steps) {
      if ((await s.q.execute(trx, s.values)).changes !== 1 && s.mustChange) throw new LostRace();
    }
  });
}

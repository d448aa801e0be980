import { sql } from 'kysely';
import type { Engine } from '../engine.js';
import { Prepared } from '../prepared.js';
import type { RateLimitsTable } from '../schema.js';

/** One fixed-window counter as stored. */
export type RateLimitRow = RateLimitsTable;

/** Fixed-window counters shared by every instance (the limits themselves are oauth/limits.ts). */
export interface RateLimits {
  /**
   * Counts one event under `key` in a fixed window and returns the window's
   * count, including this event: one `INSERT ... ON CONFLICT DO UPDATE ...
   * RETURNING` on both engines, so the increment and the read are one atomic
   * step across instances. Callers consume before the work the limit protects
   * and refuse when the answer is over the limit: N parallel requests get N
   * distinct counts, so at most `limit` of them ever pass.
   */
  consume(key: string, windowMs: number, now: number): Promise<{ count: number; windowStart: number }>;
  /**
   * Gives one event back to the window it was counted in (a success that was
   * counted before it was known); nothing when that window has since ended
   * and another begun.
   */
  release(key: string, windowStart: number): Promise<void>;
  /**
   * The count under `key` in the window that is open at `now` (0 when there is none), counting nothing: for a
   * limit on failures, read before a request that may succeed and consumed only when it fails.
   */
  peek(key: string, windowMs: number, now: number): Promise<{ count: number; windowStart: number }>;
  /** The keys starting with `prefix` whose window is open at `now` with a count above 0. */
  openKeys(prefix: string, windowMs: number, now: number): Promise<string[]>;
  /** Every counter (operator commands: what is limited now, and clearing it). */
  list(): Promise<RateLimitRow[]>;
  /** Deletes the counters with these keys; returns how many there were. */
  delete(keys: readonly string[]): Promise<number>;
}

/** {@link RateLimits} on Kysely. */
/** {@link RateLimits} on Kysely; the peek is prepared (every request with a client secret makes it). */
export class KyselyRateLimits implements RateLimits {
  private readonly openWindow = new Prepared<'key' | 'after', Pick<RateLimitRow, 'count' | 'window_start'>>(
    'rate_limit_peek',
    ['key', 'after'],
    (db, p) => db.selectFrom('rate_limits').select(['count', 'window_start']).where('key', '=', p.key).where('window_start', '>', p.after),
  );

  constructor(private readonly engine: Engine) {}

  async consume(key: string, windowMs: number, now: number): Promise<{ count: number; windowStart: number }> {
    const stale = sql<boolean>`rate_limits.window_start <= ${now - windowMs}`;
    const row = await this.engine.db
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

  async release(key: string, windowStart: number): Promise<void> {
    await this.engine.db
      .updateTable('rate_limits')
      .set({ count: sql<number>`count - 1` })
      .where('key', '=', key)
      .where('window_start', '=', windowStart)
      .where('count', '>', 0)
      .execute();
  }

  async peek(key: string, windowMs: number, now: number): Promise<{ count: number; windowStart: number }> {
    const [row] = (await this.engine.run(this.openWindow, { key, after: now - windowMs })).rows;
    return row ? { count: row.count, windowStart: row.window_start } : { count: 0, windowStart: now };
  }

  async openKeys(prefix: string, windowMs: number, now: number): Promise<string[]> {
    const rows = await this.engine.db
      .selectFrom('rate_limits')
      .select('key')
      // Counter prefixes are kinds and `|` (oauth/limits.ts), with no LIKE metacharacters in them.
      .where('key', 'like', `${prefix}%`)
      .where('window_start', '>', now - windowMs)
      .where('count', '>', 0)
      .execute();
    return rows.map((r) => r.key);
  }

  async list(): Promise<RateLimitRow[]> {
    return this.engine.db.selectFrom('rate_limits').selectAll().orderBy('key').execute();
  }

  async delete(keys: readonly string[]): Promise<number> {
    let n = 0;
    // In slices: PostgreSQL and SQLite both cap the parameters of one statement.
    for (let i = 0; i < keys.length; i += 500) {
      const r = await this.engine.db
        .deleteFrom('rate_limits')
        .where('key', 'in', keys.slice(i, i + 500))
        .executeTakeFirst();
      n += Number(r.numDeletedRows);
    }
    return n;
  }
}

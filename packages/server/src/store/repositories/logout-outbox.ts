import { sql } from 'kysely';
import { timeOrderedId } from '../../util/crypto.js';
import type { Engine } from '../engine.js';

/** Where a logout token is: still to deliver, delivered (§2.8: the RP answered 200), or given up. */
export type LogoutState = 'pending' | 'delivered' | 'given_up';

/**
 * One logout token to deliver (OpenID Connect Back-Channel Logout 1.0 §2.5): to whom, what it says (`sub`, `sid`,
 * its `jti`, which every attempt keeps), and how its delivery goes. The token itself is signed anew at each
 * attempt, so it is never expired when posted and never stored.
 */
export interface LogoutOutboxTable {
  id: string;
  client_id: string;
  sub: string;
  sid: string | null;
  jti: string;
  state: LogoutState;
  /** Attempts started (a claim counts one); it also fences a finished attempt against a later claim. */
  attempts: number;
  next_attempt_at: number;
  /** While an instance is posting it: until when no other instance claims it. */
  lease_until: number | null;
  /** Past it the delivery is given up: as long as what the logout ends could have been used. */
  give_up_at: number;
  created_at: number;
  finished_at: number | null;
  /** Why the last attempt failed (a status, a network error), never the token. */
  last_error: string | null;
}

export type LogoutRow = LogoutOutboxTable;

/** A logout to queue: for the application `clientId`, naming `sub` (and `sid`), retried until `giveUpAt`. */
export interface NewLogout {
  clientId: string;
  sub: string;
  sid?: string | undefined;
  jti: string;
  giveUpAt: number;
}

/** How an attempt ended: delivered, to be tried again at `retryAt`, or given up. */
export type AttemptEnd = { kind: 'delivered' } | { kind: 'retry'; retryAt: number; error: string } | { kind: 'given_up'; error: string };

/**
 * The back-channel logout outbox: logout tokens the server accepted to deliver, in the store, so that none is lost
 * to a receiver that is down or to a restart, and claimed with a lease so that of several instances exactly one
 * posts each attempt (oauth/backchannel-delivery.ts).
 */
export interface LogoutOutbox {
  /**
   * Queues `logouts` at `now`, due at once; one whose application has `pendingPerClient` pending already is
   * stored given up instead (`capped`). The rows' ids, in order.
   */
  enqueue(logouts: readonly NewLogout[], now: number, pendingPerClient: number): Promise<{ id: string; capped: boolean }[]>;
  /**
   * Claims up to `limit` pending rows due at `now` whose lease, if any, has run out (of `ids` only, when given):
   * each gets a lease until `now + leaseMs` and one more attempt, in one conditional UPDATE, so of any number of
   * claimers on any number of instances exactly one gets a row. The rows as claimed.
   */
  claim(now: number, leaseMs: number, limit: number, ids?: readonly string[]): Promise<LogoutRow[]>;
  /** Records how the attempt `attempts` of row `id` ended; false when the row was claimed again since (its lease ran out). */
  finish(id: string, attempts: number, end: AttemptEnd, now: number): Promise<boolean>;
  /** The rows for the operator: pending ones by when they are due, then the finished ones newest first. */
  list(limit: number, state?: LogoutState): Promise<LogoutRow[]>;
  /** The rows `ids`, as they are now. */
  find(ids: readonly string[]): Promise<LogoutRow[]>;
}

/** {@link LogoutOutbox} on Kysely: each query written once for both engines. */
export class KyselyLogoutOutbox implements LogoutOutbox {
  constructor(private readonly engine: Engine) {}

  async enqueue(logouts: readonly NewLogout[], now: number, pendingPerClient: number): Promise<{ id: string; capped: boolean }[]> {
    const db = this.engine.db;
    const out: { id: string; capped: boolean }[] = [];
    const pending = new Map<string, number>();
    for (const l of logouts) {
      let held = pending.get(l.clientId);
      if (held === undefined) {
        const row = await db
          .selectFrom('logout_outbox')
          .select((eb) => eb.fn.countAll<number | string>().as('n'))
          .where('client_id', '=', l.clientId)
          .where('state', '=', 'pending')
          .executeTakeFirstOrThrow();
        held = Number(row.n);
      }
      const capped = held >= pendingPerClient;
      pending.set(l.clientId, held + (capped ? 0 : 1));
      const id = timeOrderedId(now);
      await db
        .insertInto('logout_outbox')
        .values({
          id,
          client_id: l.clientId,
          sub: l.sub,
          sid: l.sid ?? null,
          jti: l.jti,
          state: capped ? 'given_up' : 'pending',
          attempts: 0,
          next_attempt_at: now,
          lease_until: null,
          give_up_at: l.giveUpAt,
          created_at: now,
          finished_at: capped ? now : null,
          last_error: capped ? `${pendingPerClient} logouts of this application are pending already` : null,
        })
        .execute();
      out.push({ id, capped });
    }
    return out;
  }

  async claim(now: number, leaseMs: number, limit: number, ids?: readonly string[]): Promise<LogoutRow[]> {
    if (ids?.length === 0) return [];
    const db = this.engine.db;
    let due = db
      .selectFrom('logout_outbox')
      .select('id')
      .where('state', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', now)]));
    if (ids) due = due.where('id', 'in', ids);
    // Read first: an idle instance's poll finds nothing and writes nothing.
    const candidates = (await due.orderBy('next_attempt_at').orderBy('id').limit(limit).execute()).map((r) => r.id);
    if (candidates.length === 0) return [];
    // The conditions again in the UPDATE: a row another claimer took meanwhile no longer meets them (on
    // PostgreSQL the UPDATE waits for that claimer's row lock, then checks the row as it committed it).
    return db
      .updateTable('logout_outbox')
      .set({ lease_until: now + leaseMs, attempts: sql<number>`attempts + 1` })
      .where('id', 'in', candidates)
      .where('state', '=', 'pending')
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', now)]))
      .returningAll()
      .execute();
  }

  async finish(id: string, attempts: number, end: AttemptEnd, now: number): Promise<boolean> {
    const set =
      end.kind === 'delivered'
        ? { state: 'delivered' as const, finished_at: now, lease_until: null, last_error: null }
        : end.kind === 'retry'
          ? { next_attempt_at: end.retryAt, lease_until: null, last_error: end.error }
          : { state: 'given_up' as const, finished_at: now, lease_until: null, last_error: end.error };
    const r = await this.engine.db
      .updateTable('logout_outbox')
      .set(set)
      .where('id', '=', id)
      .where('attempts', '=', attempts)
      .where('state', '=', 'pending')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async find(ids: readonly string[]): Promise<LogoutRow[]> {
    if (ids.length === 0) return [];
    return this.engine.db.selectFrom('logout_outbox').selectAll().where('id', 'in', ids).execute();
  }

  async list(limit: number, state?: LogoutState): Promise<LogoutRow[]> {
    const db = this.engine.db;
    const pending =
      state === undefined || state === 'pending'
        ? await db
            .selectFrom('logout_outbox')
            .selectAll()
            .where('state', '=', 'pending')
            .orderBy('next_attempt_at')
            .orderBy('id')
            .limit(limit)
            .execute()
        : [];
    if (state === 'pending' || pending.length >= limit) return pending;
    let finished = db.selectFrom('logout_outbox').selectAll().where('state', '!=', 'pending');
    if (state !== undefined) finished = finished.where('state', '=', state);
    return [
      ...pending,
      ...(await finished
        .orderBy('finished_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit - pending.length)
        .execute()),
    ];
  }
}

import type { AmbientEngine } from '../ambient.js';
import { type Kysely, sql } from 'kysely';
import { isUniqueViolation, StoreError } from '../errors.js';
import { Prepared } from '../prepared.js';
import type { Database, DeviceAuthorization, Grant, RefreshToken } from '../schema.js';
import type { GrantStatements } from './grants.js';
import { type SignInKind, signInAuditEvent } from './signin-events.js';
import type { KyselyAudit } from './audit.js';
import { insertRow } from './statements.js';

export type { DeviceAuthorization, DeviceStatus } from '../schema.js';

/** What a device poll did: recorded on time, or too early (the interval it now has). */
export type DevicePoll = { slowed: false } | { slowed: true; interval_s: number };

/** How the device codes of a store have been polled (operators, `pnpm bench`). */
export interface DevicePollSummary {
  /** Device authorizations polled at least once. */
  polled: number;
  /**
   * Device authorizations whose interval grew past the first one they were
   * given: each growth was a `slow_down` answer (RFC 8628 §3.5).
   */
  slowedDown: number;
}

/** Device authorizations (RFC 8628 §3.2), stored by the device code's SHA-256. */
export interface DeviceGrants {
  /** Stores a new device authorization; `duplicate` when its user code or device code is taken. */
  insert(row: DeviceAuthorization): Promise<void>;
  /**
   * Stores many device authorizations, in transactions of 500 rows: seeding a
   * store in bulk (`pnpm bench` writes 300,000 pending ones this way). All
   * or, on a failure (`duplicate` as in {@link insert}), those slices written
   * before it.
   */
  insertMany(rows: readonly DeviceAuthorization[]): Promise<void>;
  findByCodeHash(hash: string): Promise<DeviceAuthorization | undefined>;
  findByUserCode(userCode: string): Promise<DeviceAuthorization | undefined>;
  /**
   * Records a poll of a pending, unexpired device code of this client (RFC
   * 8628 §3.5): a poll sooner than the current interval after the previous
   * poll is slowed (interval + 5 s); every poll becomes the new "previous
   * poll". On time and early are two exclusive conditional UPDATEs, each one
   * atomic step across instances (a poll that finds itself early because
   * another just landed is rightly early), so an on-time poll is never
   * slowed. Returns undefined when no such pending row exists (then the
   * caller looks at why).
   *
   * On the embedded store the polls that arrive in one turn of the event loop
   * are committed together (group commit): each poll is still its own
   * statements, and its answer is given only after the commit.
   */
  recordPoll(hash: string, clientId: string, now: number): Promise<DevicePoll | undefined>;
  /**
   * Approves or denies a pending, unexpired device authorization (RFC 8628 §3.3) and records the decision in
   * the user's sign-ins (signin-events.ts) with the approver's address `clientIp`, in one transaction; false
   * when it was not pending, or for an approval, when it was started at or before `startedAfter` (the
   * approval window): one conditional UPDATE decides, so of concurrent decisions exactly one counts.
   */
  decide(userCode: string, decision: DeviceDecision, now: number, clientIp: string): Promise<boolean>;
  /**
   * Redeems an approved device code into a new grant (and its first refresh
   * token) in one transaction; among concurrent pollers exactly one wins.
   */
  redeem(hash: string, grant: Grant, now: number, refresh?: RefreshToken): Promise<boolean>;
  /**
   * See {@link DevicePollSummary}. `firstIntervalSeconds` is the interval the
   * codes were given: the server's configured `devicePollIntervalSeconds`
   * (AUTHCLI_DEVICE_POLL_INTERVAL), which the store does not know.
   */
  pollSummary(firstIntervalSeconds: number): Promise<DevicePollSummary>;
}

/** What the user decided about a device authorization (RFC 8628 §3.3). */
export type DeviceDecision =
  /** `startedAfter`: an authorization created at or before this instant is too old to approve. */
  | { status: 'approved'; userId: string; authTime: number; amr: string | null; acr?: string | null; startedAfter: number }
  | { status: 'denied'; userId: string };

const ON_TIME: DevicePoll = Object.freeze({ slowed: false });
const slowedDown = (row: { interval_s: number } | undefined): DevicePoll | undefined => row && { slowed: true, interval_s: row.interval_s };

type PollParams = Record<'hash' | 'clientId' | 'now', unknown>;
type PollValues = { hash: string; clientId: string; now: number };

/** A pending, unexpired device authorization of this client: the rows a poll may change. */
function pendingOf(db: Kysely<Database>, p: PollParams, early: boolean) {
  const last = sql`last_poll_at is not null and last_poll_at + interval_s * 1000 > ${p.now}`;
  return db
    .updateTable('device_authorizations')
    .where('device_code_hash', '=', sql<string>`${p.hash}`)
    .where('client_id', '=', sql<string>`${p.clientId}`)
    .where('status', '=', 'pending')
    .where('expires_at', '>', sql<number>`${p.now}`)
    .where(early ? sql<boolean>`${last}` : sql<boolean>`not (${last})`);
}

/** Rows per transaction of {@link DeviceGrants.insertMany}: both engines cap the parameters of one statement. */
const INSERT_SLICE = 500;

/** {@link DeviceGrants} on Kysely; the poll, lookup and redemption are prepared (the device poll is a hot path). */
export class KyselyDeviceGrants implements DeviceGrants {
  private readonly q = {
    // RFC 8628 §3.5 as two exclusive conditional UPDATEs: an on-time poll (the common case: one statement, no
    // row to return) only becomes the previous poll; an early one also grows the interval by 5 s.
    pollOnTime: new Prepared<'hash' | 'clientId' | 'now', never>('device_poll_on_time', ['hash', 'clientId', 'now'], (db, p) =>
      pendingOf(db, p, false).set({ last_poll_at: sql<number>`${p.now}`, last_poll_slowed: 0 }),
    ),
    pollEarly: new Prepared<'hash' | 'clientId' | 'now', { interval_s: number }>(
      'device_poll_early',
      ['hash', 'clientId', 'now'],
      (db, p) =>
        pendingOf(db, p, true)
          .set({ last_poll_at: sql<number>`${p.now}`, last_poll_slowed: 1, interval_s: sql<number>`interval_s + 5` })
          .returning(['interval_s']),
    ),
    byHash: new Prepared<'hash', DeviceAuthorization>('device_by_hash', ['hash'], (db, p) =>
      db.selectFrom('device_authorizations').selectAll().where('device_code_hash', '=', p.hash),
    ),
    redeem: new Prepared<'hash' | 'grantId' | 'now', never>('device_consume', ['hash', 'grantId', 'now'], (db, p) =>
      db
        .updateTable('device_authorizations')
        .set({ status: 'consumed', grant_id: p.grantId })
        .where('device_code_hash', '=', p.hash)
        .where('status', '=', 'approved')
        .where('expires_at', '>', p.now),
    ),
    approve: new Prepared<'userCode' | 'userId' | 'authTime' | 'amr' | 'acr' | 'now' | 'startedAfter', never>(
      'device_approve',
      ['userCode', 'userId', 'authTime', 'amr', 'acr', 'now', 'startedAfter'],
      (db, p) =>
        db
          .updateTable('device_authorizations')
          .set({ status: 'approved', user_id: p.userId, auth_time: p.authTime, amr: p.amr, acr: p.acr })
          .where('user_code', '=', p.userCode)
          .where('status', '=', 'pending')
          .where('expires_at', '>', p.now)
          .where('created_at', '>', p.startedAfter),
    ),
    deny: new Prepared<'userCode' | 'userId' | 'now', never>('device_deny', ['userCode', 'userId', 'now'], (db, p) =>
      db
        .updateTable('device_authorizations')
        .set({ status: 'denied', user_id: p.userId, auth_time: null })
        .where('user_code', '=', p.userCode)
        .where('status', '=', 'pending')
        .where('expires_at', '>', p.now),
    ),
    insert: insertRow('device_authorizations', [
      'device_code_hash',
      'user_code',
      'client_id',
      'scope',
      'status',
      'user_id',
      'auth_time',
      'amr',
      'acr',
      'created_at',
      'expires_at',
      'interval_s',
      'last_poll_at',
      'last_poll_slowed',
      'grant_id',
      'client_ip',
      'resource',
    ] as const),
  };

  constructor(
    private readonly engine: AmbientEngine,
    private readonly grants: GrantStatements,
    private readonly audit: KyselyAudit,
  ) {}

  async insert(row: DeviceAuthorization): Promise<void> {
    try {
      await this.engine.run(this.q.insert, row);
    } catch (err) {
      if (isUniqueViolation(err)) throw new StoreError('duplicate', 'user_code or device_code already in use');
      throw err;
    }
  }

  async insertMany(rows: readonly DeviceAuthorization[]): Promise<void> {
    for (let i = 0; i < rows.length; i += INSERT_SLICE) {
      const slice = rows.slice(i, i + INSERT_SLICE);
      try {
        await this.engine.transaction((trx) => trx.insertInto('device_authorizations').values(slice).execute());
      } catch (err) {
        if (isUniqueViolation(err)) throw new StoreError('duplicate', 'user_code or device_code already in use');
        throw err;
      }
    }
  }

  async findByCodeHash(hash: string): Promise<DeviceAuthorization | undefined> {
    return (await this.engine.run(this.q.byHash, { hash })).rows[0];
  }

  async findByUserCode(userCode: string): Promise<DeviceAuthorization | undefined> {
    return this.engine.db.selectFrom('device_authorizations').selectAll().where('user_code', '=', userCode).executeTakeFirst();
  }

  recordPoll(hash: string, clientId: string, now: number): Promise<DevicePoll | undefined> {
    const values = { hash, clientId, now };
    const grouped = this.engine.grouped;
    if (!grouped) return this.pollAlone(values);
    const { pollOnTime: onTime, pollEarly: early } = this.q;
    return grouped.run('device_poll', {
      now: () => (grouped.now(onTime, values).changes === 1 ? ON_TIME : slowedDown(grouped.now(early, values).rows[0])),
      alone: () => this.pollAlone(values),
    });
  }

  private async pollAlone(values: PollValues): Promise<DevicePoll | undefined> {
    if ((await this.engine.run(this.q.pollOnTime, values)).changes === 1) return ON_TIME;
    return slowedDown((await this.engine.run(this.q.pollEarly, values)).rows[0]);
  }

  async decide(userCode: string, decision: DeviceDecision, now: number, clientIp: string): Promise<boolean> {
    const { userId } = decision;
    const decided =
      decision.status === 'approved'
        ? {
            q: this.q.approve,
            values: {
              userCode,
              userId,
              authTime: decision.authTime,
              amr: decision.amr,
              acr: decision.acr ?? null,
              now,
              startedAfter: decision.startedAfter,
            },
          }
        : { q: this.q.deny, values: { userCode, userId, now } };
    const kind: SignInKind = decision.status === 'approved' ? 'device-approved' : 'device-denied';
    // The decision and its audit row (the account page's record of it, with the device's address and the
    // application, read from the row it decided) in one transaction: a decision another request won records nothing.
    return this.engine.within(async () => {
      if (!(await this.engine.atomically('device_decision', [{ ...decided, mustChange: true }]))) return false;
      const device = await this.engine.db
        .selectFrom('device_authorizations')
        .innerJoin('users', 'users.id', 'device_authorizations.user_id')
        .select(['device_authorizations.client_ip', 'device_authorizations.client_id', 'users.username'])
        .where('user_code', '=', userCode)
        .executeTakeFirstOrThrow();
      await this.audit.append(
        signInAuditEvent(
          { user_id: userId, at: now, kind, client_ip: clientIp, device_ip: device.client_ip, client_id: device.client_id },
          device.username,
        ),
      );
      return true;
    });
  }

  async redeem(hash: string, grant: Grant, now: number, refresh?: RefreshToken): Promise<boolean> {
    return this.engine.atomically('device_redemption', [
      { q: this.grants.insertGrant, values: grant },
      { q: this.q.redeem, values: { hash, grantId: grant.id, now }, mustChange: true },
      ...(refresh ? [{ q: this.grants.insertRefreshToken, values: refresh }] : []),
    ]);
  }

  async pollSummary(firstIntervalSeconds: number): Promise<DevicePollSummary> {
    const row = await this.engine.db
      .selectFrom('device_authorizations')
      .select((eb) => [
        eb.fn.countAll<number>().filterWhere('interval_s', '>', firstIntervalSeconds).as('slowedDown'),
        eb.fn.countAll<number>().filterWhere('last_poll_at', 'is not', null).as('polled'),
      ])
      .executeTakeFirstOrThrow();
    return { slowedDown: Number(row.slowedDown), polled: Number(row.polled) };
  }
}

import { sql } from 'kysely';
import { SIGNIN_EVENTS_PER_USER } from '../../config/defaults.js';
import type { Engine } from '../engine.js';
import { timeOrderedId } from '../../util/crypto.js';
import { Prepared } from '../prepared.js';
import type { CredentialEventKind, SignInEvent, SignInKind } from '../schema.js';
import { insertRow } from './statements.js';

export type { CredentialEventKind, SignInEvent, SignInKind } from '../schema.js';

/** A sign-in to record: the store gives it its id; `detail` only for credential events. */
export type NewSignInEvent = Omit<SignInEvent, 'id' | 'detail'> & { detail?: string | null };

/**
 * A user's sign-ins and device decisions (the account page's "Recent
 * sign-ins"), at most {@link SIGNIN_EVENTS_PER_USER} per user: each record
 * drops that user's oldest past the bound in the same transaction (records
 * committed at the same moment on PostgreSQL do not see each other, so a
 * burst may pass the bound by its size until the next record), and
 * housekeeping deletes them by age.
 */
export interface SignInEvents {
  record(event: NewSignInEvent): Promise<void>;
  /** Records a way into the account added or removed (`detail`: the passkey's name, the connector's id), from `clientIp`. */
  recordCredential(userId: string, kind: CredentialEventKind, detail: string, clientIp: string, at: number): Promise<void>;
  /** The user's records, newest first. */
  recent(userId: string): Promise<SignInEvent[]>;
}

/**
 * The statements that record a sign-in: the device decision runs them in its
 * own transaction (device-grants.ts), so one set serves both repositories.
 */
export function signInEventStatements() {
  return {
    insert: insertRow('signin_events', ['id', 'user_id', 'at', 'kind', 'client_ip', 'device_ip', 'client_id', 'detail'] as const),
    /**
     * A device decision's record, its device address and application read from the device authorization itself
     * (INSERT ... SELECT by user code: the row the decision just changed). The casts give PostgreSQL the column
     * types of the parameters, which a SELECT list would otherwise make text.
     */
    insertForDevice: new Prepared<'id' | 'userId' | 'at' | 'kind' | 'clientIp' | 'userCode', never>(
      'signin_event_device',
      ['id', 'userId', 'at', 'kind', 'clientIp', 'userCode'],
      (db, p) =>
        db
          .insertInto('signin_events')
          .columns(['id', 'user_id', 'at', 'kind', 'client_ip', 'device_ip', 'client_id'])
          .expression(
            db
              .selectFrom('device_authorizations')
              .select([
                sql<string>`cast(${p.id} as text)`.as('id'),
                sql<string>`cast(${p.userId} as text)`.as('user_id'),
                sql<number>`cast(${p.at} as bigint)`.as('at'),
                sql<SignInKind>`cast(${p.kind} as text)`.as('kind'),
                sql<string>`cast(${p.clientIp} as text)`.as('client_ip'),
                'client_ip as device_ip',
                'client_id',
              ])
              .where('user_code', '=', p.userCode),
          ),
    ),
    /** Drops the user's records past the newest SIGNIN_EVENTS_PER_USER. */
    trim: new Prepared<'userId', never>('signin_events_trim', ['userId'], (db, p) =>
      db
        .deleteFrom('signin_events')
        .where('user_id', '=', p.userId)
        .where(
          'id',
          'not in',
          db
            .selectFrom('signin_events')
            .select('id')
            .where('user_id', '=', p.userId)
            .orderBy('at', 'desc')
            .orderBy('id', 'desc')
            .limit(SIGNIN_EVENTS_PER_USER),
        ),
    ),
  };
}

export type SignInEventStatements = ReturnType<typeof signInEventStatements>;

/** {@link SignInEvents} on Kysely. */
export class KyselySignInEvents implements SignInEvents {
  constructor(
    private readonly engine: Engine,
    private readonly q: SignInEventStatements,
  ) {}

  async record(event: NewSignInEvent): Promise<void> {
    await this.engine.atomically('signin_event', [
      { q: this.q.insert, values: { ...event, detail: event.detail ?? null, id: timeOrderedId(event.at) } },
      { q: this.q.trim, values: { userId: event.user_id } },
    ]);
  }

  recordCredential(userId: string, kind: CredentialEventKind, detail: string, clientIp: string, at: number): Promise<void> {
    return this.record({ user_id: userId, at, kind, client_ip: clientIp, device_ip: null, client_id: null, detail });
  }

  async recent(userId: string): Promise<SignInEvent[]> {
    return this.engine.db
      .selectFrom('signin_events')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('at', 'desc')
      .orderBy('id', 'desc')
      .limit(SIGNIN_EVENTS_PER_USER)
      .execute();
  }
}

import type { Migration } from 'kysely';
import { auditHash } from '../repositories/audit.js';
import type { Past } from './past.js';

/** The audit action of each kind the sign-in records had (repositories/signin-events.ts SIGNIN_ACTIONS, as of now). */
const ACTIONS: Record<string, string> = {
  password: 'signin.password',
  passkey: 'signin.passkey',
  federated: 'signin.federated',
  'device-approved': 'device.approved',
  'device-denied': 'device.denied',
  'passkey-added': 'passkey.added',
  'passkey-removed': 'passkey.removed',
  'connector-linked': 'connector.linked',
  'connector-unlinked': 'connector.unlinked',
};

interface SignInRow {
  id: string;
  user_id: string;
  at: number | string;
  kind: string;
  client_ip: string;
  device_ip: string | null;
  client_id: string | null;
  detail: string | null;
  username: string | null;
}

/**
 * The account page's sign-in records become rows of the audit trail (0023): appended in the order they were
 * made, after whatever the trail holds, chained as the store chains them; then their table goes. On SQLite the
 * migration runs outside a transaction (Kysely), on PostgreSQL inside one: all or nothing on both.
 */
export const signInsAudited: Migration = {
  async up(db: Past) {
    const work = async (trx: Past) => {
      const rows: SignInRow[] = await trx
        .selectFrom('signin_events')
        .leftJoin('users', 'users.id', 'signin_events.user_id')
        .select([
          'signin_events.id',
          'signin_events.user_id',
          'signin_events.at',
          'signin_events.kind',
          'signin_events.client_ip',
          'signin_events.device_ip',
          'signin_events.client_id',
          'signin_events.detail',
          'users.username',
        ])
        .orderBy('signin_events.at')
        .orderBy('signin_events.id')
        .execute();
      const head: { seq: number | string; hash: string } = await trx
        .selectFrom('audit_head')
        .select(['seq', 'hash'])
        .where('id', '=', 1)
        .executeTakeFirstOrThrow();
      let seq = Number(head.seq);
      let prev = head.hash;
      for (const r of rows) {
        const action = ACTIONS[r.kind];
        if (!action) continue;
        seq++;
        const fields = {
          seq,
          at: Number(r.at),
          actor_type: 'user' as const,
          actor: r.user_id,
          actor_name: r.username,
          action,
          target_type: 'user',
          target: r.user_id,
          target_name: r.username,
          address: r.client_ip,
          detail: JSON.stringify({
            ...(r.client_id !== null && { client_id: r.client_id }),
            ...(r.device_ip !== null && { device_ip: r.device_ip }),
            ...(r.detail !== null && { detail: r.detail }),
          }),
        };
        const hash = auditHash(prev, fields);
        await trx
          .insertInto('audit_events')
          .values({ ...fields, prev_hash: prev, hash })
          .execute();
        prev = hash;
      }
      await trx.updateTable('audit_head').set({ seq, hash: prev }).where('id', '=', 1).execute();
      await trx.schema.dropTable('signin_events').execute();
    };
    if (db.isTransaction) await work(db);
    else await db.transaction().execute(work);
  },
};

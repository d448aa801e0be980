import type { Migration } from 'kysely';
import type { Past } from './past.js';

/** The chain's first `prev_hash`: 64 zeros, the hash of nothing. */
export const AUDIT_GENESIS = '0'.repeat(64);

/**
 * The audit trail (store/repositories/audit.ts): its rows, by `seq`, with indexes for the filters of
 * `authcli-server audit` and GET /admin/v1/audit (time, action, actor, target), and the chain's head, one row
 * that every append updates first, so concurrent appenders (several instances on PostgreSQL) take turns.
 */
export const audit: Migration = {
  async up(db: Past) {
    await db.schema
      .createTable('audit_events')
      .addColumn('seq', 'bigint', (c) => c.primaryKey())
      .addColumn('at', 'bigint', (c) => c.notNull())
      .addColumn('actor_type', 'text', (c) => c.notNull())
      .addColumn('actor', 'text', (c) => c.notNull())
      .addColumn('actor_name', 'text')
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('target_type', 'text')
      .addColumn('target', 'text')
      .addColumn('target_name', 'text')
      .addColumn('address', 'text')
      .addColumn('detail', 'text', (c) => c.notNull())
      .addColumn('prev_hash', 'text', (c) => c.notNull())
      .addColumn('hash', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('audit_events_at').on('audit_events').column('at').execute();
    await db.schema.createIndex('audit_events_action').on('audit_events').columns(['action', 'seq']).execute();
    await db.schema.createIndex('audit_events_actor').on('audit_events').columns(['actor', 'seq']).execute();
    await db.schema.createIndex('audit_events_target').on('audit_events').columns(['target', 'seq']).execute();
    await db.schema
      .createTable('audit_head')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('seq', 'bigint', (c) => c.notNull())
      .addColumn('hash', 'text', (c) => c.notNull())
      .execute();
    await db.insertInto('audit_head').values({ id: 1, seq: 0, hash: AUDIT_GENESIS }).execute();
  },
};

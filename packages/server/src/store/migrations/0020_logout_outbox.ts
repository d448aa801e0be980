import type { Migration } from 'kysely';
import type { Past } from './past.js';

/**
 * The back-channel logout outbox (store/repositories/logout-outbox.ts): one row per logout token to deliver, kept
 * in the store so that a delivery the server accepted outlives a receiver that is down and a restart of the
 * server, and is claimed by one instance at a time (a lease) so that several never send one twice. What the token
 * says (`sub`, `sid`, `jti`) is kept, never the signed token: each attempt signs it anew.
 */
export const logoutOutbox: Migration = {
  async up(db: Past) {
    await db.schema
      .createTable('logout_outbox')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('client_id', 'text', (c) => c.notNull())
      .addColumn('sub', 'text', (c) => c.notNull())
      .addColumn('sid', 'text')
      .addColumn('jti', 'text', (c) => c.notNull())
      // pending | delivered | given_up
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
      // While an instance is posting it: until when the others leave it alone.
      .addColumn('lease_until', 'bigint')
      .addColumn('give_up_at', 'bigint', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('finished_at', 'bigint')
      .addColumn('last_error', 'text')
      .execute();
    // Each instance's poll: the pending rows due, oldest due first.
    await db.schema.createIndex('logout_outbox_due').on('logout_outbox').columns(['state', 'next_attempt_at']).execute();
    // The per-application cap on pending rows, and the operator's listing.
    await db.schema.createIndex('logout_outbox_client').on('logout_outbox').columns(['client_id', 'state']).execute();
    // Housekeeping purges finished rows by age.
    await db.schema.createIndex('logout_outbox_finished').on('logout_outbox').column('finished_at').execute();
  },
};

import type { Migration } from 'kysely';
import type { Past } from './past.js';

/**
 * CI workloads (RFC 8693 token exchange, oauth/workloads.ts): trust policies an operator adds, each naming the
 * CI provider's issuer, the audience its tokens must have, patterns their `sub` and other claims must match, the
 * application the exchange is for, the scopes it may have and how long its tokens live; and the CI tokens
 * exchanged (`subject_tokens`: SHA-256 of issuer and `jti`, until the token's `exp`), so each is used once.
 */
export const workloads: Migration = {
  async up(db: Past) {
    await db.schema
      .createTable('workloads')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('issuer', 'text', (c) => c.notNull())
      .addColumn('audience', 'text', (c) => c.notNull())
      .addColumn('subject', 'text', (c) => c.notNull())
      // JSON object: claim name -> pattern.
      .addColumn('claims', 'text', (c) => c.notNull())
      .addColumn('client_id', 'text', (c) => c.notNull().references('applications.client_id').onDelete('cascade'))
      .addColumn('scope', 'text', (c) => c.notNull())
      .addColumn('token_lifetime_s', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('workloads_client').on('workloads').column('client_id').execute();
    await db.schema
      .createTable('subject_tokens')
      .addColumn('jti_hash', 'text', (c) => c.primaryKey())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('subject_tokens_expires').on('subject_tokens').column('expires_at').execute();
  },
};

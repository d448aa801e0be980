import type { Migration } from 'kysely';
import type { Past } from './past.js';

/**
 * A team's own APIs (RFC 8707 resources, oauth/resources.ts): each has an identifier (an absolute URI, the `aud`
 * of its access tokens), a name, and scopes of its own with descriptions, unique across resources (a scope names
 * its API). What a sign-in was for is kept beside its scope: `resource` on codes, device authorizations and
 * grants is the space-separated resource identifiers the grant covers (named in the request or implied by its
 * scopes); null for every grant of OpenID Connect scopes alone, which are issued as before.
 */
export const resources: Migration = {
  async up(db: Past) {
    await db.schema
      .createTable('resources')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('resource_scopes')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('resource_id', 'text', (c) => c.notNull().references('resources.id').onDelete('cascade'))
      .addColumn('description', 'text', (c) => c.notNull())
      // The order the operator gave them in (consent pages list them so).
      .addColumn('position', 'integer', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('resource_scopes_resource').on('resource_scopes').column('resource_id').execute();
    for (const table of ['authorization_codes', 'device_authorizations', 'grants']) {
      await db.schema.alterTable(table).addColumn('resource', 'text').execute();
    }
  },
};

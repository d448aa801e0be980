import type { Migration } from 'kysely';
import type { Past } from './past.js';

/**
 * Upstream identity (connectors, like Dex's): the operator's connectors, the link of each upstream account
 * (connector, upstream subject) to the user it signs in as, and the single-use state of a redirect to an
 * upstream and back. And the class a sign-in had when it came from elsewhere (`acr`): a federated sign-in's is
 * its own, not one derived from the methods (`amr`) the upstream reported.
 */
export const connectors: Migration = {
  async up(db: Past) {
    await db.schema
      .createTable('connectors')
      // Chosen by the operator: in the callback URL {issuer}/connectors/<id>/callback, so it never changes.
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      // JSON of the type's settings, without the secret.
      .addColumn('settings', 'text', (c) => c.notNull())
      // The client secret or bind password; encrypted with AUTHCLI_KEY_ENCRYPTION_KEY when one is set.
      .addColumn('secret', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('federated_identities')
      .addColumn('connector_id', 'text', (c) => c.notNull().references('connectors.id').onDelete('cascade'))
      .addColumn('subject', 'text', (c) => c.notNull())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('federated_identities_pk', ['connector_id', 'subject'])
      .execute();
    await db.schema.createIndex('federated_identities_user').on('federated_identities').column('user_id').execute();
    await db.schema
      .createTable('connector_states')
      // SHA-256 (hex) of the `state` sent upstream.
      .addColumn('state_hash', 'text', (c) => c.primaryKey())
      .addColumn('connector_id', 'text', (c) => c.notNull().references('connectors.id').onDelete('cascade'))
      // SHA-256 (hex) of the browser-binding cookie: only the browser that left may come back.
      .addColumn('browser_hash', 'text', (c) => c.notNull())
      // The PKCE verifier and OIDC nonce of this round trip, and what it resumes (a continuation id) or links.
      .addColumn('code_verifier', 'text', (c) => c.notNull())
      .addColumn('nonce', 'text', (c) => c.notNull())
      .addColumn('continue_id', 'text')
      .addColumn('link_user_id', 'text', (c) => c.references('users.id').onDelete('cascade'))
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('connector_states_expires').on('connector_states').column('expires_at').execute();
    // The class of a federated sign-in (null: derived from amr, as for local sign-ins).
    for (const table of ['sessions', 'authorization_codes', 'grants', 'device_authorizations']) {
      await db.schema.alterTable(table).addColumn('acr', 'text').execute();
    }
  },
};

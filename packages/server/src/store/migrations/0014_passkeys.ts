import type { Migration } from 'kysely';
import type { Past } from './past.js';

/**
 * Passkeys (WebAuthn Level 3): the credentials people register on /account, the single-use challenges of
 * registration and sign-in ceremonies (in the store, so any instance can finish a ceremony another began),
 * and how each sign-in was made (RFC 8176 `amr`), carried from the browser session to the codes and grants it
 * approves, so an ID token says what the person did.
 */
export const passkeys: Migration = {
  async up(db: Past) {
    await db.schema
      .createTable('passkeys')
      // The credential id (base64url) the authenticator made: globally unique by construction, and what an
      // assertion names.
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('public_key', 'text', (c) => c.notNull())
      .addColumn('counter', 'bigint', (c) => c.notNull())
      .addColumn('transports', 'text', (c) => c.notNull())
      .addColumn('device_type', 'text', (c) => c.notNull())
      .addColumn('backed_up', 'integer', (c) => c.notNull())
      .addColumn('aaguid', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('last_used_at', 'bigint')
      .execute();
    await db.schema.createIndex('passkeys_user').on('passkeys').column('user_id').execute();
    await db.schema
      .createTable('webauthn_challenges')
      // SHA-256 (hex) of the challenge the browser signs; the challenge itself is only in the ceremony.
      .addColumn('challenge_hash', 'text', (c) => c.primaryKey())
      .addColumn('purpose', 'text', (c) => c.notNull())
      // Registration: whose passkey it adds. Sign-in: null (any account's discoverable credential).
      .addColumn('user_id', 'text', (c) => c.references('users.id').onDelete('cascade'))
      // SHA-256 (hex) of the browser-binding cookie: only the browser that asked may answer.
      .addColumn('browser_hash', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('webauthn_challenges_expires').on('webauthn_challenges').column('expires_at').execute();
    // Space-separated RFC 8176 methods; null: a password sign-in made before this migration (`pwd`).
    for (const table of ['sessions', 'authorization_codes', 'grants']) {
      await db.schema.alterTable(table).addColumn('amr', 'text').execute();
    }
  },
};

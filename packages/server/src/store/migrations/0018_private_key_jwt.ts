import type { Migration } from 'kysely';
import type { Past } from './past.js';

/**
 * Client authentication by signed assertion (RFC 7523 §2.2, OIDC Core §9 `private_key_jwt`): where an
 * application's public keys are (an inline JWK Set or a `jwks_uri`, with the signing algorithm it registered),
 * and the `jti` of every client assertion accepted, so that each is used once on any instance.
 */
export const privateKeyJwt: Migration = {
  async up(db: Past) {
    // JSON (store/repositories/applications.ts `ClientKeys`); null: the application authenticates with its
    // secret, or is public (every application until now).
    await db.schema.alterTable('applications').addColumn('client_keys', 'text').execute();
    // RFC 7523 §3 (7), OIDC Core §9: by SHA-256 of client_id and jti, until the assertion expires (then it is
    // refused anyway and housekeeping.ts purges the row); the primary key makes a replay's insert fail.
    await db.schema
      .createTable('client_assertions')
      .addColumn('jti_hash', 'text', (c) => c.primaryKey())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('client_assertions_expires').on('client_assertions').column('expires_at').execute();
  },
};

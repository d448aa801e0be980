import type { Migration } from 'kysely';
import type { Past } from './past.js';

/**
 * An application's own token lifetimes (`apps update --access-token-ttl --refresh-token-ttl`, the admin API's
 * `access_token_ttl` and `refresh_token_ttl`), in seconds; null: the server's (AUTHCLI_ACCESS_TOKEN_TTL,
 * AUTHCLI_REFRESH_TOKEN_TTL).
 */
export const applicationLifetimes: Migration = {
  async up(db: Past) {
    await db.schema.alterTable('applications').addColumn('access_token_ttl', 'integer').execute();
    await db.schema.alterTable('applications').addColumn('refresh_token_ttl', 'integer').execute();
  },
};

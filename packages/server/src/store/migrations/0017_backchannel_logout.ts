import type { Migration } from 'kysely';
import type { Past } from './past.js';

/**
 * OpenID Connect Back-Channel Logout 1.0: the session ID (`sid`, §2.1) of each browser session, recorded with
 * the codes and grants it made so that ending the session finds every application it signed in to; and where
 * an application wants to hear of it (§2.2 `backchannel_logout_uri`, `backchannel_logout_session_required`).
 */
export const backchannelLogout: Migration = {
  async up(db: Past) {
    // A random, non-secret identifier, kept when the same person signs in again in the same browser. Null for
    // sessions made before this migration: theirs is derived from the stored id hash (repositories/sessions.ts).
    await db.schema.alterTable('sessions').addColumn('sid', 'text').execute();
    // The session a code or grant came from; null for a device's grant (no browser session of the device) and
    // for rows made before this migration.
    await db.schema.alterTable('authorization_codes').addColumn('sid', 'text').execute();
    await db.schema.alterTable('grants').addColumn('sid', 'text').execute();
    // Ending a session looks its codes and grants up by sid.
    await db.schema.createIndex('authorization_codes_sid').on('authorization_codes').column('sid').execute();
    await db.schema.createIndex('grants_sid').on('grants').column('sid').execute();
    // Null: the application is not told of logouts.
    await db.schema.alterTable('applications').addColumn('backchannel_logout_uri', 'text').execute();
    await db.schema
      .alterTable('applications')
      .addColumn('backchannel_logout_session_required', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
  },
};

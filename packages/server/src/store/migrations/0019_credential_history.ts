import type { Migration } from 'kysely';
import type { Past } from './past.js';

/**
 * When and from where each way into an account was added or removed (the account page's history):
 * - `passkeys.added_from`: the address the passkey was added from, as the per-IP limits count it (null for the
 *   passkeys added before this migration);
 * - `signin_events.detail`: what a credential event was about (a passkey's name, a connector's id); null for
 *   sign-ins and device decisions, which name their application in `client_id`.
 */
export const credentialHistory: Migration = {
  async up(db: Past) {
    await db.schema.alterTable('passkeys').addColumn('added_from', 'text').execute();
    await db.schema.alterTable('signin_events').addColumn('detail', 'text').execute();
  },
};

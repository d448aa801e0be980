import type { Migration } from 'kysely';
import type { Past } from './past.js';

/**
 * Where a device sign-in came from, and what the user did about it (RFC 8628 §5.4; draft-ietf-oauth-cross-device-
 * security: show the user the request's context, keep a record they can check).
 *
 * - `device_authorizations.client_ip`: the client address of the device authorization request, as the per-IP
 *   limits count it (an IPv4 address or an IPv6 /56, through trusted proxies only). Rows made before this
 *   migration have none (null); they expire within the hour anyway.
 * - `signin_events`: a user's sign-ins (password), and device sign-ins they approved or denied, with the
 *   browser's address, the device's, and the application. Bounded per user and in time (housekeeping.ts).
 */
export const deviceOrigin: Migration = {
  async up(db: Past) {
    await db.schema.alterTable('device_authorizations').addColumn('client_ip', 'text').execute();
    await db.schema
      .createTable('signin_events')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('at', 'bigint', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('client_ip', 'text', (c) => c.notNull())
      .addColumn('device_ip', 'text')
      .addColumn('client_id', 'text')
      .execute();
    // The account page reads a user's newest; each new record drops that user's oldest past the bound.
    await db.schema.createIndex('signin_events_user_at').on('signin_events').columns(['user_id', 'at']).execute();
    // Housekeeping deletes by age.
    await db.schema.createIndex('signin_events_at').on('signin_events').column('at').execute();
  },
};

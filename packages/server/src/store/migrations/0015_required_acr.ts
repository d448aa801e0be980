import type { Migration } from 'kysely';
import type { Past } from './past.js';

/**
 * Sign-ins an application can insist on: the class (`acr`) every sign-in for it must meet (`apps update
 * --require-acr phr`: a passkey), and how the person who approved a device signed in (RFC 8176 `amr`), carried
 * to the device's grant as a code carries it.
 */
export const requiredAcr: Migration = {
  async up(db: Past) {
    // Null: any sign-in will do.
    await db.schema.alterTable('applications').addColumn('require_acr', 'text').execute();
    // Space-separated RFC 8176 methods of the approver's sign-in; null before this migration (a password).
    await db.schema.alterTable('device_authorizations').addColumn('amr', 'text').execute();
  },
};

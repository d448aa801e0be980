import type { Kysely } from 'kysely';

/**
 * A migration sees the schema as it stood when the migration was written, not
 * today's `Database` type, so it works on an untyped database (Kysely's
 * documented pattern for migrations).
 */
// biome-ignore lint/suspicious/noExplicitAny: see above
export type Past = Kysely<any>;

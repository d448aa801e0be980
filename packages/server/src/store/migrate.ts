import { DEFAULT_MIGRATION_TABLE, Migrator, sql, type Kysely } from 'kysely';
import { StoreError } from './errors.js';
import { migrationProvider } from './migrations.js';
import type { Database } from './schema.js';

/**
 * Applies every migration not yet applied, in name order. `schema` names
 * where Kysely keeps its migration tables (PostgreSQL: see PostgresEngine).
 */
export async function migrateToLatest(db: Kysely<Database>, schema?: string): Promise<void> {
  const migrator = new Migrator({ db, provider: migrationProvider, ...(schema && { migrationTableSchema: schema }) });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    throw new StoreError('unavailable', `migration ${failed ?? ''} failed: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** The newest migration this version knows (Kysely applies them in name order). */
export async function latestMigration(): Promise<string | undefined> {
  return Object.keys(await migrationProvider.getMigrations())
    .sort((a, b) => a.localeCompare(b))
    .at(-1);
}

/** Whether the migration `name` is recorded as applied, in one round trip; throws when the migration table is missing. */
export async function migrationApplied(db: Kysely<Database>, name: string | undefined): Promise<boolean> {
  const row = await sql<{ name: string }>`select name from ${sql.table(DEFAULT_MIGRATION_TABLE)} where name = ${name}`.execute(db);
  return row.rows.length === 1;
}

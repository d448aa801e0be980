import { DEFAULT_MIGRATION_TABLE, type Kysely, type Selectable, type Updateable, sql } from 'kysely';
import type { Database } from './schema.js';

type Row<T extends keyof Database> = Selectable<Database[T]>;

/**
 * Raw row access for tests that stage or inspect a scenario the repositories
 * rightly do not offer (a tampered code challenge, a damaged key, a rolled
 * back migration, what exactly a table holds). Never used by the server:
 * production code goes through the repositories (src/testing.ts is its only
 * importer, an entry the server never loads). Columns and values are
 * bound, table and column names are quoted identifiers.
 */
export class TestRows {
  constructor(private readonly db: Kysely<Database>) {}

  /** The rows of `table` whose columns equal `where`, ordered by `orderBy`. */
  async select<T extends keyof Database>(
    table: T,
    where: Partial<Row<T>> = {},
    orderBy: readonly (keyof Row<T> & string)[] = [],
  ): Promise<Row<T>[]> {
    const order = orderBy.length > 0 ? sql` order by ${sql.join(orderBy.map((c) => sql.ref(c)))}` : sql``;
    return (await sql<Row<T>>`select * from ${sql.table(table)}${this.where(where)}${order}`.execute(this.db)).rows;
  }

  /** How many rows of `table` match `where`. */
  async count<T extends keyof Database>(table: T, where: Partial<Row<T>> = {}): Promise<number> {
    const r = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)}${this.where(where)}`.execute(this.db);
    return Number(r.rows[0]!.n);
  }

  /** Sets `set` on the rows of `table` that match `where`; returns how many changed. */
  async update<T extends keyof Database>(table: T, where: Partial<Row<T>>, set: Updateable<Database[T]>): Promise<number> {
    const assignments = Object.entries(set).map(([c, v]) => sql`${sql.ref(c)} = ${v}`);
    const r = await sql`update ${sql.table(table)} set ${sql.join(assignments)}${this.where(where)}`.execute(this.db);
    return Number(r.numAffectedRows ?? 0);
  }

  /** PostgreSQL only: the schema the store's tables are in. */
  async currentSchema(): Promise<string> {
    return (await sql<{ s: string }>`select current_schema() as s`.execute(this.db)).rows[0]!.s;
  }

  /** Removes the record of the newest applied migration, as if this version's last one had not run; returns its name. */
  async forgetLatestMigration(): Promise<string | undefined> {
    const table = sql.table(DEFAULT_MIGRATION_TABLE);
    const [latest] = (await sql<{ name: string }>`select name from ${table} order by name desc limit 1`.execute(this.db)).rows;
    if (latest) await sql`delete from ${table} where name = ${latest.name}`.execute(this.db);
    return latest?.name;
  }

  /** Drops Kysely's migration table, as in a store that was never migrated. */
  async dropMigrationTable(): Promise<void> {
    await sql`drop table ${sql.table(DEFAULT_MIGRATION_TABLE)}`.execute(this.db);
  }

  private where(where: object) {
    const conditions = Object.entries(where).map(([c, v]) => sql`${sql.ref(c)} = ${v}`);
    return conditions.length > 0 ? sql` where ${sql.join(conditions, sql` and `)}` : sql``;
  }
}

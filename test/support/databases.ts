/**
 * Stores for tests that run `authcli-server` as a process and then look at
 * what it left in the database: an SQLite file in a fresh folder, or a fresh
 * PostgreSQL schema. The drivers are the server package's own (this package
 * does not depend on them), loaded through that package.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const fromServer = createRequire(join(root, 'packages/server/package.json'));

type Row = Record<string, unknown>;

/** The little of pg's Client these tests use. */
interface PgClient {
  connect(): Promise<void>;
  query(sql: string): Promise<{ rows: Row[] }>;
  end(): Promise<void>;
}
/** The little of better-sqlite3 these tests use. */
interface SqliteDatabase {
  prepare(sql: string): { all(): Row[] };
  close(): void;
}

export type DialectName = 'sqlite' | 'postgres';

/** As in packages/server/test/helpers.ts: PostgreSQL runs when AUTHCLI_TEST_POSTGRES_URL is set, and CI must set it. */
export function dialects(): DialectName[] {
  if (process.env.AUTHCLI_TEST_POSTGRES_URL) return ['sqlite', 'postgres'];
  if (process.env.CI) throw new Error('CI must set AUTHCLI_TEST_POSTGRES_URL so the PostgreSQL suites run');
  return ['sqlite'];
}

export interface TestDatabase {
  /** The `DATABASE_URL` to give the server. */
  url: string;
  /** Runs a query outside the server. */
  query(sql: string): Promise<Row[]>;
  cleanup(): Promise<void>;
}

async function pgClient(url: string): Promise<PgClient> {
  const pg = fromServer('pg') as { Client: new (options: { connectionString: string }) => PgClient };
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

/** A URL naming the same server and user as `url`, with another database. */
function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

let workerDatabase: Promise<string> | undefined;

/**
 * This test worker's PostgreSQL database (AUTHCLI_TEST_POSTGRES_URL's, suffixed with vitest's pool id), made
 * on first use. Each worker runs one file at a time, so test files side by side never share a database: a
 * migration reads the whole database's catalog (Kysely's migrator lists every schema's tables), and failed
 * with "schema t_... does not exist" when another file dropped its schema at that moment.
 */
export function postgresTestUrl(): Promise<string> {
  workerDatabase ??= (async () => {
    const base = process.env.AUTHCLI_TEST_POSTGRES_URL;
    if (!base) throw new Error('AUTHCLI_TEST_POSTGRES_URL is not set');
    const name = `${decodeURIComponent(new URL(base).pathname.slice(1)) || 'postgres'}_w${process.env.VITEST_POOL_ID ?? '0'}`;
    if (!/^[A-Za-z0-9_]+$/.test(name)) throw new Error(`AUTHCLI_TEST_POSTGRES_URL: ${name} is not a plain database name`);
    const admin = await pgClient(base);
    try {
      const exists = await admin.query(`select 1 from pg_database where datname = '${name}'`);
      if (exists.rows.length === 0) {
        // 42P04: another process of this worker made it first.
        await admin.query(`create database ${name}`).catch((err: { code?: string }) => {
          if (err.code !== '42P04' && err.code !== '23505') throw err;
        });
      }
    } finally {
      await admin.end();
    }
    return withDatabase(base, name);
  })();
  return workerDatabase;
}

/**
 * A new, empty schema in this worker's database: the URL that makes it the search path, and its removal.
 */
export async function freshPostgresSchema(): Promise<{ url: string; drop: () => Promise<void> }> {
  const base = await postgresTestUrl();
  const schema = `t_${Math.random().toString(36).slice(2, 12)}`;
  const admin = await pgClient(base);
  try {
    await admin.query(`create schema ${schema}`);
  } finally {
    await admin.end();
  }
  return {
    url: `${base}${base.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`,
    drop: async () => {
      const client = await pgClient(base);
      try {
        await client.query(`drop schema ${schema} cascade`);
      } finally {
        await client.end();
      }
    },
  };
}

/** An empty store the server will create and migrate at its first command. */
export async function freshDatabase(dialect: DialectName): Promise<TestDatabase> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'authcli-e2e-db-'));
    const url = join(dir, 'authcli.db');
    return {
      url,
      query: async (sql) => {
        const Database = fromServer('better-sqlite3') as new (path: string) => SqliteDatabase;
        const db = new Database(url);
        try {
          return db.prepare(sql).all();
        } finally {
          db.close();
        }
      },
      cleanup: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const { url, drop } = await freshPostgresSchema();
  return {
    url,
    query: async (sql) => {
      const client = await pgClient(url);
      try {
        return (await client.query(sql)).rows;
      } finally {
        await client.end();
      }
    },
    cleanup: drop,
  };
}

/** Runs a statement that returns no rows (DDL), which `query`'s SQLite side cannot. */
export async function execute(db: TestDatabase, dialect: DialectName, statement: string): Promise<void> {
  if (dialect === 'postgres') {
    await db.query(statement);
    return;
  }
  const Database = fromServer('better-sqlite3') as new (path: string) => { exec(sql: string): void; close(): void };
  const conn = new Database(db.url);
  try {
    conn.exec(statement);
  } finally {
    conn.close();
  }
}

/**
 * The migrations after 0008 undone (0009 application settings, 0010 pushed
 * requests, 0011 DPoP, 0012 the grants-by-user index), for tests that take a store back to an earlier
 * schema: one place to add the next migration's undo to.
 */
export const MIGRATIONS_AFTER_0008 = [
  '0009_application_settings',
  '0010_pushed_authorization_requests',
  '0011_dpop',
  '0012_grants_by_user',
  '0013_device_origin',
  '0014_passkeys',
  '0015_required_acr',
  '0016_connectors',
  '0017_backchannel_logout',
  '0018_private_key_jwt',
  '0019_credential_history',
  '0020_logout_outbox',
  '0021_resources',
  '0022_workloads',
  '0023_audit',
  '0024_signins_audited',
  '0025_application_lifetimes',
];
export async function undoMigrationsAfter0008(db: TestDatabase, dialect: DialectName): Promise<void> {
  // 0025: an application's own lifetimes.
  for (const column of ['access_token_ttl', 'refresh_token_ttl'])
    await execute(db, dialect, `alter table applications drop column ${column}`);
  // 0024: the sign-in records back in a table of their own (as 0013 and 0019 left it; the undo below drops it).
  await execute(
    db,
    dialect,
    'create table signin_events (id text primary key, user_id text not null, at bigint not null, kind text not null, client_ip text not null, device_ip text, client_id text, detail text)',
  );
  // 0023: the audit trail and its head.
  await execute(db, dialect, 'drop table audit_head');
  await execute(db, dialect, 'drop table audit_events');
  // 0022: CI workloads' trust policies and the CI tokens exchanged.
  await execute(db, dialect, 'drop table subject_tokens');
  await execute(db, dialect, 'drop table workloads');
  // 0021: resources, their scopes, and what each grant was for.
  for (const table of ['authorization_codes', 'device_authorizations', 'grants'])
    await execute(db, dialect, `alter table ${table} drop column resource`);
  await execute(db, dialect, 'drop table resource_scopes');
  await execute(db, dialect, 'drop table resources');
  // 0020: the back-channel logout outbox.
  await execute(db, dialect, 'drop table logout_outbox');
  // 0019: where a passkey was added from, and what a credential event was about.
  await execute(db, dialect, 'alter table passkeys drop column added_from');
  await execute(db, dialect, 'alter table signin_events drop column detail');
  // 0018: the keys of private_key_jwt clients, and the client assertions used.
  await execute(db, dialect, 'drop table client_assertions');
  await execute(db, dialect, 'alter table applications drop column client_keys');
  // 0017: session IDs, on sessions and what they made, and where applications hear of logouts.
  for (const index of ['authorization_codes_sid', 'grants_sid']) await execute(db, dialect, `drop index ${index}`);
  for (const table of ['sessions', 'authorization_codes', 'grants']) await execute(db, dialect, `alter table ${table} drop column sid`);
  for (const column of ['backchannel_logout_uri', 'backchannel_logout_session_required']) {
    await execute(db, dialect, `alter table applications drop column ${column}`);
  }
  // 0016: connectors, federated identities, their round trips' state, and a federated sign-in's class.
  for (const table of ['connector_states', 'federated_identities', 'connectors']) await execute(db, dialect, `drop table ${table}`);
  for (const table of ['sessions', 'authorization_codes', 'grants', 'device_authorizations']) {
    await execute(db, dialect, `alter table ${table} drop column acr`);
  }
  // 0015: the class an application requires, and how a device's approver signed in.
  await execute(db, dialect, 'alter table applications drop column require_acr');
  await execute(db, dialect, 'alter table device_authorizations drop column amr');
  // 0014: passkeys, their challenges, and how each sign-in was made.
  await execute(db, dialect, 'drop table webauthn_challenges');
  await execute(db, dialect, 'drop table passkeys');
  for (const table of ['sessions', 'authorization_codes', 'grants']) await execute(db, dialect, `alter table ${table} drop column amr`);
  // 0013: where a device's request came from, and the sign-in records.
  await execute(db, dialect, 'drop table signin_events');
  await execute(db, dialect, 'alter table device_authorizations drop column client_ip');
  await execute(db, dialect, 'drop index grants_user_client');
  await execute(db, dialect, 'drop table pushed_requests');
  await execute(db, dialect, 'drop table dpop_proofs');
  await execute(db, dialect, 'alter table authorization_codes drop column dpop_jkt');
  await execute(db, dialect, 'alter table grants drop column dpop_jkt');
  for (const column of ['introspection', 'require_dpop', 'require_par']) {
    await execute(db, dialect, `alter table applications drop column ${column}`);
  }
  const names = MIGRATIONS_AFTER_0008.map((n) => `'${n}'`).join(', ');
  await execute(db, dialect, `delete from kysely_migration where name in (${names})`);
}

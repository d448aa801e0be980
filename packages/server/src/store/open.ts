import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DB_TIMEOUT_MS } from '../config/defaults.js';
import { StoreError } from './errors.js';
import { PostgresEngine } from './postgres-engine.js';
import { SqliteEngine } from './sqlite-engine.js';
import { Store } from './store.js';
import { type StoreObserver, timedEngine } from './timed-engine.js';

/** Where a `DATABASE_URL` points: a PostgreSQL URL or an SQLite file. */
export type StoreLocation = { dialect: 'postgres'; url: string } | { dialect: 'sqlite'; path: string };

/**
 * Reads `DATABASE_URL`: `postgres://` / `postgresql://` URLs select
 * PostgreSQL; `sqlite:` URLs (`sqlite:./x.db`, `sqlite:///abs/x.db`) and
 * plain paths select the embedded SQLite store.
 */
export function parseDatabaseUrl(value: string): StoreLocation {
  const v = value.trim();
  if (v === '') throw new StoreError('unavailable', 'DATABASE_URL is empty');
  if (/^postgres(ql)?:\/\//i.test(v)) return { dialect: 'postgres', url: v };
  if (/^sqlite:/i.test(v)) {
    const rest = v.slice('sqlite:'.length);
    if (rest.startsWith('//')) return { dialect: 'sqlite', path: fileURLToPath(`file:${rest}`) };
    if (rest === '') throw new StoreError('unavailable', 'sqlite: URL without a path');
    return { dialect: 'sqlite', path: resolve(rest) };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(v)) {
    throw new StoreError('unavailable', `unsupported DATABASE_URL scheme in ${v.split(':')[0]}: (use postgres:// or a file path)`);
  }
  return { dialect: 'sqlite', path: v === ':memory:' ? v : resolve(v) };
}

export interface OpenOptions {
  /**
   * Embedded store only: checkpoint the write-ahead log from a background
   * thread instead of inside the commit that fills it (the server does this;
   * one-shot commands keep SQLite's automatic checkpoints).
   */
  backgroundCheckpoints?: boolean;
  /** With background checkpoints: see WAL_LIMIT_PAGES in config/defaults.ts (tests set a small one). */
  walLimitPages?: number;
  /** With background checkpoints: how often the thread checkpoints (tests set a long one). */
  checkpointIntervalMs?: number;
  /**
   * PostgreSQL only: how long to wait for a connection (connecting, or a free
   * one from the pool) and for a statement's answer before the call fails;
   * see postgresTimeouts in postgres-engine.ts. Default {@link DB_TIMEOUT_MS}.
   */
  timeoutMs?: number;
  /** Reports the time of the hot-path store calls (metrics on; see timed-engine.ts); none: nothing is timed. */
  observer?: StoreObserver;
  /** The monotonic clock (ms) of the store's lookup caches (APPLICATION_CACHE_MS); default `performance.now`. Tests move their own. */
  cacheClock?: () => number;
}

/**
 * Opens (without migrating) the store that `databaseUrl` names. An embedded
 * store's folder and files are made private first (see file-modes.ts).
 */
export async function openStore(databaseUrl: string, options: OpenOptions = {}): Promise<Store> {
  const engine = await openEngine(databaseUrl, options);
  return new Store(options.observer ? timedEngine(engine, options.observer) : engine, options.cacheClock);
}

/** The engine under {@link openStore}: the store's own tests drive it directly. */
export async function openEngine(databaseUrl: string, options: OpenOptions = {}): Promise<SqliteEngine | PostgresEngine> {
  const loc = parseDatabaseUrl(databaseUrl);
  if (loc.dialect === 'postgres') return PostgresEngine.open(loc.url, options.timeoutMs ?? DB_TIMEOUT_MS);
  return SqliteEngine.open(loc.path, options);
}

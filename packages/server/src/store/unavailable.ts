import { StoreError } from './errors.js';

/** pg's `query_timeout` error: the query may still be on the wire, with no answer coming. */
const PG_QUERY_READ_TIMEOUT = 'Query read timeout';

/**
 * What pg and pg-pool throw, as plain `Error`s with no code, when the
 * database does not answer in time or the connection is gone: a full pool or
 * a connect that timed out (`connectionTimeoutMillis`), a query that did
 * (`query_timeout`), a connection that broke.
 */
const PG_MESSAGES = [
  'timeout exceeded when trying to connect',
  'Connection terminated',
  PG_QUERY_READ_TIMEOUT,
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'timeout expired',
];

/**
 * Whether pg gave up waiting for a query's answer (`query_timeout`): the
 * connection still has the query in flight, so it must not be used again.
 */
export function isQueryReadTimeout(err: Error): boolean {
  return err.message === PG_QUERY_READ_TIMEOUT && !(err instanceof TypeError);
}

/** Socket errors of a connection to the database server. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/**
 * PostgreSQL SQLSTATEs that say "not now" rather than "wrong": 57014 a
 * statement cancelled (statement_timeout), 55P03 a lock not obtained in
 * time, class 08 connection exceptions, 57P01-57P03 a server shutting
 * down, restarting or starting, class 53 insufficient resources (too many
 * connections, disk full, out of memory).
 */
function isTransientSqlState(code: string): boolean {
  return code === '57014' || code === '55P03' || code.startsWith('08') || code.startsWith('57P') || code.startsWith('53');
}

/**
 * SQLite result codes that say the same: another process holds the database
 * past `busy_timeout` (SQLITE_BUSY*, SQLITE_LOCKED*), the disk failed or is
 * full (SQLITE_IOERR*, SQLITE_FULL).
 */
function isTransientSqliteCode(code: string): boolean {
  return code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED') || code.startsWith('SQLITE_IOERR') || code === 'SQLITE_FULL';
}

/**
 * Whether `err` says the store is unreachable, stalled or overloaded (the
 * request may well succeed in a moment: answer 503), as opposed to a bug or
 * a bad request. The one place that knows the drivers' failures; callers
 * never match messages themselves.
 */
export function isStoreUnavailable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  // A programming error is a bug to fix, never "try again later", whatever its message says.
  if (err instanceof TypeError || err instanceof RangeError || err instanceof ReferenceError || err instanceof SyntaxError) return false;
  if (err instanceof StoreError) return err.code === 'unavailable';
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code)) return true;
    if (code.startsWith('SQLITE_')) return isTransientSqliteCode(code);
    return /^[0-9A-Z]{5}$/.test(code) && isTransientSqlState(code);
  }
  const message = (err as { message?: unknown }).message;
  return typeof message === 'string' && PG_MESSAGES.some((m) => message.startsWith(m));
}

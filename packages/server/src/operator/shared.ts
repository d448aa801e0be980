import { ConfigError, loadConfig, type ServerConfig } from '../config/config.js';
import { bootstrapStore } from '../oauth/registration.js';
import { existsSync } from 'node:fs';
import { openStore, type OpenOptions, parseDatabaseUrl } from '../store/open.js';
import { StoreError, type Store } from '../store/store.js';
import { isStoreUnavailable } from '../store/unavailable.js';
import { InputError } from '../util/input-error.js';
import { sayError } from './output.js';
import type { AdminContext } from '../admin/context.js';
import { shipAuditLog } from '../admin/audit-log.js';
import { OPERATOR } from '../store/store.js';
import { tellApplicationsAndSay } from './backchannel.js';
import { passwordProblem } from '../oauth/accounts.js';

/** Expected failures print one line and exit 1; anything else is a bug and prints its stack. */
export function isExpected(err: unknown): err is Error {
  return err instanceof ConfigError || err instanceof InputError || err instanceof StoreError;
}

/** Said on standard error: not part of any command's output, and shown whatever LOG_LEVEL is. */
export function warn(message: string): void {
  sayError(`authcli-server: warning: ${message}`);
}

/**
 * Opens and migrates the store. A database that cannot be reached (refused,
 * or silent past the database timeout) is one line naming where it was
 * looked for, not a stack or a wait without end.
 */
export async function openMigrated(config: ServerConfig, options: OpenOptions = {}): Promise<Store> {
  const store = await openStore(config.databaseUrl, { ...options, timeoutMs: config.dbTimeoutMs });
  try {
    await store.migrate();
  } catch (err) {
    await store.close().catch(() => undefined);
    const cause = err instanceof StoreError ? err.cause : err;
    if (store.dialect === 'postgres' && isStoreUnavailable(cause)) {
      // pg's timeouts carry no code; a refusal or a server's own error does, and came at once.
      const waited =
        (cause as { code?: unknown }).code === undefined ? ` (no answer within AUTHCLI_DB_TIMEOUT, ${config.dbTimeoutMs / 1000} s)` : '';
      throw new StoreError(
        'unavailable',
        `cannot reach the database at ${databaseHost(config.databaseUrl)}: ${(cause as Error).message}${waited}`,
        { cause },
      );
    }
    throw err;
  }
  return store;
}

/** host:port of a PostgreSQL URL, for messages (never the user or password). */
export function databaseHost(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname || 'localhost'}:${u.port || '5432'}`;
  } catch {
    return 'the configured address';
  }
}

/** Where DATABASE_URL points, as messages name it: the SQLite file, or PostgreSQL's host and port (never a password). */
export function storeLocation(databaseUrl: string): { name: string; file: string | undefined } {
  let loc: ReturnType<typeof parseDatabaseUrl>;
  try {
    loc = parseDatabaseUrl(databaseUrl);
  } catch {
    return { name: 'the configured DATABASE_URL', file: undefined };
  }
  if (loc.dialect === 'postgres') return { name: `PostgreSQL ${databaseHost(databaseUrl)}`, file: undefined };
  return { name: `SQLite ${loc.path}`, file: loc.path === ':memory:' ? undefined : loc.path };
}

/**
 * Runs `fn` on the store only when one exists (withStore `readOnly`): listing commands, which change nothing.
 */
export function readStore<T>(
  database: string | undefined,
  fn: (store: Store, config: ServerConfig & { issuerGuessed: boolean }) => Promise<T>,
): Promise<T> {
  return withStore(database, fn, { readOnly: true });
}

/** The settings key under which `start` records the issuer it serves at. */
export const SERVED_ISSUER = 'served_issuer';

/**
 * The issuer an operator command names (redirect URIs, the admin API's resource): AUTHCLI_ISSUER when it is set,
 * else the one the server last started with on this store (`start --port 47500` is http://localhost:47500, whatever
 * PORT this shell has), else what `start` would choose here, `guessed` then.
 */
export async function servedIssuer(
  store: Store,
  config: ServerConfig,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ issuer: string; guessed: boolean }> {
  if (env.AUTHCLI_ISSUER) return { issuer: config.issuer, guessed: false };
  const served = await store.settings.get(SERVED_ISSUER);
  return served ? { issuer: served, guessed: false } : { issuer: config.issuer, guessed: true };
}

/**
 * What every operator command runs in: the store of `database` (or DATABASE_URL), opened, migrated and
 * bootstrapped, with the configuration of this environment and the issuer the server serves at (servedIssuer);
 * closed after `fn`.
 */
export async function withStore<T>(
  database: string | undefined,
  fn: (store: Store, config: ServerConfig & { issuerGuessed: boolean }) => Promise<T>,
  options: { readOnly?: boolean } = {},
): Promise<T> {
  const loaded = loadConfig({ database });
  const where = storeLocation(loaded.databaseUrl);
  // A command that only reads never makes a store: an empty one in the wrong folder would answer "nothing".
  if (options.readOnly && where.file !== undefined && !existsSync(where.file)) {
    throw new InputError(
      `no store at ${where.file}: the server keeps it where it was started (./data/authcli.db there); run this in that folder, or name it with --database or DATABASE_URL`,
    );
  }
  // The store of the folder the command runs in, when none is named: said on stderr, so that a command run in
  // another folder than the server's says which store it read or changed.
  if (database === undefined && !process.env.DATABASE_URL) sayError(`authcli-server: store: ${where.name}`);
  const store = await openMigrated(loaded);
  const closeAuditLog = shipAuditLog(store, loaded.audit, { stdout: false, warn });
  try {
    await bootstrapStore(store, Date.now());
    const { issuer, guessed } = await servedIssuer(store, loaded);
    return await fn(store, { ...loaded, issuer, issuerGuessed: guessed });
  } finally {
    closeAuditLog();
    await store.close();
  }
}

export async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.from(c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/** Prompts on the terminal without echoing what is typed. */
export async function promptHidden(prompt: string): Promise<string> {
  if (!process.stdin.isTTY) throw new InputError('no terminal to ask for the password: pipe it with --password-stdin');
  const { read } = await import('read');
  return read({ prompt, silent: true, replace: '', output: process.stderr });
}

/**
 * A new password typed at the terminal: asked again while it is refused ({@link passwordProblem} says why), then
 * typed a second time to confirm, so a slip of the finger is not the password. Three tries, then exit 1.
 */
export async function promptNewPassword(prompt: string): Promise<string> {
  for (let tries = 0; tries < NEW_PASSWORD_TRIES; tries++) {
    const password = await promptHidden(prompt);
    const problem = passwordProblem(password);
    if (problem) {
      sayError(`authcli-server: ${problem}; try again`);
      continue;
    }
    if ((await promptHidden('Again, to confirm: ')) === password) return password;
    sayError('authcli-server: the two passwords differ; try again');
  }
  throw new InputError(`no password set: ${NEW_PASSWORD_TRIES} tries`);
}

/** How many times `users add` and `users reset-password` ask on a terminal before giving up. */
const NEW_PASSWORD_TRIES = 3;

/** The password of `--password-stdin` (one trailing newline dropped), or the one typed at the terminal. */
export async function newPassword(fromStdin: boolean | undefined, prompt: string): Promise<string> {
  return fromStdin ? (await readAll(process.stdin)).replace(/\r?\n$/, '') : promptNewPassword(prompt);
}

export const collect = (v: string, prev: string[] = []) => [...prev, v];

/**
 * The operator CLI's side of an administrative operation (admin/): the
 * actor `operator`, no address. Logouts are held until `tellApplications`,
 * which the command calls after saying what it did: they are sent at once,
 * with what came of them said (a failure to tell applications exits 1; the
 * change stands).
 */
export function operatorContext(store: Store, config: ServerConfig): AdminContext & { tellApplications(): Promise<void> } {
  const held: Parameters<AdminContext['logout']>[0][] = [];
  return {
    store,
    config,
    actor: OPERATOR,
    address: null,
    now: Date.now(),
    logout: async (ended) => {
      held.push(ended);
    },
    async tellApplications() {
      for (const ended of held.splice(0)) await tellApplicationsAndSay(store, config, 'the change is made', ended);
    },
  };
}

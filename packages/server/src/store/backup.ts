import { fileProblem } from '../util/file-errors.js';
import { closeSync, chmodSync, existsSync, openSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { InputError } from '../util/input-error.js';
import { StoreError } from './errors.js';
import { parseDatabaseUrl } from './open.js';

/** What `authcli-server backup` says for PostgreSQL, whose own tool does this job better. */
export const POSTGRES_BACKUP_HINT =
  'backup copies the embedded SQLite store; for PostgreSQL use pg_dump, e.g. pg_dump --format=custom --file=authcli.dump "$DATABASE_URL"';

/**
 * Copies the embedded store to `target` with SQLite's online backup API
 * (https://sqlite.org/backup.html): a consistent snapshot while the server
 * keeps running and writing. The copy holds password hashes and (unless a
 * key-encryption key is set) private signing keys, so it is created 0600,
 * and an existing file is never overwritten. Returns the pages copied and
 * the stored `private_jwk` values of the copy's signing keys, so that the
 * caller can say whether the copy holds any of them unencrypted.
 */
export async function backupStore(databaseUrl: string, target: string): Promise<{ path: string; pages: number; privateKeys: string[] }> {
  const loc = parseDatabaseUrl(databaseUrl);
  if (loc.dialect === 'postgres') throw new InputError(POSTGRES_BACKUP_HINT);
  if (loc.path === ':memory:') throw new InputError('an in-memory store has nothing to back up');
  if (!existsSync(loc.path)) throw new StoreError('not_found', `no database at ${loc.path}`);
  const path = resolve(target);
  // Created here, exclusively and 0600 whatever the umask: an existing file is refused, and the copy is never
  // readable by others, not even while it is written. SQLite takes an empty file as an empty database.
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'EEXIST') throw new InputError(`${path} exists: backup never overwrites; choose a new file name`);
    throw new InputError(fileProblem(err, path, 'create'));
  }
  closeSync(fd);
  chmodSync(path, 0o600);
  const { default: Database } = await import('better-sqlite3');
  const source = new Database(loc.path, { readonly: true, fileMustExist: true });
  try {
    const progress = await source.backup(path);
    return { path, pages: progress.totalPages, privateKeys: settleCopy(new Database(path, { fileMustExist: true })) };
  } catch (err) {
    rmSync(path, { force: true });
    throw err;
  } finally {
    source.close();
  }
}

/**
 * Makes the copy one self-contained file and reads what it holds: the copy
 * inherits the store's write-ahead-log mode, and any connection to it would
 * leave `-wal` and `-shm` files beside it (which a rotation that deletes
 * `authcli-*.db` would never remove), so it is switched to the rollback
 * journal first; a server that opens it switches it back. Returns the
 * `private_jwk` column of its signing keys (none in a store that never
 * started). The copy is closed.
 */
function settleCopy(copy: import('better-sqlite3').Database): string[] {
  try {
    copy.pragma('journal_mode = DELETE');
    const table = copy.prepare("select 1 from sqlite_master where type = 'table' and name = 'signing_keys'").get();
    if (!table) return [];
    return (copy.prepare('select private_jwk from signing_keys').all() as { private_jwk: string }[]).map((r) => r.private_jwk);
  } finally {
    copy.close();
  }
}

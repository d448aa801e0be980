import { fileProblem } from '../util/file-errors.js';
import { chmodSync, closeSync, constants, fchmodSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { StoreError } from './store.js';

/**
 * The embedded store's files hold password hashes, sessions, refresh-token
 * hashes and the signing keys: only the server's own user may read them.
 * Modes are set explicitly rather than left to the umask, which is 022 on
 * most systems (0644 files) and anything at all under a service manager.
 */

/** Mode of a data folder the server creates. */
export const DATA_DIR_MODE = 0o700;
/** Mode of the database file and its companions. */
export const DATA_FILE_MODE = 0o600;

/**
 * The database file and the files SQLite keeps beside it: the write-ahead
 * log and its shared-memory index (WAL mode), and the rollback journal (only
 * while switching to WAL). SQLite creates the companions with the database
 * file's mode, so a private database file keeps new companions private too.
 */
const DATABASE_FILE_SUFFIXES = ['', '-wal', '-shm', '-journal'];

function restrict(path: string, mode: number, describe: string): void {
  try {
    chmodSync(path, mode);
  } catch (err) {
    throw new StoreError('unavailable', `cannot make ${describe} ${path} private (mode ${mode.toString(8)}): ${(err as Error).message}`, {
      cause: err,
    });
  }
}

/**
 * Prepares an SQLite database path before SQLite opens it, whatever the
 * umask: a missing folder is created 0700 (with any missing parents), a
 * missing database file is created empty and 0600 (an empty file is an empty
 * database), and an existing database file or companion open to group or
 * others is tightened to 0600. An existing folder is left as the operator
 * made it (see {@link exposedFolderWarning}).
 */
export function secureDatabaseFiles(path: string): void {
  const folder = dirname(path);
  let firstCreated: string | undefined;
  try {
    firstCreated = mkdirSync(folder, { recursive: true, mode: DATA_DIR_MODE });
  } catch (err) {
    throw new StoreError('unavailable', fileProblem(err, folder, 'create'), { cause: err });
  }
  if (firstCreated !== undefined) {
    // mkdir's mode is filtered through the umask: set it outright on every folder this call created.
    for (let d = folder; ; d = dirname(d)) {
      restrict(d, DATA_DIR_MODE, 'the data folder');
      if (d === firstCreated || d === dirname(d)) break;
    }
  }
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, DATA_FILE_MODE);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new StoreError('unavailable', fileProblem(err, path, 'create'), { cause: err });
    }
  }
  if (fd !== undefined) {
    try {
      fchmodSync(fd, DATA_FILE_MODE);
    } finally {
      closeSync(fd);
    }
  }
  for (const suffix of DATABASE_FILE_SUFFIXES) {
    const file = path + suffix;
    let mode: number;
    try {
      mode = statSync(file).mode;
    } catch {
      continue; // absent: SQLite creates it later, with the database file's mode
    }
    if (mode & 0o077) restrict(file, DATA_FILE_MODE, 'the database file');
  }
}

/**
 * A warning when the folder of the database file at `path` is readable or
 * writable by group or others: the files themselves are private, but others
 * can list them, and in a writable folder replace them. The folder is the
 * operator's choice, so this only says so.
 */
export function exposedFolderWarning(path: string): string | undefined {
  const folder = dirname(path);
  const mode = statSync(folder).mode & 0o777;
  const access = mode & 0o022 ? 'writable' : mode & 0o044 ? 'readable' : undefined;
  if (!access) return undefined;
  return `the database folder ${folder} (mode ${mode.toString(8).padStart(4, '0')}) is ${access} by other users: chmod 700 it, or move the database into a private folder`;
}

// The file backend: one JSON file, mode 0600 in a 0700 folder, replaced atomically on every write.
import { basename, join } from 'node:path';
import { configDir, readTextIfPresent } from '../config.js';
import { AuthcliError } from '../errors.js';
import type { StoredSession } from './session.js';

interface CredentialsFile {
  version: 1;
  sessions: Record<string, StoredSession>;
}

/** `$XDG_CONFIG_HOME/authcli/credentials.json`: where sessions are kept when no keychain holds them. */
export function credentialsPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(configDir(env), 'credentials.json');
}

/** Every session in the file, by slot (config.ts slotOf); none when there is no file. A damaged file is an error, never "signed out". */
export async function readFileSessions(env: NodeJS.ProcessEnv): Promise<Record<string, StoredSession>> {
  const file = credentialsPath(env);
  const text = await readTextIfPresent(file);
  if (text === undefined) return {};
  try {
    const parsed = JSON.parse(text) as CredentialsFile;
    if (parsed.version !== 1 || typeof parsed.sessions !== 'object' || parsed.sessions === null) throw new Error('unknown format');
    return parsed.sessions;
  } catch (err) {
    throw new AuthcliError('config', `${file} is damaged (${(err as Error).message}); delete it and sign in again`);
  }
}

/**
 * Writes a file atomically: a 0600 temp file in the same folder, fsync, rename over the old one, so a crash
 * leaves the old file or the new one, never half of one. `text` undefined removes the file instead.
 */
export async function writePrivateFile(file: string, text: string | undefined, env: NodeJS.ProcessEnv): Promise<void> {
  // Loaded here, not at the top: node:crypto (~3 ms) and node:fs/promises cost every `authcli token` their load,
  // and only writes need them.
  const [{ randomBytes }, { chmod, mkdir, open, rename, unlink }] = await Promise.all([import('node:crypto'), import('node:fs/promises')]);
  if (text === undefined) {
    await unlink(file).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
    return;
  }
  const dir = configDir(env);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const tmp = join(dir, `.${basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(tmp, 'wx', 0o600);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await chmod(tmp, 0o600);
    await rename(tmp, file);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
}

/** Writes the whole file; with no session left the file is removed, so that `credentials.json` exists only while it holds credentials. */
async function save(sessions: Record<string, StoredSession>, env: NodeJS.ProcessEnv): Promise<void> {
  const text =
    Object.keys(sessions).length === 0 ? undefined : `${JSON.stringify({ version: 1, sessions } satisfies CredentialsFile, null, 2)}\n`;
  await writePrivateFile(credentialsPath(env), text, env);
}

/**
 * Runs a read-modify-write of `file` holding the lock `<file>.lock`: the session lock is per slot, so
 * processes storing other slots (other profiles, other issuers) at the same moment would otherwise each
 * write back the file as they read it and drop the other's session. Held only around the write, never while
 * taking another lock.
 */
export async function underFileLock<T>(file: string, fn: () => Promise<T>): Promise<T> {
  const { acquireLock } = await import('../lock.js');
  const lock = await acquireLock(`${file}.lock`, { purpose: `writing ${basename(file)}` });
  try {
    return await fn();
  } finally {
    await lock.release();
  }
}

export async function writeFileSession(slot: string, session: StoredSession, env: NodeJS.ProcessEnv): Promise<void> {
  await underFileLock(credentialsPath(env), async () => {
    const sessions = await readFileSessions(env);
    sessions[slot] = session;
    await save(sessions, env);
  });
}

/** True when the file held a session for the slot. */
export async function deleteFileSession(slot: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  // Only a file that holds the slot's session is locked and written: a stat or a read when it does not.
  if (!(slot in (await readFileSessions(env)))) return false;
  return underFileLock(credentialsPath(env), async () => {
    const sessions = await readFileSessions(env);
    if (!(slot in sessions)) return false;
    delete sessions[slot];
    await save(sessions, env);
    return true;
  });
}

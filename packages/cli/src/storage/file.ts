// The file backend: one JSON file, mode 0600 in a 0700 folder, replaced atomically on every write.
import { chmod, mkdir, open, rename, unlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { configDir, readTextIfPresent } from '../config.js';
import { CliError } from '../errors.js';
import type { StoredSession } from './session.js';

interface CredentialsFile {
  version: 1;
  sessions: Record<string, StoredSession>;
}

/** `$XDG_CONFIG_HOME/authcli/credentials.json`: where sessions are kept when no keychain holds them. */
export function credentialsPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(configDir(env), 'credentials.json');
}

/** Every session in the file, by issuer; none when the file does not exist. A damaged file is an error, never "signed out". */
export async function readFileSessions(env: NodeJS.ProcessEnv): Promise<Record<string, StoredSession>> {
  const file = credentialsPath(env);
  const text = await readTextIfPresent(file);
  if (text === undefined) return {};
  try {
    const parsed = JSON.parse(text) as CredentialsFile;
    if (parsed.version !== 1 || typeof parsed.sessions !== 'object' || parsed.sessions === null) throw new Error('unknown format');
    return parsed.sessions;
  } catch (err) {
    throw new CliError('config', `${file} is damaged (${(err as Error).message}); delete it and sign in again`);
  }
}

/**
 * Writes a file atomically: a 0600 temp file in the same folder, fsync, rename over the old one, so a crash
 * leaves the old file or the new one, never half of one. `text` undefined removes the file instead.
 */
export async function writePrivateFile(file: string, text: string | undefined, env: NodeJS.ProcessEnv): Promise<void> {
  // Loaded here, not at the top: node:crypto costs every `authcli token` ~3 ms to load, and only writes need it.
  const { randomBytes } = await import('node:crypto');
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

export async function writeFileSession(issuer: string, session: StoredSession, env: NodeJS.ProcessEnv): Promise<void> {
  const sessions = await readFileSessions(env);
  sessions[issuer] = session;
  await save(sessions, env);
}

/** True when the file held a session for the issuer. */
export async function deleteFileSession(issuer: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  const sessions = await readFileSessions(env);
  if (!(issuer in sessions)) return false;
  delete sessions[issuer];
  await save(sessions, env);
  return true;
}

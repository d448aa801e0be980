// The marker that the file fallback was announced, so it is said once per config folder, not on every call.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { configDir } from '../config.js';

/**
 * fs.existsSync through require: an ES import of node:fs reads every export of its namespace, loading the
 * stream classes, which costs `authcli token`'s fast path about a millisecond for one stat.
 */
const existsSync = (path: string): boolean => (createRequire(import.meta.url)('node:fs') as typeof import('node:fs')).existsSync(path);

function markerPath(env: NodeJS.ProcessEnv): string {
  return join(configDir(env), 'storage-notice');
}

/** A stat, not a read: this sits on the `authcli token` path. */
export function fallbackAnnounced(env: NodeJS.ProcessEnv): boolean {
  return existsSync(markerPath(env));
}

/** Remembers that the user was told; the text says what the file is for whoever finds it. */
export async function rememberAnnounced(env: NodeJS.ProcessEnv, message: string): Promise<void> {
  // Loaded here, not at the top: `authcli token` reads, and only writes need it.
  const { mkdir, writeFile } = await import('node:fs/promises');
  await mkdir(configDir(env), { recursive: true, mode: 0o700 });
  await writeFile(
    markerPath(env),
    `${new Date().toISOString()} authcli said: ${message}\nWhile this file exists it is not said again; it is removed when the keychain stores credentials again.\n`,
    { mode: 0o600 },
  );
}

/** After a keychain write: a later fallback is news again. */
export async function forgetAnnounced(env: NodeJS.ProcessEnv): Promise<void> {
  const { unlink } = await import('node:fs/promises');
  await unlink(markerPath(env)).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}

import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { configDir } from './config.js';
import { CliError } from './errors.js';

/** What is kept per issuer after a sign-in. */
export interface StoredSession {
  client_id: string;
  access_token: string;
  token_type: string;
  /** Epoch ms when the access token expires. */
  expires_at: number;
  scope: string;
  refresh_token?: string | undefined;
  id_token?: string | undefined;
  subject: string | undefined;
  username: string | undefined;
  obtained_at: number;
}

interface CredentialsFile {
  version: 1;
  sessions: Record<string, StoredSession>;
}

export function credentialsPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(configDir(env), 'credentials.json');
}

async function load(env: NodeJS.ProcessEnv): Promise<CredentialsFile> {
  const file = credentialsPath(env);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, sessions: {} };
    throw new CliError('config', `cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    const parsed = JSON.parse(text) as CredentialsFile;
    if (parsed.version !== 1 || typeof parsed.sessions !== 'object' || parsed.sessions === null) throw new Error('unknown format');
    return parsed;
  } catch (err) {
    throw new CliError('config', `${file} is damaged (${(err as Error).message}); delete it and sign in again`);
  }
}

/** Writes the whole file atomically: a 0600 temp file in the same folder, fsync, rename over the old one. */
async function save(data: CredentialsFile, env: NodeJS.ProcessEnv): Promise<void> {
  const dir = configDir(env);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = credentialsPath(env);
  const tmp = join(dir, `.credentials.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(tmp, 'wx', 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(data, null, 2)}\n`);
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

export async function readSession(issuer: string, env: NodeJS.ProcessEnv = process.env): Promise<StoredSession | undefined> {
  return (await load(env)).sessions[issuer];
}

export async function allSessions(env: NodeJS.ProcessEnv = process.env): Promise<Record<string, StoredSession>> {
  return (await load(env)).sessions;
}

export async function writeSession(issuer: string, session: StoredSession, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const data = await load(env);
  data.sessions[issuer] = session;
  await save(data, env);
}

export async function deleteSession(issuer: string, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  const data = await load(env);
  if (!(issuer in data.sessions)) return false;
  delete data.sessions[issuer];
  await save(data, env);
  return true;
}

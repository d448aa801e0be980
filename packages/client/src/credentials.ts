// Where sessions are kept: the OS keychain when one answers, else the 0600 file, announced once; a failed
// keychain write falls back to the file so a fresh token is never dropped. The backends are in storage/;
// this module decides between them and keeps the API every command uses.
import { AuthcliError } from './errors.js';
import { deleteDpopKeys } from './storage/dpop.js';
import { credentialsPath, deleteFileSession, readFileSessions, writeFileSession } from './storage/file.js';
import {
  deleteKeychainSession,
  KeychainError,
  keychainMayAnswer,
  keychainName,
  readKeychainSessions,
  writeKeychainSession,
} from './storage/keychain.js';
import { memorySessions } from './storage/memory.js';
import { fallbackAnnounced, forgetAnnounced, rememberAnnounced } from './storage/notice.js';
import { announcesFallback, readsKeychain, storageChoice, writesKeychain, type Situation } from './storage/select.js';
import { newer, type StoredSession } from './storage/session.js';

export type { StoredSession } from './storage/session.js';
export { credentialsPath } from './storage/file.js';

/** Where a session is kept (or where a new one would go). */
export type CredentialStore = { kind: 'keychain'; name: string } | { kind: 'file'; path: string } | { kind: 'memory' };

/** `keychain (Secret Service)`, the file's path, or `memory (this process)`, as `status` shows it. */
export function describeStore(store: CredentialStore): string {
  return store.kind === 'keychain' ? `keychain (${store.name})` : store.kind === 'file' ? store.path : 'memory (this process)';
}

const MEMORY: CredentialStore = { kind: 'memory' };
const inMemory = (env: NodeJS.ProcessEnv) => storageChoice(env) === 'memory';

export interface LocatedSession {
  session: StoredSession | undefined;
  store: CredentialStore;
  /** Why the keychain could not be read, when it was asked and failed (the file was used). */
  keychainError?: string;
}

function situation(env: NodeJS.ProcessEnv): Situation {
  return { choice: storageChoice(env), keychainMayAnswer: keychainMayAnswer(env), fallbackAnnounced: fallbackAnnounced(env) };
}

const fileStore = (env: NodeJS.ProcessEnv): CredentialStore => ({ kind: 'file', path: credentialsPath(env) });
const keychainStore = (): CredentialStore => ({ kind: 'keychain', name: keychainName() });

/**
 * The session stored under a slot (config.ts slotOf: the issuer for the default profile, `<issuer>#<profile>`
 * for the others) and where it is kept. The file is read first (a stat when it is absent); the keychain
 * is asked as `readsKeychain` decides. When both hold one, the newer wins, so a session that the file took
 * during a keychain failure is found, and a stale copy is never used.
 */
export async function locateSession(slot: string, env: NodeJS.ProcessEnv = process.env): Promise<LocatedSession> {
  if (inMemory(env)) return { session: memorySessions.get(slot), store: MEMORY };
  const inFile = (await readFileSessions(env))[slot];
  const s = situation(env);
  if (!readsKeychain(s, inFile !== undefined)) return { session: inFile, store: fileStore(env) };
  let inKeychain: StoredSession | undefined;
  try {
    inKeychain = (await readKeychainSessions())[slot];
  } catch (err) {
    // Asked for the keychain, or it is there but locked, and it cannot say: "not signed in" would be a guess.
    if ((s.choice === 'keychain' || (err instanceof KeychainError && err.locked)) && !inFile) throw err;
    return { session: inFile, store: fileStore(env), keychainError: (err as Error).message };
  }
  const session = newer(inFile, inKeychain);
  return { session, store: session !== undefined && session === inFile ? fileStore(env) : keychainStore() };
}

/** The slot's session from wherever it is kept; undefined when signed out. */
export async function readSession(slot: string, env: NodeJS.ProcessEnv = process.env): Promise<StoredSession | undefined> {
  return (await locateSession(slot, env)).session;
}

/** Every stored session, by slot, with where it is kept; `keychainError` when the keychain was asked and could not say. */
export async function allLocatedSessions(
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ sessions: Record<string, { session: StoredSession; store: CredentialStore }>; keychainError?: string }> {
  const sessions: Record<string, { session: StoredSession; store: CredentialStore }> = {};
  if (inMemory(env)) {
    for (const [slot, session] of Object.entries(memorySessions.all())) sessions[slot] = { session, store: MEMORY };
    return { sessions };
  }
  for (const [slot, session] of Object.entries(await readFileSessions(env))) sessions[slot] = { session, store: fileStore(env) };
  if (!writesKeychain(situation(env))) return { sessions };
  let inKeychain: Record<string, StoredSession>;
  try {
    inKeychain = await readKeychainSessions();
  } catch (err) {
    return { sessions, keychainError: (err as Error).message };
  }
  for (const [slot, session] of Object.entries(inKeychain)) {
    if (newer(sessions[slot]?.session, session) === session) sessions[slot] = { session, store: keychainStore() };
  }
  return { sessions };
}

/** Every session, by slot, from the file and (when it may answer) the keychain; a keychain that fails only hides its own. */
export async function allSessions(env: NodeJS.ProcessEnv = process.env): Promise<Record<string, StoredSession>> {
  const { sessions } = await allLocatedSessions(env);
  return Object.fromEntries(Object.entries(sessions).map(([slot, { session }]) => [slot, session]));
}

function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/**
 * Stores the session: in the keychain when `writesKeychain` says so, else or when that fails in the file.
 * The fallback is said on stderr (`say`) as `announcesFallback` decides, and remembered in a marker file.
 * Order on a keychain write: forget the marker, write the keychain, then remove the file's copy; a crash in
 * between leaves two copies and no marker, and reads then compare them.
 */
export async function writeSession(
  slot: string,
  session: StoredSession,
  env: NodeJS.ProcessEnv = process.env,
  say: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<void> {
  if (inMemory(env)) return memorySessions.set(slot, session);
  const s = situation(env);
  let failure: AuthcliError | undefined;
  if (writesKeychain(s)) {
    if (s.fallbackAnnounced) await forgetAnnounced(env);
    try {
      await writeKeychainSession(slot, session);
    } catch (err) {
      if (!(err instanceof AuthcliError)) throw err;
      failure = err;
    }
    if (!failure) {
      await deleteFileSession(slot, env);
      return;
    }
  }
  await writeFileSession(slot, session, env);
  if (s.choice === 'file') return;
  const path = credentialsPath(env);
  const message = failure
    ? `${capitalized(failure.message)}; they are kept in ${path} instead.`
    : `No keychain available: credentials are kept in ${path}.`;
  if (announcesFallback(s)) say(message);
  await rememberAnnounced(env, message);
}

/**
 * Forgets the slot's session wherever it is kept (both places, so no older copy comes back). A keychain
 * that cannot be changed is an error unless the file held the session, which is then gone.
 */
export async function deleteSession(slot: string, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  const deleted = await deleteSessionCopies(slot, env);
  // Its DPoP key (RFC 9449) goes with it: a key without a session signs nothing.
  await deleteDpopKeys(slot, env);
  return deleted;
}

async function deleteSessionCopies(slot: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  if (inMemory(env)) return memorySessions.delete(slot);
  const fromFile = await deleteFileSession(slot, env);
  const s = situation(env);
  if (!writesKeychain(s)) return fromFile;
  try {
    return (await deleteKeychainSession(slot)) || fromFile;
  } catch (err) {
    if (fromFile) return true;
    throw err;
  }
}

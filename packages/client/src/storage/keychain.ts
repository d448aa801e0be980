// The OS keychain backend through @napi-rs/keyring (keyring-rs): macOS Keychain, Windows Credential Manager,
// the Secret Service (gnome-keyring, KWallet, KeePassXC) on Linux and the BSDs. The native module is imported
// only when this backend is used, so commands that never touch the keychain do not pay for loading it.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { AuthcliError } from '../errors.js';
import { parseSession, type StoredSession } from './session.js';

/**
 * fs.existsSync through require: an ES import of node:fs reads every export of its namespace, loading the
 * stream classes, which costs `authcli token`'s fast path about a millisecond for one stat.
 */
const existsSync = (path: string): boolean => (createRequire(import.meta.url)('node:fs') as typeof import('node:fs')).existsSync(path);

/**
 * The service name of every entry; the account is `<slot> <client_id>`, the slot being the issuer for the default
 * profile (as before profiles) and `<issuer>#<profile>` for the others (config.ts slotOf).
 */
export const KEYCHAIN_SERVICE = 'authcli';

/** What the keychain is called on this platform, as people know it. */
export function keychainName(platform: NodeJS.Platform = process.platform): string {
  if (platform === 'darwin') return 'macOS Keychain';
  if (platform === 'win32') return 'Windows Credential Manager';
  return 'Secret Service';
}

/**
 * Whether a keychain may answer here, decided without loading the native module. macOS and Windows always
 * have one. Elsewhere the Secret Service is a D-Bus service, and libdbus finds the session bus only through
 * `DBUS_SESSION_BUS_ADDRESS` or `$XDG_RUNTIME_DIR/bus`: without either (SSH to a server, containers, CI)
 * no keychain can answer, and trying would only cost time.
 */
export function keychainMayAnswer(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
  exists: (path: string) => boolean = existsSync,
): boolean {
  if (platform === 'darwin' || platform === 'win32') return true;
  if (env.DBUS_SESSION_BUS_ADDRESS) return true;
  return Boolean(env.XDG_RUNTIME_DIR?.startsWith('/') && exists(join(env.XDG_RUNTIME_DIR, 'bus')));
}

type Keyring = typeof import('@napi-rs/keyring');

let loaded: Promise<Keyring> | undefined;

/** The binding, loaded on first use; a missing prebuilt binary is a keychain failure like any other. */
function keyring(): Promise<Keyring> {
  loaded ??= import('@napi-rs/keyring');
  return loaded;
}

/** A keychain that failed; `locked` when it is there but locked (Secret Service `IsLocked`), so what it holds cannot be read. */
export class KeychainError extends AuthcliError {
  constructor(
    message: string,
    readonly locked: boolean,
    options?: { cause?: unknown },
  ) {
    super('storage', message, options);
  }
}

function failure(action: string, err: unknown): KeychainError {
  const detail = (err as Error).message ?? String(err);
  if (/IsLocked|\blocked\b/i.test(detail)) {
    return new KeychainError(`the keychain (${keychainName()}) is locked (${detail}); unlock it, or use --storage file`, true, {
      cause: err,
    });
  }
  return new KeychainError(`the keychain (${keychainName()}) could not ${action}: ${detail}`, false, { cause: err });
}

function account(slot: string, clientId: string): string {
  return `${slot} ${clientId}`;
}

/** Slots (issuer URLs, and a profile name after `#`) have no spaces, so the first space splits an account into slot and client id. */
function slotOfAccount(acct: string): string | undefined {
  const space = acct.indexOf(' ');
  return space > 0 ? acct.slice(0, space) : undefined;
}

async function entry(slot: string, clientId: string, service = KEYCHAIN_SERVICE) {
  const { AsyncEntry } = await keyring();
  // Pinned to the Secret Service on Linux: keyring-rs would otherwise fall back to the kernel keyring,
  // which forgets everything at reboot, and a session that vanishes then is worse than the announced file.
  return new AsyncEntry(service, account(slot, clientId), { linux: { store: 'secret-service' } });
}

interface Found {
  slot: string;
  clientId: string;
  session: StoredSession;
}

async function findAll(): Promise<Found[]> {
  const { findCredentialsAsync } = await keyring();
  const found: Found[] = [];
  for (const { account: acct, password } of await findCredentialsAsync(KEYCHAIN_SERVICE)) {
    const slot = slotOfAccount(acct);
    const session = parseSession(password);
    if (slot && session) found.push({ slot, clientId: acct.slice(slot.length + 1), session });
  }
  return found;
}

/** Every authcli session in the keychain, by slot (the newest when several clients of one slot are there). */
export async function readKeychainSessions(): Promise<Record<string, StoredSession>> {
  let found: Found[];
  try {
    found = await findAll();
  } catch (err) {
    throw failure('be read', err);
  }
  const sessions: Record<string, StoredSession> = {};
  for (const f of found) {
    const current = sessions[f.slot];
    if (!current || f.session.obtained_at > current.obtained_at) sessions[f.slot] = f.session;
  }
  return sessions;
}

/** Stores the session under `<slot> <client_id>` and removes the slot's entries for other clients: one session per slot. */
export async function writeKeychainSession(slot: string, session: StoredSession): Promise<void> {
  try {
    await (await entry(slot, session.client_id)).setPassword(JSON.stringify(session));
  } catch (err) {
    throw failure('store the credentials', err);
  }
  // Best effort once the session is stored: an entry left behind is older, and reads take the newer.
  try {
    for (const other of await findAll()) {
      if (other.slot === slot && other.clientId !== session.client_id) await (await entry(slot, other.clientId)).deleteCredential();
    }
  } catch {
    // The session itself is stored; nothing is lost.
  }
}

/** True when the keychain held a session for the slot. */
export async function deleteKeychainSession(slot: string): Promise<boolean> {
  try {
    let deleted = false;
    for (const f of await findAll()) {
      if (f.slot === slot) deleted = (await (await entry(slot, f.clientId)).deleteCredential()) || deleted;
    }
    return deleted;
  } catch (err) {
    throw failure('remove the credentials', err);
  }
}

/** The entries beside the sessions that keep their DPoP private keys (a JWK): account `<slot> <jkt>`. */
export const KEYCHAIN_DPOP_SERVICE = 'authcli-dpop';

export async function writeKeychainDpopKey(slot: string, jkt: string, jwk: string): Promise<void> {
  try {
    await (await entry(slot, jkt, KEYCHAIN_DPOP_SERVICE)).setPassword(jwk);
  } catch (err) {
    throw failure('store the DPoP key', err);
  }
}

export async function readKeychainDpopKey(slot: string, jkt: string): Promise<string | undefined> {
  try {
    return (await (await entry(slot, jkt, KEYCHAIN_DPOP_SERVICE)).getPassword()) ?? undefined;
  } catch (err) {
    throw failure('be read', err);
  }
}

/** Removes the slot's DPoP keys but `keep`; true when one was there. */
export async function deleteKeychainDpopKeys(slot: string, keep?: string): Promise<boolean> {
  try {
    const { findCredentialsAsync } = await keyring();
    let deleted = false;
    for (const { account: acct } of await findCredentialsAsync(KEYCHAIN_DPOP_SERVICE)) {
      if (slotOfAccount(acct) !== slot) continue;
      const jkt = acct.slice(slot.length + 1);
      if (jkt !== keep) deleted = (await (await entry(slot, jkt, KEYCHAIN_DPOP_SERVICE)).deleteCredential()) || deleted;
    }
    return deleted;
  } catch (err) {
    throw failure('remove the DPoP key', err);
  }
}

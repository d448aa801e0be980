// Where a sign-in's DPoP private key is kept (never in credentials.json): in the keychain, in an entry beside
// the session's, when the keychain may be used; otherwise, or when that write fails, in dpop-keys.json beside
// credentials.json (mode 0600, written atomically). Keys are found by slot (config.ts slotOf: the issuer, or
// `<issuer>#<profile>`) and by their thumbprint, which the
// session keeps as `dpop_jkt`. Also the servers' latest DPoP nonces, so the next process starts with one.
import { join } from 'node:path';
import type { JWK } from 'jose';
import { configDir, readTextIfPresent } from '../config.js';
import { AuthcliError } from '../errors.js';
import { underFileLock, writePrivateFile } from './file.js';
import { deleteKeychainDpopKeys, keychainMayAnswer, readKeychainDpopKey, writeKeychainDpopKey } from './keychain.js';
import { memoryKeys, memoryNonceRecord } from './memory.js';
import { storageChoice, writesKeychain } from './select.js';

/** slot -> thumbprint -> private JWK */
type Keys = Record<string, Record<string, JWK>>;

export function dpopKeysPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(configDir(env), 'dpop-keys.json');
}

async function readKeysFile(env: NodeJS.ProcessEnv): Promise<Keys> {
  const file = dpopKeysPath(env);
  const text = await readTextIfPresent(file);
  if (text === undefined) return {};
  try {
    const parsed = JSON.parse(text) as { version?: unknown; keys?: unknown };
    if (parsed.version !== 1 || typeof parsed.keys !== 'object' || parsed.keys === null) throw new Error('unknown format');
    return parsed.keys as Keys;
  } catch (err) {
    throw new AuthcliError('config', `${file} is damaged (${(err as Error).message}); delete it and sign in again`);
  }
}

async function saveKeysFile(keys: Keys, env: NodeJS.ProcessEnv): Promise<void> {
  for (const [slot, byJkt] of Object.entries(keys)) if (Object.keys(byJkt).length === 0) delete keys[slot];
  const text = Object.keys(keys).length === 0 ? undefined : `${JSON.stringify({ version: 1, keys }, null, 2)}\n`;
  await writePrivateFile(dpopKeysPath(env), text, env);
}

function keychainSituation(env: NodeJS.ProcessEnv) {
  return { choice: storageChoice(env), keychainMayAnswer: keychainMayAnswer(env) };
}

/** Stores a new sign-in's private key: the keychain when the sessions go there, else (or when it fails) the file. */
export async function writeDpopKey(
  slot: string,
  jkt: string,
  jwk: JWK,
  env: NodeJS.ProcessEnv = process.env,
): Promise<'keychain' | 'file' | 'memory'> {
  if (storageChoice(env) === 'memory') {
    memoryKeys.set(slot, jkt, jwk);
    return 'memory';
  }
  if (writesKeychain(keychainSituation(env))) {
    try {
      await writeKeychainDpopKey(slot, jkt, JSON.stringify(jwk));
      return 'keychain';
    } catch (err) {
      if (!(err instanceof AuthcliError)) throw err;
    }
  }
  await underFileLock(dpopKeysPath(env), async () => {
    const keys = await readKeysFile(env);
    keys[slot] = { ...keys[slot], [jkt]: jwk };
    await saveKeysFile(keys, env);
  });
  return 'file';
}

/** The private key with this thumbprint, from the file or the keychain; undefined when this machine does not have it. */
export async function readDpopKey(slot: string, jkt: string, env: NodeJS.ProcessEnv = process.env): Promise<JWK | undefined> {
  if (storageChoice(env) === 'memory') return memoryKeys.get(slot, jkt);
  const inFile = (await readKeysFile(env))[slot]?.[jkt];
  if (inFile) return inFile;
  const s = keychainSituation(env);
  if (s.choice === 'file' || !(s.choice === 'keychain' || s.keychainMayAnswer)) return undefined;
  const text = await readKeychainDpopKey(slot, jkt);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as JWK;
  } catch {
    return undefined;
  }
}

/** Removes the slot's keys (but `keep`, the current sign-in's) from the file and, best effort, the keychain. */
export async function deleteDpopKeys(slot: string, env: NodeJS.ProcessEnv = process.env, keep?: string): Promise<void> {
  if (storageChoice(env) === 'memory') return memoryKeys.delete(slot, keep);
  const others = (keys: Keys) => Object.keys(keys[slot] ?? {}).some((jkt) => jkt !== keep);
  if (others(await readKeysFile(env))) {
    await underFileLock(dpopKeysPath(env), async () => {
      const keys = await readKeysFile(env);
      if (!others(keys)) return;
      keys[slot] = Object.fromEntries(Object.entries(keys[slot]!).filter(([jkt]) => jkt === keep));
      await saveKeysFile(keys, env);
    });
  }
  if (!writesKeychain(keychainSituation(env))) return;
  // A key left in a keychain that cannot be changed now signs nothing: its session is gone.
  await deleteKeychainDpopKeys(slot, keep).catch(() => undefined);
}

function noncesPath(env: NodeJS.ProcessEnv): string {
  return join(configDir(env), 'dpop-nonces.json');
}

/** The servers' latest DPoP nonces (by origin) as the last process left them; none when unreadable. */
export async function readNonces(env: NodeJS.ProcessEnv = process.env): Promise<Record<string, string>> {
  if (storageChoice(env) === 'memory') return { ...memoryNonceRecord };
  try {
    const parsed = JSON.parse((await readTextIfPresent(noncesPath(env))) ?? '{}') as unknown;
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, string>) : {};
  } catch {
    return {};
  }
}

/** Best effort: a nonce that is not kept only costs the next process one retry. */
export async function writeNonces(nonces: Record<string, string>, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (storageChoice(env) === 'memory') {
    Object.assign(memoryNonceRecord, nonces);
    return;
  }
  await writePrivateFile(noncesPath(env), `${JSON.stringify(nonces)}\n`, env).catch(() => undefined);
}

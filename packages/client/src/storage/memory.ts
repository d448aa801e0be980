// `storage: 'memory'` (@authcli/client): sign-ins, DPoP keys and nonces kept in this process only, nothing written
// anywhere: for a tool that must leave no credentials on the machine, and for tests. The locks are this process's
// too (lock.ts): another process cannot see these sign-ins, so there is nothing to share with it.
import type { JWK } from 'jose';
import type { StoredSession } from './session.js';

const sessions = new Map<string, StoredSession>();
/** slot -> thumbprint -> private JWK */
const keys = new Map<string, Map<string, JWK>>();
const nonces: Record<string, string> = {};

export const memorySessions = {
  all: (): Record<string, StoredSession> => Object.fromEntries(sessions),
  get: (slot: string): StoredSession | undefined => sessions.get(slot),
  set: (slot: string, session: StoredSession): void => void sessions.set(slot, session),
  delete: (slot: string): boolean => sessions.delete(slot),
};

export const memoryKeys = {
  get: (slot: string, jkt: string): JWK | undefined => keys.get(slot)?.get(jkt),
  set: (slot: string, jkt: string, jwk: JWK): void => {
    const byJkt = keys.get(slot) ?? new Map<string, JWK>();
    byJkt.set(jkt, jwk);
    keys.set(slot, byJkt);
  },
  /** Forgets the slot's keys but `keep`. */
  delete: (slot: string, keep?: string): void => {
    const byJkt = keys.get(slot);
    if (!byJkt) return;
    for (const jkt of [...byJkt.keys()]) if (jkt !== keep) byJkt.delete(jkt);
    if (byJkt.size === 0) keys.delete(slot);
  },
};

export const memoryNonceRecord = nonces;

/** Runs `fn` after every earlier holder of `key` in this process (a promise chain per key), then lets the next in. */
const chains = new Map<string, Promise<unknown>>();
export async function inProcessLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const before = chains.get(key) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((resolve) => {
    release = resolve;
  });
  const tail = before.then(() => mine);
  chains.set(key, tail);
  await before.catch(() => undefined);
  try {
    return await fn();
  } finally {
    release();
    if (chains.get(key) === tail) chains.delete(key);
  }
}

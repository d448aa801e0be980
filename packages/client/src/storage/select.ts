// Which backend keeps credentials: pure decisions, so the rules can be tested without a keychain.
import { AuthcliError } from '../errors.js';

/**
 * What the user asked for: `--storage` / `AUTHCLI_STORAGE`, or nothing (auto). `memory` is the library's
 * (@authcli/client `storage: 'memory'`): this process only, nothing written (storage/memory.ts).
 */
export type StorageChoice = 'file' | 'keychain' | 'memory' | 'auto';

export const STORAGE_CHOICES = ['file', 'keychain', 'memory'] as const;

/**
 * `AUTHCLI_STORAGE` (cli.ts copies `--storage` into it, so the flag wins): `file`, `keychain`, or unset for
 * auto. Anything else is an error rather than a silent default, since it decides where secrets go.
 */
export function storageChoice(env: NodeJS.ProcessEnv = process.env): StorageChoice {
  const value = env.AUTHCLI_STORAGE;
  if (value === undefined || value === '') return 'auto';
  if ((STORAGE_CHOICES as readonly string[]).includes(value)) return value as StorageChoice;
  // `memory` is the library's own choice (its `storage` option); the CLI refuses it (cli.ts), so only the two are named.
  throw new AuthcliError('config', `AUTHCLI_STORAGE must be file or keychain, not ${JSON.stringify(value)}`);
}

export interface Situation {
  choice: StorageChoice;
  /** A keychain may answer on this machine (keychain.ts `keychainMayAnswer`, decided without loading it). */
  keychainMayAnswer: boolean;
  /** The last write fell back to the file and the user was told (the marker file exists). */
  fallbackAnnounced: boolean;
}

/**
 * Whether a read must ask the keychain, given that the file holds (or lacks) the issuer's session.
 * Asking costs loading the native module and a round trip to the keychain, which `authcli token` cannot
 * afford on every call, so it is skipped where the answer is known: the user chose the file; nothing can
 * answer; or the file's copy is the one the last write put there (announced fallback). With `keychain`
 * chosen the keychain is always asked, and the file too, since a failed keychain write puts the session there.
 */
export function readsKeychain(s: Situation, fileHasSession: boolean): boolean {
  if (s.choice === 'file' || s.choice === 'memory') return false;
  if (s.choice === 'keychain') return true;
  if (!s.keychainMayAnswer) return false;
  return !(fileHasSession && s.fallbackAnnounced);
}

/** Whether a write tries the keychain first; when it fails (or is not tried) the file takes the session. */
export function writesKeychain(s: Pick<Situation, 'choice' | 'keychainMayAnswer'>): boolean {
  if (s.choice === 'file' || s.choice === 'memory') return false;
  return s.choice === 'keychain' || s.keychainMayAnswer;
}

/**
 * Whether falling back to the file is said now. Auto: once, until a keychain write succeeds again (the
 * marker file remembers it), so `authcli token` in a script does not repeat it. A chosen keychain that
 * fails is said every time: the user asked for it. A chosen file is never announced.
 */
export function announcesFallback(s: Pick<Situation, 'choice' | 'fallbackAnnounced'>): boolean {
  if (s.choice === 'file' || s.choice === 'memory') return false;
  if (s.choice === 'keychain') return true;
  return !s.fallbackAnnounced;
}

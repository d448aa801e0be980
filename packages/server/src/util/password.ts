import { randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import {
  type Options as Argon2Options,
  hash as argon2,
  hashSync as argon2Sync,
  parseOptions,
  verifySync as argon2VerifySync,
} from '@node-rs/argon2';
import { PASSWORD_HASH, type PasswordHashParams } from '../config/defaults.js';

/**
 * User password hashes: Argon2id (RFC 9106) with a per-user 16-byte salt, stored in the PHC string format
 * (`$argon2id$v=19$m=65536,t=3,p=1$salt$key`) that Keycloak, Django and libsodium read too, so a hash made
 * under older parameters still verifies and is upgraded on the next successful sign-in ({@link needsRehash}).
 * Hashes written before Argon2id (`scrypt$N$r$p$salt$key`, RFC 7914) still verify and are replaced by an
 * Argon2id hash at the next sign-in. The synchronous forms run on the password-hashing threads
 * (password-pool.ts), never on the event loop.
 */
export type { PasswordHashParams } from '../config/defaults.js';

/** Argon2id in @node-rs/argon2's numbering (its `Algorithm` is a const enum, which isolated modules cannot import). */
const ARGON2ID = 2;
/** Argon2 version 0x13 in @node-rs/argon2's numbering. */
const V0x13 = 1;

/**
 * The most a stored hash may ask of a sign-in: twice the memory the highest cost writes (AUTHCLI_PASSWORD_HASH_COST
 * 18, 256 MiB), a few more passes and lanes than any recommendation: a corrupted or planted row must not make a
 * sign-in allocate gigabytes or spin for seconds.
 */
const MOST = { memoryKiB: 2 ** 19, passes: 10, lanes: 8 } as const;

const argon2Options = (params: PasswordHashParams, salt?: Buffer): Argon2Options => ({
  algorithm: ARGON2ID,
  version: V0x13,
  memoryCost: params.memoryKiB,
  timeCost: params.passes,
  parallelism: params.lanes,
  outputLen: 32,
  ...(salt ? { salt } : {}),
});

/** The parameters of a stored Argon2id hash, or undefined when it is not one this server would read. */
function argon2Params(stored: string): PasswordHashParams | undefined {
  if (!stored.startsWith('$argon2id$')) return undefined;
  try {
    const o = parseOptions(stored);
    if (o.version !== V0x13 || o.outputLen < 16 || o.outputLen > 64 || o.saltLen < 8) return undefined;
    if (o.memoryCost > MOST.memoryKiB || o.timeCost > MOST.passes || o.parallelism > MOST.lanes) return undefined;
    return { memoryKiB: o.memoryCost, passes: o.timeCost, lanes: o.parallelism };
  } catch {
    return undefined;
  }
}

// ---- scrypt: the hashes written before Argon2id --------------------------------------

interface ScryptHash {
  params: { N: number; r: number; p: number; keylen: number };
  salt: Buffer;
  key: Buffer;
}

/** scrypt needs 128·N·r bytes; allow twice that so Node never refuses a valid cost. */
const maxmem = (params: ScryptHash['params']) => 256 * params.N * params.r;

const isPowerOfTwo = (n: number) => Number.isInteger(n) && n > 1 && (n & (n - 1)) === 0;

/** Reads a stored scrypt hash; undefined when it is malformed or names more than 256 MiB. */
function parseScrypt(stored: string): ScryptHash | undefined {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return undefined;
  const [, n, r, p, salt, key] = parts as [string, string, string, string, string, string];
  const params = { N: Number(n), r: Number(r), p: Number(p), keylen: 0 };
  if (!isPowerOfTwo(params.N) || params.N < 1 << 10 || params.N > 1 << 20) return undefined;
  if (!Number.isInteger(params.r) || params.r < 1 || params.r > 32) return undefined;
  if (!Number.isInteger(params.p) || params.p < 1 || params.p > 4) return undefined;
  if (128 * params.N * params.r > 256 * 1024 * 1024) return undefined;
  const keyBytes = Buffer.from(key, 'base64url');
  if (keyBytes.length < 16 || keyBytes.length > 64) return undefined;
  return { params: { ...params, keylen: keyBytes.length }, salt: Buffer.from(salt, 'base64url'), key: keyBytes };
}

// ---- the interface ---------------------------------------------------------------

/** Passwords are compared as NFC, so the same password typed on two keyboards matches. */
const normalized = (password: string) => password.normalize('NFC');

/** True when `stored` is a hash this server can check (Argon2id or an earlier scrypt one within the bounds). */
export function isPasswordHash(stored: string): boolean {
  return argon2Params(stored) !== undefined || parseScrypt(stored) !== undefined;
}

/** Hashes a password with the given parameters (blocks for the whole hash: worker threads only). */
export function hashPasswordSync(password: string, params: PasswordHashParams = PASSWORD_HASH): string {
  return argon2Sync(normalized(password), argon2Options(params, randomBytes(16)));
}

/** Checks a password against a stored hash in constant time; false on any malformed hash (worker threads only). */
export function verifyPasswordSync(password: string, stored: string): boolean {
  if (argon2Params(stored)) {
    try {
      return argon2VerifySync(stored, normalized(password));
    } catch {
      return false;
    }
  }
  const parsed = parseScrypt(stored);
  if (!parsed) return false;
  const { params, salt, key } = parsed;
  return timingSafeEqual(scryptSync(normalized(password), salt, params.keylen, { ...params, maxmem: maxmem(params) }), key);
}

/** Hashes on libuv's pool: for one-shot commands (`users add`), where no sign-in waits behind it. */
export function hashPassword(password: string, params: PasswordHashParams = PASSWORD_HASH): Promise<string> {
  return argon2(normalized(password), argon2Options(params, randomBytes(16)));
}

/**
 * True when a stored hash should be replaced after a successful sign-in: every scrypt hash (the format before
 * Argon2id), and an Argon2id one made with less memory × passes than `params`. A hash made at a higher cost is
 * kept: lowering AUTHCLI_PASSWORD_HASH_COST never weakens a stored hash.
 */
export function needsRehash(stored: string, params: PasswordHashParams = PASSWORD_HASH): boolean {
  const made = argon2Params(stored);
  if (!made) return parseScrypt(stored) !== undefined;
  return made.memoryKiB * made.passes < params.memoryKiB * params.passes;
}

/** A hash nobody can match, at the cost of `params`: unknown usernames take as long as known ones. */
export function dummyPasswordHash(params: PasswordHashParams = PASSWORD_HASH): string {
  const zeros = (n: number) => Buffer.alloc(n).toString('base64').replace(/=+$/, '');
  return `$argon2id$v=19$m=${params.memoryKiB},t=${params.passes},p=${params.lanes}$${zeros(16)}$${zeros(32)}`;
}

/** The dummy hash at the default cost. */
export const DUMMY_PASSWORD_HASH = dummyPasswordHash();

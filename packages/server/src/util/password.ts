import { randomBytes, scrypt, scryptSync, timingSafeEqual } from 'node:crypto';
import { SCRYPT } from '../config/defaults.js';

/**
 * User password hashes: scrypt (RFC 7914) with a per-user 16-byte salt,
 * stored as `scrypt$N$r$p$salt$key` (salt and key base64url), so a hash made
 * under older parameters still verifies and can be upgraded on the next
 * successful sign-in ({@link needsRehash}). The synchronous forms run on the
 * password-hashing threads (password-pool.ts), never on the event loop.
 */
export interface ScryptParams {
  readonly N: number;
  readonly r: number;
  readonly p: number;
  readonly keylen: number;
}

interface ParsedHash {
  params: ScryptParams;
  salt: Buffer;
  key: Buffer;
}

/** scrypt needs 128·N·r bytes; allow twice that so Node never refuses a valid cost. */
const maxmem = (params: ScryptParams) => 256 * params.N * params.r;

const isPowerOfTwo = (n: number) => Number.isInteger(n) && n > 1 && (n & (n - 1)) === 0;

/**
 * Reads a stored hash; undefined when it is malformed or names a cost outside
 * what this server would ever write (a corrupted or planted row must not make
 * a sign-in allocate gigabytes).
 */
export function parsePasswordHash(stored: string): ParsedHash | undefined {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return undefined;
  const [, n, r, p, salt, key] = parts as [string, string, string, string, string, string];
  const params = { N: Number(n), r: Number(r), p: Number(p), keylen: 0 };
  if (!isPowerOfTwo(params.N) || params.N < 1 << 10 || params.N > 1 << 20) return undefined;
  if (!Number.isInteger(params.r) || params.r < 1 || params.r > 32) return undefined;
  if (!Number.isInteger(params.p) || params.p < 1 || params.p > 4) return undefined;
  // At most 256 MiB of memory per hash (twice the current cost), whatever N and r say.
  if (128 * params.N * params.r > 256 * 1024 * 1024) return undefined;
  const keyBytes = Buffer.from(key, 'base64url');
  if (keyBytes.length < 16 || keyBytes.length > 64) return undefined;
  return { params: { ...params, keylen: keyBytes.length }, salt: Buffer.from(salt, 'base64url'), key: keyBytes };
}

function encode(params: ScryptParams, salt: Buffer, key: Buffer): string {
  return `scrypt$${params.N}$${params.r}$${params.p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** Passwords are compared as NFC, so the same password typed on two keyboards matches. */
const normalized = (password: string) => password.normalize('NFC');

/** Hashes a password with the given parameters (blocks for the whole hash: worker threads only). */
export function hashPasswordSync(password: string, params: ScryptParams = SCRYPT): string {
  const salt = randomBytes(16);
  return encode(params, salt, scryptSync(normalized(password), salt, params.keylen, { ...params, maxmem: maxmem(params) }));
}

/** Checks a password against a stored hash in constant time; false on any malformed hash (worker threads only). */
export function verifyPasswordSync(password: string, stored: string): boolean {
  const parsed = parsePasswordHash(stored);
  if (!parsed) return false;
  const { params, salt, key } = parsed;
  return timingSafeEqual(scryptSync(normalized(password), salt, params.keylen, { ...params, maxmem: maxmem(params) }), key);
}

/** Hashes on libuv's pool: for one-shot commands (`users add`), where no sign-in waits behind it. */
export async function hashPassword(password: string, params: ScryptParams = SCRYPT): Promise<string> {
  const salt = randomBytes(16);
  const key = await new Promise<Buffer>((resolve, reject) =>
    scrypt(normalized(password), salt, params.keylen, { ...params, maxmem: maxmem(params) }, (err, k) => (err ? reject(err) : resolve(k))),
  );
  return encode(params, salt, key);
}

/**
 * True when a hash was made at a lower cost than `params` (upgrade it after a successful sign-in). A hash
 * made at a higher cost is kept: lowering AUTHCLI_PASSWORD_HASH_COST never weakens a stored hash.
 */
export function needsRehash(stored: string, params: ScryptParams = SCRYPT): boolean {
  const parsed = parsePasswordHash(stored);
  if (!parsed) return false;
  const { N, r, p, keylen } = parsed.params;
  return N * r * p < params.N * params.r * params.p || keylen < params.keylen;
}

/** A hash nobody can match, at the cost of `params`: unknown usernames take as long as known ones. */
export function dummyPasswordHash(params: ScryptParams = SCRYPT): string {
  return encode(params, Buffer.alloc(16), Buffer.alloc(params.keylen));
}

/** The dummy hash at the default cost. */
export const DUMMY_PASSWORD_HASH = dummyPasswordHash();

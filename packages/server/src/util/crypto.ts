import { hash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

// CSPRNG output is drawn 4 KiB at a time and handed out in slices, each used once: a token request needs
// several small random values, and one draw per value costs more than the values themselves.
let pool = Buffer.alloc(0);
let offset = 0;

/** `n` bytes from the CSPRNG, never handed out twice. */
function randomSlice(n: number): Buffer {
  if (n > 256) return randomBytes(n);
  if (offset + n > pool.length) {
    pool = randomBytes(4096);
    offset = 0;
  }
  offset += n;
  return pool.subarray(offset - n, offset);
}

/** 256 bits from the CSPRNG, base64url: codes, device codes, secrets, session ids. */
export function randomToken(bytes = 32): string {
  return randomSlice(bytes).toString('base64url');
}

/**
 * An identifier that sorts by creation time: 12 hex digits of epoch
 * milliseconds, then 96 random bits (base64url). Rows keyed by it land at the
 * end of their indexes instead of on a random page, so the rows written
 * together share pages (grant ids: the grants key and the refresh-token
 * family index). For internal ids only, never for secrets.
 */
export function timeOrderedId(now: number): string {
  return Math.max(0, Math.floor(now)).toString(16).padStart(12, '0') + randomSlice(12).toString('base64url');
}

/** SHA-256 hex: how high-entropy secrets (codes, client secrets, session ids) are stored. */
export function sha256Hex(value: string): string {
  return hash('sha256', value, 'hex');
}

/** Compares two SHA-256 hex digests in constant time. */
export function hashesEqual(a: string, b: string): boolean {
  const ba = Buffer.from(a, 'hex');
  const bb = Buffer.from(b, 'hex');
  return ba.length === bb.length && ba.length > 0 && timingSafeEqual(ba, bb);
}

// scrypt parameters for user passwords (low-entropy, so a memory-hard KDF).
const N = 1 << 15;
const r = 8;
const p = 1;
const KEYLEN = 32;
const MAXMEM = 64 * 1024 * 1024;

function scryptAsync(password: string, salt: Buffer, n: number, rr: number, pp: number, keylen: number): Promise<Buffer> {
  return new Promise((resolveKey, reject) =>
    scrypt(password.normalize('NFC'), salt, keylen, { N: n, r: rr, p: pp, maxmem: MAXMEM }, (err, key) =>
      err ? reject(err) : resolveKey(key),
    ),
  );
}

/** Hashes a user password with scrypt and a per-user 16-byte salt: `scrypt$N$r$p$salt$hash`. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, N, r, p, KEYLEN);
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** Checks a password against {@link hashPassword}'s output in constant time; false on any malformed hash. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, rr, pp, salt, hash] = parts as [string, string, string, string, string, string];
  const expected = Buffer.from(hash, 'base64url');
  const key = await scryptAsync(password, Buffer.from(salt, 'base64url'), Number(n), Number(rr), Number(pp), expected.length);
  return timingSafeEqual(key, expected);
}

/** A password hash nobody can match, for constant-time sign-in on unknown usernames. */
export const DUMMY_PASSWORD_HASH = `scrypt$${N}$${r}$${p}$${Buffer.alloc(16).toString('base64url')}$${Buffer.alloc(KEYLEN).toString('base64url')}`;

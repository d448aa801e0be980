import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

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

/** `bytes` random bytes as hex: short identifiers an operator types (never secrets). */
export function randomHex(bytes: number): string {
  return randomSlice(bytes).toString('hex');
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

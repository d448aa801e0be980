import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { ConfigError } from '../config/config.js';

/**
 * Private signing keys at rest. A database dump, a backup or a copy of the
 * SQLite file must not be enough to sign tokens, so with a key-encryption key
 * (KEK, `AUTHCLI_KEY_ENCRYPTION_KEY`) every private JWK is stored encrypted
 * with AES-256-GCM in `signing_keys.private_jwk`, as this versioned envelope:
 *
 * `{"v":1,"enc":"A256GCM","iv":"…","ct":"…","tag":"…"}` (base64url fields)
 *
 * - `iv`: 96 random bits, drawn anew for every encryption (a few keys per
 *   rotation: random IVs never come near GCM's collision bound);
 * - additional authenticated data: the row's `kid` (the RFC 7638 thumbprint
 *   of the public key), so a ciphertext moved to another row does not decrypt;
 * - `tag`: the full 128-bit GCM tag.
 *
 * A plaintext row is the private JWK itself (it has `kty`, never `v`), which
 * is how stores written without a KEK, or before this format, look.
 */

/** Text that says the keys are stored unencrypted, and how to change that; shown once at start and on rotation. */
export const UNENCRYPTED_KEYS_WARNING =
  'signing keys are stored unencrypted: set AUTHCLI_KEY_ENCRYPTION_KEY (32 random bytes, e.g. `openssl rand -base64 32`) or AUTHCLI_KEY_ENCRYPTION_KEY_FILE to encrypt them';

/** Refusal when encrypted keys meet a server without a KEK. */
export const MISSING_KEK_MESSAGE =
  'signing keys are encrypted: set AUTHCLI_KEY_ENCRYPTION_KEY (or AUTHCLI_KEY_ENCRYPTION_KEY_FILE) to the key they were encrypted with';

const VERSION = 1;
const ENC = 'A256GCM';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEK_BYTES = 32;

interface EnvelopeV1 {
  v: 1;
  enc: typeof ENC;
  iv: string;
  ct: string;
  tag: string;
}

function checkKek(kek: Buffer): void {
  // The config already refuses other lengths; this guards callers that build a KEK themselves.
  if (kek.length !== KEK_BYTES) throw new RangeError(`the key-encryption key must be ${KEK_BYTES} bytes, got ${kek.length}`);
}

/** The parsed stored value: an envelope (any version), or anything else (a plaintext JWK). */
function envelopeOf(stored: string): Record<string, unknown> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(stored);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const obj = value as Record<string, unknown>;
  return 'v' in obj && !('kty' in obj) ? obj : undefined;
}

/** Whether a stored `private_jwk` is an encrypted envelope rather than a plaintext JWK. */
export function isEncryptedPrivateJwk(stored: string): boolean {
  return envelopeOf(stored) !== undefined;
}

/**
 * Encrypts a private JWK (its JSON text) for the row `kid` under `kek`.
 * Every call draws a fresh IV, so the same key encrypts differently each time.
 */
export function encryptPrivateJwk(privateJwk: string, kid: string, kek: Buffer): string {
  checkKek(kek);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', kek, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(kid, 'utf8'));
  const ct = Buffer.concat([cipher.update(privateJwk, 'utf8'), cipher.final()]);
  const envelope: EnvelopeV1 = {
    v: VERSION,
    enc: ENC,
    iv: iv.toString('base64url'),
    ct: ct.toString('base64url'),
    tag: cipher.getAuthTag().toString('base64url'),
  };
  return JSON.stringify(envelope);
}

/**
 * Decrypts what {@link encryptPrivateJwk} stored for the row `kid`. A wrong
 * KEK, a ciphertext from another row, or any altered byte fails GCM's
 * authentication and throws a one-line `ConfigError` (GCM cannot tell these
 * apart, and nothing of the plaintext is released before the tag checks).
 */
export function decryptPrivateJwk(stored: string, kid: string, kek: Buffer): string {
  checkKek(kek);
  const envelope = envelopeOf(stored);
  if (!envelope) throw new ConfigError(`signing key ${kid} is not encrypted`);
  if (envelope.v !== VERSION || envelope.enc !== ENC) {
    throw new ConfigError(
      `signing key ${kid} is encrypted in an unknown format (v ${JSON.stringify(envelope.v)}): was it written by a newer authcli-server?`,
    );
  }
  const { iv, ct, tag } = envelope;
  const undecryptable = new ConfigError(
    `the key-encryption key does not decrypt the signing keys (kid ${kid}): set the AUTHCLI_KEY_ENCRYPTION_KEY they were encrypted with`,
  );
  if (typeof iv !== 'string' || typeof ct !== 'string' || typeof tag !== 'string') throw undecryptable;
  const ivBytes = Buffer.from(iv, 'base64url');
  const tagBytes = Buffer.from(tag, 'base64url');
  // A shortened tag would weaken the authentication: only the full 128 bits are accepted.
  if (ivBytes.length !== IV_BYTES || tagBytes.length !== TAG_BYTES) throw undecryptable;
  try {
    const decipher = createDecipheriv('aes-256-gcm', kek, ivBytes, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(kid, 'utf8'));
    decipher.setAuthTag(tagBytes);
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    throw undecryptable;
  }
}

import { createPrivateKey, generateKeyPair, sign, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { calculateJwkThumbprint, createLocalJWKSet, type JWK } from 'jose';
import { ConfigError, type ServerConfig } from '../config/config.js';
import { KEY_ACTIVATION_DELAY_MS, KEY_REFRESH_MS } from '../config/defaults.js';
import type { Store, SigningKeyRow } from '../store/store.js';
import { decryptPrivateJwk, encryptPrivateJwk, isEncryptedPrivateJwk, MISSING_KEK_MESSAGE } from './key-encryption.js';

export type SigningAlg = 'RS256' | 'ES256';
export const SIGNING_ALGS: readonly SigningAlg[] = ['RS256', 'ES256'];

const generateKeyPairAsync = promisify(generateKeyPair);

interface LoadedKey {
  kid: string;
  alg: SigningAlg;
  createdAt: number;
  retiredAt: number | null;
  /** Undefined: a key another process added that this one cannot decrypt (see {@link KeyRing.load}). */
  privateKey: KeyObject | undefined;
  publicJwk: JWK;
}

/**
 * Generates a fresh signing key row: RSA 2048 for RS256, P-256 for ES256;
 * kid is the RFC 7638 thumbprint. With a key-encryption key the row holds
 * the private JWK encrypted (see key-encryption.ts), and its plaintext never
 * leaves this function.
 */
export async function generateSigningKey(alg: SigningAlg, now: number, kek?: Buffer): Promise<SigningKeyRow> {
  const { privateKey, publicKey } =
    alg === 'RS256'
      ? await generateKeyPairAsync('rsa', { modulusLength: 2048 })
      : await generateKeyPairAsync('ec', { namedCurve: 'P-256' });
  const publicJwk = publicKey.export({ format: 'jwk' }) as JWK;
  const kid = await calculateJwkThumbprint(publicJwk);
  const privateJwk = JSON.stringify(privateKey.export({ format: 'jwk' }));
  return {
    kid,
    alg,
    private_jwk: kek ? encryptPrivateJwk(privateJwk, kid, kek) : privateJwk,
    public_jwk: JSON.stringify({ ...publicJwk, kid, alg, use: 'sig' }),
    created_at: now,
    retired_at: null,
  };
}

/** The private key of a stored row: decrypted under `kek` if encrypted; a `ConfigError` if it cannot be. */
function openPrivateKey(row: SigningKeyRow, kek: Buffer | undefined): KeyObject {
  let text = row.private_jwk;
  if (isEncryptedPrivateJwk(text)) {
    if (!kek) throw new ConfigError(MISSING_KEK_MESSAGE);
    text = decryptPrivateJwk(text, row.kid, kek);
  }
  try {
    return createPrivateKey({ key: JSON.parse(text) as JWK & { kty: string }, format: 'jwk' });
  } catch {
    // Not the parser's message: it quotes the text it failed on, which here is private key material.
    throw new ConfigError(`signing key ${row.kid} is not a valid private JWK`);
  }
}

/**
 * Brings the stored keys in line with the key-encryption setting before
 * anything signs or rotates, so a store never mixes the two states by
 * accident. With a KEK: plaintext rows (an older store, or one run without a
 * KEK) are encrypted in place, retired keys included (their private parts are
 * still on disk), and every encrypted row must decrypt under it, or this
 * refuses with a `ConfigError`. Without a KEK: any encrypted row refuses.
 * Instances starting together on one store may race; the replacement is
 * conditional on the row being unchanged, so one ciphertext wins and the
 * others re-check it.
 */
export async function secureStoredKeys(store: Store, kek: Buffer | undefined): Promise<void> {
  for (const row of await store.keys.listAll()) {
    if (isEncryptedPrivateJwk(row.private_jwk)) {
      if (!kek) throw new ConfigError(MISSING_KEK_MESSAGE);
      decryptPrivateJwk(row.private_jwk, row.kid, kek);
    } else if (kek) {
      // Opened first: only a row that really holds a private key gets encrypted (anything else refuses here).
      openPrivateKey(row, undefined);
      const sealed = encryptPrivateJwk(row.private_jwk, row.kid, kek);
      if (!(await store.keys.replacePrivate(row.kid, row.private_jwk, sealed))) {
        const current = (await store.keys.listAll()).find((r) => r.kid === row.kid);
        if (current) openPrivateKey(current, kek);
      }
    }
  }
}

/**
 * `keys rotate`: new RS256 and ES256 keys, encrypted under `kek` when there
 * is one; the previous keys are retired (still published until their tokens
 * expire). The stored keys are checked against `kek` first, so a rotation
 * with a missing or wrong KEK changes nothing.
 */
export async function rotateKeys(
  store: Store,
  now: number,
  kek: Buffer | undefined,
  record?: (fresh: SigningKeyRow[]) => Promise<unknown>,
): Promise<SigningKeyRow[]> {
  await secureStoredKeys(store, kek);
  // Made before the transaction opens: generating keys holds no lock. `record` writes its audit row in the same
  // transaction as the rotation.
  const fresh = await Promise.all(SIGNING_ALGS.map((alg) => generateSigningKey(alg, now, kek)));
  await store.changes(async () => {
    await store.keys.rotate(fresh, now);
    await record?.(fresh);
  });
  return fresh;
}

const b64 = (s: string) => Buffer.from(s).toString('base64url');

/**
 * The signing keys, shared by every instance through the store. Signing goes
 * straight through node:crypto's one-shot `sign()` (RS256 on the libuv thread pool):
 * it is the hot path of the token endpoint, and jose 6 signs only through
 * WebCrypto, which costs noticeably more per RS256 signature. Verification
 * everywhere else uses jose.
 */
export class KeyRing {
  private keys: LoadedKey[] = [];
  private verifier: ReturnType<typeof createLocalJWKSet> = createLocalJWKSet({ keys: [] });
  private loadedAt = -Infinity;
  private loading: Promise<void> | undefined;

  constructor(
    private readonly store: Store,
    private readonly now: () => number,
    /** Retired keys stay published this long: the longest token lifetime. */
    private readonly publishRetiredMs: number,
    /** The key-encryption key (`config.keyEncryptionKey`); undefined: keys are stored unencrypted. */
    private readonly kek?: Buffer,
    /** Longer, when an application's own access tokens live longer (ms; read at each load). */
    private readonly longerForApplications?: () => Promise<number>,
  ) {}

  /**
   * Checks (and, with a KEK, encrypts) the stored keys (see
   * {@link secureStoredKeys}), creates the RS256 and ES256 keys on an empty
   * store, then loads. Throws a `ConfigError` when the keys cannot be opened.
   */
  async init(): Promise<void> {
    await secureStoredKeys(this.store, this.kek);
    await this.load(true);
    for (const alg of SIGNING_ALGS) {
      if (!this.keys.some((k) => k.alg === alg && k.retiredAt === null)) {
        await this.store.keys.insert(await generateSigningKey(alg, this.now() - KEY_ACTIVATION_DELAY_MS, this.kek));
      }
    }
    await this.load(true);
  }

  /**
   * Re-reads keys from the store (after a rotation by another process).
   * Private keys already open are kept by kid (a kid is its public key's
   * thumbprint, so its row never changes), which spares a decryption per key
   * and refresh, and keeps a running instance signing through a rolling
   * restart that encrypts the rows under it. A new key this instance cannot
   * open (it runs without the KEK, or with another) is published but never
   * signs here: `strict` (at start) refuses instead.
   */
  async load(strict = false): Promise<void> {
    const now = this.now();
    const published = Math.max(this.publishRetiredMs, (await this.longerForApplications?.()) ?? 0);
    const rows = await this.store.keys.list(now - published - KEY_ACTIVATION_DELAY_MS);
    const opened = new Map(this.keys.map((k) => [k.kid, k.privateKey]));
    const privateKeyOf = (r: SigningKeyRow): KeyObject | undefined => {
      const known = opened.get(r.kid);
      if (known) return known;
      try {
        return openPrivateKey(r, this.kek);
      } catch (err) {
        if (strict || !(err instanceof ConfigError)) throw err;
        return undefined;
      }
    };
    this.keys = rows.map((r) => ({
      kid: r.kid,
      alg: r.alg,
      createdAt: r.created_at,
      retiredAt: r.retired_at,
      privateKey: privateKeyOf(r),
      publicJwk: JSON.parse(r.public_jwk) as JWK,
    }));
    this.verifier = createLocalJWKSet({ keys: this.keys.map((k) => k.publicJwk) });
    this.loadedAt = now;
  }

  private async fresh(): Promise<void> {
    if (this.now() - this.loadedAt < KEY_REFRESH_MS) return;
    this.loading ??= this.load().finally(() => (this.loading = undefined));
    await this.loading;
  }

  /**
   * The key to sign with: the newest key of `alg` that every instance has had
   * time to publish; a just-rotated key takes over after the activation delay.
   */
  private signingKey(alg: SigningAlg): LoadedKey & { privateKey: KeyObject } {
    const now = this.now();
    const candidates = this.keys.filter((k): k is LoadedKey & { privateKey: KeyObject } => k.alg === alg && k.privateKey !== undefined);
    const ready = candidates.find((k) => k.createdAt <= now - KEY_ACTIVATION_DELAY_MS);
    const key = ready ?? candidates[0];
    if (!key) throw new Error(`no ${alg} signing key in the store that this instance can open`);
    return key;
  }

  /** The public keys to publish (RFC 7517 JWK Set): active keys and retired keys whose tokens may still be live. */
  async jwks(): Promise<{ keys: JWK[] }> {
    await this.fresh();
    return { keys: this.keys.map((k) => k.publicJwk) };
  }

  /** A jose key resolver over the published keys, for verifying our own tokens. */
  async verificationKeys(): Promise<ReturnType<typeof createLocalJWKSet>> {
    await this.fresh();
    return this.verifier;
  }

  /** Signs a JWT (RFC 7515 compact serialization) with the current key of `alg`. */
  async signJwt(alg: SigningAlg, typ: string, payload: object): Promise<string> {
    await this.fresh();
    const key = this.signingKey(alg);
    const input = `${b64(JSON.stringify({ alg, typ, kid: key.kid }))}.${b64(JSON.stringify(payload))}`;
    return `${input}.${await jwsSignature(alg, key.privateKey, input)}`;
  }
}

/**
 * The JWS Signature of a JWS Signing Input, base64url-encoded (RFC 7515 §5.1
 * steps 5 and 6): RSASSA-PKCS1-v1_5 with SHA-256 for RS256 (RFC 7518 §3.3),
 * ECDSA P-256 with SHA-256 for ES256 as R || S, 64 bytes, not DER (§3.4).
 */
export async function jwsSignature(alg: SigningAlg, privateKey: KeyObject, signingInput: string): Promise<string> {
  const data = Buffer.from(signingInput);
  // ES256 costs ~0.06 ms: cheaper inline than a thread-pool round trip. RS256 (~0.3-0.9 ms) goes to the pool.
  const signature =
    alg === 'ES256'
      ? sign('sha256', data, { key: privateKey, dsaEncoding: 'ieee-p1363' })
      : await new Promise<Buffer>((resolve, reject) => sign('sha256', data, privateKey, (err, sig) => (err ? reject(err) : resolve(sig))));
  return signature.toString('base64url');
}

/**
 * The key ring of a server, or of an operator command that signs as it does: retired keys stay published (and
 * accepted) as long as the longest token lives: the server's lifetimes, or an application's own when one is longer.
 */
export function serverKeyRing(store: Store, config: ServerConfig): KeyRing {
  const longest = Math.max(config.accessTokenTtlSeconds, config.idTokenTtlSeconds);
  return new KeyRing(store, config.now, longest * 1000, config.keyEncryptionKey, async () => {
    return ((await store.applications.longestAccessTokenTtl()) ?? 0) * 1000;
  });
}

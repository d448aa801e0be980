import { createPrivateKey, generateKeyPair, sign, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { calculateJwkThumbprint, createLocalJWKSet, type JWK } from 'jose';
import { KEY_ACTIVATION_DELAY_MS, KEY_REFRESH_MS } from '../config/defaults.js';
import type { Store, SigningKeyRow } from '../store/store.js';

export type SigningAlg = 'RS256' | 'ES256';
export const SIGNING_ALGS: readonly SigningAlg[] = ['RS256', 'ES256'];

const generateKeyPairAsync = promisify(generateKeyPair);


interface LoadedKey {
  kid: string;
  alg: SigningAlg;
  createdAt: number;
  retiredAt: number | null;
  privateKey: KeyObject;
  publicJwk: JWK;
}

/** Generates a fresh signing key row: RSA 2048 for RS256, P-256 for ES256; kid is the RFC 7638 thumbprint. */
export async function generateSigningKey(alg: SigningAlg, now: number): Promise<SigningKeyRow> {
  const { privateKey, publicKey } =
    alg === 'RS256'
      ? await generateKeyPairAsync('rsa', { modulusLength: 2048 })
      : await generateKeyPairAsync('ec', { namedCurve: 'P-256' });
  const publicJwk = publicKey.export({ format: 'jwk' }) as JWK;
  const kid = await calculateJwkThumbprint(publicJwk);
  return {
    kid,
    alg,
    private_jwk: JSON.stringify(privateKey.export({ format: 'jwk' })),
    public_jwk: JSON.stringify({ ...publicJwk, kid, alg, use: 'sig' }),
    created_at: now,
    retired_at: null,
  };
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
  ) {}

  /** Creates the RS256 and ES256 keys on an empty store, then loads. */
  async init(): Promise<void> {
    await this.load();
    for (const alg of SIGNING_ALGS) {
      if (!this.keys.some((k) => k.alg === alg && k.retiredAt === null)) {
        await this.store.insertSigningKey(await generateSigningKey(alg, this.now() - KEY_ACTIVATION_DELAY_MS));
      }
    }
    await this.load();
  }

  /** Re-reads keys from the store (after a rotation by another process). */
  async load(): Promise<void> {
    const now = this.now();
    const rows = await this.store.listSigningKeys(now - this.publishRetiredMs - KEY_ACTIVATION_DELAY_MS);
    this.keys = rows.map((r) => ({
      kid: r.kid,
      alg: r.alg,
      createdAt: r.created_at,
      retiredAt: r.retired_at,
      privateKey: createPrivateKey({ key: JSON.parse(r.private_jwk) as JWK & { kty: string }, format: 'jwk' }),
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
  private signingKey(alg: SigningAlg): LoadedKey {
    const now = this.now();
    const candidates = this.keys.filter((k) => k.alg === alg);
    const ready = candidates.find((k) => k.createdAt <= now - KEY_ACTIVATION_DELAY_MS);
    const key = ready ?? candidates[0];
    if (!key) throw new Error(`no ${alg} signing key in the store`);
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
    const data = Buffer.from(input);
    // ES256 costs ~0.06 ms: cheaper inline than a thread-pool round trip. RS256 (~0.3-0.9 ms) goes to the pool.
    const signature =
      alg === 'ES256'
        ? sign('sha256', data, { key: key.privateKey, dsaEncoding: 'ieee-p1363' })
        : await new Promise<Buffer>((resolve, reject) =>
            sign('sha256', data, key.privateKey, (err, sig) => (err ? reject(err) : resolve(sig))),
          );
    return `${input}.${signature.toString('base64url')}`;
  }
}

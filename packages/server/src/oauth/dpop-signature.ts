import { constants, createPublicKey, type JsonWebKey, type KeyObject, type VerifyKeyObjectInput, verify } from 'node:crypto';
import type { JWK } from 'jose';
import { DPOP_KEYS_CACHED } from '../config/defaults.js';

/**
 * The signature of a DPoP proof (RFC 9449 §4.3 (6)): a JWS (RFC 7515 §5.2)
 * verified with the public key of its own `jwk` header by node:crypto, on
 * libuv's thread pool (`crypto.verify` with a callback), off the event loop.
 *
 * Why not jose's `jwtVerify`, as everywhere else: jose 6 verifies through
 * Web Crypto only, whose wrapping (key and algorithm normalization, promise
 * layers on both sides of the pool) costs more than the ECDSA arithmetic: 125
 * µs of CPU per ES256 proof against 90 µs for `crypto.verify` on the same
 * pool (bench/README.md, "DPoP"). Verifying on the event loop would cost 85
 * µs but put a million instructions on the one thread every request needs.
 * jose still decodes the header and the claims (dpop.ts); what is written
 * here is only the choice of node:crypto's parameters for each algorithm and
 * the key checks jose's `EmbeddedJWK` made on import, each with its test in
 * dpop.test.ts.
 */

/** How each proof algorithm is verified (RFC 7518 §3.1, RFC 8037 §3.1, RFC 9864), and the key it takes. */
interface Algorithm {
  /** node:crypto's digest; null for EdDSA, which hashes as part of the signature. */
  digest: 'sha256' | null;
  /** The key's `asymmetricKeyType`. */
  keyType: 'ec' | 'rsa' | 'ed25519';
  /** For ES256: the curve (P-256, OpenSSL's prime256v1) and the fixed signature length, r ‖ s (RFC 7518 §3.4). */
  curve?: string;
  signatureLength?: number;
  /** RSA padding: PKCS #1 v1.5 for RS256, PSS with a salt as long as the hash for PS256 (RFC 7518 §3.5). */
  pss?: boolean;
}

const ALGORITHMS: Record<string, Algorithm> = {
  ES256: { digest: 'sha256', keyType: 'ec', curve: 'prime256v1', signatureLength: 64 },
  RS256: { digest: 'sha256', keyType: 'rsa' },
  PS256: { digest: 'sha256', keyType: 'rsa', pss: true },
  EdDSA: { digest: null, keyType: 'ed25519' },
  Ed25519: { digest: null, keyType: 'ed25519' },
};

/** RFC 7518 §3.3, §3.5: "A key of size 2048 bits or larger MUST be used with these algorithms." */
const RSA_MIN_BITS = 2048;
/**
 * Bounds on what a stranger's RSA key may cost to verify with: a verification's time grows with the
 * exponent's length and the modulus's, and an unauthenticated proof must not hold a pool thread for
 * milliseconds (a 3072-bit exponent: 7 ms against 63 µs for 65537). Real keys use 65537 and 2048–4096 bits.
 */
const RSA_MAX_BITS = 4096;
const RSA_MAX_EXPONENT = 2n ** 32n - 1n;

/** A proof's key that no proof of its algorithm can use: the proof is invalid, whatever its signature. */
export class UnusableProofKey extends Error {}

/**
 * The public keys of recent proofs, imported once and kept by algorithm and
 * RFC 7638 thumbprint: a client signs every proof with the same key, and
 * importing it costs more than verifying with it. A thumbprint covers every
 * member that defines the key, so an entry is only ever the key the header
 * names; a key that cannot be used is kept too, as the reason it cannot. The
 * least recently used entry goes when {@link DPOP_KEYS_CACHED} are kept.
 */
export class DpopKeys {
  private readonly keys = new Map<string, KeyObject | UnusableProofKey>();

  /**
   * Whether `signature` (base64url) is `alg`'s signature of `signingInput`
   * (the proof's first two segments) by `jwk`, whose thumbprint is `jkt`.
   * @throws UnusableProofKey for an algorithm not listed, or a key that is not one of its keys
   */
  verify(alg: string, jkt: string, jwk: JWK, signingInput: string, signature: string): Promise<boolean> {
    const algorithm = Object.hasOwn(ALGORITHMS, alg) ? ALGORITHMS[alg] : undefined;
    if (!algorithm) throw new UnusableProofKey(`the algorithm ${alg} is not one a proof may use`);
    const key = this.key(algorithm, `${alg} ${jkt}`, jwk);
    const sig = Buffer.from(signature, 'base64url');
    // Buffer's decoder skips what is not base64url and a last lone character: only the canonical form is a signature.
    if (sig.toString('base64url') !== signature) return Promise.resolve(false);
    if (algorithm.signatureLength !== undefined && sig.length !== algorithm.signatureLength) return Promise.resolve(false);
    let options: VerifyKeyObjectInput = { key };
    if (algorithm.keyType === 'ec') options = { key, dsaEncoding: 'ieee-p1363' };
    else if (algorithm.pss) options = { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST };
    else if (algorithm.keyType === 'rsa') options = { key, padding: constants.RSA_PKCS1_PADDING };
    return new Promise((resolve) => {
      // OpenSSL refusing the signature's form (e.g. longer than the RSA modulus) is a signature that does not verify.
      try {
        verify(algorithm.digest, Buffer.from(signingInput), options, sig, (err, valid) => resolve(!err && valid));
      } catch {
        resolve(false);
      }
    });
  }

  private key(algorithm: Algorithm, id: string, jwk: JWK): KeyObject {
    let key = this.keys.get(id);
    if (key === undefined) {
      key = importKey(algorithm, jwk);
      if (this.keys.size >= DPOP_KEYS_CACHED) this.keys.delete(this.keys.keys().next().value!);
    } else {
      // Least recently used goes first: a flood of throwaway keys does not push out the keys clients keep using.
      this.keys.delete(id);
    }
    this.keys.set(id, key);
    if (key instanceof UnusableProofKey) throw key;
    return key;
  }
}

/** The public key of `jwk` if `algorithm` can use it; otherwise why not. */
function importKey(algorithm: Algorithm, jwk: JWK): KeyObject | UnusableProofKey {
  let key: KeyObject;
  try {
    // Checks the members' sizes and, for an EC key, that the point is on the curve.
    key = createPublicKey({ key: { ...jwk } as JsonWebKey, format: 'jwk' });
  } catch {
    return new UnusableProofKey('the jwk is not a valid public key');
  }
  if (key.type !== 'public' || key.asymmetricKeyType !== algorithm.keyType) {
    return new UnusableProofKey('the jwk is not a key of the proof algorithm');
  }
  const details = key.asymmetricKeyDetails ?? {};
  if (algorithm.curve !== undefined && details.namedCurve !== algorithm.curve) {
    return new UnusableProofKey('the jwk is not on the curve of the proof algorithm');
  }
  if (algorithm.keyType === 'rsa') {
    const bits = details.modulusLength ?? 0;
    if (bits < RSA_MIN_BITS) return new UnusableProofKey(`the RSA jwk is shorter than ${RSA_MIN_BITS} bits`);
    if (bits > RSA_MAX_BITS) return new UnusableProofKey(`the RSA jwk is longer than ${RSA_MAX_BITS} bits`);
    if ((details.publicExponent ?? 0n) > RSA_MAX_EXPONENT) return new UnusableProofKey('the RSA jwk exponent is too large');
  }
  return key;
}

import { createHmac, hash, timingSafeEqual } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, type JWK } from 'jose';
import type { ServerConfig } from '../config/config.js';
import { DPOP_IAT_WINDOW_SECONDS, DPOP_JTI_MAX, DPOP_NONCE_WINDOW_SECONDS, DPOP_PROOF_MAX } from '../config/defaults.js';
import type { Store } from '../store/store.js';
import { randomToken, sha256Hex } from '../util/crypto.js';
import type { OAuthContext } from './context.js';
import { UnusableProofKey } from './dpop-signature.js';
import { InvalidDpopProof, UseDpopNonce } from './errors.js';

/**
 * DPoP, OAuth 2.0 Demonstrating Proof of Possession (RFC 9449): proof
 * validation (§4.3), server nonces (§8, §9) and the key thumbprint tokens
 * are bound to (§6.1, RFC 7638).
 * https://www.rfc-editor.org/rfc/rfc9449
 */

/**
 * The proof algorithms accepted and advertised (`dpop_signing_alg_values_supported`,
 * RFC 9449 §5.1): asymmetric only (§4.3 (5)), verified by dpop-signature.ts.
 * ES256 first: what authcli and most clients use. Ed25519 keys are named
 * both ways: `EdDSA` (RFC 8037) and the fully specified `Ed25519` (RFC 9864),
 * which oauth4webapi sends.
 */
export const DPOP_SIGNING_ALGS = ['ES256', 'PS256', 'RS256', 'EdDSA', 'Ed25519'] as const;

/**
 * The proof algorithms of a deployment: with `AUTHCLI_FAPI2` on, those of the FAPI 2.0 Security Profile
 * (§5.4.1: PS256, ES256, EdDSA; Ed25519 is EdDSA's fully specified name) alone, RS256 refused, as for client
 * assertions (client-keys.ts `assertionAlgs`).
 */
export function dpopAlgs(fapi2: boolean): readonly string[] {
  return fapi2 ? FAPI2_DPOP_ALGS : DPOP_SIGNING_ALGS;
}
/** Made once: every DPoP-checked request asks. */
const FAPI2_DPOP_ALGS: readonly string[] = DPOP_SIGNING_ALGS.filter((alg) => alg !== 'RS256');

/** The DPoP request header's name (RFC 9449 §4.1) and the nonce response header's (§8). */
export const DPOP_NONCE_HEADER = 'dpop-nonce';

/** JWK members that only a private (or symmetric) key has (RFC 7518 §6.2.2, §6.3.2, §6.4; RFC 8037 §2). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const;

/** RFC 7515 §7.1 compact serialization: three base64url segments, none empty (a proof is signed, §4.3 (5)). */
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** RFC 7638 §3.1: a SHA-256 JWK thumbprint, base64url; the form of `dpop_jkt` (RFC 9449 §10) and `cnf.jkt` (§6.1). */
export const JKT_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** A proof that passed every check of RFC 9449 §4.3. */
export interface DpopProof {
  /** RFC 7638 SHA-256 thumbprint of the proof's public key (base64url): what tokens are bound to (§6.1). */
  jkt: string;
}

/** What a proof is checked against. */
export interface DpopCheck {
  /**
   * The `DPoP` header field's values as received (Node's `headersDistinct`):
   * undefined or empty when there is none, two or more when it was repeated.
   */
  header: readonly string[] | undefined;
  /** The request's method (`htm`, §4.3 (8)). */
  method: string;
  /** The endpoint's path under the issuer, e.g. `/oauth/token` (`htu`, §4.3 (9)). */
  path: string;
  /** At a protected resource: the access token the proof must name in `ath` (§4.3 (10), §7.1). */
  accessToken?: string | undefined;
  /** Whether the proof must carry a server nonce (§8); a nonce a proof carries is always checked. */
  requireNonce: boolean;
  /** Errors for a protected resource (401 with the DPoP challenge, §7.1, §9) instead of the token endpoint's 400 (§5, §8). */
  resource: boolean;
}

/**
 * Server-provided nonces (RFC 9449 §8, §9): the nonce of a time window is an
 * HMAC of the window's number under a secret every instance reads from the
 * store's settings, so any instance issues the same nonce and accepts the
 * nonces of the current and the previous window without storing any.
 */
export class DpopNonces {
  private cached: { window: number; nonce: string; previous: string } | undefined;

  constructor(
    private readonly secret: Buffer,
    private readonly now: () => number,
  ) {}

  /** The instance-wide secret (created by the first instance that needs it), and the nonces it makes. */
  static async open(store: Store, config: ServerConfig): Promise<DpopNonces> {
    const secret = await store.settings.getOrCreate('dpop_nonce_secret', () => randomToken(32));
    return new DpopNonces(Buffer.from(secret), config.now);
  }

  private window(): number {
    return Math.floor(this.now() / (DPOP_NONCE_WINDOW_SECONDS * 1000));
  }

  private nonceOf(window: number): string {
    return createHmac('sha256', this.secret).update(`dpop-nonce ${window}`).digest('base64url');
  }

  /** This window's nonce and the previous one's, computed once per window. */
  private nonces(): { nonce: string; previous: string } {
    const window = this.window();
    if (this.cached?.window !== window) this.cached = { window, nonce: this.nonceOf(window), previous: this.nonceOf(window - 1) };
    return this.cached;
  }

  /** The nonce to hand out now (the `DPoP-Nonce` header). */
  current(): string {
    return this.nonces().nonce;
  }

  /** Whether `nonce` is the current window's or the previous one's. */
  accepts(nonce: string): boolean {
    const given = Buffer.from(nonce);
    const { nonce: current, previous } = this.nonces();
    return [current, previous].some((n) => {
      const expected = Buffer.from(n);
      return expected.length === given.length && timingSafeEqual(expected, given);
    });
  }
}

/**
 * RFC 3986 §6.2.2 and §6.2.3 normalization of an HTTP(S) URI for comparing
 * `htu` (RFC 9449 §4.3 (9)): the WHATWG URL parser lowercases scheme and
 * host, drops the scheme's default port, makes an empty path `/` and removes
 * dot segments; percent-encoded unreserved characters are then decoded and
 * the remaining escapes uppercased. Query and fragment are left out, as
 * §4.3 (9) ignores them. Undefined for anything that is not such a URI.
 */
export function normalizeHtu(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password) return undefined;
  const path = url.pathname.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => {
    const c = String.fromCharCode(Number.parseInt(hex, 16));
    return /[A-Za-z0-9\-._~]/.test(c) ? c : `%${hex.toUpperCase()}`;
  });
  return `${url.protocol}//${url.host}${path}`;
}

/** RFC 7638 §3.2: the members of a public JWK that its thumbprint covers, by key type, in lexicographic order. */
const THUMBPRINT_MEMBERS: Record<string, readonly string[]> = {
  EC: ['crv', 'kty', 'x', 'y'],
  RSA: ['e', 'kty', 'n'],
  OKP: ['crv', 'kty', 'x'],
};

/**
 * RFC 7638 SHA-256 JWK thumbprint, base64url: the same value as jose's
 * `calculateJwkThumbprint` (the tests compare them), computed with
 * node:crypto's synchronous hash, as PKCE's S256 is: jose hashes through Web
 * Crypto, a thread-pool round trip per token request, on the pool that signs
 * the ID tokens. Undefined for a key type a proof cannot have.
 */
export function jwkThumbprint(jwk: JWK): string | undefined {
  const kty = jwk.kty;
  // Own members only: a kty of "constructor" or "__proto__" names no key type.
  if (typeof kty !== 'string' || !Object.hasOwn(THUMBPRINT_MEMBERS, kty)) return undefined;
  const members = THUMBPRINT_MEMBERS[kty]!;
  const required: Record<string, unknown> = {};
  for (const m of members) {
    const v = (jwk as Record<string, unknown>)[m];
    if (typeof v !== 'string') return undefined;
    required[m] = v;
  }
  return hash('sha256', JSON.stringify(required), 'base64url');
}

/** RFC 9449 §4.2 `ath`: base64url of the SHA-256 of the access token's ASCII bytes. */
export function accessTokenHash(token: string): string {
  return hash('sha256', token, 'base64url');
}

/**
 * Checks the DPoP proof of a request, every point of RFC 9449 §4.3:
 * exactly one `DPoP` header (1); a JWS (2) whose `typ` is `dpop+jwt` (4), whose
 * `alg` is an asymmetric one of {@link dpopAlgs} (5) and whose
 * `jwk` is a public key (7); the claims (3); `htm` (8); `htu` against the
 * endpoint's URL under the configured issuer, not the Host header (9: the
 * server runs behind proxies); `ath` (10); `iat` within
 * {@link DPOP_IAT_WINDOW_SECONDS} of now (11); then the signature by the
 * `jwk` (6), the costliest check, once every cheaper one has passed; the
 * server nonce (11, §8); and last the `jti`, recorded in the store, so that
 * a proof is accepted once on any instance (12, §11.1). Undefined when the
 * request has no DPoP header.
 * https://www.rfc-editor.org/rfc/rfc9449#section-4.3
 * @throws InvalidDpopProof, UseDpopNonce
 */
export async function validateDpopProof(ctx: OAuthContext, check: DpopCheck): Promise<DpopProof | undefined> {
  const { header, resource } = check;
  if (header === undefined || header.length === 0) return undefined;
  const algs = dpopAlgs(ctx.config.fapi2);
  const invalid = (description: string) => new InvalidDpopProof(description, resource ? { algs } : undefined);
  if (header.length > 1) throw invalid('send exactly one DPoP header (RFC 9449 §4.3)');
  const proof = header[0]!;
  if (proof.length > DPOP_PROOF_MAX) throw invalid('the DPoP proof is too large');

  if (!COMPACT_JWS.test(proof)) throw invalid('the DPoP proof is not a JWS in compact serialization (RFC 9449 §4.3)');
  let protectedHeader;
  let payload;
  try {
    protectedHeader = decodeProtectedHeader(proof);
    payload = decodeJwt(proof);
  } catch {
    throw invalid('the DPoP proof is not a JWT (RFC 9449 §4.3)');
  }
  if (protectedHeader.typ !== 'dpop+jwt') throw invalid('the DPoP proof typ must be dpop+jwt (RFC 9449 §4.3)');
  const alg = protectedHeader.alg ?? '';
  if (!algs.includes(alg)) {
    throw invalid(`the DPoP proof alg must be one of ${algs.join(', ')} (RFC 9449 §4.3)`);
  }
  // RFC 7515 §4.1.11: extensions marked critical must be understood, and a proof needs none (nor RFC 7797's b64).
  if (protectedHeader.crit !== undefined || protectedHeader.b64 !== undefined) throw invalid('the DPoP proof has a header extension');
  const jwk = protectedHeader.jwk as JWK | undefined;
  if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) throw invalid('the DPoP proof has no jwk header (RFC 9449 §4.2)');
  if (PRIVATE_MEMBERS.some((m) => Object.hasOwn(jwk, m))) throw invalid('the DPoP proof jwk must be a public key (RFC 9449 §4.3)');
  // RFC 7517 §4.2-4.4: a key whose own members say it is not for verifying this algorithm's signatures.
  if (jwk.use !== undefined && jwk.use !== 'sig') throw invalid('the DPoP proof jwk use must be sig');
  if (jwk.key_ops !== undefined && !(Array.isArray(jwk.key_ops) && jwk.key_ops.length > 0 && jwk.key_ops.every((op) => op === 'verify'))) {
    throw invalid('the DPoP proof jwk key_ops must be ["verify"] (a public key verifies, nothing else)');
  }
  if (jwk.ext !== undefined && typeof jwk.ext !== 'boolean') throw invalid('the DPoP proof jwk ext must be a boolean');
  if (jwk.alg !== undefined && jwk.alg !== alg) throw invalid('the DPoP proof jwk alg differs from the proof alg');
  const jkt = jwkThumbprint(jwk);
  if (jkt === undefined) throw invalid('the DPoP proof jwk is not a key a proof can have');

  const { jti, htm, htu, iat, ath, nonce } = payload as Record<string, unknown>;
  if (typeof jti !== 'string' || jti === '' || jti.length > DPOP_JTI_MAX) throw invalid('the DPoP proof jti is missing or invalid');
  if (typeof htm !== 'string') throw invalid('the DPoP proof htm is missing');
  if (typeof htu !== 'string') throw invalid('the DPoP proof htu is missing');
  if (typeof iat !== 'number' || !Number.isFinite(iat)) throw invalid('the DPoP proof iat is missing');
  if (htm !== check.method) throw invalid('the DPoP proof htm does not match the request method (RFC 9449 §4.3)');
  const expectedHtu = normalizeHtu(`${ctx.config.issuer}${check.path}`);
  if (normalizeHtu(htu) !== expectedHtu) throw invalid('the DPoP proof htu does not match the endpoint URL (RFC 9449 §4.3)');
  if (check.accessToken !== undefined && ath !== accessTokenHash(check.accessToken)) {
    throw invalid('the DPoP proof ath does not match the access token (RFC 9449 §4.3)');
  }

  const now = ctx.config.now();
  if (Math.abs(now / 1000 - iat) > DPOP_IAT_WINDOW_SECONDS) {
    throw invalid(`the DPoP proof iat is more than ${DPOP_IAT_WINDOW_SECONDS} seconds from the server time (RFC 9449 §4.3)`);
  }
  // RFC 7519 §4.1.4, §4.1.5: a proof need not carry exp or nbf, but one that says it is not valid now is not.
  const { exp, nbf } = payload;
  if (exp !== undefined && (typeof exp !== 'number' || exp <= now / 1000)) throw invalid('the DPoP proof has expired (exp)');
  if (nbf !== undefined && (typeof nbf !== 'number' || nbf > now / 1000)) throw invalid('the DPoP proof is not valid yet (nbf)');

  // The signature last of the proof's own checks: a proof that fails a cheaper one costs no verification.
  const signatureAt = proof.lastIndexOf('.');
  try {
    if (!(await ctx.dpopKeys.verify(alg, jkt, jwk, proof.slice(0, signatureAt), proof.slice(signatureAt + 1)))) {
      throw invalid('the DPoP proof signature is invalid (RFC 9449 §4.3)');
    }
  } catch (err) {
    if (err instanceof UnusableProofKey) throw invalid(`the DPoP proof is invalid: ${err.message} (RFC 9449 §4.3)`);
    throw err;
  }

  // §8, §9: a nonce the proof carries must be current, whether or not this endpoint requires one.
  const nonces = ctx.dpopNonces;
  const challenge = (description: string) => new UseDpopNonce(description, nonces.current(), resource ? { algs } : undefined);
  if (nonce === undefined) {
    if (check.requireNonce) throw challenge('the DPoP proof must carry the server nonce of the DPoP-Nonce header (RFC 9449 §8)');
  } else if (typeof nonce !== 'string' || !nonces.accepts(nonce)) {
    throw challenge('the DPoP proof nonce is not a current server nonce (RFC 9449 §8)');
  }

  // §11.1: one use per key and jti, on any instance, for as long as the iat window would accept the proof.
  if (!(await ctx.store.dpopProofs.use(sha256Hex(`${jkt} ${jti}`), (iat + DPOP_IAT_WINDOW_SECONDS) * 1000 + 1000))) {
    throw invalid('the DPoP proof was already used (jti replay, RFC 9449 §11.1)');
  }
  return { jkt };
}

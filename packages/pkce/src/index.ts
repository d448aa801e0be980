/**
 * PKCE (RFC 7636), state and nonce helpers on Web Crypto only, so the same
 * code runs in Node.js 20 and in browsers.
 *
 * @packageDocumentation
 */

/** A PKCE code verifier that passed {@link isValidVerifier} (RFC 7636 §4.1). */
export type CodeVerifier = string & { readonly __brand: 'CodeVerifier' };

/** A PKCE S256 code challenge (RFC 7636 §4.2): 43 base64url characters. */
export type CodeChallenge = string & { readonly __brand: 'CodeChallenge' };

function webCrypto(): Crypto {
  const c = (globalThis as { crypto?: Crypto }).crypto;
  if (!c?.subtle || typeof c.getRandomValues !== 'function') {
    throw new Error('@authcli/pkce needs Web Crypto (globalThis.crypto); Node.js 20+ or a secure browser context');
  }
  return c;
}

/** Encodes bytes as base64url without padding (RFC 4648 §5, RFC 7636 Appendix A). */
export function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]!);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** `n` bytes from the platform CSPRNG, base64url-encoded. */
export function randomToken(n = 32): string {
  const bytes = new Uint8Array(n);
  webCrypto().getRandomValues(bytes);
  return base64url(bytes);
}

// RFC 7636 §4.1: code-verifier = 43*128unreserved; unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~"
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
// RFC 7636 §4.2: BASE64URL-ENCODE(SHA256(ASCII(code_verifier))) is always 43 characters.
const CHALLENGE_S256 = /^[A-Za-z0-9\-_]{43}$/;

/** RFC 7636 §4.1: 43–128 characters from the unreserved set. */
export function isValidVerifier(value: unknown): value is CodeVerifier {
  return typeof value === 'string' && VERIFIER.test(value);
}

/** RFC 7636 §4.2 with S256: exactly 43 base64url characters. */
export function isValidChallenge(value: unknown): value is CodeChallenge {
  return typeof value === 'string' && CHALLENGE_S256.test(value);
}

/**
 * A fresh code verifier from 32 random bytes: 43 base64url characters,
 * 256 bits of entropy (RFC 7636 §4.1, §7.1).
 */
export function generateVerifier(): CodeVerifier {
  return randomToken(32) as CodeVerifier;
}

/**
 * The S256 code challenge of a verifier (RFC 7636 §4.2):
 * BASE64URL(SHA-256(ASCII(verifier))).
 * @throws TypeError when the verifier is not a valid RFC 7636 verifier.
 */
export async function challengeS256(verifier: string): Promise<CodeChallenge> {
  if (!isValidVerifier(verifier)) {
    throw new TypeError('code_verifier must be 43-128 characters of [A-Za-z0-9-._~] (RFC 7636 §4.1)');
  }
  const digest = await webCrypto().subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest)) as CodeChallenge;
}

/** An unguessable `state` value (RFC 6749 §10.12): 32 random bytes, base64url. */
export function generateState(): string {
  return randomToken(32);
}

/** An unguessable OpenID Connect `nonce` (OIDC Core §3.1.2.1): 32 random bytes, base64url. */
export function generateNonce(): string {
  return randomToken(32);
}

/**
 * Compares two strings in time that depends only on their lengths, not on
 * where they first differ. Lengths are not secret for the values compared here
 * (verifiers, challenges, states, nonces).
 */
export function timingSafeEqualString(a: string, b: string): boolean {
  if (typeof a !== 'string' || typeof b !== 'string') return false;
  const ea = new TextEncoder().encode(a);
  const eb = new TextEncoder().encode(b);
  let diff = ea.length ^ eb.length;
  const n = Math.max(ea.length, eb.length);
  for (let i = 0; i < n; i++) diff |= (ea[i] ?? 0) ^ (eb[i] ?? 0);
  return diff === 0;
}

/**
 * Checks a verifier against a stored S256 challenge (RFC 7636 §4.6), in
 * constant time. Returns false for malformed input instead of throwing.
 */
export async function verifyS256(verifier: string, challenge: string): Promise<boolean> {
  if (!isValidVerifier(verifier) || !isValidChallenge(challenge)) return false;
  return timingSafeEqualString(await challengeS256(verifier), challenge);
}

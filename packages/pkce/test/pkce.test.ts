import { describe, expect, it } from 'vitest';
import {
  base64url,
  challengeS256,
  generateNonce,
  generateState,
  generateVerifier,
  isValidChallenge,
  isValidVerifier,
  timingSafeEqualString,
  verifyS256,
} from '../src/index.js';

const UNRESERVED = /^[A-Za-z0-9\-._~]+$/;

describe('rfc7636 Appendix B', () => {
  it('S256 challenge of the example verifier', async () => {
    const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
    expect(await challengeS256(verifier)).toBe('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM');
    expect(await verifyS256(verifier, 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM')).toBe(true);
  });

  it('the example octets encode to the example verifier', () => {
    const octets = [
      116, 24, 223, 180, 151, 153, 224, 37, 79, 250, 96, 125, 216, 173, 187, 186, 22, 212, 37, 77, 105, 214, 191, 240, 91, 88, 5, 88, 83,
      132, 141, 121,
    ];
    expect(base64url(new Uint8Array(octets))).toBe('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk');
  });
});

describe('rfc7636 §4.1 code verifier', () => {
  it('is 43 characters of the unreserved set from 32 random bytes', () => {
    for (let i = 0; i < 200; i++) {
      const v = generateVerifier();
      expect(v).toHaveLength(43);
      expect(v).toMatch(UNRESERVED);
      expect(isValidVerifier(v)).toBe(true);
    }
  });

  it('is unique across draws', () => {
    const seen = new Set(Array.from({ length: 2000 }, generateVerifier));
    expect(seen.size).toBe(2000);
  });

  it('accepts the bounds 43 and 128', () => {
    expect(isValidVerifier('a'.repeat(43))).toBe(true);
    expect(isValidVerifier('~._-'.repeat(32))).toBe(true);
  });

  it('rejects 42 and 129 characters', async () => {
    expect(isValidVerifier('a'.repeat(42))).toBe(false);
    expect(isValidVerifier('a'.repeat(129))).toBe(false);
    await expect(challengeS256('a'.repeat(42))).rejects.toThrow(TypeError);
    await expect(challengeS256('a'.repeat(129))).rejects.toThrow(TypeError);
  });

  it('rejects characters outside the unreserved set', async () => {
    for (const bad of ['+', '/', '=', ' ', '%', '!', 'é', '\n', '*']) {
      const v = 'a'.repeat(42) + bad;
      expect(isValidVerifier(v), JSON.stringify(bad)).toBe(false);
      await expect(challengeS256(v)).rejects.toThrow(TypeError);
    }
    expect(isValidVerifier(undefined)).toBe(false);
    expect(isValidVerifier(42)).toBe(false);
  });
});

describe('rfc7636 §4.2 S256 challenge', () => {
  it('is 43 base64url characters', async () => {
    const c = await challengeS256(generateVerifier());
    expect(c).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(isValidChallenge(c)).toBe(true);
  });

  it('rejects challenges of the wrong length or alphabet', () => {
    expect(isValidChallenge('a'.repeat(42))).toBe(false);
    expect(isValidChallenge('a'.repeat(44))).toBe(false);
    expect(isValidChallenge(`${'a'.repeat(42)}=`)).toBe(false);
    expect(isValidChallenge(`${'a'.repeat(42)}+`)).toBe(false);
    expect(isValidChallenge(`${'a'.repeat(42)}.`)).toBe(false);
    expect(isValidChallenge(null)).toBe(false);
  });

  it('rfc7636 §4.6 a different verifier does not match', async () => {
    const c = await challengeS256(generateVerifier());
    expect(await verifyS256(generateVerifier(), c)).toBe(false);
    expect(await verifyS256('short', c)).toBe(false);
    expect(await verifyS256(generateVerifier(), 'not-a-challenge')).toBe(false);
  });
});

describe('state and nonce', () => {
  it('rfc6749 §10.12 state is unguessable and unique', () => {
    const states = new Set(Array.from({ length: 1000 }, generateState));
    expect(states.size).toBe(1000);
    for (const s of states) expect(s).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('oidc core §3.1.2.1 nonce is unguessable and unique', () => {
    const nonces = new Set(Array.from({ length: 1000 }, generateNonce));
    expect(nonces.size).toBe(1000);
    for (const n of nonces) expect(n).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});

describe('timingSafeEqualString', () => {
  it('equal strings', () => {
    expect(timingSafeEqualString('abc', 'abc')).toBe(true);
    expect(timingSafeEqualString('', '')).toBe(true);
    expect(timingSafeEqualString('ü€', 'ü€')).toBe(true);
  });

  it('different strings, prefixes and lengths', () => {
    expect(timingSafeEqualString('abc', 'abd')).toBe(false);
    expect(timingSafeEqualString('abc', 'ab')).toBe(false);
    expect(timingSafeEqualString('ab', 'abc')).toBe(false);
    expect(timingSafeEqualString('', 'a')).toBe(false);
    expect(timingSafeEqualString('a\u0000', 'a')).toBe(false);
  });
});

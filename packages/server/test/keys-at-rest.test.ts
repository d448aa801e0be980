import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../src/config/config.js';
import { decryptPrivateJwk, encryptPrivateJwk, isEncryptedPrivateJwk } from '../src/oauth/key-encryption.js';

const KEK = randomBytes(32);
const OTHER_KEK = randomBytes(32);

describe('key encryption: AES-256-GCM envelope bound to its kid', () => {
  const jwk = JSON.stringify({ kty: 'EC', crv: 'P-256', x: 'x-coordinate', y: 'y-coordinate', d: 'the-private-scalar' });
  const kid = 'kid-one';

  it('private signing keys are encrypted at rest (AES-256-GCM): the round trip gives the JWK back, the envelope holds none of it', () => {
    const stored = encryptPrivateJwk(jwk, kid, KEK);
    expect(isEncryptedPrivateJwk(stored)).toBe(true);
    expect(isEncryptedPrivateJwk(jwk)).toBe(false);
    expect(stored).not.toContain('the-private-scalar');
    expect(stored).not.toContain('"d"');
    const envelope = JSON.parse(stored) as Record<string, string | number>;
    expect(envelope).toMatchObject({ v: 1, enc: 'A256GCM' });
    expect(Buffer.from(envelope.iv as string, 'base64url')).toHaveLength(12);
    expect(Buffer.from(envelope.tag as string, 'base64url')).toHaveLength(16);
    expect(decryptPrivateJwk(stored, kid, KEK)).toBe(jwk);
  });

  it('a fresh random 96-bit IV for every encryption: the same key never encrypts the same way twice', () => {
    const ivs = new Set(Array.from({ length: 50 }, () => (JSON.parse(encryptPrivateJwk(jwk, kid, KEK)) as { iv: string }).iv));
    expect(ivs.size).toBe(50);
  });

  it('a tampered ciphertext, tag or IV does not decrypt', () => {
    const envelope = JSON.parse(encryptPrivateJwk(jwk, kid, KEK)) as Record<string, string>;
    const flip = (field: string) => {
      const bytes = Buffer.from(envelope[field]!, 'base64url');
      bytes.writeUInt8(bytes.readUInt8(0) ^ 1, 0);
      return JSON.stringify({ ...envelope, [field]: bytes.toString('base64url') });
    };
    for (const field of ['ct', 'tag', 'iv']) {
      expect(() => decryptPrivateJwk(flip(field), kid, KEK), field).toThrow(/does not decrypt the signing keys/);
    }
    const truncatedTag = JSON.stringify({ ...envelope, tag: Buffer.from(envelope.tag!, 'base64url').subarray(0, 12).toString('base64url') });
    expect(() => decryptPrivateJwk(truncatedTag, kid, KEK)).toThrow(ConfigError);
  });

  it("a ciphertext moved to another key's row (another kid: the AAD) does not decrypt", () => {
    const stored = encryptPrivateJwk(jwk, kid, KEK);
    expect(() => decryptPrivateJwk(stored, 'kid-two', KEK)).toThrow(/does not decrypt the signing keys/);
  });

  it('the wrong key-encryption key does not decrypt, and says so in one line without the key', () => {
    const stored = encryptPrivateJwk(jwk, kid, KEK);
    let message = '';
    try {
      decryptPrivateJwk(stored, kid, OTHER_KEK);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    expect(message).toMatch(/^the key-encryption key does not decrypt the signing keys/);
    expect(message).not.toContain('\n');
    expect(message).not.toContain(OTHER_KEK.toString('base64'));
  });

  it('an envelope of an unknown version is refused, not guessed at', () => {
    const envelope = JSON.parse(encryptPrivateJwk(jwk, kid, KEK)) as Record<string, unknown>;
    expect(() => decryptPrivateJwk(JSON.stringify({ ...envelope, v: 2 }), kid, KEK)).toThrow(/unknown format/);
  });

  it('a key-encryption key of the wrong length is refused', () => {
    expect(() => encryptPrivateJwk(jwk, kid, randomBytes(16))).toThrow(/32 bytes/);
  });
});

import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalJWKSet, createRemoteJWKSet, decodeProtectedHeader, jwtVerify, type JWK } from 'jose';
import { buildApp } from '../src/app.js';
import { ConfigError, loadConfig } from '../src/config/config.js';
import { KEY_ACTIVATION_DELAY_MS, KEY_REFRESH_MS } from '../src/config/defaults.js';
import { decryptPrivateJwk, encryptPrivateJwk, isEncryptedPrivateJwk } from '../src/oauth/key-encryption.js';
import { KeyRing, generateSigningKey, rotateKeys } from '../src/oauth/keys.js';
import type { Store } from '../src/store/store.js';
import {
  authorize,
  dialects,
  seedApp,
  seedUser,
  signedInBrowser,
  startServer,
  tokenRequest,
  type TestServer,
  ownClock,
} from './helpers.js';
import { testRows } from '../src/testing.js';

const KEK = randomBytes(32);
const OTHER_KEK = randomBytes(32);
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi'];

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
    const truncatedTag = JSON.stringify({
      ...envelope,
      tag: Buffer.from(envelope.tag!, 'base64url').subarray(0, 12).toString('base64url'),
    });
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

describe.each(dialects())('signing keys at rest (%s)', (dialect) => {
  let server: TestServer;
  let clientId: string;
  const started: TestServer[] = [];
  const redirectUri = 'https://app.example/callback';
  const publishRetiredMs = 3600_000;

  async function start(kek: Buffer | undefined) {
    server = await startServer(dialect, { keyEncryptionKey: kek });
    started.push(server);
    await seedUser(server);
    clientId = (await seedApp(server, { callbackUrls: [redirectUri] })).app.clientId;
  }
  afterEach(async () => {
    for (const s of started.splice(0)) await s.close();
  });

  const rows = (store: Store) => testRows(store).select('signing_keys', {}, ['created_at', 'kid']);

  /** An ID token (RS256) and access token (ES256) from the running server, both verified against its JWKS. */
  async function verifiedTokens(): Promise<{ idKid: string; atKid: string }> {
    const { callback, verifier } = await authorize(server, await signedInBrowser(server), { clientId, redirectUri, scope: 'openid' });
    const res = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code')!,
      redirect_uri: redirectUri,
      client_id: clientId,
      code_verifier: verifier,
    });
    expect(res.status).toBe(200);
    const jwks = createRemoteJWKSet(new URL(`${server.url}/oauth/jwks`));
    await jwtVerify(res.json.id_token as string, jwks, { issuer: server.url, audience: clientId });
    await jwtVerify(res.json.access_token as string, jwks, { issuer: server.url, typ: 'at+jwt' });
    return {
      idKid: decodeProtectedHeader(res.json.id_token as string).kid!,
      atKid: decodeProtectedHeader(res.json.access_token as string).kid!,
    };
  }

  /** What a restarted instance does with the store: a key ring of its own, opened at start. */
  async function restartedKeyRing(kek: Buffer | undefined): Promise<KeyRing> {
    const ring = new KeyRing(server.store, server.clock.now, publishRetiredMs, kek);
    await ring.init();
    return ring;
  }

  it('private signing keys are encrypted at rest (AES-256-GCM): no private JWK member is stored, and the tokens signed verify against the JWKS', async () => {
    await start(KEK);
    const stored = await rows(server.store);
    expect(stored.map((r) => r.alg).sort()).toEqual(['ES256', 'RS256']);
    for (const r of stored) {
      expect(isEncryptedPrivateJwk(r.private_jwk)).toBe(true);
      for (const member of PRIVATE_MEMBERS) expect(r.private_jwk).not.toContain(`"${member}"`);
      const jwk = JSON.parse(decryptPrivateJwk(r.private_jwk, r.kid, KEK)) as JWK;
      expect(jwk.d).toBeTruthy();
    }
    const { idKid, atKid } = await verifiedTokens();
    expect(stored.map((r) => r.kid)).toEqual(expect.arrayContaining([idKid, atKid]));
  });

  it('a restart with the same key-encryption key opens the stored keys and signs with them', async () => {
    await start(KEK);
    const before = await rows(server.store);
    const ring = await restartedKeyRing(KEK);
    expect(await rows(server.store)).toEqual(before); // nothing re-created, nothing re-encrypted
    const jwt = await ring.signJwt('ES256', 'JWT', { sub: 'x', iss: server.url });
    const { protectedHeader } = await jwtVerify(jwt, createLocalJWKSet(await ring.jwks()));
    expect(before.map((r) => r.kid)).toContain(protectedHeader.kid);
  });

  it('encrypted keys and no key-encryption key: the server refuses to start, saying to set AUTHCLI_KEY_ENCRYPTION_KEY', async () => {
    await start(KEK);
    const config = loadConfig({ port: 0, host: '127.0.0.1' }, {}, { logLevel: 'silent', now: server.clock.now });
    await expect(buildApp(config, server.store)).rejects.toThrow(ConfigError);
    await expect(buildApp(config, server.store)).rejects.toThrow(/^signing keys are encrypted: set AUTHCLI_KEY_ENCRYPTION_KEY/);
  });

  it('the wrong key-encryption key: the server refuses to start, and the store is left as it was', async () => {
    await start(KEK);
    const before = await rows(server.store);
    const config = loadConfig(
      { port: 0, host: '127.0.0.1' },
      {},
      { logLevel: 'silent', now: server.clock.now, keyEncryptionKey: OTHER_KEK },
    );
    await expect(buildApp(config, server.store)).rejects.toThrow(/^the key-encryption key does not decrypt the signing keys/);
    expect(await rows(server.store)).toEqual(before);
  });

  it('an older plaintext store is encrypted in place at the first start with a key-encryption key, retired keys included', async () => {
    await start(undefined);
    const first = await verifiedTokens();
    await rotateKeys(server.store, server.clock.now(), undefined); // a retired plaintext pair too
    const plain = await rows(server.store);
    expect(plain).toHaveLength(4);
    for (const r of plain) expect(isEncryptedPrivateJwk(r.private_jwk)).toBe(false);

    const ring = await restartedKeyRing(KEK);
    const sealed = await rows(server.store);
    expect(sealed.map((r) => [r.kid, r.retired_at])).toEqual(plain.map((r) => [r.kid, r.retired_at]));
    for (const [i, r] of sealed.entries()) {
      expect(isEncryptedPrivateJwk(r.private_jwk), r.kid).toBe(true);
      expect(r.private_jwk).not.toContain('"d"');
      expect(decryptPrivateJwk(r.private_jwk, r.kid, KEK)).toBe(plain[i]!.private_jwk);
    }
    const jwt = await ring.signJwt('RS256', 'JWT', { sub: 'x' });
    await jwtVerify(jwt, createLocalJWKSet(await ring.jwks()));
    // A rolling restart: the instance still running without the KEK re-reads the now encrypted rows and keeps
    // signing with the keys it opened at its own start.
    ownClock(server).advance(KEY_REFRESH_MS + 1000);
    expect(await verifiedTokens()).toEqual(first);
  });

  it('keys rotate with a key-encryption key stores the new keys encrypted; the server signs with them after the activation delay', async () => {
    await start(KEK);
    const before = await verifiedTokens();
    const fresh = await rotateKeys(server.store, server.clock.now(), KEK);
    const stored = new Map((await rows(server.store)).map((r) => [r.kid, r.private_jwk]));
    expect(stored.size).toBe(4);
    for (const [kid, privateJwk] of stored) {
      expect(isEncryptedPrivateJwk(privateJwk), kid).toBe(true);
      expect(privateJwk).not.toContain('"d"');
    }
    expect([...stored.keys()]).toEqual(expect.arrayContaining(fresh.map((k) => k.kid)));
    const clock = ownClock(server);
    clock.advance(KEY_REFRESH_MS + 1000);
    expect(await verifiedTokens()).toEqual(before); // published, not yet signing
    clock.advance(KEY_ACTIVATION_DELAY_MS);
    const after = await verifiedTokens();
    expect(after.idKid).toBe(fresh.find((k) => k.alg === 'RS256')!.kid);
    expect(after.atKid).toBe(fresh.find((k) => k.alg === 'ES256')!.kid);
  });

  it('keys rotate without the key-encryption key, or with the wrong one, on an encrypted store refuses and changes nothing', async () => {
    await start(KEK);
    const before = await rows(server.store);
    await expect(rotateKeys(server.store, server.clock.now(), undefined)).rejects.toThrow(/^signing keys are encrypted/);
    await expect(rotateKeys(server.store, server.clock.now(), OTHER_KEK)).rejects.toThrow(/does not decrypt the signing keys/);
    expect(await rows(server.store)).toEqual(before);
  });

  it('a running instance without the key-encryption key publishes a key it cannot open but never tries to sign with it', async () => {
    await start(undefined);
    const before = await verifiedTokens();
    // Another instance, started with a KEK, encrypts the store and rotates.
    const fresh = await rotateKeys(server.store, server.clock.now(), KEK);
    ownClock(server).advance(KEY_REFRESH_MS + KEY_ACTIVATION_DELAY_MS + 1000);
    expect(await verifiedTokens()).toEqual(before);
    const published = ((await (await fetch(`${server.url}/oauth/jwks`)).json()) as { keys: JWK[] }).keys.map((k) => k.kid);
    expect(published).toEqual(expect.arrayContaining(fresh.map((k) => k.kid)));
  });

  it('a damaged stored private key refuses the start without quoting any of it', async () => {
    await start(undefined);
    const [row] = await rows(server.store);
    const d = (JSON.parse(row!.private_jwk) as JWK).d!;
    await testRows(server.store).update('signing_keys', { kid: row!.kid }, { private_jwk: row!.private_jwk.slice(0, -3) });
    for (const kek of [KEK, undefined]) {
      const err = await restartedKeyRing(kek).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(err).toBeInstanceOf(ConfigError);
      expect(err!.message).toBe(`signing key ${row!.kid} is not a valid private JWK`);
      expect(err!.message).not.toContain(d.slice(0, 8));
    }
  });

  it('without a key-encryption key the keys stay plaintext JWKs, as in older stores', async () => {
    await start(undefined);
    for (const r of await rows(server.store)) expect(JSON.parse(r.private_jwk)).toHaveProperty('d');
    const row = await generateSigningKey('ES256', server.clock.now());
    expect(isEncryptedPrivateJwk(row.private_jwk)).toBe(false);
    await verifiedTokens();
  });
});

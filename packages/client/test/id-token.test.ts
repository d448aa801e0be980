import { beforeAll, describe, expect, it } from 'vitest';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { verifyIdToken } from '../src/tokens.js';
import type { Transport } from '../src/http.js';

const ISS = 'https://id.example';
const meta = { issuer: ISS, token_endpoint: `${ISS}/token`, jwks_uri: `${ISS}/jwks` };
const settings = { issuer: ISS, clientId: 'authcli', clientSecret: undefined };

let key: CryptoKey;
let other: CryptoKey;
let jwk: JWK;
const jwksTransport: Transport = async () => ({ status: 200, headers: new Headers(), body: { keys: [jwk] } });

beforeAll(async () => {
  const pair = await generateKeyPair('RS256');
  key = pair.privateKey;
  jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256' };
  other = (await generateKeyPair('RS256')).privateKey;
});

async function idToken(claims: Record<string, unknown> = {}, signWith = () => key) {
  return new SignJWT({ nonce: 'n1', preferred_username: 'alice', ...claims })
    .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
    .setIssuer((claims.iss as string) ?? ISS)
    .setAudience((claims.aud as string) ?? 'authcli')
    .setSubject('user-1')
    .setIssuedAt()
    .setExpirationTime((claims.exp as number) ?? '5m')
    .sign(signWith());
}

describe('oidc core §3.1.3.7 ID token checks before anything is stored', () => {
  it('a valid token yields the subject and name', async () => {
    expect(await verifyIdToken(await idToken(), meta, settings, 'n1', Date.now, jwksTransport)).toEqual({
      sub: 'user-1',
      username: 'alice',
    });
  });

  it('rejects a signature by another key', async () => {
    await expect(verifyIdToken(await idToken({}, () => other), meta, settings, 'n1', Date.now, jwksTransport)).rejects.toMatchObject({
      code: 'id_token',
    });
  });

  it('rejects another issuer or audience', async () => {
    await expect(
      verifyIdToken(await idToken({ iss: 'https://evil.example' }), meta, settings, 'n1', Date.now, jwksTransport),
    ).rejects.toMatchObject({ code: 'id_token' });
    await expect(
      verifyIdToken(await idToken({ aud: 'someone-else' }), meta, settings, 'n1', Date.now, jwksTransport),
    ).rejects.toMatchObject({ code: 'id_token' });
  });

  it('rejects an expired token', async () => {
    const past = Math.floor(Date.now() / 1000) - 600;
    await expect(verifyIdToken(await idToken({ exp: past }), meta, settings, 'n1', Date.now, jwksTransport)).rejects.toMatchObject({
      code: 'id_token',
    });
  });

  it('rejects a nonce from another sign-in, or a missing one', async () => {
    await expect(verifyIdToken(await idToken({ nonce: 'other' }), meta, settings, 'n1', Date.now, jwksTransport)).rejects.toThrow(/nonce/);
    await expect(verifyIdToken(await idToken({ nonce: undefined }), meta, settings, 'n1', Date.now, jwksTransport)).rejects.toThrow(
      /nonce/,
    );
  });

  it('an unreachable key set is an error, not a pass', async () => {
    const down: Transport = async () => ({ status: 500, headers: new Headers(), body: 'x' });
    await expect(verifyIdToken(await idToken(), meta, settings, 'n1', Date.now, down)).rejects.toMatchObject({ code: 'id_token' });
    await expect(
      verifyIdToken(await idToken(), { ...meta, jwks_uri: undefined }, settings, 'n1', Date.now, jwksTransport),
    ).rejects.toMatchObject({ code: 'id_token' });
  });
});

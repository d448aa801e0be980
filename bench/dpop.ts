// DPoP (RFC 9449) for the bench: ES256 proofs signed with node:crypto (the bench has no JOSE library), built
// before the clock starts like every other per-request body (see load.ts), and the server nonce (§8) they carry.
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

/** A DPoP key pair and a function that makes a fresh proof (new jti, iat now) for `POST htu`. */
export function dpopSigner(): (htu: string, nonce?: string) => string {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const { kty, crv, x, y } = publicKey.export({ format: 'jwk' });
  const header = b64({ typ: 'dpop+jwt', alg: 'ES256', jwk: { kty, crv, x, y } });
  return (htu, nonce) => {
    const claims = {
      htm: 'POST',
      htu,
      iat: Math.floor(Date.now() / 1000),
      jti: randomBytes(16).toString('base64url'),
      ...(nonce && { nonce }),
    };
    const input = `${header}.${b64(claims)}`;
    return `${input}.${sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
  };
}

/** The server's current DPoP nonce: a proof without one is answered use_dpop_nonce with it (RFC 9449 §8). */
export async function dpopNonce(issuer: string, prove: (htu: string) => string): Promise<string | undefined> {
  const res = await fetch(`${issuer}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', dpop: prove(`${issuer}/oauth/token`) },
    body: 'grant_type=refresh_token&client_id=authcli&refresh_token=bench-nonce-probe',
  });
  await res.arrayBuffer();
  return res.headers.get('dpop-nonce') ?? undefined;
}

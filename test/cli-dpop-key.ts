import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { decodeJwt, importJWK, type JWK, SignJWT } from 'jose';

/**
 * Userinfo's status for an access token the CLI printed, sent as the CLI's own user would: a DPoP-bound token
 * (`cnf.jkt`, which the CLI gets from a server that offers DPoP) with the DPoP scheme and a proof by the key the
 * CLI keeps in `$XDG_CONFIG_HOME/authcli/dpop-keys.json` (RFC 9449 §7.1: the server refuses it as Bearer), any
 * other token as Bearer. `slot` is where the CLI keeps the sign-in's key: the issuer for the default profile,
 * `<issuer>#<profile>` for the others.
 */
export async function userinfoStatus(issuer: string, token: string, home: string, slot = issuer): Promise<number> {
  return (await userinfoOf(issuer, token, home, slot)).status;
}

/** userinfoStatus, with the claims the server answered (`sub`: whose token it is). */
export async function userinfoOf(
  issuer: string,
  token: string,
  home: string,
  slot = issuer,
): Promise<{ status: number; claims: Record<string, unknown> | undefined }> {
  const url = `${issuer}/oauth/userinfo`;
  const answer = async (res: Response) => ({
    status: res.status,
    claims: res.ok ? ((await res.json()) as Record<string, unknown>) : undefined,
  });
  const jkt = (decodeJwt(token).cnf as { jkt?: string } | undefined)?.jkt;
  if (jkt === undefined) return answer(await fetch(url, { headers: { authorization: `Bearer ${token}` } }));
  const keys = JSON.parse(readFileSync(join(home, 'authcli', 'dpop-keys.json'), 'utf8')) as { keys: Record<string, Record<string, JWK>> };
  const jwk = keys.keys[slot]?.[jkt];
  if (!jwk) throw new Error(`no DPoP key ${jkt} for ${slot} in ${home}`);
  const { kty, crv, x, y } = jwk;
  const proof = await new SignJWT({
    htm: 'GET',
    htu: url,
    iat: Math.floor(Date.now() / 1000),
    jti: randomBytes(16).toString('base64url'),
    ath: createHash('sha256').update(token).digest('base64url'),
  })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: { kty, crv, x, y } })
    .sign(await importJWK(jwk, 'ES256'));
  return answer(await fetch(url, { headers: { authorization: `DPoP ${token}`, dpop: proof } }));
}

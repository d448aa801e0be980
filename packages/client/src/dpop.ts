// DPoP (RFC 9449): the per-credential key pair, the proofs that show possession of it, and a transport that
// sends them with the server's nonce. Loaded only when a sign-in uses DPoP (it imports jose and node:crypto).
import { createHash, randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import { describeSlot, loginCommand } from './config.js';
import type { StoredSession } from './credentials.js';
import type { ServerMetadata } from './oauth/discovery.js';
import { oauthErrorOf } from './oauth/errors.js';
import { AuthcliError } from './errors.js';
import type { HttpResponse, Transport } from './http.js';
import { readDpopKey, readNonces, writeNonces } from './storage/dpop.js';

/** The one algorithm the CLI signs proofs with: ES256 is the one RFC 9449 servers are expected to support. */
export const DPOP_ALG = 'ES256';

/** A key pair for one sign-in: the private JWK is what storage keeps; `jkt` is its RFC 7638 thumbprint (`cnf.jkt`, `dpop_jkt`). */
export interface DpopKey {
  privateJwk: JWK;
  publicJwk: JWK;
  jkt: string;
}

/** Whether the server advertises DPoP with an algorithm the CLI signs with (RFC 9449 §5.1). */
export function serverUsesDpop(meta: Pick<ServerMetadata, 'dpop_signing_alg_values_supported'>): boolean {
  const algs = meta.dpop_signing_alg_values_supported;
  return Array.isArray(algs) && algs.includes(DPOP_ALG);
}

function publicPart(jwk: JWK): JWK {
  return { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y };
}

/** A fresh ES256 key pair for a new sign-in. */
export async function generateDpopKey(): Promise<DpopKey> {
  const { privateKey } = await generateKeyPair(DPOP_ALG, { extractable: true });
  return dpopKeyFromJwk(await exportJWK(privateKey));
}

/** The key as storage gave it back; a JWK that is not a P-256 private key is refused. */
export async function dpopKeyFromJwk(jwk: JWK): Promise<DpopKey> {
  if (jwk.kty !== 'EC' || jwk.crv !== 'P-256' || typeof jwk.d !== 'string' || typeof jwk.x !== 'string' || typeof jwk.y !== 'string') {
    throw new AuthcliError('storage', 'the stored DPoP key is not a P-256 private key');
  }
  const privateJwk: JWK = { ...publicPart(jwk), d: jwk.d };
  const publicJwk = publicPart(jwk);
  return { privateJwk, publicJwk, jkt: await calculateJwkThumbprint(publicJwk, 'sha256') };
}

/** RFC 9449 §4.2: `htu` is the target URI without query and fragment. */
export function htuOf(url: string): string {
  const u = new URL(url);
  u.search = '';
  u.hash = '';
  return u.href;
}

/** RFC 9449 §4.2: `ath`, the base64url SHA-256 of the ASCII access token. */
export function accessTokenHash(accessToken: string): string {
  return createHash('sha256').update(accessToken, 'ascii').digest('base64url');
}

export interface ProofRequest {
  /** The HTTP method of the request the proof goes with. */
  htm: string;
  /** The request's URL; query and fragment are dropped. */
  htu: string;
  /** The server's latest `DPoP-Nonce` (§8, §9), when it gave one. */
  nonce?: string | undefined;
  /** For a request to a protected resource (§7): the access token sent with it, whose hash goes in `ath`. */
  accessToken?: string | undefined;
  /** Epoch ms; for tests. */
  now?: number | undefined;
}

/** A DPoP proof JWT (RFC 9449 §4.2): `typ: dpop+jwt`, the public key in `jwk`, a new `jti` every time. */
export async function dpopProof(key: DpopKey, req: ProofRequest): Promise<string> {
  const claims: Record<string, string> = { htm: req.htm.toUpperCase(), htu: htuOf(req.htu), jti: randomUUID() };
  if (req.nonce !== undefined) claims.nonce = req.nonce;
  if (req.accessToken !== undefined) claims.ath = accessTokenHash(req.accessToken);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: DPOP_ALG, typ: 'dpop+jwt', jwk: key.publicJwk })
    .setIssuedAt(Math.floor((req.now ?? Date.now()) / 1000))
    .sign(await importJWK(key.privateJwk, DPOP_ALG));
}

/**
 * Whether a response asks for (another) nonce: `use_dpop_nonce` from an authorization server (§8, a 400
 * error body) or from a resource server (§9, a 401 with `WWW-Authenticate: DPoP error="use_dpop_nonce"`).
 */
export function asksForNonce(res: HttpResponse): boolean {
  if (res.status === 400) return oauthErrorOf(res.body)?.error === 'use_dpop_nonce';
  if (res.status === 401) return /\bDPoP\b[\s\S]*\berror="use_dpop_nonce"/i.test(res.headers.get('www-authenticate') ?? '');
  return false;
}

/** Where the latest nonce of each server is kept (by origin): in memory, and optionally beyond this process. */
export interface NonceStore {
  get(origin: string): string | undefined;
  set(origin: string, nonce: string): void | Promise<void>;
}

export function memoryNonces(initial: Record<string, string> = {}): NonceStore {
  const nonces = new Map(Object.entries(initial));
  return { get: (o) => nonces.get(o), set: (o, n) => void nonces.set(o, n) };
}

/** The nonces the last process left in the config folder; a new one is written back there when it comes. */
export async function savedNonces(env: NodeJS.ProcessEnv = process.env): Promise<NonceStore> {
  const all = await readNonces(env);
  return {
    get: (o) => all[o],
    set: async (o, n) => {
      all[o] = n;
      await writeNonces(all, env);
    },
  };
}

/** A sign-in bound to a key this machine no longer has: refused rather than sent as Bearer. */
export function missingKey(slot: string): AuthcliError {
  return new AuthcliError(
    'signed_out',
    `the sign-in to ${describeSlot(slot)} is bound to a DPoP key that is not on this machine (were the credentials copied here?); run \`${loginCommand(slot)}\``,
  );
}

/** The key a sign-in stored under `slot` is bound to; undefined for a Bearer sign-in, missingKey when the key is gone. */
export async function keyOfSession(
  slot: string,
  session: StoredSession,
  env: NodeJS.ProcessEnv = process.env,
): Promise<DpopKey | undefined> {
  if (!session.dpop_jkt) {
    if (session.token_type.toLowerCase() === 'dpop') throw missingKey(slot);
    return undefined;
  }
  const jwk = await readDpopKey(slot, session.dpop_jkt, env);
  if (!jwk) throw missingKey(slot);
  const key = await dpopKeyFromJwk(jwk);
  if (key.jkt !== session.dpop_jkt) throw missingKey(slot);
  return key;
}

/**
 * A transport whose every request carries a new proof for its method and URL, with the server's latest
 * nonce. A `DPoP-Nonce` in any answer is remembered for the next request to that server; an answer that
 * asks for a nonce (§8, §9) is retried once with it. With `accessToken`, requests are to a protected
 * resource: `Authorization: DPoP <token>` and `ath` in the proof (§7.1).
 */
export function dpopTransport(
  transport: Transport,
  key: DpopKey,
  opts: { nonces: NonceStore; accessToken?: string | undefined },
): Transport {
  return async (url, init) => {
    const origin = new URL(url).origin;
    const send = async () => {
      const proof = await dpopProof(key, { htm: init.method, htu: url, nonce: opts.nonces.get(origin), accessToken: opts.accessToken });
      const headers: Record<string, string> = { ...init.headers, dpop: proof };
      if (opts.accessToken !== undefined) headers.authorization = `DPoP ${opts.accessToken}`;
      const res = await transport(url, { ...init, headers });
      const nonce = res.headers.get('dpop-nonce');
      const fresh = nonce !== null && nonce !== opts.nonces.get(origin);
      if (nonce && fresh) await opts.nonces.set(origin, nonce);
      return { res, fresh };
    };
    const first = await send();
    // Retried once, and only with a nonce it did not have: a server that keeps asking is answered as it answered.
    if (asksForNonce(first.res) && first.fresh) return (await send()).res;
    return first.res;
  };
}

/**
 * Whether a token endpoint refused a request for want of a DPoP proof: RFC 9449's `invalid_dpop_proof`, or
 * (node-oidc-provider's way) `invalid_grant` whose description names DPoP. Both are answered before the
 * grant is looked at, so the same request sent again with a proof is not a second use of a code.
 */
export function asksForDpop(res: HttpResponse): boolean {
  if (res.status !== 400 && res.status !== 401) return false;
  const e = oauthErrorOf(res.body);
  return e?.error === 'invalid_dpop_proof' || (e?.error === 'invalid_grant' && /\bDPoP\b/.test(e.description ?? ''));
}

/** A token transport that binds only when the server insists (see {@link dpopWhenRequired}). */
export interface DpopOnDemand {
  transport: Transport;
  /** The key the sign-in's tokens are bound to, once the server asked for one. */
  key(): DpopKey | undefined;
}

/**
 * The token requests of a sign-in that did not ask for DPoP (`authcli login` without `--dpop`): plain
 * requests, so the access token is a Bearer token every API takes, until the token endpoint refuses one
 * for want of a proof ({@link asksForDpop}): the application requires DPoP (RFC 9449 §5.2
 * `dpop_bound_access_tokens`). Then a new key is made, the refused request is sent again with a proof, and
 * every later request carries one.
 */
export function dpopWhenRequired(transport: Transport, nonces: () => Promise<NonceStore>): DpopOnDemand {
  let bound: { key: DpopKey; transport: Transport } | undefined;
  return {
    key: () => bound?.key,
    transport: async (url, init) => {
      if (bound) return bound.transport(url, init);
      const res = await transport(url, init);
      if (!asksForDpop(res)) return res;
      const key = await generateDpopKey();
      bound = { key, transport: dpopTransport(transport, key, { nonces: await nonces() }) };
      return bound.transport(url, init);
    },
  };
}

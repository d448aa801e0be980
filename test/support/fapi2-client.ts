/**
 * The client side of the OpenID Foundation's FAPI 2.0 Security Profile server modules, as the conformance suite
 * plays it (net.openid.conformance.fapi2spfinal): client assertions (private_key_jwt, RFC 7523) and DPoP proofs
 * (RFC 9449) signed with jose, the pushed authorization request (RFC 9126), the token request and the resource
 * request, each retried once with the server's `DPoP-Nonce` when it asks for one (RFC 9449 §8, §9), as the
 * suite's Call*AllowingDpopNonceError conditions do. Each call returns the raw answer: the tests judge it.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';

export const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** The suite's random strings (RandomStringUtils alphanumeric), e.g. for state and nonce of a given length. */
export const alphanumeric = (length: number): string => {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return [...randomBytes(length)].map((b) => chars[b % chars.length]).join('');
};

/** A key pair of an algorithm, its private JWK kept (to sign with another algorithm, or to leak it on purpose). */
export interface SigningKey {
  alg: string;
  privateJwk: JWK;
  publicJwk: JWK;
}

export async function signingKey(alg: 'PS256' | 'ES256', kid = randomUUID()): Promise<SigningKey> {
  const pair = await generateKeyPair(alg, { extractable: true });
  const privateJwk = { ...(await exportJWK(pair.privateKey)), kid, alg };
  const publicJwk = { ...(await exportJWK(pair.publicKey)), kid, alg, use: 'sig' };
  return { alg, privateJwk, publicJwk };
}

/** A client as the suite configures one: its id, its signing key, its redirect URI and scope. */
export interface FapiClient {
  client_id: string;
  key: SigningKey;
  redirectUri: string;
  scope: string;
}

/** What a test changes in an assertion: claims set (undefined removes), the signing algorithm. */
export interface AssertionOptions {
  claims?: Record<string, unknown>;
  alg?: string;
}

/**
 * CreateJWTClientAuthenticationAssertionWithIssAud...: iss = sub = client_id, aud the issuer, a fresh jti,
 * iat now and exp a minute on (nbf too, as the suite's UpdateClientAuthenticationAssertionClaimsWithISSAud).
 */
export async function clientAssertion(client: FapiClient, issuer: string, options: AssertionOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const claims: Record<string, unknown> = {
    iss: client.client_id,
    sub: client.client_id,
    aud: issuer,
    jti: randomUUID(),
    iat: now,
    nbf: now,
    exp: now + 60,
  };
  for (const [name, value] of Object.entries(options.claims ?? {})) {
    if (value === undefined) delete claims[name];
    else claims[name] = value;
  }
  const alg = options.alg ?? client.key.alg;
  return new SignJWT(claims).setProtectedHeader({ alg, kid: client.key.privateJwk.kid! }).sign(await importJWK(client.key.privateJwk, alg));
}

/** Client authentication form fields (RFC 7523 §2.2); `client_id` only when the suite sends it. */
export async function clientAuth(client: FapiClient, issuer: string, options: AssertionOptions = {}): Promise<Record<string, string>> {
  return { client_assertion_type: ASSERTION_TYPE, client_assertion: await clientAssertion(client, issuer, options) };
}

/** How a proof is spoiled or changed for one negative case (Fapi2DPoPNegativeConditions). */
export interface ProofOptions {
  ath?: string;
  nonce?: string;
  /** Claims set after the defaults (undefined removes one). */
  claims?: Record<string, unknown>;
  /** Protected header members set after the defaults (undefined removes one). */
  header?: Record<string, unknown>;
  /** Another algorithm than the key's (the key is re-imported for it). */
  alg?: string;
  /** After signing: the compact proof rewritten (a broken signature, a renamed alg). */
  after?: (proof: string) => string;
}

/** A DPoP key (GenerateDpopKey) and its proofs (CreateDpopProofSteps). */
export class DpopKey {
  private constructor(
    readonly key: SigningKey,
    readonly jkt: string,
  ) {}

  static async create(alg: 'PS256' | 'ES256'): Promise<DpopKey> {
    const key = await signingKey(alg);
    const { kid: _kid, use: _use, alg: _alg, ...jwk } = key.publicJwk;
    return new DpopKey({ ...key, publicJwk: jwk }, await calculateJwkThumbprint(jwk));
  }

  async proof(htm: string, htu: string, options: ProofOptions = {}): Promise<string> {
    const claims: Record<string, unknown> = { jti: randomUUID(), htm, htu, iat: Math.floor(Date.now() / 1000) };
    if (options.ath !== undefined) claims.ath = options.ath;
    if (options.nonce !== undefined) claims.nonce = options.nonce;
    const alg = options.alg ?? this.key.alg;
    const header: Record<string, unknown> = { typ: 'dpop+jwt', alg, jwk: this.key.publicJwk };
    for (const [target, changes] of [
      [claims, options.claims],
      [header, options.header],
    ] as const) {
      for (const [name, value] of Object.entries(changes ?? {})) {
        if (value === undefined) delete target[name];
        else target[name] = value;
      }
    }
    const { kid: _kid, ...privateJwk } = this.key.privateJwk;
    const signed = await new SignJWT(claims)
      .setProtectedHeader(header as { alg: string })
      .sign(await importJWK({ ...privateJwk, alg }, alg));
    return options.after ? options.after(signed) : signed;
  }
}

/** The answer of one request, its body read as JSON when it is JSON. */
export interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
  text: string;
}

async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  let body: Record<string, unknown> = {};
  if (/json/.test(res.headers.get('content-type') ?? '')) body = JSON.parse(text) as Record<string, unknown>;
  return { status: res.status, headers: res.headers, body, text };
}

/** Whether an answer asks for a DPoP nonce: 400 use_dpop_nonce at the AS (§8), 401 with the challenge at a resource (§9). */
export function wantsNonce(a: Answer): boolean {
  return a.body.error === 'use_dpop_nonce' || /error="use_dpop_nonce"/.test(a.headers.get('www-authenticate') ?? '');
}

/**
 * A request made once, then once more with the server's nonce when it asks for one: `make` builds the request for
 * a nonce (fresh proof and assertion each time), as the suite's retry loops do. The latest nonce is kept.
 */
export class NonceKeeper {
  nonce: string | undefined;

  async send(make: (nonce: string | undefined) => Promise<Request>): Promise<Answer & { retried: boolean }> {
    let retried = false;
    for (;;) {
      const res = await answer(await fetch(await make(this.nonce)));
      const given = res.headers.get('dpop-nonce');
      const asked = wantsNonce(res);
      if (given) this.nonce = given;
      if (!asked || retried || !given) return { ...res, retried };
      retried = true;
    }
  }
}

/** A form POST (application/x-www-form-urlencoded) with extra headers. */
export function formPost(url: string, fields: Record<string, string>, headers: Record<string, string> = {}, method = 'POST'): Request {
  return new Request(url, {
    method,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields).toString(),
  });
}

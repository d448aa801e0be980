/**
 * The keys of a client that authenticates with `private_key_jwt` (RFC 7523
 * §2.2, OIDC Core §9) as they are registered (RFC 7591 §2 `jwks`, `jwks_uri`,
 * `token_endpoint_auth_signing_alg`), by the operator CLI, the dashboard or
 * the client itself: public keys only, valid JWKs (RFC 7517), bounded in size,
 * and a `jwks_uri` that only an operator may point at this machine or a
 * private network. The same rules, but for the URI's, hold for a JWK Set
 * fetched from a `jwks_uri` (client-jwks.ts).
 */
import { isIP } from 'node:net';
import { importJWK, type JWK } from 'jose';
import { CLIENT_JWKS_MAX_BYTES, CLIENT_JWKS_MAX_KEYS, CLIENT_JWKS_URI_MAX } from '../config/defaults.js';
import { isLoopbackHost } from '@authcli/protocol';
import { isPublicAddress } from '../http/public-address.js';
import type { Application, ClientKeys } from '../store/store.js';
import { InputError } from '../util/input-error.js';
import { InvalidClientMetadata } from './errors.js';

/** RFC 7523 §2.2: the `client_assertion_type` of a JWT client assertion. */
export const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/**
 * The algorithms client assertions may be signed with: those of the FAPI 2.0 Security Profile (§5.4.1: PS256,
 * ES256, EdDSA) and RS256, which most client libraries sign with an RSA key, unless `AUTHCLI_FAPI2` is on.
 * Never `none`, never an HMAC (a shared secret is not a key pair).
 */
const ASSERTION_ALGS = ['PS256', 'ES256', 'EdDSA', 'RS256'] as const;

/** The assertion algorithms this server accepts (discovery's `token_endpoint_auth_signing_alg_values_supported`). */
export function assertionAlgs(fapi2: boolean): string[] {
  return ASSERTION_ALGS.filter((alg) => !fapi2 || alg !== 'RS256');
}

/** Members only a private or symmetric key has (RFC 7518 §6.2.2, §6.3.2, §6.4; RFC 8037 §2). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

/** The smallest RSA modulus accepted, bits (RFC 7518 §3.3, §3.5: 2048 or larger). */
const RSA_MIN_BITS = 2048;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function rsaBits(n: unknown): number {
  if (typeof n !== 'string' || !/^[A-Za-z0-9_-]+$/.test(n)) return 0;
  const bytes = Buffer.from(n, 'base64url');
  let i = 0;
  while (i < bytes.length && bytes[i] === 0) i++;
  return (bytes.length - i) * 8;
}

/**
 * The assertion algorithms a key can verify: an RSA key of 2048 bits or more PS256 and RS256, a P-256 key
 * ES256, an Ed25519 key EdDSA; narrowed to its `alg` when it names one; none for an encryption key or a
 * key whose `key_ops` do not include `verify`.
 */
export function keyAlgs(jwk: Json): string[] {
  if (jwk.use !== undefined && jwk.use !== 'sig') return [];
  if (Array.isArray(jwk.key_ops) && !jwk.key_ops.includes('verify')) return [];
  let algs: string[] = [];
  if (jwk.kty === 'RSA' && rsaBits(jwk.n) >= RSA_MIN_BITS) algs = ['PS256', 'RS256'];
  else if (jwk.kty === 'EC' && jwk.crv === 'P-256') algs = ['ES256'];
  else if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') algs = ['EdDSA'];
  return jwk.alg === undefined ? algs : algs.filter((a) => a === jwk.alg);
}

/**
 * A JWK Set's keys, checked: a JSON object `{"keys": [...]}` of at most {@link CLIENT_JWKS_MAX_KEYS} JWK
 * objects with a `kty`, none with a private member. `what` names it in messages ("jwks").
 * @throws InputError
 */
export function jwkSetOf(value: unknown, what: string): { keys: Json[] } {
  if (!isObject(value) || !Array.isArray(value.keys))
    throw new InputError(`${what} must be a JWK Set: a JSON object with a keys array (RFC 7517 section 5)`);
  if (JSON.stringify(value).length > CLIENT_JWKS_MAX_BYTES) throw new InputError(`${what} is larger than ${CLIENT_JWKS_MAX_BYTES} bytes`);
  const keys = value.keys as unknown[];
  if (keys.length === 0 || keys.length > CLIENT_JWKS_MAX_KEYS) throw new InputError(`${what} must hold 1-${CLIENT_JWKS_MAX_KEYS} keys`);
  for (const key of keys) {
    if (!isObject(key) || typeof key.kty !== 'string')
      throw new InputError(`${what}: every key must be a JWK object with a kty (RFC 7517 section 4)`);
    if (PRIVATE_MEMBERS.some((m) => Object.hasOwn(key, m))) {
      throw new InputError(`${what} must hold public keys only: a key has a private or symmetric member (d, p, q, dp, dq, qi, oth or k)`);
    }
  }
  return { keys: keys as Json[] };
}

/**
 * Checks a JWK Set a client registers: {@link jwkSetOf}, and at least one key that can verify assertions
 * (with `signingAlg` when it is given), each such key a valid public key.
 * @throws InputError
 */
async function checkJwks(value: unknown, algs: readonly string[]): Promise<{ keys: Json[] }> {
  const set = jwkSetOf(value, 'jwks');
  let usable = 0;
  for (const key of set.keys) {
    const verifies = keyAlgs(key).filter((a) => algs.includes(a));
    if (verifies.length === 0) continue;
    try {
      const imported = await importJWK(key as JWK, verifies[0]);
      if ((imported as { type?: string }).type !== 'public') throw new Error('not a public key');
    } catch {
      throw new InputError('jwks: a key is not a valid public JWK (RFC 7517, RFC 7518 section 6)');
    }
    usable++;
  }
  if (usable === 0) {
    throw new InputError(
      `jwks has no key that can verify ${algs.join(', ')} assertions: an RSA key of ${RSA_MIN_BITS} bits or more, a P-256 or an Ed25519 key`,
    );
  }
  return set;
}

/**
 * Checks a `jwks_uri`: an absolute URL without credentials or fragment; from anyone but an operator, https
 * to a host that is neither loopback nor a non-public address literal (a name is checked again on every
 * connection, http/outbound.ts).
 * @throws InputError
 */
function checkJwksUri(value: string, operator: boolean): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InputError('jwks_uri must be an absolute URL');
  }
  if (value.length > CLIENT_JWKS_URI_MAX) throw new InputError(`jwks_uri must be at most ${CLIENT_JWKS_URI_MAX} characters`);
  if (url.username || url.password || url.hash) throw new InputError('jwks_uri must not carry credentials or a fragment');
  if (operator) {
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new InputError('jwks_uri must be an http or https URL');
    return url.href;
  }
  if (url.protocol !== 'https:') throw new InputError('jwks_uri must be an https URL');
  // A trailing dot names the same host (`localhost.`).
  const host = url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
  if (isLoopbackHost(host) || (isIP(host) !== 0 && !isPublicAddress(host))) {
    throw new InputError('jwks_uri must be on a public host: not this machine, a private network or a link-local address');
  }
  return url.href;
}

/** What a registration says about the keys (RFC 7591 §2 names); absent members are absent. */
export interface ClientKeysInput {
  jwks?: unknown;
  jwksUri?: string;
  signingAlg?: string;
}

/**
 * Checks the keys of a `private_key_jwt` client: exactly one of `jwks` and `jwksUri` (RFC 7591 §2: never both),
 * an allowed `signingAlg` if any. `operator`: set by the operator CLI, whose jwks_uri may be http and reach any
 * address.
 * @throws InputError
 */
export async function checkClientKeys(input: ClientKeysInput, options: { operator: boolean; fapi2: boolean }): Promise<ClientKeys> {
  const allowed = assertionAlgs(options.fapi2);
  if (input.signingAlg !== undefined && !allowed.includes(input.signingAlg)) {
    throw new InputError(`token_endpoint_auth_signing_alg must be one of ${allowed.join(', ')}`);
  }
  const algs = input.signingAlg !== undefined ? [input.signingAlg] : allowed;
  const signing = input.signingAlg !== undefined ? { signingAlg: input.signingAlg } : {};
  if (input.jwks !== undefined && input.jwksUri !== undefined) throw new InputError('give jwks or jwks_uri, not both (RFC 7591 section 2)');
  if (input.jwks !== undefined) return { jwks: await checkJwks(input.jwks, algs), ...signing };
  if (input.jwksUri !== undefined) {
    return { jwksUri: checkJwksUri(input.jwksUri, options.operator), ...(options.operator && { anyAddress: true }), ...signing };
  }
  throw new InputError("private_key_jwt needs the client's public keys: jwks or jwks_uri");
}

/** RFC 7591 §2 members about a client's keys; JSON null is the same as leaving one out (RFC 7592 §2.2). */
function metadataMember(body: Readonly<Record<string, unknown>>, name: string): unknown {
  return Object.hasOwn(body, name) ? (body[name] ?? undefined) : undefined;
}

/**
 * The keys a registering client names (RFC 7591 §2 `jwks`, `jwks_uri`, `token_endpoint_auth_signing_alg`):
 * required with `private_key_jwt`, refused with any other method (this server would not use them, and a
 * client is never left believing it registered what it did not). Checked by {@link checkClientKeys} after.
 * @throws InvalidClientMetadata
 */
export function keysOfMetadata(body: Readonly<Record<string, unknown>>, method: string): ClientKeysInput | undefined {
  const jwks = metadataMember(body, 'jwks');
  const jwksUri = metadataMember(body, 'jwks_uri');
  const signingAlg = metadataMember(body, 'token_endpoint_auth_signing_alg');
  if (method !== 'private_key_jwt') {
    if (jwks === undefined && jwksUri === undefined && signingAlg === undefined) return undefined;
    throw new InvalidClientMetadata(
      'jwks, jwks_uri and token_endpoint_auth_signing_alg are used here only with token_endpoint_auth_method private_key_jwt',
    );
  }
  if (jwksUri !== undefined && typeof jwksUri !== 'string') throw new InvalidClientMetadata('jwks_uri must be a string');
  if (signingAlg !== undefined && typeof signingAlg !== 'string') {
    throw new InvalidClientMetadata('token_endpoint_auth_signing_alg must be a string');
  }
  return {
    ...(jwks !== undefined && { jwks }),
    ...(jwksUri !== undefined && { jwksUri }),
    ...(signingAlg !== undefined && { signingAlg }),
  };
}

/** {@link checkClientKeys} for a registering client (never an operator): a refusal is invalid_client_metadata. */
export async function checkRegisteredKeys(input: ClientKeysInput, fapi2: boolean): Promise<ClientKeys> {
  try {
    return await checkClientKeys(input, { operator: false, fapi2 });
  } catch (err) {
    if (err instanceof InputError) throw new InvalidClientMetadata(err.message);
    throw err;
  }
}

/** The keys as client metadata (RFC 7591 §2), for registration answers and `apps list --json`. */
export function keysMetadata(keys: ClientKeys | null): Record<string, unknown> {
  if (!keys) return {};
  return {
    ...(keys.jwks && { jwks: keys.jwks }),
    ...(keys.jwksUri && { jwks_uri: keys.jwksUri }),
    ...(keys.signingAlg && { token_endpoint_auth_signing_alg: keys.signingAlg }),
  };
}

/** RFC 7591 §2 `token_endpoint_auth_method` of an application: how it authenticates (a secret: Basic or in the body). */
export function authMethodOf(app: Pick<Application, 'kind' | 'clientKeys'>): 'none' | 'client_secret_basic' | 'private_key_jwt' {
  if (app.kind === 'public') return 'none';
  return app.clientKeys ? 'private_key_jwt' : 'client_secret_basic';
}

/**
 * Keys as a person typed them (the dashboard's form, the operator's `--jwks-uri` and `--jwks` file): a
 * jwks_uri and a JWK Set's JSON text, each empty when not given; undefined when neither is.
 * @throws InputError
 */
export async function keysOfText(
  text: { jwksUri?: string | undefined; jwks?: string | undefined; signingAlg?: string | undefined },
  options: { operator: boolean; fapi2: boolean },
): Promise<ClientKeys | undefined> {
  const jwksUri = text.jwksUri?.trim() || undefined;
  const jwksText = text.jwks?.trim() || undefined;
  if (jwksUri === undefined && jwksText === undefined) {
    if (text.signingAlg !== undefined) throw new InputError('an assertion algorithm goes with a jwks_uri or a JWK Set');
    return undefined;
  }
  let jwks: unknown;
  if (jwksText !== undefined) {
    try {
      jwks = JSON.parse(jwksText);
    } catch {
      throw new InputError('the JWK Set is not JSON: give {"keys": [...]} of public keys');
    }
  }
  return checkClientKeys(
    {
      ...(jwksText !== undefined && { jwks }),
      ...(jwksUri !== undefined && { jwksUri }),
      ...(text.signingAlg !== undefined && { signingAlg: text.signingAlg }),
    },
    options,
  );
}

/**
 * How `apps add` and `apps update` say an application authenticates with
 * `private_key_jwt` (RFC 7523 §2.2): `--jwks-uri URL` or `--jwks FILE` (a JWK
 * Set of public keys; `-` reads standard input), optionally
 * `--assertion-alg ALG`. Either makes a confidential application sign
 * assertions instead of presenting a secret: it has none, and an existing one
 * stops working. `apps update --client-secret` goes the other way. A jwks_uri
 * an operator sets may be http and on any address (a key server on the same
 * host or network); one from the dashboard or a registering client may not.
 */
import { readFileSync } from 'node:fs';
import type { ServerConfig } from '../config/config.js';
import { keysOfText } from '../oauth/client-keys.js';
import type { ClientKeys } from '../store/store.js';
import { InputError } from '../util/input-error.js';
import { readAll } from './shared.js';

export const JWKS_URI_HELP = 'authenticate with private_key_jwt, the keys fetched from this URL (http and any address allowed here)';
export const JWKS_HELP = 'authenticate with private_key_jwt, the keys in this JWK Set file of public keys (- for standard input)';
export const ASSERTION_ALG_HELP =
  'the one algorithm its client assertions may use (token_endpoint_auth_signing_alg): PS256, ES256, EdDSA or RS256';

export interface KeyOptions {
  jwksUri?: string;
  jwks?: string;
  assertionAlg?: string;
}

async function readJwks(file: string): Promise<string> {
  try {
    return file === '-' ? await readAll(process.stdin) : readFileSync(file, 'utf8');
  } catch (err) {
    throw new InputError(`cannot read --jwks ${file}: ${(err as Error).message}`);
  }
}

/** The keys the options name, checked; undefined when they name none. */
export async function keysOfOptions(opts: KeyOptions, config: ServerConfig): Promise<ClientKeys | undefined> {
  if (opts.jwksUri !== undefined && opts.jwks !== undefined) throw new InputError('give --jwks-uri or --jwks, not both');
  return keysOfText(
    { jwksUri: opts.jwksUri, jwks: opts.jwks === undefined ? undefined : await readJwks(opts.jwks), signingAlg: opts.assertionAlg },
    { operator: true, fapi2: config.fapi2 },
  );
}

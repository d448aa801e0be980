import { OAUTH_AUTHORIZATION_SERVER_PATH, OPENID_CONFIGURATION_PATH, type OpenIDProviderMetadata } from '@authcli/protocol';
import type { JSONWebKeySet } from 'jose';
import type { Transport } from '../http.js';
import { ProtocolError } from './errors.js';

/**
 * The server metadata (RFC 8414 §2 / OIDC Discovery §3) as the CLI takes it:
 * `issuer` and `token_endpoint` are checked by {@link discover}; nothing else
 * is assumed about the server.
 */
export type ServerMetadata = Partial<OpenIDProviderMetadata> &
  Pick<OpenIDProviderMetadata, 'issuer'> & {
    token_endpoint: string;
    /** RFC 9449 §5.1: the server takes DPoP proofs signed with these. */
    dpop_signing_alg_values_supported?: string[];
    /** RFC 9126 §5: where authorization requests are pushed. */
    pushed_authorization_request_endpoint?: string;
  };

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Whether two issuer URLs are one loopback server under two names (same scheme, port and path). */
export function sameLoopbackServer(a: string, b: string): boolean {
  try {
    const x = new URL(a);
    const y = new URL(b);
    return (
      LOOPBACK.has(x.hostname) && LOOPBACK.has(y.hostname) && x.protocol === y.protocol && x.port === y.port && x.pathname === y.pathname
    );
  } catch {
    return false;
  }
}

const isObject = (body: unknown): body is Record<string, unknown> => typeof body === 'object' && body !== null && !Array.isArray(body);

/**
 * Fetches the issuer's discovery document (OIDC first, then RFC 8414) and
 * checks that it is about this issuer (RFC 8414 §3.3).
 */
export async function discover(issuer: string, transport: Transport): Promise<ServerMetadata> {
  const fail = (url: string | undefined, status: number | undefined, problem?: string) =>
    new ProtocolError({ endpoint: 'discovery', url, status, problem }, { issuer });
  for (const path of [OPENID_CONFIGURATION_PATH, OAUTH_AUTHORIZATION_SERVER_PATH]) {
    const url = `${issuer}${path}`;
    const res = await transport(url, { method: 'GET' });
    if (res.status === 404) continue;
    if (res.status !== 200 || !isObject(res.body)) throw fail(url, res.status);
    const meta = res.body as ServerMetadata;
    if (meta.issuer !== issuer) {
      // The same server by another loopback name (localhost and 127.0.0.1 on one port): the one it calls itself is
      // the one to use. Any other difference is not ours to resolve.
      const hint = typeof meta.issuer === 'string' && sameLoopbackServer(meta.issuer, issuer) ? `; use --issuer ${meta.issuer}` : '';
      throw fail(url, res.status, `the discovery document names issuer ${String(meta.issuer)}, not ${issuer}${hint}`);
    }
    if (typeof meta.token_endpoint !== 'string') throw fail(url, res.status, `${issuer} publishes no token endpoint`);
    return meta;
  }
  throw fail(undefined, 404, `${issuer} publishes no discovery document`);
}

/**
 * The issuer's key set (`jwks_uri`), to verify ID tokens with. It comes through the CLI's own transport, so
 * proxies (HTTPS_PROXY/NO_PROXY) apply here too.
 */
export async function fetchJwks(meta: ServerMetadata, transport: Transport): Promise<JSONWebKeySet> {
  const who = { issuer: meta.issuer };
  if (!meta.jwks_uri) {
    throw new ProtocolError({ endpoint: 'jwks', problem: 'the server sent an ID token but publishes no jwks_uri to verify it' }, who);
  }
  const res = await transport(meta.jwks_uri, { method: 'GET' });
  if (res.status !== 200 || !isObject(res.body) || !Array.isArray(res.body.keys)) {
    throw new ProtocolError({ endpoint: 'jwks', url: meta.jwks_uri, status: res.status }, who);
  }
  return res.body as unknown as JSONWebKeySet;
}

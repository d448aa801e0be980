import { OAUTH_AUTHORIZATION_SERVER_PATH, OPENID_CONFIGURATION_PATH, type OpenIDProviderMetadata } from '@authcli/protocol';
import { CliError } from './errors.js';
import type { Transport } from './http.js';

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

/**
 * Fetches the issuer's discovery document (OIDC first, then RFC 8414) and
 * checks that it is about this issuer (RFC 8414 §3.3).
 */
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

export async function discover(issuer: string, transport: Transport): Promise<ServerMetadata> {
  for (const path of [OPENID_CONFIGURATION_PATH, OAUTH_AUTHORIZATION_SERVER_PATH]) {
    const res = await transport(`${issuer}${path}`, { method: 'GET' });
    if (res.status === 404) continue;
    if (res.status !== 200 || typeof res.body !== 'object' || res.body === null) {
      throw new CliError('discovery', `${issuer}${path} answered ${res.status}; is ${issuer} an OAuth server?`);
    }
    const meta = res.body as ServerMetadata;
    if (meta.issuer !== issuer) {
      // The same server by another loopback name (localhost and 127.0.0.1 on one port): the one it calls itself is
      // the one to use. Any other difference is not ours to resolve.
      const hint = typeof meta.issuer === 'string' && sameLoopbackServer(meta.issuer, issuer) ? `; use --issuer ${meta.issuer}` : '';
      throw new CliError('discovery', `the discovery document names issuer ${String(meta.issuer)}, not ${issuer}${hint}`);
    }
    if (typeof meta.token_endpoint !== 'string') throw new CliError('discovery', `${issuer} publishes no token endpoint`);
    return meta;
  }
  throw new CliError('discovery', `${issuer} publishes no discovery document`);
}

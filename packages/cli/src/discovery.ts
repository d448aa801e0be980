import { CliError } from './errors.js';
import type { Transport } from './http.js';

/** The server metadata the CLI uses (RFC 8414 / OIDC Discovery); nothing else is assumed about the server. */
export interface ServerMetadata {
  issuer: string;
  authorization_endpoint?: string;
  token_endpoint: string;
  device_authorization_endpoint?: string;
  revocation_endpoint?: string;
  userinfo_endpoint?: string;
  jwks_uri?: string;
  authorization_response_iss_parameter_supported?: boolean;
  code_challenge_methods_supported?: string[];
}

/**
 * Fetches the issuer's discovery document (OIDC first, then RFC 8414) and
 * checks that it is about this issuer (RFC 8414 §3.3).
 */
export async function discover(issuer: string, transport: Transport): Promise<ServerMetadata> {
  for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
    const res = await transport(`${issuer}${path}`, { method: 'GET' });
    if (res.status === 404) continue;
    if (res.status !== 200 || typeof res.body !== 'object' || res.body === null) {
      throw new CliError('discovery', `${issuer}${path} answered ${res.status}; is ${issuer} an OAuth server?`);
    }
    const meta = res.body as ServerMetadata;
    if (meta.issuer !== issuer) throw new CliError('discovery', `the discovery document names issuer ${String(meta.issuer)}, not ${issuer}`);
    if (typeof meta.token_endpoint !== 'string') throw new CliError('discovery', `${issuer} publishes no token endpoint`);
    return meta;
  }
  throw new CliError('discovery', `${issuer} publishes no discovery document`);
}

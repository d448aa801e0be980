import type { Transport } from '../http.js';
import type { ServerMetadata } from './discovery.js';
import { oauthErrorOf, ProtocolError } from './errors.js';
import { asUserInfo, type UserInfo } from './responses.js';

/** The error of an RFC 6750 §3 challenge: `Bearer error="invalid_token", error_description="..."`. */
export function challengeError(header: string | null): { error: string; description: string | undefined } | undefined {
  const error = header && /\berror="([^"]*)"/.exec(header)?.[1];
  return error ? { error, description: /\berror_description="([^"]*)"/.exec(header)?.[1] } : undefined;
}

/**
 * The userinfo endpoint (OIDC Core §5.3): the claims of the access token's user, whose `sub` must be the ID
 * token's (§5.3.2) when there was one. The token goes as Bearer, or, for a DPoP-bound one, `resourceTransport`
 * sends it (dpopTransport with the access token: `Authorization: DPoP` and a proof).
 */
export async function fetchUserinfo(
  meta: ServerMetadata,
  transport: Transport,
  auth: { accessToken: string; resourceTransport?: Transport | undefined },
  expectedSubject?: string | undefined,
): Promise<UserInfo> {
  const who = { issuer: meta.issuer };
  const url = meta.userinfo_endpoint;
  if (!url) throw new ProtocolError({ endpoint: 'discovery', problem: `${meta.issuer} publishes no userinfo endpoint` }, who);
  const res = auth.resourceTransport
    ? await auth.resourceTransport(url, { method: 'GET' })
    : await transport(url, { method: 'GET', headers: { authorization: `Bearer ${auth.accessToken}` } });
  // §5.3.3: a refusal is a 4xx with the error in WWW-Authenticate (RFC 6750 §3), or in the body from some servers.
  if (res.status !== 200) {
    const refusal = challengeError(res.headers.get('www-authenticate')) ?? oauthErrorOf(res.body);
    throw new ProtocolError({ endpoint: 'userinfo', url, status: res.status, ...refusal }, who);
  }
  const info = asUserInfo(res.body, (problem) => {
    throw new ProtocolError({ endpoint: 'userinfo', url, status: res.status, problem }, who);
  });
  if (expectedSubject !== undefined && info.sub !== expectedSubject) {
    throw new ProtocolError(
      { endpoint: 'userinfo', url, status: res.status, problem: 'the userinfo is about another user than the ID token' },
      who,
    );
  }
  return info;
}

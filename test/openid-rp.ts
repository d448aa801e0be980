import * as client from 'openid-client';

/**
 * An authorization request as a relying party on openid-client makes one to these servers: PKCE S256 (this server
 * requires it of every client), a fresh `state`, and the request's own parameters (`redirect_uri`, `scope`,
 * `response_mode`, `nonce`...). The verifier and state are for `client.authorizationCodeGrant`.
 */
export async function authorizationRequest(
  config: client.Configuration,
  params: Record<string, string>,
): Promise<{ url: URL; verifier: string; state: string }> {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    ...params,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
  });
  return { url, verifier, state };
}

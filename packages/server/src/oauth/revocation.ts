import { PRESENTED_TOKEN_MAX } from '../config/defaults.js';
import type { OAuthContext } from './context.js';
import { sha256Hex } from '../util/crypto.js';
import { verifyAccessTokenJwt } from './access-token.js';
import { authenticateClient } from './client-auth.js';
import { InvalidRequest, InvalidToken } from './errors.js';

/**
 * POST /oauth/revoke (RFC 7009). A refresh token ends its whole family (the
 * grant), and with it every access token of the grant (§2.1 SHOULD); an
 * access token is revoked alone. Unknown, invalid or expired tokens get 200
 * (§2.2); a token of another client is refused (§2.1). Protocol errors are
 * thrown as OAuthError; the answer to a revocation is always an empty 200.
 */
export async function revoke(
  ctx: OAuthContext,
  params: Readonly<Record<string, string>>,
  authorization: string | undefined,
  clientIp: string,
): Promise<void> {
  const client = await authenticateClient(ctx, authorization, params, clientIp);
  const token = params.token;
  if (!token) throw new InvalidRequest('token is missing');
  const now = ctx.config.now();
  if (token.length > PRESENTED_TOKEN_MAX) return;

  // token_type_hint only orders the look-ups (§2.1); both kinds are tried.
  const tryRefresh = async (): Promise<boolean> => {
    const row = await ctx.store.grants.findRefreshToken(sha256Hex(token));
    if (!row) return false;
    const grant = await ctx.store.grants.find(row.grant_id);
    if (grant && grant.client_id !== client.clientId) throw new InvalidRequest('the token was not issued to this client');
    await ctx.store.grants.revoke(row.grant_id, now);
    return true;
  };
  const tryAccess = async (): Promise<boolean> => {
    if (token.split('.').length !== 3) return false;
    let payload;
    try {
      payload = await verifyAccessTokenJwt(ctx, token, 'any');
    } catch (err) {
      if (err instanceof InvalidToken) return false;
      throw err;
    }
    if (payload.client_id !== client.clientId) throw new InvalidRequest('the token was not issued to this client');
    await ctx.store.grants.revokeAccessToken(payload.jti, (payload.exp ?? 0) * 1000);
    return true;
  };
  const order = params.token_type_hint === 'access_token' ? [tryAccess, tryRefresh] : [tryRefresh, tryAccess];
  for (const attempt of order) if (await attempt()) break;
}

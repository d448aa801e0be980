import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { sha256Hex } from '../util/crypto.js';
import { verifyAccessTokenJwt } from './access-token.js';
import { authenticateClient } from './client-auth.js';
import { InvalidRequest, InvalidToken } from './errors.js';
import { formParams } from './token.js';

/**
 * POST /oauth/revoke (RFC 7009). A refresh token ends its whole family (the
 * grant), and with it every access token of the grant (§2.1 SHOULD); an
 * access token is revoked alone. Unknown, invalid or expired tokens get 200
 * (§2.2); a token of another client is refused (§2.1).
 */
export async function revocationRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  app.post('/oauth/revoke', async (req, reply) => {
    const params = formParams(req);
    const client = await authenticateClient(ctx.store, req.headers.authorization, params);
    const token = params.token;
    if (!token) throw new InvalidRequest('token is missing');
    const now = ctx.config.now();
    const done = () => reply.header('cache-control', 'no-store').code(200).send();
    if (token.length > 4096) return done();

    // token_type_hint only orders the look-ups (§2.1); both kinds are tried.
    const tryRefresh = async (): Promise<boolean> => {
      const row = await ctx.store.findRefreshToken(sha256Hex(token));
      if (!row) return false;
      const grant = await ctx.store.findGrant(row.grant_id);
      if (grant && grant.client_id !== client.clientId) throw new InvalidRequest('the token was not issued to this client');
      await ctx.store.revokeGrant(row.grant_id, now);
      return true;
    };
    const tryAccess = async (): Promise<boolean> => {
      if (token.split('.').length !== 3) return false;
      let payload;
      try {
        payload = await verifyAccessTokenJwt(ctx, token);
      } catch (err) {
        if (err instanceof InvalidToken) return false;
        throw err;
      }
      if (payload.client_id !== client.clientId) throw new InvalidRequest('the token was not issued to this client');
      await ctx.store.revokeAccessToken(payload.jti, (payload.exp ?? 0) * 1000);
      return true;
    };
    const order = params.token_type_hint === 'access_token' ? [tryAccess, tryRefresh] : [tryRefresh, tryAccess];
    for (const attempt of order) if (await attempt()) break;
    return done();
  });
}

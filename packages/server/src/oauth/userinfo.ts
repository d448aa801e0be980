import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { isParsedForm } from '../http/form.js';
import { verifyAccessToken } from './access-token.js';
import { InsufficientScope, InvalidRequest } from './errors.js';
import { scopedClaims } from './tokens.js';

/**
 * GET/POST /oauth/userinfo (OIDC Core §5.3) with a Bearer access token in
 * the Authorization header (RFC 6750 §2.1); errors per RFC 6750 §3.
 */
export async function userinfoRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    const auth = req.headers.authorization;
    const inBody = isParsedForm(req.body) && 'access_token' in req.body.params;
    const inQuery = typeof (req.query as Record<string, unknown>).access_token === 'string';
    if (auth === undefined && !inBody && !inQuery) {
      // RFC 6750 §3.1: a request without any authentication gets neither an error code nor other error
      // information: the challenge alone, and no body.
      return reply.code(401).header('www-authenticate', 'Bearer realm="authcli"').header('cache-control', 'no-store').send();
    }
    if (inBody || inQuery) throw new InvalidRequest('send the access token in the Authorization header');
    const m = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/i.exec(auth!.trim());
    if (!m) throw new InvalidRequest('the Authorization header must be "Bearer <token>"');
    const { payload, user } = await verifyAccessToken(ctx, m[1]!);
    const scopes = payload.scope.split(' ');
    if (!scopes.includes('openid')) throw new InsufficientScope('userinfo needs the openid scope', 'openid');
    return reply.header('cache-control', 'no-store').send({ sub: user.id, ...scopedClaims(user, scopes) });
  };
  app.get('/oauth/userinfo', handler);
  app.post('/oauth/userinfo', handler);
}

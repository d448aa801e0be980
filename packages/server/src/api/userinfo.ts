import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isParsedForm } from '../http/form.js';
import type { OAuthContext } from '../oauth/context.js';
import { userinfo } from '../oauth/userinfo.js';

/** GET/POST /oauth/userinfo (OIDC Core §5.3); errors per RFC 6750 §3. */
export async function userinfoRoutes(app: FastifyInstance, ctx: OAuthContext): Promise<void> {
  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    const claims = await userinfo(ctx, {
      authorization: req.headers.authorization,
      tokenInBody: isParsedForm(req.body) && 'access_token' in req.body.params,
      tokenInQuery: typeof (req.query as Record<string, unknown>).access_token === 'string',
    });
    if (claims === undefined) {
      // RFC 6750 §3.1: a request without any authentication gets neither an error code nor other error
      // information: the challenge alone, and no body.
      return reply.code(401).header('www-authenticate', 'Bearer realm="authcli"').header('cache-control', 'no-store').send();
    }
    return reply.header('cache-control', 'no-store').send(claims);
  };
  app.get('/oauth/userinfo', handler);
  app.post('/oauth/userinfo', handler);
}

import type { FastifyInstance } from 'fastify';
import { clientAddress } from '../http/client-ip.js';
import { formParams } from '../http/form.js';
import type { OAuthContext } from '../oauth/context.js';
import { introspect } from '../oauth/introspection.js';

/** POST /oauth/introspect (RFC 7662 §2): the answer is never cached (§4). */
export async function introspectionRoutes(app: FastifyInstance, ctx: OAuthContext): Promise<void> {
  app.post('/oauth/introspect', async (req, reply) => {
    const answer = await introspect(ctx, formParams(req), req.headers.authorization, clientAddress(req));
    return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(answer);
  });
}

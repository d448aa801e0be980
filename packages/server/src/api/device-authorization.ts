import type { FastifyInstance } from 'fastify';
import { clientAddress } from '../http/client-ip.js';
import { bodyResources, formParams } from '../http/form.js';
import type { OAuthContext } from '../oauth/context.js';
import { authorizeDevice } from '../oauth/device-authorization.js';

/** POST /oauth/device/authorization (RFC 8628 §3.1–3.2). */
export async function deviceAuthorizationRoutes(app: FastifyInstance, ctx: OAuthContext): Promise<void> {
  app.post('/oauth/device/authorization', async (req, reply) => {
    const answer = await authorizeDevice(ctx, formParams(req), req.headers.authorization, clientAddress(req), bodyResources(req));
    return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(answer);
  });
}

import type { FastifyInstance } from 'fastify';
import { clientAddress } from '../http/client-ip.js';
import { formParams } from '../http/form.js';
import type { OAuthContext } from '../oauth/context.js';
import { revoke } from '../oauth/revocation.js';

/** POST /oauth/revoke (RFC 7009 §2.1): an empty 200 for every token this client may revoke or that is unknown (§2.2). */
export async function revocationRoutes(app: FastifyInstance, ctx: OAuthContext): Promise<void> {
  app.post('/oauth/revoke', async (req, reply) => {
    await revoke(ctx, formParams(req), req.headers.authorization, clientAddress(req));
    return reply.header('cache-control', 'no-store').code(200).send();
  });
}

import { headerValues } from '../http/header-values.js';
import type { FastifyInstance } from 'fastify';
import { clientAddress } from '../http/client-ip.js';
import { bodyResources, formParams } from '../http/form.js';
import type { OAuthContext } from '../oauth/context.js';
import { PAR_PATH, pushAuthorizationRequest } from '../oauth/par.js';

/** POST /oauth/par (RFC 9126 §2): 201 with the request_uri (§2.2), never cached. */
export async function parRoutes(app: FastifyInstance, ctx: OAuthContext): Promise<void> {
  app.post(PAR_PATH, async (req, reply) => {
    const answer = await pushAuthorizationRequest(
      ctx,
      formParams(req),
      req.headers.authorization,
      clientAddress(req),
      headerValues(req, 'dpop'),
      bodyResources(req),
    );
    return reply.code(201).header('cache-control', 'no-store').header('pragma', 'no-cache').send(answer);
  });
}

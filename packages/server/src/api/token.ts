import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sendErrorAnswer } from '../http/errors.js';
import { formParams } from '../http/form.js';
import type { OAuthContext } from '../oauth/context.js';
import { OAuthError, STORE_UNAVAILABLE } from '../oauth/errors.js';
import { tokenRequest } from '../oauth/token.js';
import { isStoreUnavailable } from '../store/unavailable.js';

/** POST /oauth/token (RFC 6749 §3.2, §5). */
export async function tokenRoutes(app: FastifyInstance, ctx: OAuthContext): Promise<void> {
  app.post('/oauth/token', async (req: FastifyRequest, reply: FastifyReply) => {
    try {
      const outcome = await tokenRequest(ctx, formParams(req), req.headers.authorization);
      if (outcome instanceof OAuthError) return sendErrorAnswer(reply, outcome);
      return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(outcome);
    } catch (err) {
      // Protocol errors are answered here, without Fastify's error path, and so is a store that failed or did
      // not answer in time (503 temporarily_unavailable: during an outage every poll gets it); a malformed
      // form goes to the context's error handler (invalid_request); anything else is a bug.
      if (err instanceof OAuthError) return sendErrorAnswer(reply, err);
      if (!isStoreUnavailable(err)) throw err;
      req.log.warn({ reqId: req.id, reason: (err as Error).message }, 'store unavailable');
      return sendErrorAnswer(reply, STORE_UNAVAILABLE);
    }
  });
}

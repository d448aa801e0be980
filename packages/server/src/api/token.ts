import { headerValues } from '../http/header-values.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { clientAddress } from '../http/client-ip.js';
import { sendErrorAnswer } from '../http/errors.js';
import { bodyResources, FormError, formParams } from '../http/form.js';
import type { OAuthContext } from '../oauth/context.js';
import { DPOP_NONCE_HEADER } from '../oauth/dpop.js';
import { OAuthError, STORE_UNAVAILABLE } from '../oauth/errors.js';
import { tokenRequest } from '../oauth/token.js';
import { isStoreUnavailable } from '../store/unavailable.js';

/**
 * POST /oauth/token (RFC 6749 §3.2, §5). Every answer decided here is
 * counted in the metrics: tokens by grant type, errors by error code. A
 * DPoP-bound answer carries the current server nonce (RFC 9449 §8), so the
 * client's next proof has it.
 */
export async function tokenRoutes(app: FastifyInstance, ctx: OAuthContext): Promise<void> {
  const { metrics } = ctx;
  app.post('/oauth/token', async (req: FastifyRequest, reply: FastifyReply) => {
    try {
      const params = formParams(req);
      const outcome = await tokenRequest(
        ctx,
        params,
        req.headers.authorization,
        clientAddress(req),
        headerValues(req, 'dpop'),
        bodyResources(req),
      );
      if (outcome instanceof OAuthError) {
        metrics.tokenError(outcome.error);
        return sendErrorAnswer(reply, outcome);
      }
      // A grant ran, so grant_type named one the endpoint serves.
      metrics.tokenIssued(params.grant_type!);
      if (outcome.token_type === 'DPoP' && ctx.config.dpopNonce) reply.header(DPOP_NONCE_HEADER, ctx.dpopNonces.current());
      return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(outcome);
    } catch (err) {
      // Protocol errors are answered here, without Fastify's error path, and so is a store that failed or did
      // not answer in time (503 temporarily_unavailable: during an outage every poll gets it); a malformed
      // form goes to the context's error handler (invalid_request); anything else is a bug (server_error).
      if (err instanceof OAuthError) {
        metrics.tokenError(err.error);
        return sendErrorAnswer(reply, err);
      }
      if (isStoreUnavailable(err)) {
        metrics.tokenError(STORE_UNAVAILABLE.error);
        req.log.warn({ reqId: req.id, reason: (err as Error).message }, 'store unavailable');
        return sendErrorAnswer(reply, STORE_UNAVAILABLE);
      }
      metrics.tokenError(err instanceof FormError ? 'invalid_request' : 'server_error');
      throw err;
    }
  });
}

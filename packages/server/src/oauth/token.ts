import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { isParsedForm } from '../http/form.js';
import { authenticateClient } from './client-auth.js';
import { InvalidRequest, OAuthError, STORE_UNAVAILABLE, UnauthorizedClient, UnsupportedGrantType, sendOAuthError } from './errors.js';
import { authorizationCodeGrant } from './grants/authorization-code.js';
import { deviceCodeGrant } from './grants/device-code.js';
import { refreshTokenGrant } from './grants/refresh-token.js';
import type { TokenResponse } from './tokens.js';
import type { Application, GrantType } from '../store/store.js';
import { isStoreUnavailable } from '../store/unavailable.js';

/**
 * A grant's outcome: tokens, or a protocol error. Errors are thrown, except
 * the expected answers of a device poll (authorization_pending, slow_down),
 * which are returned: one comes back for nearly every poll, and an error
 * thrown through two async functions costs more than the rest of the answer.
 */
type GrantHandler = (ctx: AppContext, app: Application, params: Readonly<Record<string, string>>) => Promise<TokenResponse | OAuthError>;

/** The grant handlers by `grant_type`; each is also a grant type an application must be allowed. */
export const GRANT_HANDLERS: Partial<Record<GrantType, GrantHandler>> = {
  authorization_code: authorizationCodeGrant,
  'urn:ietf:params:oauth:grant-type:device_code': deviceCodeGrant,
  refresh_token: refreshTokenGrant,
};

/** Reads the strict form body every OAuth POST endpoint requires (RFC 6749 §3.2). */
export function formParams(req: FastifyRequest): Readonly<Record<string, string>> {
  if (!isParsedForm(req.body)) {
    throw new InvalidRequest('the request body must be application/x-www-form-urlencoded');
  }
  if (req.body.repeated.size > 0) {
    const [first] = req.body.repeated;
    throw new InvalidRequest(`parameter ${first} is repeated (RFC 6749 §3.2)`);
  }
  return req.body.params;
}

/** POST /oauth/token (RFC 6749 §3.2, §5). */
export async function tokenRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  app.post('/oauth/token', async (req: FastifyRequest, reply: FastifyReply) => {
    try {
      return await token(ctx, req, reply);
    } catch (err) {
      // Protocol errors are answered here, without Fastify's error path, and so is a store that failed or did
      // not answer in time (503 temporarily_unavailable: during an outage every poll gets it); anything else is a bug.
      if (err instanceof OAuthError) return sendOAuthError(reply, err);
      if (!isStoreUnavailable(err)) throw err;
      req.log.warn({ reqId: req.id, reason: (err as Error).message }, 'store unavailable');
      return sendOAuthError(reply, STORE_UNAVAILABLE);
    }
  });
}

/** One token request; protocol errors are thrown as OAuthError. */
async function token(ctx: AppContext, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const params = formParams(req);
  const grantType = params.grant_type;
  if (!grantType) throw new InvalidRequest('grant_type is missing');
  const handler = Object.hasOwn(GRANT_HANDLERS, grantType) ? GRANT_HANDLERS[grantType as GrantType] : undefined;
  if (!handler) throw new UnsupportedGrantType(`grant_type ${grantType} is not supported`);
  const client = await authenticateClient(ctx.store, req.headers.authorization, params);
  if (!client.grantTypes.includes(grantType as GrantType)) {
    throw new UnauthorizedClient(`this application may not use the ${grantType} grant`);
  }
  const outcome = await handler(ctx, client, params);
  if (outcome instanceof OAuthError) return sendOAuthError(reply, outcome);
  return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(outcome);
}

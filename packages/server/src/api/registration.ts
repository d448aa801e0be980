import type { FastifyInstance, FastifyReply } from 'fastify';
import { clientAddress } from '../http/client-ip.js';
import { jsonBody, parseJson } from '../http/json.js';
import type { OAuthContext } from '../oauth/context.js';
import { deleteClient, readClient, REGISTRATION_PATH, registerClient, updateClient } from '../oauth/dynamic-registration.js';
import { apiErrorHandler, toRegistrationError } from './errors.js';

type WithClientId = { Params: { clientId: string } };

const noStore = (reply: FastifyReply) => reply.header('cache-control', 'no-store').header('pragma', 'no-cache');

/**
 * POST /oauth/register (RFC 7591 §3) and GET/PUT/DELETE
 * /oauth/register/:clientId (RFC 7592 §2), only when AUTHCLI_REGISTRATION is
 * `open` or `token`: when it is `off` there is no such endpoint (a JSON 404,
 * as for any unknown /oauth/ path) and discovery does not name one. Bodies are
 * application/json only, within the server's body limit; every answer carries
 * credentials and is never cached (RFC 7591 §3.2.1).
 */
export async function registrationRoutes(app: FastifyInstance, ctx: OAuthContext): Promise<void> {
  if (ctx.config.registration === 'off') return;
  app.setErrorHandler(apiErrorHandler(toRegistrationError));
  // In this context only: JSON and nothing else (the form parser the other endpoints use is removed here).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => {
    // RFC 7592 §2.1 and §2.3: reading and deleting take no body. A client that labels its empty body JSON anyway
    // (some HTTP libraries add the header to every request) is not refused for it.
    if ((req.method === 'GET' || req.method === 'DELETE') && (body as Buffer).length === 0) {
      done(null, undefined);
      return;
    }
    try {
      done(null, parseJson(body as Buffer));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  app.post(REGISTRATION_PATH, async (req, reply) => {
    const answer = await registerClient(ctx, jsonBody(req), req.headers.authorization, clientAddress(req));
    return noStore(reply).code(201).send(answer);
  });
  app.get<WithClientId>(`${REGISTRATION_PATH}/:clientId`, async (req, reply) => {
    const answer = await readClient(ctx, req.params.clientId, req.headers.authorization);
    return noStore(reply).send(answer);
  });
  app.put<WithClientId>(`${REGISTRATION_PATH}/:clientId`, async (req, reply) => {
    const answer = await updateClient(ctx, req.params.clientId, jsonBody(req), req.headers.authorization);
    return noStore(reply).send(answer);
  });
  app.delete<WithClientId>(`${REGISTRATION_PATH}/:clientId`, async (req, reply) => {
    await deleteClient(ctx, req.params.clientId, req.headers.authorization);
    return noStore(reply).code(204).send();
  });
}

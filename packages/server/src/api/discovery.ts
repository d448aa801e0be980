import { OAUTH_AUTHORIZATION_SERVER_PATH, OPENID_CONFIGURATION_PATH } from '@authcli/protocol';
import type { FastifyInstance } from 'fastify';
import type { OAuthContext } from '../oauth/context.js';
import { metadata } from '../oauth/discovery.js';

/** GET /.well-known/openid-configuration, /.well-known/oauth-authorization-server and /oauth/jwks. */
export async function discoveryRoutes(app: FastifyInstance, ctx: OAuthContext): Promise<void> {
  const doc = metadata(ctx);
  for (const path of [OPENID_CONFIGURATION_PATH, OAUTH_AUTHORIZATION_SERVER_PATH]) {
    app.get(path, async (_req, reply) => {
      reply.header('cache-control', 'public, max-age=300');
      return doc;
    });
  }
  app.get('/oauth/jwks', async (_req, reply) => {
    reply.header('cache-control', 'public, max-age=60').type('application/jwk-set+json; charset=utf-8');
    return ctx.keys.jwks();
  });
}

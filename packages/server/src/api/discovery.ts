import { OAUTH_AUTHORIZATION_SERVER_PATH, OPENID_CONFIGURATION_PATH } from '@authcli/protocol';
import type { FastifyInstance } from 'fastify';
import type { OAuthContext } from '../oauth/context.js';
import { metadata } from '../oauth/discovery.js';
import type { ResourceCatalog } from '../store/store.js';

/** GET /.well-known/openid-configuration, /.well-known/oauth-authorization-server and /oauth/jwks. */
export async function discoveryRoutes(app: FastifyInstance, ctx: OAuthContext): Promise<void> {
  // The document lists every API's scopes (scopes_supported), so it is made again when the resources change. It
  // is served from memory and brought up to date behind the answer (at most one read at a time, the store's copy
  // of the resources answering within RESOURCE_CACHE_MS): discovery never waits on the database, and with the
  // database gone clients keep discovering the endpoints. A change shows from the next request on; the document
  // is cacheable for 5 minutes anyway.
  let made: { doc: ReturnType<typeof metadata>; from: ResourceCatalog | undefined } = { doc: metadata(ctx), from: undefined };
  let reading: Promise<void> | undefined;
  const refresh = () => {
    reading ??= ctx.store.resources
      .catalog()
      .then(
        (catalog) => {
          if (catalog !== made.from) made = { doc: metadata(ctx, catalog), from: catalog };
        },
        (err: unknown) => app.log.warn({ reason: (err as Error).message }, 'discovery: resources unavailable, the last document served'),
      )
      .finally(() => {
        reading = undefined;
      });
    return reading;
  };
  app.addHook('onReady', async () => {
    await refresh();
  });
  for (const path of [OPENID_CONFIGURATION_PATH, OAUTH_AUTHORIZATION_SERVER_PATH]) {
    app.get(path, async (_req, reply) => {
      void refresh();
      reply.header('cache-control', 'public, max-age=300');
      return made.doc;
    });
  }
  app.get('/oauth/jwks', async (_req, reply) => {
    reply.header('cache-control', 'public, max-age=60').type('application/jwk-set+json; charset=utf-8');
    return ctx.keys.jwks();
  });
}

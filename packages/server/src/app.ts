import cookie from '@fastify/cookie';
import cors from '@fastify/cors';
import csrf from '@fastify/csrf-protection';
import helmet from '@fastify/helmet';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { ServerConfig } from './config/config.js';
import type { AppContext } from './context.js';
import { discoveryRoutes } from './oauth/discovery.js';
import { trustProxyOption } from './http/client-ip.js';
import { FormError, parseForm } from './http/form.js';
import { InvalidRequest, OAuthError, ServerError, sendOAuthError } from './oauth/errors.js';
import { KeyRing } from './oauth/keys.js';
import { TokenIssuer } from './oauth/tokens.js';
import { tokenRoutes } from './oauth/token.js';
import { deviceAuthorizationRoutes } from './oauth/device-authorization.js';
import { revocationRoutes } from './oauth/revocation.js';
import { userinfoRoutes } from './oauth/userinfo.js';
import type { Store } from './store/store.js';
import { pageErrorHandler, pageRoutes } from './web/pages.js';
import { devicePageRoutes } from './web/device.js';
import { dashboardRoutes } from './web/dashboard.js';
import { playgroundRoutes } from './web/playground.js';
import { Continuations } from './web/continuation.js';
import { Sessions } from './web/session.js';

/** Maps anything thrown in a JSON endpoint to an RFC 6749 §5.2 error; never leaks internals. */
export function toOAuthError(err: Error & { statusCode?: number; code?: string }): OAuthError {
  if (err instanceof OAuthError) return err;
  if (err instanceof FormError) return new InvalidRequest(err.message);
  if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return new InvalidRequest('the request body must be application/x-www-form-urlencoded');
  }
  if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return new InvalidRequest('the request body is too large', { status: 413 });
  }
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
    return new InvalidRequest(err.message, { status: err.statusCode });
  }
  return new ServerError('the server could not complete the request');
}

async function oauthApi(app: FastifyInstance, ctx: AppContext): Promise<void> {
  app.setErrorHandler(async (err: Error & { statusCode?: number; code?: string }, req, reply) => {
    const oauthErr = toOAuthError(err);
    if (oauthErr.status >= 500) req.log.error({ err, reqId: req.id }, 'request failed');
    return sendOAuthError(reply, oauthErr);
  });
  // Browser-based clients on other origins call these endpoints (OIDC Discovery, RFC 8414, token, userinfo,
  // revocation). Nothing here uses cookies, so any origin may read the answers; credentials are never allowed.
  // With one fixed origin (`*`) an actual answer needs exactly one static header: set here, on every answer of
  // this context (errors included). @fastify/cors answers the preflights; it sits in a context of its own that
  // holds only its OPTIONS route, because its hook rebuilds its options on every request it sees (measured:
  // 4 % of a device poll's server time when it saw them all).
  app.addHook('onRequest', (_req, reply, done) => {
    reply.header('access-control-allow-origin', '*');
    done();
  });
  await app.register(async (preflight) => {
    await preflight.register(cors, { origin: '*', methods: ['GET', 'POST'], allowedHeaders: ['authorization', 'content-type'], credentials: false, maxAge: 600 });
  });
  await app.register(discoveryRoutes, ctx);
  await app.register(tokenRoutes, ctx);
  await app.register(deviceAuthorizationRoutes, ctx);
  await app.register(revocationRoutes, ctx);
  await app.register(userinfoRoutes, ctx);
}

/**
 * Builds the server (no listen): the OAuth/OIDC endpoints, the end-user
 * pages, health probes. Creates the signing keys on first use of a store.
 */
export async function buildApp(config: ServerConfig, store: Store): Promise<FastifyInstance> {
  const keys = new KeyRing(store, config.now, Math.max(config.accessTokenTtlSeconds, config.idTokenTtlSeconds) * 1000);
  await keys.init();
  const ctx: AppContext = {
    config,
    store,
    keys,
    tokens: new TokenIssuer(config, keys, config.accessTokenAlg),
    sessions: new Sessions(config, store),
    continuations: new Continuations(config, store.db),
  };
  const https = config.issuer.startsWith('https:');

  // Requests carry secrets in their query strings (an authorization code at a callback, a user code) and
  // bodies: requests are logged at debug and trace only, and then by method and path, never the query. Below
  // debug, errors are logged with the request id alone, so no request needs a child logger of its own (pino
  // builds one per request otherwise, for its request-id binding).
  const requestLogging = config.logLevel === 'debug' || config.logLevel === 'trace';
  const app = Fastify({
    logger:
      config.logLevel === 'silent'
        ? false
        : { level: config.logLevel, serializers: { req: (req: FastifyRequest) => ({ method: req.method, path: req.url.split('?', 1)[0] }) } },
    bodyLimit: config.bodyLimit,
    trustProxy: trustProxyOption(config.trustProxy),
    logController: new LogController({ disableRequestLogging: !requestLogging }),
    ...(requestLogging ? {} : { childLoggerFactory: (logger: FastifyBaseLogger) => logger }),
    return503OnClosing: true,
    forceCloseConnections: true,
  });

  // Only strict form bodies are accepted anywhere; any other content type is a 4xx.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'buffer' }, (_req, body, done) => {
    try {
      done(null, parseForm(body as Buffer));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  // Every answer is nosniff (the pages get the full set of security headers from helmet). Set before routing,
  // so errors carry it too.
  app.addHook('onRequest', (_req, reply, done) => {
    reply.header('x-content-type-options', 'nosniff');
    done();
  });

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) => {
    try {
      await store.ping();
      return { status: 'ready' };
    } catch {
      return reply.code(503).send({ status: 'unavailable' });
    }
  });

  await app.register(oauthApi, ctx);
  // Cookies (the session, CSRF) belong to the pages only: the protocol endpoints neither read nor set any,
  // and keeping the cookie hooks off them saves work on every token request.
  await app.register(async (pages) => {
    await pages.register(cookie);
    await pages.register(csrf, {
      cookieKey: https ? '__Host-authcli_csrf' : 'authcli_csrf',
      cookieOpts: { path: '/', sameSite: 'lax', httpOnly: true, secure: https },
      getToken: (req) => {
        const body = req.body as { params?: Record<string, string> } | undefined;
        return body?.params?._csrf ?? '';
      },
    });
    await pages.register(helmet, {
      contentSecurityPolicy: {
        useDefaults: false,
        directives: {
          defaultSrc: ["'self'"],
          scriptSrc: ["'self'"],
          styleSrc: ["'self'"],
          imgSrc: ["'self'", 'data:'],
          connectSrc: ["'self'"],
          objectSrc: ["'none'"],
          baseUri: ["'none'"],
          frameAncestors: ["'none'"],
        },
      },
      referrerPolicy: { policy: 'no-referrer' },
      strictTransportSecurity: https ? { maxAge: 31536000, includeSubDomains: false } : false,
      crossOriginResourcePolicy: { policy: 'same-site' },
    });

    pages.setErrorHandler(pageErrorHandler(ctx));
    // A path segment can carry NUL too (`/dashboard/apps/%00`), which PostgreSQL text cannot hold: a 400 page
    // before any route runs. Queries and bodies are refused by the strict form parser.
    pages.addHook('onRequest', async (req) => {
      if (req.url.includes('%00')) throw new FormError('a page address must not contain NUL');
    });
    await pages.register(pageRoutes, ctx);
    await pages.register(devicePageRoutes, ctx);
    await pages.register(dashboardRoutes, ctx);
    await pages.register(playgroundRoutes, ctx);
  });
  return app;
}

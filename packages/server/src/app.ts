import { adminRoutes } from './admin/routes.js';
import { issuerHostRedirect } from './web/issuer-host.js';
import { ensureAdminResource } from './admin/bootstrap.js';
import { UpstreamIssuers } from './oauth/workloads.js';
import cookie from '@fastify/cookie';
import { connectorRoutes } from './web/connectors.js';
import cors, { type FastifyCorsOptions } from '@fastify/cors';
import csrf from '@fastify/csrf-protection';
import helmet from '@fastify/helmet';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { ServerConfig } from './config/config.js';
import { METRICS_MAX_CONNECTIONS, READY_TIMEOUT_MS, passwordHashParams } from './config/defaults.js';
import type { WebContext } from './web/context.js';
import { discoveryRoutes } from './api/discovery.js';
import { apiErrorHandler } from './api/errors.js';
import { trustProxyOption } from './http/client-ip.js';
import { FormError, parseForm } from './http/form.js';
import { sendNotFoundProblem } from './http/errors.js';
import type { OAuthContext } from './oauth/context.js';
import { DpopNonces } from './oauth/dpop.js';
import { DpopKeys } from './oauth/dpop-signature.js';
import { serverKeyRing } from './oauth/keys.js';
import { BackchannelDelivery } from './oauth/backchannel-delivery.js';
import { BackchannelLogout } from './oauth/backchannel-logout.js';
import { ClientJwks } from './oauth/client-jwks.js';
import { AbuseLimits } from './oauth/limits.js';
import { type Metrics, NO_METRICS } from './util/metrics.js';
import { PasswordHasher } from './util/password-pool.js';
import { TokenIssuer } from './oauth/tokens.js';
import { tokenRoutes } from './api/token.js';
import { deviceAuthorizationRoutes } from './api/device-authorization.js';
import { logoutRoutes } from './web/logout.js';
import { introspectionRoutes } from './api/introspection.js';
import { registrationRoutes } from './api/registration.js';
import { parRoutes } from './api/par.js';
import { revocationRoutes } from './api/revocation.js';
import { userinfoRoutes } from './api/userinfo.js';
import type { Store } from './store/store.js';
import { frameworkErrorHandler, pageErrorHandler } from './web/page-errors.js';
import { pageRoutes } from './web/pages.js';
import { devicePageRoutes } from './web/device.js';
import { dashboardRoutes } from './web/dashboard.js';
import { accountRoutes } from './web/account.js';
import { Flash } from './web/flash.js';
import { passkeyRoutes } from './web/passkeys.js';
import { playgroundRoutes } from './web/playground.js';
import { Continuations } from './web/continuation.js';
import { Sessions } from './web/session.js';
import { TrustedDevices } from './web/trusted-device.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The back-channel logout outbox's worker of this instance (tests wait on it: `settle()`). */
    backchannelDelivery: BackchannelDelivery;
  }
}

/** A Fastify route URL (`/oauth/register/:clientId`) as a regular expression for request paths. */
function routePattern(url: string): RegExp {
  const escaped = url
    .split(/(:[A-Za-z_]\w*)/)
    .map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  return new RegExp(`^${escaped.join('')}$`);
}

async function oauthApi(app: FastifyInstance, ctx: OAuthContext): Promise<void> {
  app.setErrorHandler(apiErrorHandler());
  // Browser-based clients on other origins call these endpoints (OIDC Discovery, RFC 8414, token, userinfo,
  // revocation). Nothing here uses cookies, so any origin may read the answers; credentials are never allowed.
  // With one fixed origin (`*`) an actual answer needs exactly one static header: set here, on every answer of
  // this context (errors included). @fastify/cors answers the preflights; it sits in a context of its own that
  // holds only its OPTIONS route, because its hook rebuilds its options on every request it sees (measured:
  // 4 % of a device poll's server time when it saw them all). A browser client using DPoP (RFC 9449) sends
  // the `DPoP` header and must read `DPoP-Nonce` (§8) and the `WWW-Authenticate` challenges (§7.1).

  // Preflights are answered for these routes only: a preflight for a page (/account, /dashboard, ...) gets 404
  // like any unknown route, so no page claims to be readable from other origins. The set is the routes this
  // context registers, collected as they are, so a new endpoint is covered without a list to keep.
  const corsRoutes: RegExp[] = [];
  app.addHook('onRoute', (route) => {
    if (route.method !== 'OPTIONS' && !route.url.includes('*')) corsRoutes.push(routePattern(route.url));
  });
  const isCorsPath = (url: string | undefined) => {
    const path = (url ?? '').split('?', 1)[0]!;
    return corsRoutes.some((r) => r.test(path));
  };
  app.addHook('onRequest', (req, reply, done) => {
    // The preflight route takes every path: only the protocol endpoints' preflights get the header.
    if (req.method !== 'OPTIONS' || isCorsPath(req.url)) {
      reply.header('access-control-allow-origin', '*').header('access-control-expose-headers', 'dpop-nonce, www-authenticate');
    }
    done();
  });
  await app.register(async (preflight) => {
    await preflight.register(cors, () => (req: FastifyRequest, callback: (error: Error | null, options: FastifyCorsOptions) => void) => {
      callback(null, {
        origin: isCorsPath(req.url) ? '*' : false,
        // PUT and DELETE: the client configuration endpoint (RFC 7592 §2), when registration is on.
        methods: ['GET', 'POST', 'PUT', 'DELETE'],
        allowedHeaders: ['authorization', 'content-type', 'dpop'],
        credentials: false,
        maxAge: 600,
      });
    });
  });
  await app.register(discoveryRoutes, ctx);
  await app.register(tokenRoutes, ctx);
  await app.register(deviceAuthorizationRoutes, ctx);
  await app.register(revocationRoutes, ctx);
  await app.register(introspectionRoutes, ctx);
  await app.register(userinfoRoutes, ctx);
  await app.register(registrationRoutes, ctx);
  await app.register(parRoutes, ctx);
}

/**
 * The time limits of a connection, all enforced by Node's HTTP server on its
 * sockets (no hook or timer of ours on a request):
 * - `headersTimeout`: the request line and headers must arrive within it
 *   (a slowloris connection that trickles header bytes is cut);
 * - `requestTimeout`: the whole request, body included (a Content-Length
 *   whose body never comes is cut); it bounds the headers too, so the headers
 *   timeout is never longer;
 * - `connectionsCheckingInterval`: how often Node looks for connections past
 *   those two; its default (30 s) would let a stalled request live up to
 *   30 s past its timeout, so it is a quarter of the shorter one (a cut comes
 *   at most 25 % late; the check is one pass over the connections, in C++);
 * - `keepAliveTimeout`: an idle connection between requests is closed;
 * - `connectionTimeout`: a socket with no traffic at all for longer than
 *   a request may take to arrive plus one wait on the database is closed
 *   whatever it is doing, the backstop for a client that stops reading its
 *   answer.
 * Node answers a request cut by the first two with 408 and closes it.
 */
function connectionLimits(config: ServerConfig) {
  const requestTimeout = config.requestTimeoutMs;
  const headersTimeout = Math.min(config.headersTimeoutMs, requestTimeout);
  return {
    http: { headersTimeout, requestTimeout, connectionsCheckingInterval: Math.max(100, Math.floor(headersTimeout / 4)) },
    requestTimeout,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    connectionTimeout: requestTimeout + config.dbTimeoutMs,
  };
}

/**
 * Readiness: the store answers within {@link READY_TIMEOUT_MS} and its schema
 * has every migration this version needs. A probe that waited on a stalled
 * database as long as the requests do (the pool's own timeouts) would tell
 * the load balancer too late.
 */
async function readiness(store: Store): Promise<'ready' | 'schema_outdated' | 'store_timeout' | 'store_error'> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'store_timeout'>((resolve) => {
    timer = setTimeout(() => resolve('store_timeout'), READY_TIMEOUT_MS);
  });
  const check = store.schemaIsCurrent().then(
    (current) => (current ? ('ready' as const) : ('schema_outdated' as const)),
    () => 'store_error' as const,
  );
  try {
    return await Promise.race([check, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** What {@link buildApp} may be given besides the config and the store. */
export interface AppOptions {
  /**
   * The metrics to count into (AUTHCLI_METRICS_PORT is set; they are served
   * by {@link buildMetricsApp}). Without them no metrics hook is registered
   * and the protocol logic reports to NO_METRICS: nothing on any request.
   */
  metrics?: Metrics;
  /**
   * True once a shutdown has begun (operator/start.ts): /readyz answers 503 `shutting_down` so load balancers
   * stop sending, while everything else is still served, with `Connection: close` so kept-alive clients move.
   */
  draining?: () => boolean;
}

/**
 * Builds the server (no listen): the OAuth/OIDC endpoints, the end-user
 * pages, health probes. Creates the signing keys on first use of a store.
 */
export async function buildApp(config: ServerConfig, store: Store, options: AppOptions = {}): Promise<FastifyInstance> {
  const { metrics, draining = () => false } = options;
  const keys = serverKeyRing(store, config);
  await keys.init();
  await ensureAdminResource(store, config.issuer, config.now());
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
        : {
            level: config.logLevel,
            serializers: { req: (req: FastifyRequest) => ({ method: req.method, path: req.url.split('?', 1)[0] }) },
          },
    bodyLimit: config.bodyLimit,
    trustProxy: trustProxyOption(config.trustProxy),
    logController: new LogController({ disableRequestLogging: !requestLogging }),
    ...(requestLogging ? {} : { childLoggerFactory: (logger: FastifyBaseLogger) => logger }),
    return503OnClosing: true,
    frameworkErrors: frameworkErrorHandler(),
    // Route schemas (the admin API's bodies): unknown members are refused, and nothing is coerced or filled in.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allowUnionTypes: true } },
    // On close, idle keep-alive connections are closed and requests in flight finish (graceful shutdown, main.ts
    // cuts the rest after AUTHCLI_SHUTDOWN_GRACE); `true` would cut them all at once.
    forceCloseConnections: 'idle',
    ...connectionLimits(config),
  });
  const limits = new AbuseLimits(store, config.now, config.limits, metrics ?? NO_METRICS);
  // Logout tokens go out from the store's outbox, in the background (oauth/backchannel-delivery.ts): every
  // instance polls it for what is due; give-ups go to the log.
  const delivery = new BackchannelDelivery({ config, store, keys }, metrics ?? NO_METRICS, app.log);
  app.decorate('backchannelDelivery', delivery);
  const backchannel = new BackchannelLogout({ config, store, keys }, delivery, app.log);
  const ctx: WebContext = {
    config,
    store,
    keys,
    tokens: new TokenIssuer(config, keys, config.accessTokenAlg),
    sessions: new Sessions(config, store, backchannel),
    passwords: new PasswordHasher(config.passwordHashThreads, passwordHashParams(config.passwordHashCost), {
      deadlineMs: config.passwordHashQueueDeadlineMs,
      perClient: config.passwordHashesPerClient,
    }),
    limits,
    continuations: new Continuations(config, store.continuations, limits),
    trustedDevices: await TrustedDevices.open(config, store),
    flash: new Flash(config.now),
    metrics: metrics ?? NO_METRICS,
    dpopNonces: await DpopNonces.open(store, config),
    dpopKeys: new DpopKeys(),
    backchannel,
    clientJwks: new ClientJwks(config.now),
    upstreamIssuers: new UpstreamIssuers(config.now),
  };
  app.addHook('onClose', async () => ctx.passwords.close());
  // Logouts still being posted get the shutdown grace to finish; what cannot stays in the outbox, pending.
  app.addHook('onReady', async () => delivery.start());
  app.addHook('onClose', async () => delivery.close(config.shutdownGraceMs));
  // Past the cap Node closes each new connection as soon as it is accepted: a flood of connections costs the
  // server no more descriptors than this, and /readyz and the clients already connected keep being served.
  app.server.maxConnections = config.maxConnections;

  if (metrics) {
    metrics.watchPasswordHashes(ctx.passwords);
    // Every answer, not-found ones and those of every child context included (a hook of the root applies to
    // them all), by Fastify's route pattern: never the URL, which would make a series per path anyone asks for.
    app.addHook('onResponse', (req, reply, done) => {
      metrics.request(req.method, req.routeOptions.url, reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  }

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
    if (draining()) reply.header('connection', 'close');
    done();
  });

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) => {
    if (draining()) return reply.code(503).send({ status: 'unavailable', reason: 'shutting_down' });
    const outcome = await readiness(store);
    return outcome === 'ready' ? { status: 'ready' } : reply.code(503).send({ status: 'unavailable', reason: outcome });
  });

  await app.register(oauthApi, ctx);
  // The admin API (/admin/v1): JSON, its own errors (RFC 9457), no cookies.
  await app.register(adminRoutes, ctx);
  // Cookies (the session, CSRF) belong to the pages only: the protocol endpoints neither read nor set any,
  // and keeping the cookie hooks off them saves work on every token request.
  const onIssuerHost = issuerHostRedirect(new URL(config.issuer));
  await app.register(async (pages) => {
    // A page asked for by another loopback name of this server (127.0.0.1 for localhost) goes to the issuer's host,
    // where its cookies and passkeys are (web/issuer-host.ts).
    pages.addHook('onRequest', async (req, reply) => {
      if (req.method !== 'GET' && req.method !== 'HEAD') return;
      const there = onIssuerHost(req.headers.host, req.url);
      if (there) return reply.redirect(there, 302);
    });
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
    await pages.register(logoutRoutes, ctx);
    await pages.register(devicePageRoutes, ctx);
    await pages.register(dashboardRoutes, ctx);
    await pages.register(playgroundRoutes, ctx);
    await pages.register(accountRoutes, ctx);
    await pages.register(passkeyRoutes, ctx);
    await pages.register(connectorRoutes, ctx);
  });
  return app;
}

/**
 * The metrics listener (AUTHCLI_METRICS_PORT): `GET /metrics` in the
 * Prometheus text format and `GET /healthz`, nothing else (404), so the
 * public listener never serves metrics and this one serves nothing but them.
 * It logs through the main server's logger and closes with it (operator/start.ts).
 */
export function buildMetricsApp(metrics: Metrics, config: ServerConfig, log: FastifyBaseLogger): FastifyInstance {
  const app = Fastify({
    loggerInstance: log,
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    ...connectionLimits(config),
  });
  // A scraper or two: a handful of connections is plenty, and a flood of them costs no more descriptors.
  app.server.maxConnections = METRICS_MAX_CONNECTIONS;
  app.addHook('onRequest', (_req, reply, done) => {
    reply.header('x-content-type-options', 'nosniff');
    done();
  });
  app.get('/metrics', async (_req, reply) => {
    const { contentType, body } = await metrics.exposition();
    return reply.header('content-type', contentType).header('cache-control', 'no-store').send(body);
  });
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.setNotFoundHandler(async (_req, reply) => sendNotFoundProblem(reply));
  return app;
}

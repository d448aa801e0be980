import { shipAuditLog } from '../admin/audit-log.js';
import { lifetimesProblem } from '../oauth/lifetimes.js';
import { say, sayError } from './output.js';
import { passkeyAvailability } from '../web/webauthn.js';
import { databaseHost, openMigrated, SERVED_ISSUER, warn } from './shared.js';
import type { Command } from 'commander';
import type { FastifyInstance } from 'fastify';
import { PURGE_INTERVAL_MS } from '../config/defaults.js';
import { supportedGrantTypes } from '../oauth/grants/registry.js';
import { bootstrapStore } from '../oauth/registration.js';
import { ISSUER_HELP, loadConfig, weakPasswordHashWarning, type ConfigInput } from '../config/config.js';
import { UNENCRYPTED_KEYS_WARNING } from '../oauth/key-encryption.js';
import { loopbackIssuerWarning } from '../http/loopback.js';
import { exposedFolderWarning } from '../store/file-modes.js';
import { parseDatabaseUrl } from '../store/open.js';
import { fapi2Problem } from '../oauth/fapi2.js';
import { bannerLines, type Started } from './banner.js';

/** package.json's version, fixed at build time by tsup's `define` (tsup.config.ts). */
declare const __AUTHCLI_SERVER_VERSION__: string;

/** `host:port`, an IPv6 address in brackets. */
const hostPort = (host: string, port: number) => `${host.includes(':') ? `[${host}]` : host}:${port}`;

/** The port a listening server got (the one asked for, unless that was 0). */
function listeningPort(app: FastifyInstance, asked: number): number {
  const address = app.server.address();
  return address && typeof address === 'object' ? address.port : asked;
}

/** `authcli-server start`: open and migrate the store, serve, and stop gracefully on SIGTERM/SIGINT. */
export function startCommand(cli: Command): void {
  cli
    .command('start')
    .description('run the server')
    .option('--port <port>', 'port to listen on (env PORT, default 8080)')
    .option('--host <host>', 'address to bind (env HOST, default 127.0.0.1; 0.0.0.0 or :: for every interface)')
    .option('--issuer <url>', ISSUER_HELP)
    .option('--database <url>', 'postgres:// URL or SQLite file (env DATABASE_URL, default ./data/authcli.db)')
    .option('--metrics-port <port>', 'serve GET /metrics on a listener of its own at this port (env AUTHCLI_METRICS_PORT, default off)')
    .option('--metrics-host <host>', 'address the metrics listener binds (env AUTHCLI_METRICS_HOST, default 127.0.0.1)')
    .action(async (opts: ConfigInput) => {
      const config = loadConfig(opts);
      // The HTTP server's modules load only here: every other command (users, apps, config, ...) starts without
      // them, in about half the time.
      const [{ buildApp, buildMetricsApp }, { Metrics }] = await Promise.all([import('../app.js'), import('../util/metrics.js')]);
      // Metrics off: no registry, no timed store engine, no hook; nothing on any request.
      const metrics = config.metrics ? new Metrics({ version: __AUTHCLI_SERVER_VERSION__, grantTypes: supportedGrantTypes() }) : undefined;
      const store = await openMigrated(config, { backgroundCheckpoints: true, ...(metrics && { observer: metrics }) });
      shipAuditLog(store, config.audit, { stdout: true, warn });
      let app: FastifyInstance;
      let draining = false;
      try {
        await bootstrapStore(store, config.now());
        // The issuer it serves at, for the operator commands run without AUTHCLI_ISSUER (shared.ts servedIssuer).
        await store.settings.set(SERVED_ISSUER, config.issuer);
        // Refuses (a ConfigError) when the signing keys cannot be opened with the key-encryption key given.
        app = await buildApp(config, store, { metrics, draining: () => draining });
      } catch (err) {
        await store.close();
        throw err;
      }
      const metricsApp = metrics ? buildMetricsApp(metrics, config, app.log) : undefined;
      const loc = parseDatabaseUrl(config.databaseUrl);
      const folderWarning = loc.dialect === 'sqlite' && loc.path !== ':memory:' ? exposedFolderWarning(loc.path) : undefined;
      if (folderWarning) warn(folderWarning);
      if (!config.keyEncryptionKey) warn(UNENCRYPTED_KEYS_WARNING);
      const loopbackWarning = loopbackIssuerWarning(config.host, config.issuer);
      if (loopbackWarning) warn(loopbackWarning);
      const hashWarning = weakPasswordHashWarning(config.passwordHashCost);
      if (hashWarning) warn(hashWarning);
      for (const a of await store.applications.list()) {
        // FAPI 2.0 refuses at the token endpoint what was registered before the mode was on: the operator hears which.
        const problem = config.fapi2 ? fapi2Problem(a) : undefined;
        if (problem) warn(`${a.name} (${a.clientId}) will get no tokens: ${problem}`);
        // An application's own lifetime was checked against the server's of that day: one that no longer holds.
        const lifetimes = lifetimesProblem(a, config);
        if (lifetimes)
          warn(`${a.name} (${a.clientId}): ${lifetimes}; its access tokens outlive its sign-ins until apps update sets them again`);
      }
      // A person at a terminal gets text; anything else (systemd, docker, a pipe) gets JSON log lines only.
      const human = process.stdout.isTTY === true;
      const purge = setInterval(() => {
        store.purgeExpired(config.now(), config.audit.retentionMs).catch((err: unknown) => app.log.warn({ err }, 'purge failed'));
      }, PURGE_INTERVAL_MS);
      purge.unref();
      let closing = false;
      let endDrain: (() => void) | undefined;
      /**
       * SIGTERM/SIGINT: first drain for AUTHCLI_SHUTDOWN_DRAIN (everything is still served, /readyz is 503 so a
       * load balancer stops sending, connections already made or waiting in the backlog get their answers); a
       * second signal ends the drain at once. Then stop accepting connections and close idle ones, let requests
       * in flight finish for up to AUTHCLI_SHUTDOWN_GRACE, cut what is left, close the store (SQLite checkpoints
       * its log into the file) and exit 0: a stop asked for is not a failure.
       */
      const shutdown = async (signal: NodeJS.Signals) => {
        if (closing) {
          endDrain?.();
          return;
        }
        closing = true;
        draining = true;
        clearInterval(purge);
        if (config.shutdownDrainMs > 0) {
          if (human)
            say(`stopping (${signal}): still serving for ${config.shutdownDrainMs / 1000} s while /readyz says 503 (again to skip)`);
          else app.log.info({ signal, drainMs: config.shutdownDrainMs }, 'shutting down: draining (readyz 503)');
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, config.shutdownDrainMs);
            endDrain = () => {
              clearTimeout(timer);
              resolve();
            };
          });
        }
        if (human) say(`stopping: finishing requests in flight, at most ${config.shutdownGraceMs / 1000} s`);
        else app.log.info({ signal, graceMs: config.shutdownGraceMs }, 'shutting down: finishing requests in flight');
        const cut = setTimeout(() => {
          app.log.warn('shutdown grace period over: closing the connections still open');
          app.server.closeAllConnections();
          metricsApp?.server.closeAllConnections();
        }, config.shutdownGraceMs);
        try {
          // The metrics listener closes with the server: a scrape in flight finishes like any request.
          await Promise.all([app.close(), metricsApp?.close()]);
          clearTimeout(cut);
          await store.close();
          process.exitCode = 0;
        } catch (err) {
          for (const line of `authcli-server: shutdown failed: ${(err as Error).stack ?? String(err)}`.split('\n')) sayError(line);
          process.exitCode = 1;
        }
        // Nothing should keep the process alive now; if a handle does, it still ends (unref: no wait when none does).
        setTimeout(() => process.exit(), 1000).unref();
      };
      // `on`, not `once`: Ctrl-C under `pnpm start` reaches the server twice (from the terminal, and passed on by
      // scripts/start.mjs); a repeat while closing changes nothing, where the default action would kill the process.
      process.on('SIGINT', (s) => void shutdown(s));
      process.on('SIGTERM', (s) => void shutdown(s));
      // Fastify logs "Server listening at" as a JSON line; a terminal gets the banner below instead.
      const level = app.log.level;
      if (human) app.log.level = 'warn';
      // Which setting a listener that cannot open comes from, for the one-line error (main.ts listenProblem).
      let settings = '--port or PORT';
      try {
        await app.listen({ port: config.port, host: config.host });
        settings = 'AUTHCLI_METRICS_PORT';
        if (metricsApp && config.metrics) await metricsApp.listen({ port: config.metrics.port, host: config.metrics.host });
      } catch (err) {
        if (err && typeof err === 'object') Object.assign(err, { settings });
        // One listener could not open (a port in use): the other must not keep the process alive.
        clearInterval(purge);
        await Promise.all([app.close(), metricsApp?.close()]);
        await store.close();
        throw err;
      }
      app.log.level = level;
      const users = await store.users.count();
      const port = listeningPort(app, config.port);
      const passkeys = passkeyAvailability(config.issuer);
      const started: Started = {
        version: __AUTHCLI_SERVER_VERSION__,
        issuer: config.issuer,
        store:
          store.dialect === 'sqlite'
            ? `SQLite ${loc.dialect === 'sqlite' ? loc.path : config.databaseUrl}`
            : `PostgreSQL ${databaseHost(config.databaseUrl)}`,
        listening: hostPort(config.host, port),
        dashboard: `${config.issuer}/dashboard`,
        // Set by bin/authcli-server.cjs before libuv starts its pool (RS256 signatures, `users add` hashes).
        signingThreads: process.env.UV_THREADPOOL_SIZE || '4 (libuv default)',
        users,
        // Whether people can add passkeys here, and if not, why (the issuer's host: web/webauthn.ts).
        passkeys: passkeys.available ? 'available' : `unavailable: ${passkeys.reason}`,
        // Only when on: where the scraper reads GET /metrics.
        ...(metricsApp &&
          config.metrics && { metrics: `http://${hostPort(config.metrics.host, listeningPort(metricsApp, config.metrics.port))}/metrics` }),
      };
      if (!human) {
        app.log.info(started, 'authcli-server started');
        return;
      }
      const run = { script: process.argv[1], cwd: process.cwd() };
      for (const line of bannerLines(started, config.databaseUrl, run)) say(line);
    });
}

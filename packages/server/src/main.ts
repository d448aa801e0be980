#!/usr/bin/env node
import { Command, CommanderError, Option } from 'commander';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { PURGE_INTERVAL_MS } from './config/defaults.js';
import { addUser, bootstrapStore, DEFAULT_GRANT_TYPES, InputError, registerApplication, resetUserPassword } from './bootstrap.js';
import { ConfigError, loadConfig, type ConfigInput, type ServerConfig } from './config/config.js';
import { UNENCRYPTED_KEYS_WARNING } from './oauth/key-encryption.js';
import { rotateKeys } from './oauth/keys.js';
import { ipSubject } from './http/client-ip.js';
import { loopbackIssuerWarning } from './http/loopback.js';
import { accountCounterKeys, describeCounter, ipCounterKeys } from './oauth/limits.js';
import { backupStore } from './store/backup.js';
import { exposedFolderWarning } from './store/file-modes.js';
import { openStore, parseDatabaseUrl, type OpenOptions } from './store/open.js';
import { StoreError, type Store } from './store/store.js';
import { isStoreUnavailable } from './store/unavailable.js';

/** package.json's version, fixed at build time by tsup's `define` (tsup.config.ts). */
declare const __AUTHCLI_SERVER_VERSION__: string;

/** Expected failures print one line and exit 1; anything else is a bug and prints its stack. */
function isExpected(err: unknown): err is Error {
  return err instanceof ConfigError || err instanceof InputError || err instanceof StoreError;
}

/** Said on standard error: not part of any command's output, and shown whatever LOG_LEVEL is. */
function warn(message: string): void {
  process.stderr.write(`authcli-server: warning: ${message}\n`);
}

/**
 * Opens and migrates the store. A database that cannot be reached (refused,
 * or silent past the database timeout) is one line naming where it was
 * looked for, not a stack or a wait without end.
 */
async function openMigrated(config: ServerConfig, options: OpenOptions = {}): Promise<Store> {
  const store = await openStore(config.databaseUrl, { ...options, timeoutMs: config.dbTimeoutMs });
  try {
    await store.migrate();
  } catch (err) {
    await store.close().catch(() => undefined);
    const cause = err instanceof StoreError ? err.cause : err;
    if (store.dialect === 'postgres' && isStoreUnavailable(cause)) {
      // pg's timeouts carry no code; a refusal or a server's own error does, and came at once.
      const waited = (cause as { code?: unknown }).code === undefined ? ` (no answer within AUTHCLI_DB_TIMEOUT, ${config.dbTimeoutMs / 1000} s)` : '';
      throw new StoreError('unavailable', `cannot reach the database at ${databaseHost(config.databaseUrl)}: ${(cause as Error).message}${waited}`, { cause });
    }
    throw err;
  }
  return store;
}

/** host:port of a PostgreSQL URL, for messages (never the user or password). */
function databaseHost(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname || 'localhost'}:${u.port || '5432'}`;
  } catch {
    return 'the configured address';
  }
}

async function withStore<T>(database: string | undefined, fn: (store: Store, config: ServerConfig) => Promise<T>): Promise<T> {
  const config = loadConfig({ database });
  const store = await openMigrated(config);
  try {
    await bootstrapStore(store, Date.now());
    return await fn(store, config);
  } finally {
    await store.close();
  }
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.from(c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/** Prompts on the terminal without echoing what is typed. */
async function promptHidden(prompt: string): Promise<string> {
  if (!process.stdin.isTTY) throw new InputError('no terminal to ask for the password: pipe it with --password-stdin');
  const { read } = await import('read');
  return read({ prompt, silent: true, replace: '', output: process.stderr });
}

const collect = (v: string, prev: string[] = []) => [...prev, v];

/** A text table: a header row, columns padded to their widest cell. */
function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  for (const row of [header, ...rows]) process.stdout.write(`${row.map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')}\n`);
}

export function program(): Command {
  const cli = new Command('authcli-server')
    .description('OAuth 2.0 / OpenID Connect authorization server for authcli')
    .version(__AUTHCLI_SERVER_VERSION__)
    .showHelpAfterError()
    .exitOverride();

  cli
    .command('start')
    .description('run the server')
    .option('--port <port>', 'port to listen on (env PORT, default 8080)')
    .option('--host <host>', 'address to bind (env HOST, default 127.0.0.1)')
    .option('--issuer <url>', 'public base URL (env AUTHCLI_ISSUER, default http://<host>:<port>)')
    .option('--database <url>', 'postgres:// URL or SQLite file (env DATABASE_URL, default ./data/authcli.db)')
    .action(async (opts: ConfigInput) => {
      const config = loadConfig(opts);
      const store = await openMigrated(config, { backgroundCheckpoints: true });
      let app: FastifyInstance;
      try {
        await bootstrapStore(store, config.now());
        // Refuses (a ConfigError) when the signing keys cannot be opened with the key-encryption key given.
        app = await buildApp(config, store);
      } catch (err) {
        await store.close();
        throw err;
      }
      const loc = parseDatabaseUrl(config.databaseUrl);
      const folderWarning = loc.dialect === 'sqlite' && loc.path !== ':memory:' ? exposedFolderWarning(loc.path) : undefined;
      if (folderWarning) warn(folderWarning);
      if (!config.keyEncryptionKey) warn(UNENCRYPTED_KEYS_WARNING);
      const loopbackWarning = loopbackIssuerWarning(config.host, config.issuer);
      if (loopbackWarning) warn(loopbackWarning);
      // A person at a terminal gets text; anything else (systemd, docker, a pipe) gets JSON log lines only.
      const human = process.stdout.isTTY === true;
      const purge = setInterval(() => {
        store.purgeExpired(config.now()).catch((err: unknown) => app.log.warn({ err }, 'purge failed'));
      }, PURGE_INTERVAL_MS);
      purge.unref();
      let closing = false;
      /**
       * SIGTERM/SIGINT: stop accepting connections and close idle ones (Fastify answers 503 to new requests on
       * kept-alive ones), let requests in flight finish for up to AUTHCLI_SHUTDOWN_GRACE, cut what is left, then
       * close the store (SQLite checkpoints its log into the file) and exit 0: a stop asked for is not a failure.
       */
      const shutdown = async (signal: NodeJS.Signals) => {
        if (closing) return;
        closing = true;
        clearInterval(purge);
        if (human) process.stdout.write(`stopping (${signal}): finishing requests in flight, at most ${config.shutdownGraceMs / 1000} s\n`);
        else app.log.info({ signal, graceMs: config.shutdownGraceMs }, 'shutting down: finishing requests in flight');
        const cut = setTimeout(() => {
          app.log.warn('shutdown grace period over: closing the connections still open');
          app.server.closeAllConnections();
        }, config.shutdownGraceMs);
        try {
          await app.close();
          clearTimeout(cut);
          await store.close();
          process.exitCode = 0;
        } catch (err) {
          process.stderr.write(`authcli-server: shutdown failed: ${(err as Error).stack ?? String(err)}\n`);
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
      await app.listen({ port: config.port, host: config.host });
      app.log.level = level;
      const users = await store.countUsers();
      const address = app.server.address();
      const port = address && typeof address === 'object' ? address.port : config.port;
      const started = {
        version: __AUTHCLI_SERVER_VERSION__,
        issuer: config.issuer,
        store: store.dialect === 'sqlite' ? `SQLite ${loc.dialect === 'sqlite' ? loc.path : config.databaseUrl}` : `PostgreSQL ${databaseHost(config.databaseUrl)}`,
        listening: `${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`,
        dashboard: `${config.issuer}/dashboard`,
        // Set by bin/authcli-server.cjs before libuv starts its pool (RS256 signatures, scrypt).
        signingThreads: process.env.UV_THREADPOOL_SIZE || '4 (libuv default)',
        users,
      };
      if (!human) {
        app.log.info(started, 'authcli-server started');
        return;
      }
      process.stdout.write(
        [
          `authcli-server ${started.version}`,
          `  issuer:          ${started.issuer}`,
          `  store:           ${started.store}`,
          `  listening on:    ${started.listening}`,
          `  dashboard:       ${started.dashboard}`,
          `  signing threads: ${started.signingThreads}`,
          users === 0
            ? `no users yet: add one with \`authcli-server users add <username>\`, then sign in at ${config.issuer}/signin`
            : `sign in at ${config.issuer}/signin`,
          'Ctrl-C stops it.',
          '',
        ].join('\n'),
      );
    });

  const users = cli.command('users').description('manage end users');
  users
    .command('add <username>')
    .description('add a user (asks for the password, or reads it from stdin)')
    .option('--password-stdin', 'read the password from standard input')
    .option('--admin', 'make the user an administrator (sees every application)')
    .option('--name <name>', 'display name')
    .option('--email <email>', 'email address')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (username: string, opts: { passwordStdin?: boolean; admin?: boolean; name?: string; email?: string; database?: string }) => {
      const password = opts.passwordStdin
        ? (await readAll(process.stdin)).replace(/\r?\n$/, '')
        : await promptHidden(`Password for ${username}: `);
      await withStore(opts.database, async (store) => {
        const user = await addUser(store, { username, password, admin: opts.admin ?? false, name: opts.name ?? null, email: opts.email ?? null }, Date.now());
        process.stdout.write(`added user ${user.username}${opts.admin ? ' (admin)' : ''}\n`);
      });
    });
  users
    .command('list')
    .description('list users, oldest first')
    .option('--json', 'print JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (opts: { json?: boolean; database?: string }) => {
      await withStore(opts.database, async (store) => {
        const rows = (await store.listUsers()).map((u) => ({
          username: u.username,
          name: u.name,
          email: u.email,
          admin: u.is_admin === 1,
          disabled: u.disabled_at !== null,
          created: new Date(Number(u.created_at)).toISOString(),
        }));
        if (opts.json) {
          process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
          return;
        }
        printTable(
          ['USERNAME', 'NAME', 'EMAIL', 'ADMIN', 'DISABLED', 'CREATED'],
          rows.map((r) => [r.username, r.name ?? '', r.email ?? '', r.admin ? 'yes' : 'no', r.disabled ? 'yes' : 'no', r.created]),
        );
      });
    });
  users
    .command('reset-password <username>')
    .description("set a new password (asks for it, or reads it from stdin); ends the user's sessions and clears their failed sign-in counters")
    .option('--password-stdin', 'read the password from standard input')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (username: string, opts: { passwordStdin?: boolean; database?: string }) => {
      const password = opts.passwordStdin
        ? (await readAll(process.stdin)).replace(/\r?\n$/, '')
        : await promptHidden(`New password for ${username}: `);
      await withStore(opts.database, async (store) => {
        const reset = await resetUserPassword(store, username, password);
        // A lockout earned by someone guessing the old password would otherwise outlast the reset.
        const cleared = await store.deleteRateLimits(accountCounterKeys((await store.listRateLimits()).map((r) => r.key), reset.username));
        process.stdout.write(
          `reset the password of ${reset.username} (${reset.sessionsEnded} session${reset.sessionsEnded === 1 ? '' : 's'} ended, ${cleared} failed sign-in counter${cleared === 1 ? '' : 's'} cleared)\n`,
        );
      });
    });
  users
    .command('disable <username>')
    .description('disable a user: sign-in and token redemption are refused')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (username: string, opts: { database?: string }) => {
      await withStore(opts.database, async (store) => {
        await store.setUserDisabled(username, Date.now());
        process.stdout.write(`disabled user ${username}\n`);
      });
    });
  users
    .command('enable <username>')
    .description('enable a disabled user')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (username: string, opts: { database?: string }) => {
      await withStore(opts.database, async (store) => {
        await store.setUserDisabled(username, null);
        process.stdout.write(`enabled user ${username}\n`);
      });
    });

  users
    .command('unlock <username>')
    .description('clear the failed sign-in counters of a user (every client IP), so sign-in is not limited or slowed')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (username: string, opts: { database?: string }) => {
      await withStore(opts.database, async (store) => {
        const keys = accountCounterKeys((await store.listRateLimits()).map((r) => r.key), username);
        const n = await store.deleteRateLimits(keys);
        process.stdout.write(n ? `unlocked ${username} (${n} counter${n === 1 ? '' : 's'} cleared)\n` : `${username} had no failed sign-ins counted\n`);
      });
    });

  const limits = cli.command('limits').description('see and clear abuse limits (failed sign-ins, user-code guesses, device authorizations)');
  limits
    .command('list')
    .description('counters in their current window, with their limits')
    .option('--json', 'print JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (opts: { json?: boolean; database?: string }) => {
      await withStore(opts.database, async (store, config) => {
        const now = Date.now();
        const rows = (await store.listRateLimits()).flatMap((r) => {
          const info = describeCounter(r.key, config.limits);
          if (!info || r.window_start + info.limit.windowMs <= now) return [];
          const subject = info.username ?? info.userId ?? info.clientId ?? '';
          return [{ kind: info.kind, subject, ip: info.ip ?? '', count: r.count, limit: info.limit.limit, limited: r.count >= info.limit.limit, resets_at: new Date(r.window_start + info.limit.windowMs).toISOString() }];
        });
        if (opts.json) {
          process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
          return;
        }
        printTable(['KIND', 'SUBJECT', 'IP', 'COUNT', 'LIMIT', 'RESETS AT'], rows.map((r) => [r.kind, r.subject, r.ip, String(r.count), String(r.limit), r.resets_at]));
      });
    });
  limits
    .command('clear-ip <address>')
    .description("clear a client IP's sign-in and user-code counters (e.g. an office locked out of /device)")
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (address: string, opts: { database?: string }) => {
      if (ipSubject(address) === undefined) throw new InputError(`${address} is not an IP address`);
      await withStore(opts.database, async (store) => {
        const n = await store.deleteRateLimits(ipCounterKeys((await store.listRateLimits()).map((r) => r.key), address));
        process.stdout.write(n ? `cleared ${n} counter${n === 1 ? '' : 's'} of ${address}\n` : `${address} had nothing counted\n`);
      });
    });

  const apps = cli.command('apps').description('manage client applications');
  apps
    .command('add')
    .description('register an application')
    .requiredOption('--name <name>', 'application name shown on consent pages')
    .addOption(new Option('--kind <kind>', 'client type').choices(['public', 'confidential']).makeOptionMandatory())
    .option('--callback <url>', 'redirect URI (repeatable)', collect, [])
    .option('--post-logout-redirect-uri <url>', 'where RP-initiated logout may return to, exact match (repeatable)', collect, [])
    .requiredOption('--scope <scopes>', 'allowed scopes, space-separated, e.g. "openid profile"')
    .option(
      '--grant <type>',
      `allowed grant type (repeatable; replaces the default ${DEFAULT_GRANT_TYPES.join(' and ')}; with the offline_access scope, refresh_token must be among them)`,
      collect,
    )
    .addOption(new Option('--id-token-alg <alg>', 'ID token signature algorithm').choices(['RS256', 'ES256']).default('RS256'))
    .option('--json', 'print {"client_id", "client_secret"} as JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(
      async (opts: { name: string; kind: string; callback: string[]; postLogoutRedirectUri: string[]; scope: string; grant?: string[]; idTokenAlg: string; json?: boolean; database?: string }) => {
        await withStore(opts.database, async (store) => {
          const { app, clientSecret } = await registerApplication(
            store,
            {
              name: opts.name,
              kind: opts.kind,
              callbackUrls: opts.callback,
              postLogoutRedirectUris: opts.postLogoutRedirectUri,
              scopes: opts.scope.split(/\s+/).filter(Boolean),
              // `device_code` is accepted for the device grant's URN (RFC 8628 §3.4), as the dashboard and `apps list` show it.
              ...(opts.grant && { grantTypes: opts.grant.map((g) => (g === 'device_code' ? 'urn:ietf:params:oauth:grant-type:device_code' : g)) }),
              idTokenAlg: opts.idTokenAlg,
            },
            Date.now(),
          );
          if (opts.json) {
            process.stdout.write(`${JSON.stringify(clientSecret ? { client_id: app.clientId, client_secret: clientSecret } : { client_id: app.clientId })}\n`);
          } else {
            process.stdout.write(`client_id:     ${app.clientId}\n`);
            if (clientSecret) process.stdout.write(`client_secret: ${clientSecret}\n(shown once: store it now)\n`);
          }
        });
      },
    );
  apps
    .command('list')
    .description('list applications')
    .option('--json', 'print JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (opts: { json?: boolean; database?: string }) => {
      await withStore(opts.database, async (store) => {
        const list = await store.listApplications();
        if (opts.json) {
          const out = list.map((a) => ({
            client_id: a.clientId,
            name: a.name,
            kind: a.kind,
            callback_urls: a.callbackUrls,
            post_logout_redirect_uris: a.postLogoutRedirectUris,
            scopes: a.scopes,
            grant_types: a.grantTypes,
            id_token_signed_response_alg: a.idTokenAlg,
          }));
          process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
          return;
        }
        printTable(
          ['CLIENT ID', 'KIND', 'NAME', 'GRANTS', 'SCOPES', 'CALLBACKS'],
          list.map((a) => [a.clientId, a.kind, a.name, a.grantTypes.map((g) => (g.startsWith('urn:') ? 'device_code' : g)).join(','), a.scopes.join(' '), a.callbackUrls.join(' ')]),
        );
      });
    });

  cli
    .command('backup <file>')
    .description('copy the embedded SQLite store to a new file (0600) while the server runs; for PostgreSQL, use pg_dump')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (file: string, opts: { database?: string }) => {
      const config = loadConfig({ database: opts.database });
      const { path, pages } = await backupStore(config.databaseUrl, file);
      process.stdout.write(`backed up ${config.databaseUrl} to ${path} (${pages} pages)\n`);
      if (!config.keyEncryptionKey) warn('the backup holds the signing keys unencrypted: keep it as safe as the database');
    });

  cli
    .command('keys')
    .description('manage signing keys')
    .command('rotate')
    .description('create new signing keys; the previous ones stay in JWKS until their tokens expire')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (opts: { database?: string }) => {
      await withStore(opts.database, async (store, config) => {
        const fresh = await rotateKeys(store, Date.now(), config.keyEncryptionKey);
        for (const k of fresh) process.stdout.write(`new ${k.alg} key ${k.kid} (signs in about a minute, once every instance has published it)\n`);
        if (!config.keyEncryptionKey) warn(UNENCRYPTED_KEYS_WARNING);
      });
    });

  return cli;
}

async function main(argv: string[]): Promise<void> {
  try {
    await program().parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exitCode = err.exitCode;
      return;
    }
    if (isExpected(err)) {
      process.stderr.write(`authcli-server: ${err.message}\n`);
      process.exitCode = 1;
      return;
    }
    if (isStoreUnavailable(err)) {
      process.stderr.write(`authcli-server: the database failed or did not answer: ${(err as Error).message}\n`);
      process.exitCode = 1;
      return;
    }
    const code = (err as { code?: string }).code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === '3D000' || code === '28P01') {
      process.stderr.write(`authcli-server: ${(err as Error).message}\n`);
      process.exitCode = 1;
      return;
    }
    process.stderr.write(`authcli-server: unexpected error (a bug; please report it)\n${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 2;
  }
}

void main(process.argv);

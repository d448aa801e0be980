import { availableParallelism } from 'node:os';
import type { ServerConfig } from './config.js';
import * as D from './defaults.js';
import { AUDIT_RETENTION_BOUNDS_DAYS, AUDIT_RETENTION_DAYS } from './audit-defaults.js';

/**
 * One setting an operator gives `authcli-server`. docs/configuration.md's
 * table of server settings is made from {@link SERVER_SETTINGS}
 * (`pnpm docs:config` rewrites it), and packages/server/test/configuration-docs.test.ts
 * checks the table, each default against what {@link loadConfig} builds from an
 * empty environment, each range against what it accepts, and that every
 * variable the sources read is here.
 */
export interface Setting {
  /** The environment variable. */
  env: string;
  /** The `start` (and `config`) flag, when there is one. */
  flag?: string;
  /** The default, as the table shows it (Markdown). */
  default: string;
  /** The default as the config that `loadConfig({}, {})` built holds it, in the words of `default`. */
  loaded?: (config: ServerConfig) => string;
  /** The whole numbers accepted, when the setting is one. */
  range?: { min: number; max: number };
  /** What it does (Markdown). */
  meaning: string;
}

const code = (value: string | number) => `\`${value}\``;
const seconds = (ms: number) => code(ms / 1000);

export const SERVER_SETTINGS: readonly Setting[] = [
  // ---- where it listens and what it is
  {
    env: 'PORT',
    flag: '--port',
    default: code(8080),
    loaded: (c) => code(c.port),
    range: { min: 0, max: 65535 },
    meaning: 'TCP port of the server (`0`: any free port).',
  },
  {
    env: 'HOST',
    flag: '--host',
    default: code('127.0.0.1'),
    loaded: (c) => code(c.host),
    meaning: 'Address to listen on; `0.0.0.0` or `::` for every interface (then set the issuer to the URL clients use).',
  },
  {
    env: 'AUTHCLI_ISSUER',
    flag: '--issuer',
    default: code('http://localhost:<port>'),
    loaded: (c) => code(c.issuer.replace(`//${c.host}:`, '//<host>:').replace(`:${c.port}`, ':<port>')),
    meaning:
      'The public base URL: the `iss` of every token and the base of every endpoint. https, or http on loopback only; no path, query or fragment; a trailing slash is dropped. Unset, it is `http://localhost:<port>` when `HOST` is loopback, `0.0.0.0` or `::` (start warns for those two: other machines would be sent to themselves), `http://<host>:<port>` for a name under `.localhost`; with any other `HOST` the server does not start without it.',
  },
  {
    env: 'DATABASE_URL',
    flag: '--database',
    default: code('./data/authcli.db'),
    loaded: (c) => code(c.databaseUrl),
    meaning: 'The store: a file path or `sqlite:` URL for the embedded SQLite store, or `postgres://...` for PostgreSQL.',
  },
  {
    env: 'LOG_LEVEL',
    default: code('info'),
    loaded: (c) => code(c.logLevel),
    meaning:
      '`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`. Requests are logged only at `debug` and `trace`, by method and path, never a query string or a body; errors carry the request id.',
  },
  {
    env: 'AUTHCLI_TRUST_PROXY',
    default: 'off',
    loaded: (c) => (c.trustProxy === false ? 'off' : String(c.trustProxy)),
    meaning:
      'Which proxies may say who the client is in `X-Forwarded-For`: a hop count (`1`-`10`) or their addresses and CIDRs, comma-separated; `true` and `*` are refused. See [operating](operating.md#behind-a-reverse-proxy).',
  },
  {
    env: 'AUTHCLI_KEY_ENCRYPTION_KEY',
    default: 'unset',
    loaded: (c) => (c.keyEncryptionKey ? 'set' : 'unset'),
    meaning:
      'Key-encryption key of the private signing keys (AES-256-GCM): 32 random bytes, base64 or base64url (`openssl rand -base64 32`). Unset: the keys are stored unencrypted and the server says so at start.',
  },
  {
    env: 'AUTHCLI_KEY_ENCRYPTION_KEY_FILE',
    default: 'unset',
    meaning: 'A file holding that key (the same text, or the 32 raw bytes), e.g. a systemd credential. Set one of the two, not both.',
  },
  // ---- protocol choices
  {
    env: 'AUTHCLI_REGISTRATION',
    default: code(D.REGISTRATION_MODE),
    loaded: (c) => code(c.registration),
    meaning: `Dynamic client registration (RFC 7591): ${D.REGISTRATION_MODES.map(code).join(', ')}. See [registration](registration.md).`,
  },
  {
    env: 'AUTHCLI_REQUIRE_PAR',
    default: code(String(D.REQUIRE_PAR)),
    loaded: (c) => code(String(c.requirePushedAuthorizationRequests)),
    meaning: 'Every client must push its authorization requests (RFC 9126); otherwise per application. See [PAR](par.md).',
  },
  {
    env: 'AUTHCLI_DPOP_NONCE',
    default: code(D.DPOP_NONCE_REQUIRED ? 'on' : 'off'),
    loaded: (c) => code(c.dpopNonce ? 'on' : 'off'),
    meaning: 'Whether the token endpoint requires its nonce in DPoP proofs (`on` or `off`). See [DPoP](dpop.md).',
  },
  {
    env: 'AUTHCLI_FAPI2',
    default: code(D.FAPI2 ? 'on' : 'off'),
    loaded: (c) => code(c.fapi2 ? 'on' : 'off'),
    meaning:
      "The FAPI 2.0 Security Profile (`on` or `off`): only confidential applications authenticating with `private_key_jwt` are served (no public clients, no client secrets), at registration and at the token endpoint; ID tokens, access tokens (`AUTHCLI_ACCESS_TOKEN_ALG`), `private_key_jwt` assertions and DPoP proofs are never RS256 (PS256, ES256 and EdDSA only; a new application's ID tokens are ES256); an assertion's `aud` must be the issuer identifier alone, and a confidential client's refresh token is not rotated. See [security](security.md#client-authentication) and [conformance](conformance.md#fapi-20-security-profile).",
  },
  {
    env: 'AUTHCLI_ACCESS_TOKEN_ALG',
    default: code('ES256'),
    loaded: (c) => code(c.accessTokenAlg),
    meaning: 'Signature algorithm of the JWT access tokens: `ES256` or `RS256`.',
  },
  // ---- lifetimes
  {
    env: 'AUTHCLI_ACCESS_TOKEN_TTL',
    default: code(D.ACCESS_TOKEN_TTL_SECONDS),
    loaded: (c) => code(c.accessTokenTtlSeconds),
    range: D.ACCESS_TOKEN_TTL_BOUNDS,
    meaning:
      'Access token lifetime, seconds. A resource server that checks the JWT by itself accepts it until then. An application may have its own (`apps update --access-token-ttl`).',
  },
  {
    env: 'AUTHCLI_REFRESH_TOKEN_TTL',
    default: code(D.GRANT_TTL_SECONDS),
    loaded: (c) => code(c.grantTtlSeconds),
    range: D.GRANT_TTL_BOUNDS,
    meaning:
      'How long a sign-in (its refresh tokens) lasts from when it began, seconds, however often it is renewed; then the person signs in again. At least `AUTHCLI_ACCESS_TOKEN_TTL`. An application may have its own (`apps update --refresh-token-ttl`).',
  },
  {
    env: 'AUTHCLI_ID_TOKEN_TTL',
    default: code(D.ID_TOKEN_TTL_SECONDS),
    loaded: (c) => code(c.idTokenTtlSeconds),
    range: D.ID_TOKEN_TTL_BOUNDS,
    meaning: 'ID token lifetime, seconds (`exp`; an application reads it once, at sign-in).',
  },
  {
    env: 'AUTHCLI_SESSION_TTL',
    default: code(D.SESSION_TTL_SECONDS),
    loaded: (c) => code(c.sessionTtlSeconds),
    range: D.SESSION_TTL_BOUNDS,
    meaning: "A browser session at the server's pages, seconds from sign-in: within it, the person is not asked for a password again.",
  },
  {
    env: 'AUTHCLI_DEVICE_CODE_TTL',
    default: code(D.DEVICE_CODE_TTL_SECONDS),
    loaded: (c) => code(c.deviceCodeTtlSeconds),
    range: D.DEVICE_CODE_TTL_BOUNDS,
    meaning: 'Device code lifetime, seconds (RFC 8628 `expires_in`).',
  },
  {
    env: 'AUTHCLI_DEVICE_POLL_INTERVAL',
    default: code(D.DEVICE_POLL_INTERVAL_SECONDS),
    loaded: (c) => code(c.devicePollIntervalSeconds),
    range: D.DEVICE_POLL_INTERVAL_BOUNDS,
    meaning: 'First device polling interval, seconds (RFC 8628 `interval`); each too-early poll adds 5.',
  },
  {
    env: 'AUTHCLI_DEVICE_APPROVAL_WINDOW',
    default: code(D.DEVICE_APPROVAL_WINDOW_SECONDS),
    loaded: (c) => code(c.deviceApprovalWindowSeconds),
    range: D.DEVICE_APPROVAL_WINDOW_BOUNDS,
    meaning:
      'Seconds after a device asked for its code during which its sign-in can be approved; later, the confirmation page offers only Deny and asks to start again on the device (a phished code is read late). See [security](security.md#device-sign-ins).',
  },
  // ---- the network
  {
    env: 'AUTHCLI_HEADERS_TIMEOUT',
    default: seconds(D.HEADERS_TIMEOUT_MS),
    loaded: (c) => seconds(c.headersTimeoutMs),
    range: { min: 1, max: 600 },
    meaning: 'Seconds for the request line and headers to arrive (then 408).',
  },
  {
    env: 'AUTHCLI_REQUEST_TIMEOUT',
    default: seconds(D.REQUEST_TIMEOUT_MS),
    loaded: (c) => seconds(c.requestTimeoutMs),
    range: { min: 1, max: 3600 },
    meaning: 'Seconds for the whole request, body included (then 408).',
  },
  {
    env: 'AUTHCLI_KEEPALIVE_TIMEOUT',
    default: seconds(D.KEEPALIVE_TIMEOUT_MS),
    loaded: (c) => seconds(c.keepAliveTimeoutMs),
    range: { min: 1, max: 600 },
    meaning: "Seconds after which an idle kept-alive connection is closed; keep it above your load balancer's idle timeout.",
  },
  {
    env: 'AUTHCLI_MAX_CONNECTIONS',
    default: code(D.MAX_CONNECTIONS),
    loaded: (c) => code(c.maxConnections),
    range: { min: 16, max: 1_000_000 },
    meaning: 'Open connections at most; past it a new one is closed at once. Keep it below `ulimit -n`.',
  },
  {
    env: 'AUTHCLI_BODY_LIMIT',
    default: code(D.BODY_LIMIT_BYTES),
    loaded: (c) => code(c.bodyLimit),
    range: { min: 1024, max: 1024 * 1024 },
    meaning: 'Largest request body, bytes (then 413).',
  },
  {
    env: 'AUTHCLI_DB_TIMEOUT',
    default: seconds(D.DB_TIMEOUT_MS),
    loaded: (c) => seconds(c.dbTimeoutMs),
    range: { min: 1, max: 600 },
    meaning: 'Seconds to connect to the database, wait for a pooled connection, or run a statement (then 503).',
  },
  {
    env: 'AUTHCLI_SHUTDOWN_GRACE',
    default: seconds(D.SHUTDOWN_GRACE_MS),
    loaded: (c) => seconds(c.shutdownGraceMs),
    range: { min: 1, max: 600 },
    meaning: 'Seconds that requests in flight get to finish on SIGTERM or SIGINT, after the drain.',
  },
  {
    env: 'AUTHCLI_BACKCHANNEL_LOGOUT_TIMEOUT',
    default: seconds(D.BACKCHANNEL_LOGOUT_TIMEOUT_MS),
    loaded: (c) => seconds(c.backchannelLogout.timeoutMs),
    range: D.BACKCHANNEL_LOGOUT_TIMEOUT_BOUNDS,
    meaning:
      'Seconds each POST of a logout token to an application may take (OpenID Connect Back-Channel Logout; tried again after 1, 4 and 16 s, then up to hourly until the deadline of the logout, when it gets no answer, 408, 429 or 5xx). See [endpoints](endpoints.md#back-channel-logout).',
  },
  {
    env: 'AUTHCLI_SHUTDOWN_DRAIN',
    default: seconds(D.SHUTDOWN_DRAIN_MS),
    loaded: (c) => seconds(c.shutdownDrainMs),
    range: D.SHUTDOWN_DRAIN_BOUNDS,
    meaning:
      'Seconds the server keeps serving on SIGTERM or SIGINT with `/readyz` at 503, so a load balancer stops sending before the listener closes; 0 for none. A second signal ends it.',
  },
  {
    env: 'AUTHCLI_LIMITS',
    default: 'the [abuse limits](security.md#abuse-limits)',
    meaning:
      'Overrides of abuse limits, comma-separated `kind=count/window` with the window in `s`, `m` or `h` (24h at most), e.g. `signin-account=20/15m`.',
  },
  // ---- password hashing
  {
    env: 'AUTHCLI_PASSWORD_HASH_THREADS',
    default: 'one per core (at nice 19)',
    loaded: (c) =>
      c.passwordHashThreads === D.passwordHashThreads(availableParallelism()) ? 'one per core (at nice 19)' : code(c.passwordHashThreads),
    range: { min: 1, max: 64 },
    meaning: 'Threads that hash passwords, at the lowest CPU priority, so token signing never waits behind them.',
  },
  {
    env: 'AUTHCLI_PASSWORD_HASH_QUEUE_DEADLINE',
    default: seconds(D.PASSWORD_HASH_QUEUE_DEADLINE_MS),
    loaded: (c) => seconds(c.passwordHashQueueDeadlineMs),
    range: D.PASSWORD_HASH_QUEUE_DEADLINE_BOUNDS,
    meaning: `Seconds a sign-in's password hash may wait for a thread: a burst of sign-ins is served in turn within it (browsers where the person signed in before first), at most ${D.PASSWORD_HASHES_PER_CLIENT} hashes per client IP; past what the threads can start by then, sign-in answers 503 with \`Retry-After\` at once.`,
  },
  {
    env: 'AUTHCLI_PASSWORD_HASH_COST',
    default: code(D.PASSWORD_HASH_COST),
    range: D.PASSWORD_HASH_COST_BOUNDS,
    meaning: `Argon2id cost of password hashes as log2 of its memory in KiB (${D.PASSWORD_HASH.passes} passes, ${D.PASSWORD_HASH.lanes} lane): ${D.PASSWORD_HASH_COST} (${2 ** (D.PASSWORD_HASH_COST - 10)} MiB a hash, RFC 9106's memory-constrained choice) is the production floor, and below it \`start\` warns loudly; tests use ${D.PASSWORD_HASH_COST_BOUNDS.min}. A hash made at a lower cost, or with scrypt before Argon2id, is upgraded at the next sign-in; one made at a higher cost is kept.`,
  },
  // ---- the audit trail
  {
    env: 'AUTHCLI_AUDIT_RETENTION',
    default: code(`${AUDIT_RETENTION_DAYS}`),
    loaded: (c) => code(`${c.audit.retentionMs / 86_400_000}`),
    range: AUDIT_RETENTION_BOUNDS_DAYS,
    meaning:
      'Days audit rows are kept; older ones are removed by the server, which records an `audit.pruned` row naming the last one removed, so `audit verify` tells retention from tampering. See [audit](audit.md).',
  },
  {
    env: 'AUTHCLI_AUDIT_LOG',
    default: 'unset',
    loaded: (c) => c.audit.log ?? 'unset',
    meaning:
      'Also write every audit row, once committed, as one JSON line: `stdout` (the server) or an absolute file path the server and operator commands append to (mode 0600), for a log shipper. See [audit](audit.md).',
  },
  // ---- metrics
  {
    env: 'AUTHCLI_METRICS_PORT',
    flag: '--metrics-port',
    default: 'off',
    loaded: (c) => (c.metrics ? code(c.metrics.port) : 'off'),
    range: { min: 0, max: 65535 },
    meaning:
      "Serve `GET /metrics` (Prometheus) on a listener of its own at this port, which must differ from the server's. See [metrics](metrics.md).",
  },
  {
    env: 'AUTHCLI_METRICS_HOST',
    flag: '--metrics-host',
    default: code(D.METRICS_HOST),
    meaning: 'Address of the metrics listener: a private one for a scraper on another machine, never a public one.',
  },
  // ---- the launcher
  {
    env: 'UV_THREADPOOL_SIZE',
    default: 'the cores but one, at least 1',
    meaning:
      "libuv's thread pool, where RS256 signatures are made and DPoP proofs checked; the `authcli-server` launcher sets it unless you do. The start banner shows it (`signing threads`).",
  },
];

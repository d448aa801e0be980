import type { ConfigInput, ServerConfig } from './config.js';
import * as D from './defaults.js';

/** One effective setting, as `authcli-server config` prints it. */
export interface ConfigEntry {
  /** The setting's name (stable: scripts read `--json`). */
  name: string;
  /** The effective value, with its unit; secrets are never printed, only whether they are set. */
  value: string;
  /**
   * Where the value came from: `flag --port`, `env PORT`, `default` (a
   * default the operator may override, config/defaults.ts), or `built-in`
   * (a protocol or security choice with no override).
   */
  source: string;
}

const seconds = (ms: number) => `${ms / 1000} s`;
const windowText = (ms: number) => (ms % 3_600_000 === 0 ? `${ms / 3_600_000}h` : ms % 60_000 === 0 ? `${ms / 60_000}m` : `${ms / 1000}s`);

/** A database URL fit to print: a PostgreSQL password is masked. */
function printableDatabase(url: string): string {
  if (!/^postgres(ql)?:\/\//i.test(url)) return url;
  try {
    const u = new URL(url);
    if (u.password) u.password = '****';
    return u.toString();
  } catch {
    return 'postgres://(unreadable URL)';
  }
}

/**
 * Every setting the server runs with and where each came from, in the order
 * an operator looks for them: where it listens and what it is, then
 * lifetimes, the network, abuse limits, and the built-in sizes. `config` is
 * what {@link loadConfig} built from the same `flags` and `env`.
 */
export function describeConfig(config: ServerConfig, flags: ConfigInput, env: NodeJS.ProcessEnv): ConfigEntry[] {
  const from = (flag: keyof ConfigInput | undefined, envName: string | undefined, fallback = 'default'): string => {
    if (flag && flags[flag] !== undefined) return `flag --${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
    if (envName && env[envName] !== undefined) return `env ${envName}`;
    return fallback;
  };
  const overridden = new Set(
    (env.AUTHCLI_LIMITS ?? '')
      .split(',')
      .map((e) => e.split('=')[0]?.trim())
      .filter(Boolean),
  );
  const kek = env.AUTHCLI_KEY_ENCRYPTION_KEY !== undefined ? 'AUTHCLI_KEY_ENCRYPTION_KEY' : 'AUTHCLI_KEY_ENCRYPTION_KEY_FILE';
  const trust =
    config.trustProxy === false ? 'off' : Array.isArray(config.trustProxy) ? config.trustProxy.join(',') : `${config.trustProxy} hop(s)`;

  return [
    {
      name: 'issuer',
      value: config.issuer,
      source: from('issuer', 'AUTHCLI_ISSUER', 'default (from host and port)'),
    },
    { name: 'host', value: config.host, source: from('host', 'HOST') },
    { name: 'port', value: String(config.port), source: from('port', 'PORT') },
    { name: 'database', value: printableDatabase(config.databaseUrl), source: from('database', 'DATABASE_URL') },
    { name: 'log_level', value: config.logLevel, source: from(undefined, 'LOG_LEVEL') },
    {
      name: 'key_encryption_key',
      value: config.keyEncryptionKey ? 'set (private signing keys encrypted at rest)' : 'not set (private signing keys stored unencrypted)',
      source: from(undefined, kek, 'not configured'),
    },
    { name: 'trust_proxy', value: trust, source: from(undefined, 'AUTHCLI_TRUST_PROXY') },
    {
      name: 'registration',
      value: {
        off: 'off (no registration endpoint)',
        open: 'open (anyone may register a client, counted by limit.registration-ip)',
        token: 'token (an initial access token is required)',
      }[config.registration],
      source: from(undefined, 'AUTHCLI_REGISTRATION'),
    },
    {
      name: 'require_par',
      value: config.requirePushedAuthorizationRequests
        ? 'true (every client must push its authorization requests, RFC 9126)'
        : 'false (per application)',
      source: from(undefined, 'AUTHCLI_REQUIRE_PAR'),
    },
    {
      name: 'dpop_nonce',
      value: config.dpopNonce ? 'on (the token endpoint requires a DPoP server nonce)' : 'off (DPoP proofs need no server nonce)',
      source: from(undefined, 'AUTHCLI_DPOP_NONCE'),
    },
    { name: 'dpop_iat_window', value: `${D.DPOP_IAT_WINDOW_SECONDS} s`, source: 'built-in' },
    { name: 'dpop_nonce_window', value: `${D.DPOP_NONCE_WINDOW_SECONDS} s`, source: 'built-in' },
    {
      name: 'fapi2',
      value: config.fapi2
        ? 'on (confidential applications with private_key_jwt only, no secrets; ID tokens, client assertions and DPoP proofs PS256, ES256 or EdDSA, never RS256; aud the issuer; confidential refresh tokens not rotated)'
        : 'off (client assertions and DPoP proofs may also be RS256)',
      source: from(undefined, 'AUTHCLI_FAPI2'),
    },
    { name: 'client_assertion_max_lifetime', value: `${D.CLIENT_ASSERTION_MAX_LIFETIME_SECONDS} s`, source: 'built-in' },
    { name: 'client_assertion_clock_skew', value: `${D.CLIENT_ASSERTION_CLOCK_SKEW_SECONDS} s`, source: 'built-in' },
    { name: 'client_jwks_timeout', value: seconds(D.CLIENT_JWKS_TIMEOUT_MS), source: 'built-in' },
    {
      name: 'client_jwks_cache',
      value: `${seconds(D.CLIENT_JWKS_CACHE_MS)} (Cache-Control within ${seconds(D.CLIENT_JWKS_CACHE_BOUNDS_MS.min)}-${seconds(D.CLIENT_JWKS_CACHE_BOUNDS_MS.max)})`,
      source: 'built-in',
    },
    { name: 'client_jwks_refetch_cooldown', value: seconds(D.CLIENT_JWKS_REFETCH_COOLDOWN_MS), source: 'built-in' },
    {
      name: 'metrics_port',
      value: config.metrics ? String(config.metrics.port) : 'off (GET /metrics not served)',
      source: from('metricsPort', 'AUTHCLI_METRICS_PORT', 'default'),
    },
    { name: 'metrics_host', value: config.metrics?.host ?? D.METRICS_HOST, source: from('metricsHost', 'AUTHCLI_METRICS_HOST') },
    { name: 'metrics_max_connections', value: String(D.METRICS_MAX_CONNECTIONS), source: 'built-in' },
    // lifetimes
    { name: 'access_token_ttl', value: `${config.accessTokenTtlSeconds} s`, source: from(undefined, 'AUTHCLI_ACCESS_TOKEN_TTL') },
    { name: 'access_token_alg', value: config.accessTokenAlg, source: from(undefined, 'AUTHCLI_ACCESS_TOKEN_ALG') },
    { name: 'id_token_ttl', value: `${config.idTokenTtlSeconds} s`, source: from(undefined, 'AUTHCLI_ID_TOKEN_TTL') },
    { name: 'authorization_code_ttl', value: `${config.codeTtlSeconds} s`, source: 'built-in' },
    { name: 'refresh_token_ttl', value: `${config.grantTtlSeconds} s`, source: from(undefined, 'AUTHCLI_REFRESH_TOKEN_TTL') },
    { name: 'session_ttl', value: `${config.sessionTtlSeconds} s`, source: from(undefined, 'AUTHCLI_SESSION_TTL') },
    { name: 'device_code_ttl', value: `${config.deviceCodeTtlSeconds} s`, source: from(undefined, 'AUTHCLI_DEVICE_CODE_TTL') },
    {
      name: 'device_poll_interval',
      value: `${config.devicePollIntervalSeconds} s`,
      source: from(undefined, 'AUTHCLI_DEVICE_POLL_INTERVAL'),
    },
    {
      name: 'device_approval_window',
      value: `${config.deviceApprovalWindowSeconds} s`,
      source: from(undefined, 'AUTHCLI_DEVICE_APPROVAL_WINDOW'),
    },
    { name: 'trusted_device_ttl', value: `${D.TRUSTED_DEVICE_TTL_SECONDS} s`, source: 'built-in' },
    { name: 'continuation_ttl', value: seconds(D.CONTINUATION_TTL_MS), source: 'built-in' },
    { name: 'pushed_request_ttl', value: `${D.PAR_REQUEST_TTL_SECONDS} s`, source: 'built-in' },
    { name: 'flash_ttl', value: seconds(D.FLASH_TTL_MS), source: 'built-in' },
    { name: 'replay_evidence_kept', value: seconds(D.REPLAY_EVIDENCE_MS), source: 'built-in' },
    { name: 'purge_interval', value: seconds(D.PURGE_INTERVAL_MS), source: 'built-in' },
    { name: 'application_cache', value: seconds(D.APPLICATION_CACHE_MS), source: 'built-in' },
    { name: 'key_activation_delay', value: seconds(D.KEY_ACTIVATION_DELAY_MS), source: 'built-in' },
    { name: 'key_refresh', value: seconds(D.KEY_REFRESH_MS), source: 'built-in' },
    { name: 'initial_access_token_ttl', value: `${D.INITIAL_ACCESS_TOKEN_TTL_SECONDS} s (--expires-in)`, source: 'built-in' },
    { name: 'initial_access_token_ttl_max', value: `${D.INITIAL_ACCESS_TOKEN_TTL_MAX_SECONDS} s`, source: 'built-in' },
    { name: 'initial_access_tokens_kept', value: seconds(D.INITIAL_ACCESS_TOKENS_KEPT_MS), source: 'built-in' },
    { name: 'signin_events_kept', value: seconds(D.SIGNIN_EVENTS_KEPT_MS), source: 'built-in' },
    { name: 'signin_events_per_user', value: String(D.SIGNIN_EVENTS_PER_USER), source: 'built-in' },
    // network
    { name: 'body_limit', value: `${config.bodyLimit} bytes`, source: from(undefined, 'AUTHCLI_BODY_LIMIT') },
    { name: 'headers_timeout', value: seconds(config.headersTimeoutMs), source: from(undefined, 'AUTHCLI_HEADERS_TIMEOUT') },
    { name: 'request_timeout', value: seconds(config.requestTimeoutMs), source: from(undefined, 'AUTHCLI_REQUEST_TIMEOUT') },
    { name: 'keepalive_timeout', value: seconds(config.keepAliveTimeoutMs), source: from(undefined, 'AUTHCLI_KEEPALIVE_TIMEOUT') },
    { name: 'max_connections', value: String(config.maxConnections), source: from(undefined, 'AUTHCLI_MAX_CONNECTIONS') },
    { name: 'db_timeout', value: seconds(config.dbTimeoutMs), source: from(undefined, 'AUTHCLI_DB_TIMEOUT') },
    { name: 'shutdown_drain', value: seconds(config.shutdownDrainMs), source: from(undefined, 'AUTHCLI_SHUTDOWN_DRAIN') },
    { name: 'shutdown_grace', value: seconds(config.shutdownGraceMs), source: from(undefined, 'AUTHCLI_SHUTDOWN_GRACE') },
    { name: 'store_retry_after', value: `${D.STORE_RETRY_AFTER_SECONDS} s`, source: 'built-in' },
    { name: 'client_auth_failures_refresh', value: seconds(D.CLIENT_AUTH_FAILURES_REFRESH_MS), source: 'built-in' },
    // back-channel logout (OpenID Connect Back-Channel Logout 1.0)
    {
      name: 'backchannel_logout_timeout',
      value: seconds(config.backchannelLogout.timeoutMs),
      source: from(undefined, 'AUTHCLI_BACKCHANNEL_LOGOUT_TIMEOUT'),
    },
    {
      name: 'backchannel_logout_retries',
      value: `${config.backchannelLogout.retryDelaysMs.map(seconds).join(', ')}, then x4 up to ${seconds(config.backchannelLogout.retryMaxMs)}`,
      source: 'built-in',
    },
    {
      name: 'backchannel_logout_deadline',
      value: `${seconds(config.backchannelLogout.sessionDeadlineMs)} (a session ended), ${seconds(config.backchannelLogout.accessDeadlineMs)} (an access ended)`,
      source: 'built-in',
    },
    { name: 'backchannel_logout_concurrency', value: String(config.backchannelLogout.concurrency), source: 'built-in' },
    { name: 'backchannel_logout_pending_max', value: `${config.backchannelLogout.pendingPerClient} per application`, source: 'built-in' },
    { name: 'backchannel_logout_kept', value: seconds(D.BACKCHANNEL_LOGOUT_KEPT_MS), source: 'built-in' },
    { name: 'logout_token_ttl', value: `${D.LOGOUT_TOKEN_TTL_SECONDS} s`, source: 'built-in' },
    { name: 'ready_timeout', value: seconds(D.READY_TIMEOUT_MS), source: 'built-in' },
    // the store
    { name: 'application_cache_size', value: `${D.APPLICATION_CACHE_SIZE} applications`, source: 'built-in' },
    { name: 'postgres_pool_size', value: `${D.POSTGRES_POOL_SIZE} connections`, source: 'built-in' },
    { name: 'sqlite_busy_timeout', value: seconds(D.SQLITE_BUSY_TIMEOUT_MS), source: 'built-in' },
    { name: 'checkpoint_interval', value: seconds(D.CHECKPOINT_INTERVAL_MS), source: 'built-in' },
    { name: 'wal_limit', value: `${D.WAL_LIMIT_PAGES} pages`, source: 'built-in' },
    { name: 'wal_size_limit', value: `${D.WAL_SIZE_LIMIT_BYTES} bytes`, source: 'built-in' },
    // password hashing
    {
      name: 'password_hash_threads',
      value: String(config.passwordHashThreads),
      source: from(undefined, 'AUTHCLI_PASSWORD_HASH_THREADS', 'default (one per core, at nice 19)'),
    },
    { name: 'password_hashes_per_client', value: String(config.passwordHashesPerClient), source: 'built-in' },
    {
      name: 'password_hash_queue_deadline',
      value: seconds(config.passwordHashQueueDeadlineMs),
      source: from(undefined, 'AUTHCLI_PASSWORD_HASH_QUEUE_DEADLINE'),
    },
    {
      name: 'argon2id',
      value: `m=${2 ** config.passwordHashCost} t=${D.PASSWORD_HASH.passes} p=${D.PASSWORD_HASH.lanes}`,
      source: from(undefined, 'AUTHCLI_PASSWORD_HASH_COST'),
    },
    // abuse limits
    ...Object.entries(config.limits).map(([kind, l]) => ({
      name: `limit.${kind}`,
      value: `${l.limit}/${windowText(l.windowMs)}`,
      source: overridden.has(kind) ? 'env AUTHCLI_LIMITS' : 'default',
    })),
    // input sizes
    { name: 'authorize_state_max', value: `${D.AUTHORIZE_STATE_MAX} chars`, source: 'built-in' },
    { name: 'nonce_max', value: `${D.NONCE_MAX} chars`, source: 'built-in' },
    { name: 'claims_parameter_max', value: `${D.CLAIMS_PARAMETER_MAX} chars`, source: 'built-in' },
    { name: 'logout_state_max', value: `${D.LOGOUT_STATE_MAX} chars`, source: 'built-in' },
    { name: 'presented_token_max', value: `${D.PRESENTED_TOKEN_MAX} chars`, source: 'built-in' },
    { name: 'presented_secret_max', value: `${D.PRESENTED_SECRET_MAX} chars`, source: 'built-in' },
    { name: 'signin_username_max', value: `${D.SIGNIN_USERNAME_MAX} chars`, source: 'built-in' },
    { name: 'signin_password_max', value: `${D.SIGNIN_PASSWORD_MAX} chars`, source: 'built-in' },
    { name: 'min_password_length', value: `${D.MIN_PASSWORD_LENGTH} chars`, source: 'built-in' },
  ];
}

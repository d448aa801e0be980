import { readKeyEncryptionKey } from './key-encryption-key.js';
import { type AuditSettings, parseAudit } from './audit-config.js';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { IssuerError, isLoopbackHost, normalizeIssuer as normalizeIssuerIdentifier } from '@authcli/protocol';
import * as D from './defaults.js';

/**
 * One typed, validated configuration object, built from environment and
 * flags, and passed down explicitly (no module-level singletons).
 */
export interface ServerConfig {
  /** Issuer identifier (RFC 8414 §2): https URL (http for loopback) without query, fragment or trailing slash. */
  issuer: string;
  host: string;
  port: number;
  /** `DATABASE_URL`: postgres:// URL, sqlite: URL or file path. */
  databaseUrl: string;
  /** Authorization code lifetime (RFC 6749 §4.1.2 recommends at most 10 minutes; we use 60 s). */
  codeTtlSeconds: number;
  /** The server's access token lifetime (`AUTHCLI_ACCESS_TOKEN_TTL`); an application may have its own. */
  accessTokenTtlSeconds: number;
  idTokenTtlSeconds: number; // AUTHCLI_ID_TOKEN_TTL
  /** Absolute lifetime of a grant (refresh-token family, `AUTHCLI_REFRESH_TOKEN_TTL`); an application may have its own. */
  grantTtlSeconds: number;
  sessionTtlSeconds: number; // a browser session at the server's pages, AUTHCLI_SESSION_TTL
  /** Largest request body accepted, in bytes (`AUTHCLI_BODY_LIMIT`). */
  bodyLimit: number;
  /**
   * Which peers may say who the client is in `X-Forwarded-For`
   * (`AUTHCLI_TRUST_PROXY`): none (`false`, the socket address is the client),
   * a hop count (`1`: one proxy in front, the client is the rightmost entry),
   * or the proxies' addresses and CIDRs. Never "trust every hop".
   */
  trustProxy: false | number | string[];
  /** The abuse limits (config/defaults.ts); tests and embedders may pass others. */
  limits: D.Limits;
  /** Threads that hash passwords, and the hashes one client IP may have in flight (see config/defaults.ts). */
  passwordHashThreads: number;
  passwordHashesPerClient: number;
  /** The longest a password hash waits for a thread before its sign-in is answered 503 (`AUTHCLI_PASSWORD_HASH_QUEUE_DEADLINE`). */
  passwordHashQueueDeadlineMs: number;
  /** Argon2id cost of new password hashes as log2 of its memory in KiB (`AUTHCLI_PASSWORD_HASH_COST`; config/defaults.ts PASSWORD_HASH_COST). */
  passwordHashCost: number;
  /** Network timeouts and caps (see config/defaults.ts). */
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
  /** Database connect, pool-acquire and statement timeout. */
  dbTimeoutMs: number;
  /** RFC 8628 §3.2 `expires_in` of a device code (AUTHCLI_DEVICE_CODE_TTL). */
  deviceCodeTtlSeconds: number;
  /** RFC 8628 §3.2 `interval`: the first polling interval (AUTHCLI_DEVICE_POLL_INTERVAL). */
  devicePollIntervalSeconds: number;
  /** How long after its device authorization request a device sign-in may be approved (AUTHCLI_DEVICE_APPROVAL_WINDOW). */
  deviceApprovalWindowSeconds: number;
  /** How long requests in flight may take to finish on shutdown (AUTHCLI_SHUTDOWN_GRACE). */
  shutdownGraceMs: number;
  /** How long the server keeps serving with /readyz at 503 before it closes its listener (AUTHCLI_SHUTDOWN_DRAIN). */
  shutdownDrainMs: number;
  /**
   * Where `GET /metrics` is served, on a listener of its own
   * (AUTHCLI_METRICS_PORT, AUTHCLI_METRICS_HOST); undefined: metrics off.
   */
  metrics: { host: string; port: number } | undefined;
  /** AES-256-GCM key that encrypts private signing keys at rest; undefined: stored unencrypted (the server warns). */
  keyEncryptionKey: Buffer | undefined;
  /** Dynamic client registration (RFC 7591): off, open, or with an initial access token (`AUTHCLI_REGISTRATION`). */
  registration: D.RegistrationMode;
  /** Every client must push its authorization requests (RFC 9126 §5, `AUTHCLI_REQUIRE_PAR`); otherwise per application. */
  requirePushedAuthorizationRequests: boolean;
  /**
   * Whether the token endpoint requires a server nonce in DPoP proofs (RFC 9449 §8; `AUTHCLI_DPOP_NONCE`
   * on/off, default on): a proof without the current nonce is answered `use_dpop_nonce` with one.
   */
  dpopNonce: boolean;
  /**
   * Posting logout tokens to applications (OpenID Connect Back-Channel Logout 1.0 §2.5): each attempt's timeout
   * (`AUTHCLI_BACKCHANNEL_LOGOUT_TIMEOUT`), the waits before each retry, attempts at once, and the most waiting.
   */
  backchannelLogout: D.BackchannelLogoutSettings;
  /**
   * The FAPI 2.0 Security Profile's rules (`AUTHCLI_FAPI2`, on/off, default off): client assertions and DPoP
   * proofs signed RS256 are refused (PS256, ES256, EdDSA only; oauth/client-assertion.ts, oauth/dpop.ts), an
   * assertion's `aud` must be the issuer identifier alone, and a confidential client's refresh token is not
   * rotated (oauth/grants/refresh-token.ts).
   */
  fapi2: boolean;
  /** Access token algorithm (RFC 9068 §2.1 requires RS256 support; ES256 is the default since it signs far faster). */
  accessTokenAlg: 'ES256' | 'RS256';
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** The audit trail's retention (`AUTHCLI_AUDIT_RETENTION`) and where its rows are shipped (`AUTHCLI_AUDIT_LOG`). */
  audit: AuditSettings;
  /** Clock in epoch milliseconds; injectable so expiry is testable without sleeping. */
  now: () => number;
}

export { readKeyEncryptionKey } from './key-encryption-key.js';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * The warning for a password-hash cost below the production floor (RFC 9106's memory-constrained Argon2id), or undefined at or
 * above it: `start` prints it, so a test setting left on a real server does not go unnoticed.
 */
export function weakPasswordHashWarning(cost: number): string | undefined {
  if (cost >= D.PASSWORD_HASH_COST) return undefined;
  return `AUTHCLI_PASSWORD_HASH_COST=${cost} is below the production minimum (${D.PASSWORD_HASH_COST}, Argon2id with ${2 ** (D.PASSWORD_HASH_COST - 10)} MiB): new password hashes are ${2 ** (D.PASSWORD_HASH_COST - cost)} times cheaper to guess from a stolen database. Unset it outside tests.`;
}

/** A yes/no setting: `true`/`1`/`yes`/`on` or `false`/`0`/`no`/`off` (any case); unset or empty is the default. */
function envFlag(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['true', '1', 'yes', 'on'].includes(raw)) return true;
  if (['false', '0', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got ${JSON.stringify(env[name])}`);
}

export interface ConfigInput {
  issuer?: string | undefined;
  host?: string | undefined;
  port?: string | number | undefined;
  database?: string | undefined;
  metricsPort?: string | number | undefined;
  metricsHost?: string | undefined;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The issuer identifier in its canonical form (@authcli/protocol, RFC 8414 §2); a ConfigError if it cannot be one. */
export function normalizeIssuer(value: string): string {
  try {
    return normalizeIssuerIdentifier(value);
  } catch (err) {
    if (err instanceof IssuerError) throw new ConfigError(err.message, { cause: err });
    throw err;
  }
}

/** A whole number from the environment within [min, max], or `fallback` when unset. */
function envInt(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!/^\d{1,10}$/.test(raw.trim()) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

/** Seconds from the environment, as milliseconds. */
function envSeconds(env: NodeJS.ProcessEnv, name: string, fallbackMs: number, maxSeconds: number): number {
  return envInt(env, name, fallbackMs / 1000, 1, maxSeconds) * 1000;
}

function isCidrOrAddress(value: string): boolean {
  const [addr, bits, ...rest] = value.split('/');
  if (rest.length || !addr) return false;
  const family = isIP(addr);
  if (family === 0) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

/**
 * `AUTHCLI_TRUST_PROXY`: unset, empty or `0` trusts no proxy; a number is a
 * hop count; otherwise a comma-separated list of proxy addresses and CIDRs.
 * `true`, `*` and the like are refused: trusting every hop lets any client
 * choose its own IP with a header.
 */
export function parseTrustProxy(value: string | undefined): false | number | string[] {
  const v = (value ?? '').trim();
  if (v === '' || v === '0') return false;
  if (/^\d+$/.test(v)) {
    const hops = Number(v);
    if (hops > 10) throw new ConfigError(`AUTHCLI_TRUST_PROXY: ${hops} proxy hops is not plausible (1-10)`);
    return hops;
  }
  const list = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const entry of list) {
    if (!isCidrOrAddress(entry)) {
      throw new ConfigError(
        `AUTHCLI_TRUST_PROXY must be a hop count (e.g. 1) or comma-separated proxy addresses/CIDRs (e.g. 10.0.0.0/8,::1), got ${JSON.stringify(entry)}`,
      );
    }
  }
  return list;
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000 };

/**
 * `AUTHCLI_LIMITS`: overrides of the abuse limits, comma-separated
 * `kind=count/window`, the window in s, m or h, e.g.
 * `device-authz-client=3000/1m,signin-account=20/15m` (kinds: config/defaults.ts LIMITS).
 */
export function parseLimits(value: string | undefined): D.Limits {
  const limits: Record<D.CounterKind, D.Limit> = { ...D.LIMITS };
  for (const entry of (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^([a-z-]+)=(\d{1,9})\/(\d{1,6})([smh])$/.exec(entry);
    if (!m || !Object.hasOwn(D.LIMITS, m[1]!)) {
      throw new ConfigError(
        `AUTHCLI_LIMITS: ${JSON.stringify(entry)} is not kind=count/window (e.g. signin-ip=100/15m); kinds: ${Object.keys(D.LIMITS).join(', ')}`,
      );
    }
    const limit = Number(m[2]);
    const windowMs = Number(m[3]) * UNIT_MS[m[4]!]!;
    if (limit < 1 || windowMs < 1000) throw new ConfigError(`AUTHCLI_LIMITS: ${entry}: the count and the window must be at least 1`);
    // Counters are purged a day after their window started: a longer window would silently start over.
    if (windowMs > D.RATE_LIMIT_ROWS_KEPT_MS) throw new ConfigError(`AUTHCLI_LIMITS: ${entry}: a window is at most 24h`);
    limits[m[1] as D.CounterKind] = { limit, windowMs };
  }
  return limits;
}

function parsePort(value: string | number, what = 'port'): number {
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535 || (typeof value === 'string' && !/^\d+$/.test(value.trim()))) {
    throw new ConfigError(`${what} must be an integer 0-65535, got ${JSON.stringify(value)}`);
  }
  return n;
}

/**
 * The metrics listener (`--metrics-port` / AUTHCLI_METRICS_PORT, `--metrics-host` /
 * AUTHCLI_METRICS_HOST): off when no port is given. Never the main listener's
 * port: metrics are not served to the public listener's clients.
 */
function parseMetrics(flags: ConfigInput, env: NodeJS.ProcessEnv, mainPort: number): ServerConfig['metrics'] {
  const raw = flags.metricsPort ?? env.AUTHCLI_METRICS_PORT;
  if (raw === undefined || (typeof raw === 'string' && raw.trim() === '')) return undefined;
  const port = parsePort(raw, 'AUTHCLI_METRICS_PORT');
  if (port !== 0 && port === mainPort) {
    throw new ConfigError(`AUTHCLI_METRICS_PORT must differ from the server's port (${mainPort}): metrics get a listener of their own`);
  }
  const host = (flags.metricsHost ?? env.AUTHCLI_METRICS_HOST ?? D.METRICS_HOST).trim();
  if (host === '') throw new ConfigError('AUTHCLI_METRICS_HOST is empty: give an address to bind, e.g. 127.0.0.1');
  return { host, port };
}

/** The embedded store when neither --database nor DATABASE_URL names one: relative to the folder the server runs in. */
export const DEFAULT_DATABASE_URL = './data/authcli.db';

/** A host that binds every interface: its default issuer is on localhost, with the start's warning (http/loopback.ts). */
const EVERY_ADDRESS = /^(0\.0\.0\.0|::)$/;

/** What `start --issuer` says of the issuer when none is given: what {@link loadConfig} does. */
export const ISSUER_HELP =
  'the URL clients use (env AUTHCLI_ISSUER); default http://localhost:<port> when --host is loopback (127.0.0.1, the default; ::1), 0.0.0.0 or :: (start warns for those two), http://<host>:<port> for a name under .localhost; any other --host needs it';

/**
 * The issuer when none is given: `http://<host>:<port>`, and for a loopback
 * or every-address host (127.0.0.1, the default; ::1; 0.0.0.0, ::)
 * `http://localhost:<port>`, which reaches the same listener and, unlike an
 * IP address, can have passkeys (browsers take only a host name as a
 * WebAuthn RP ID). Any other host has none ({@link loadConfig}).
 */
export function defaultIssuer(host: string, port: number): string {
  const local = EVERY_ADDRESS.test(host) || /^(127\.\d+\.\d+\.\d+|::1|localhost)$/.test(host);
  return `http://${local ? 'localhost' : host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * Builds the config: flags win over env, env over defaults. The default
 * issuer is {@link defaultIssuer}.
 */
export function loadConfig(
  flags: ConfigInput = {},
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<ServerConfig> = {},
): ServerConfig {
  const host = flags.host ?? env.HOST ?? '127.0.0.1';
  const port = parsePort(flags.port ?? env.PORT ?? 8080);
  const given = flags.issuer ?? env.AUTHCLI_ISSUER;
  // An address beyond loopback has no default: an issuer on http is for loopback only, and the https URL is the
  // operator's to name.
  if (given === undefined && !EVERY_ADDRESS.test(host) && !isLoopbackHost(host)) {
    throw new ConfigError(
      `host ${host} is not loopback, so there is no default issuer: set --issuer (or AUTHCLI_ISSUER) to the https URL clients use`,
    );
  }
  const issuer = normalizeIssuer(given ?? defaultIssuer(host, port));
  const logLevel = (env.LOG_LEVEL ?? 'info') as ServerConfig['logLevel'];
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  const lifetime = (name: string, fallback: number, b: { min: number; max: number }) => envInt(env, name, fallback, b.min, b.max);
  const accessTokenTtl = lifetime('AUTHCLI_ACCESS_TOKEN_TTL', D.ACCESS_TOKEN_TTL_SECONDS, D.ACCESS_TOKEN_TTL_BOUNDS);
  const grantTtl = lifetime('AUTHCLI_REFRESH_TOKEN_TTL', D.GRANT_TTL_SECONDS, D.GRANT_TTL_BOUNDS);
  const sessionTtl = lifetime('AUTHCLI_SESSION_TTL', D.SESSION_TTL_SECONDS, D.SESSION_TTL_BOUNDS);
  if (grantTtl < accessTokenTtl) {
    throw new ConfigError(
      `AUTHCLI_REFRESH_TOKEN_TTL (${grantTtl} s) must be at least AUTHCLI_ACCESS_TOKEN_TTL (${accessTokenTtl} s): a sign-in outlives its access tokens`,
    );
  }
  const registration = (env.AUTHCLI_REGISTRATION ?? D.REGISTRATION_MODE).trim().toLowerCase() || D.REGISTRATION_MODE;
  if (!(D.REGISTRATION_MODES as readonly string[]).includes(registration)) {
    throw new ConfigError(
      `AUTHCLI_REGISTRATION must be one of ${D.REGISTRATION_MODES.join(', ')}, got ${JSON.stringify(env.AUTHCLI_REGISTRATION)}`,
    );
  }
  const dpopNonce = (env.AUTHCLI_DPOP_NONCE ?? (D.DPOP_NONCE_REQUIRED ? 'on' : 'off')).trim().toLowerCase();
  if (dpopNonce !== 'on' && dpopNonce !== 'off') throw new ConfigError('AUTHCLI_DPOP_NONCE must be on or off');
  const accessTokenAlg = env.AUTHCLI_ACCESS_TOKEN_ALG ?? 'ES256';
  if (accessTokenAlg !== 'ES256' && accessTokenAlg !== 'RS256') throw new ConfigError('AUTHCLI_ACCESS_TOKEN_ALG must be ES256 or RS256');
  if (accessTokenAlg === 'RS256' && envFlag(env, 'AUTHCLI_FAPI2', D.FAPI2)) {
    throw new ConfigError('AUTHCLI_ACCESS_TOKEN_ALG=RS256 is not allowed with AUTHCLI_FAPI2=on (FAPI 2.0 §5.4: PS256, ES256 or EdDSA)');
  }
  return {
    issuer,
    host,
    port,
    databaseUrl: flags.database ?? env.DATABASE_URL ?? DEFAULT_DATABASE_URL,
    codeTtlSeconds: D.CODE_TTL_SECONDS,
    accessTokenTtlSeconds: accessTokenTtl,
    idTokenTtlSeconds: lifetime('AUTHCLI_ID_TOKEN_TTL', D.ID_TOKEN_TTL_SECONDS, D.ID_TOKEN_TTL_BOUNDS),
    grantTtlSeconds: grantTtl,
    sessionTtlSeconds: sessionTtl,
    bodyLimit: envInt(env, 'AUTHCLI_BODY_LIMIT', D.BODY_LIMIT_BYTES, 1024, 1024 * 1024),
    trustProxy: parseTrustProxy(env.AUTHCLI_TRUST_PROXY),
    limits: parseLimits(env.AUTHCLI_LIMITS),
    passwordHashesPerClient: D.PASSWORD_HASHES_PER_CLIENT,
    passwordHashCost: envInt(
      env,
      'AUTHCLI_PASSWORD_HASH_COST',
      D.PASSWORD_HASH_COST,
      D.PASSWORD_HASH_COST_BOUNDS.min,
      D.PASSWORD_HASH_COST_BOUNDS.max,
    ),
    passwordHashThreads: envInt(env, 'AUTHCLI_PASSWORD_HASH_THREADS', D.passwordHashThreads(availableParallelism()), 1, 64),
    passwordHashQueueDeadlineMs:
      envInt(
        env,
        'AUTHCLI_PASSWORD_HASH_QUEUE_DEADLINE',
        D.PASSWORD_HASH_QUEUE_DEADLINE_MS / 1000,
        D.PASSWORD_HASH_QUEUE_DEADLINE_BOUNDS.min,
        D.PASSWORD_HASH_QUEUE_DEADLINE_BOUNDS.max,
      ) * 1000,
    headersTimeoutMs: envSeconds(env, 'AUTHCLI_HEADERS_TIMEOUT', D.HEADERS_TIMEOUT_MS, 600),
    requestTimeoutMs: envSeconds(env, 'AUTHCLI_REQUEST_TIMEOUT', D.REQUEST_TIMEOUT_MS, 3600),
    keepAliveTimeoutMs: envSeconds(env, 'AUTHCLI_KEEPALIVE_TIMEOUT', D.KEEPALIVE_TIMEOUT_MS, 600),
    maxConnections: envInt(env, 'AUTHCLI_MAX_CONNECTIONS', D.MAX_CONNECTIONS, 16, 1_000_000),
    dbTimeoutMs: envSeconds(env, 'AUTHCLI_DB_TIMEOUT', D.DB_TIMEOUT_MS, 600),
    deviceCodeTtlSeconds: envInt(
      env,
      'AUTHCLI_DEVICE_CODE_TTL',
      D.DEVICE_CODE_TTL_SECONDS,
      D.DEVICE_CODE_TTL_BOUNDS.min,
      D.DEVICE_CODE_TTL_BOUNDS.max,
    ),
    devicePollIntervalSeconds: envInt(
      env,
      'AUTHCLI_DEVICE_POLL_INTERVAL',
      D.DEVICE_POLL_INTERVAL_SECONDS,
      D.DEVICE_POLL_INTERVAL_BOUNDS.min,
      D.DEVICE_POLL_INTERVAL_BOUNDS.max,
    ),
    deviceApprovalWindowSeconds: envInt(
      env,
      'AUTHCLI_DEVICE_APPROVAL_WINDOW',
      D.DEVICE_APPROVAL_WINDOW_SECONDS,
      D.DEVICE_APPROVAL_WINDOW_BOUNDS.min,
      D.DEVICE_APPROVAL_WINDOW_BOUNDS.max,
    ),
    shutdownGraceMs: envSeconds(env, 'AUTHCLI_SHUTDOWN_GRACE', D.SHUTDOWN_GRACE_MS, 600),
    shutdownDrainMs:
      envInt(env, 'AUTHCLI_SHUTDOWN_DRAIN', D.SHUTDOWN_DRAIN_MS / 1000, D.SHUTDOWN_DRAIN_BOUNDS.min, D.SHUTDOWN_DRAIN_BOUNDS.max) * 1000,
    metrics: parseMetrics(flags, env, port),
    keyEncryptionKey: readKeyEncryptionKey(env),
    registration: registration as D.RegistrationMode,
    requirePushedAuthorizationRequests: envFlag(env, 'AUTHCLI_REQUIRE_PAR', D.REQUIRE_PAR),
    dpopNonce: dpopNonce === 'on',
    backchannelLogout: {
      timeoutMs: envSeconds(
        env,
        'AUTHCLI_BACKCHANNEL_LOGOUT_TIMEOUT',
        D.BACKCHANNEL_LOGOUT_TIMEOUT_MS,
        D.BACKCHANNEL_LOGOUT_TIMEOUT_BOUNDS.max,
      ),
      ...D.BACKCHANNEL_LOGOUT_BUILT_IN,
      // Retried as long as what ended could have been used: longer lifetimes keep a logout longer (backchannel-defaults.ts).
      sessionDeadlineMs: Math.max(D.BACKCHANNEL_LOGOUT_SESSION_DEADLINE_MS, sessionTtl * 1000),
      accessDeadlineMs: Math.max(D.BACKCHANNEL_LOGOUT_ACCESS_DEADLINE_MS, grantTtl * 1000),
    },
    fapi2: envFlag(env, 'AUTHCLI_FAPI2', D.FAPI2),
    accessTokenAlg,
    audit: parseAudit(env),
    logLevel,
    now: Date.now,
    ...overrides,
  };
}

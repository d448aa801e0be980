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
  accessTokenTtlSeconds: number;
  idTokenTtlSeconds: number;
  /** Absolute lifetime of a grant (refresh-token family). */
  grantTtlSeconds: number;
  sessionTtlSeconds: number;
  /** Largest request body accepted, in bytes. */
  bodyLimit: number;
  /** Trust X-Forwarded-* from a reverse proxy (client IP for rate limits). */
  trustProxy: boolean;
  /** Access token algorithm (RFC 9068 §2.1 requires RS256 support; ES256 is the default since it signs far faster). */
  accessTokenAlg: 'ES256' | 'RS256';
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Clock in epoch milliseconds; injectable so expiry is testable without sleeping. */
  now: () => number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export interface ConfigInput {
  issuer?: string | undefined;
  host?: string | undefined;
  port?: string | number | undefined;
  database?: string | undefined;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/** Validates an issuer identifier per RFC 8414 §2 / OIDC Discovery §3. */
export function normalizeIssuer(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`issuer ${JSON.stringify(value)} is not an absolute URL`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
    throw new ConfigError(`issuer must use https (http is allowed only for loopback hosts): ${value}`);
  }
  if (url.search || url.hash || value.includes('#') || value.includes('?')) {
    throw new ConfigError(`issuer must not have a query or fragment: ${value}`);
  }
  if (url.username || url.password) throw new ConfigError('issuer must not contain credentials');
  return url.href.replace(/\/+$/, '');
}

function parsePort(value: string | number): number {
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535 || (typeof value === 'string' && !/^\d+$/.test(value.trim()))) {
    throw new ConfigError(`port must be an integer 0-65535, got ${JSON.stringify(value)}`);
  }
  return n;
}

/**
 * Builds the config: flags win over env, env over defaults. The default
 * issuer is `http://<host>:<port>`.
 */
export function loadConfig(
  flags: ConfigInput = {},
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<ServerConfig> = {},
): ServerConfig {
  const host = flags.host ?? env.HOST ?? '127.0.0.1';
  const port = parsePort(flags.port ?? env.PORT ?? 8080);
  const defaultIssuer = `http://${host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  const issuer = normalizeIssuer(flags.issuer ?? env.AUTHCLI_ISSUER ?? defaultIssuer);
  const logLevel = (env.LOG_LEVEL ?? 'info') as ServerConfig['logLevel'];
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  const accessTokenTtl = env.AUTHCLI_ACCESS_TOKEN_TTL ?? '900';
  if (!/^\d{1,6}$/.test(accessTokenTtl) || Number(accessTokenTtl) < 1 || Number(accessTokenTtl) > 86400) {
    throw new ConfigError('AUTHCLI_ACCESS_TOKEN_TTL must be 1-86400 seconds');
  }
  const accessTokenAlg = env.AUTHCLI_ACCESS_TOKEN_ALG ?? 'ES256';
  if (accessTokenAlg !== 'ES256' && accessTokenAlg !== 'RS256') throw new ConfigError('AUTHCLI_ACCESS_TOKEN_ALG must be ES256 or RS256');
  return {
    issuer,
    host,
    port,
    databaseUrl: flags.database ?? env.DATABASE_URL ?? './data/authcli.db',
    codeTtlSeconds: 60,
    accessTokenTtlSeconds: Number(accessTokenTtl),
    idTokenTtlSeconds: 900,
    grantTtlSeconds: 30 * 24 * 3600,
    sessionTtlSeconds: 12 * 3600,
    bodyLimit: 16 * 1024,
    trustProxy: env.AUTHCLI_TRUST_PROXY === '1' || env.AUTHCLI_TRUST_PROXY === 'true',
    accessTokenAlg,
    logLevel,
    now: Date.now,
    ...overrides,
  };
}

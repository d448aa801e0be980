/**
 * An application's own token lifetimes (Keycloak's per-client "access token lifespan" and "client session
 * max"): its access tokens' and its sign-ins' (refresh token families'), each null for the server's
 * (AUTHCLI_ACCESS_TOKEN_TTL, AUTHCLI_REFRESH_TOKEN_TTL), within the bounds config/lifetime-defaults.ts gives.
 */
import { ACCESS_TOKEN_TTL_BOUNDS, GRANT_TTL_BOUNDS } from '../config/lifetime-defaults.js';
import type { ServerConfig } from '../config/config.js';
import type { Application } from '../store/store.js';
import { InputError } from '../util/input-error.js';

export interface Lifetimes {
  accessTokenTtl: number | null;
  refreshTokenTtl: number | null;
}

/** Seconds an application's access tokens live. */
export function accessTokenTtl(app: Pick<Application, 'accessTokenTtl'>, config: Pick<ServerConfig, 'accessTokenTtlSeconds'>): number {
  return app.accessTokenTtl ?? config.accessTokenTtlSeconds;
}

/** Seconds an application's sign-ins (its refresh tokens) last from when they began. */
export function refreshTokenTtl(app: Pick<Application, 'refreshTokenTtl'>, config: Pick<ServerConfig, 'grantTtlSeconds'>): number {
  return app.refreshTokenTtl ?? config.grantTtlSeconds;
}

const UNITS: Record<string, number> = { '': 1, s: 1, m: 60, h: 3600, d: 86_400 };

/** "900", "90s", "15m", "12h", "30d" as seconds; undefined when it is none of these. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d{1,8})\s*([smhd]?)$/.exec(text.trim());
  return m ? Number(m[1]) * UNITS[m[2]!]! : undefined;
}

/** Seconds as the largest whole unit: 900 → "15m", 2592000 → "30d", 90 → "90s". */
export function formatDuration(seconds: number): string {
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3600],
    ['m', 60],
  ] as const) {
    if (seconds % size === 0) return `${seconds / size}${unit}`;
  }
  return `${seconds}s`;
}

/** Why an application's stored lifetimes no longer hold with the server's (a setting changed since), or undefined. */
export function lifetimesProblem(
  app: Pick<Application, 'accessTokenTtl' | 'refreshTokenTtl'>,
  config: Pick<ServerConfig, 'accessTokenTtlSeconds' | 'grantTtlSeconds'>,
): string | undefined {
  if (app.accessTokenTtl === null && app.refreshTokenTtl === null) return undefined;
  try {
    checkLifetimes(app, config, { access: 'its --access-token-ttl', refresh: 'its --refresh-token-ttl' });
    return undefined;
  } catch (err) {
    if (err instanceof InputError) return err.message;
    throw err;
  }
}

/** Seconds in words, rounded up to the largest unit that fits: "15 minutes", "2 hours", "1 day", "45 seconds". */
export function spokenDuration(seconds: number): string {
  for (const [unit, size] of [
    ['day', 86_400],
    ['hour', 3600],
    ['minute', 60],
  ] as const) {
    if (seconds >= size) {
      const n = Math.ceil(seconds / size);
      return `${n} ${unit}${n === 1 ? '' : 's'}`;
    }
  }
  return `${seconds} second${seconds === 1 ? '' : 's'}`;
}

/**
 * Checks an application's lifetimes (each a whole number of seconds within its bounds, or null), and that its
 * sign-ins outlive its access tokens as they will be with the server's lifetimes for what it leaves null.
 * `names` are how the caller's input calls them (CLI flags, JSON fields), for the message.
 */
export function checkLifetimes(
  lifetimes: Lifetimes,
  config: Pick<ServerConfig, 'accessTokenTtlSeconds' | 'grantTtlSeconds'>,
  names: { access: string; refresh: string },
): Lifetimes {
  const check = (value: number | null, name: string, bounds: { min: number; max: number }) => {
    if (value === null) return;
    if (!Number.isInteger(value) || value < bounds.min || value > bounds.max) {
      throw new InputError(
        `${name} must be from ${formatDuration(bounds.min)} to ${formatDuration(bounds.max)} (${bounds.min}-${bounds.max} s)`,
      );
    }
  };
  check(lifetimes.accessTokenTtl, names.access, ACCESS_TOKEN_TTL_BOUNDS);
  check(lifetimes.refreshTokenTtl, names.refresh, GRANT_TTL_BOUNDS);
  const access = accessTokenTtl(lifetimes, config);
  const refresh = refreshTokenTtl(lifetimes, config);
  if (refresh < access) {
    // Each named as where it comes from: the application's own, or the server's setting it inherits.
    const accessName = lifetimes.accessTokenTtl === null ? "the server's AUTHCLI_ACCESS_TOKEN_TTL" : names.access;
    const refreshName = lifetimes.refreshTokenTtl === null ? "the server's AUTHCLI_REFRESH_TOKEN_TTL" : names.refresh;
    throw new InputError(
      `the sign-in lifetime (${refreshName}, ${formatDuration(refresh)}) must be at least the access token lifetime (${accessName}, ${formatDuration(access)})`,
    );
  }
  return lifetimes;
}

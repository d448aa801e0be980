/**
 * The numbers of OpenID Connect Back-Channel Logout 1.0 (oauth/backchannel-logout.ts, oauth/backchannel-delivery.ts),
 * each with its reason. Part of defaults.ts, which re-exports them.
 */
import { DAY, HOUR, SECOND } from './units.js';

/**
 * §2.4 `exp` of a logout token: two minutes after `iat`. Each attempt signs the token anew (same `jti`, fresh
 * `iat` and `exp`), so a delivery retried for hours never posts an expired one; an RP that keeps `jti`s to refuse
 * replays (§2.6) need keep them only this long past the last attempt.
 */
export const LOGOUT_TOKEN_TTL_SECONDS = 120;
/**
 * Each POST of a logout token (env AUTHCLI_BACKCHANNEL_LOGOUT_TIMEOUT, seconds): connecting, TLS and the
 * answer's status line. An RP ends a session in milliseconds; 5 s, as for an upstream identity provider
 * (CONNECTOR_TIMEOUT_MS), tells a receiver that hangs from a slow one without holding a slot for long.
 */
export const BACKCHANNEL_LOGOUT_TIMEOUT_MS = 5 * SECOND;
/** Bounds of AUTHCLI_BACKCHANNEL_LOGOUT_TIMEOUT in seconds: under the token's 120 s lifetime, with room to spare. */
export const BACKCHANNEL_LOGOUT_TIMEOUT_BOUNDS = { min: 1, max: 20 } as const;
/**
 * The waits before the second, third and fourth attempts of a delivery that failed in a way another try may
 * mend: no connection, a timeout, 5xx, 408 or 429. Growing fourfold (1, 4, 16 s): a receiver restarting
 * (seconds) is reached at once. Any other answer (3xx, the other 4xx: the RP refused the token) is final, as is
 * an address refused (non-public).
 */
export const BACKCHANNEL_LOGOUT_RETRY_DELAYS_MS: readonly number[] = [1 * SECOND, 4 * SECOND, 16 * SECOND];
/**
 * Past the waits above, each next wait is four times the last, up to this: a receiver down for hours (a deploy
 * gone wrong, a weekend) is tried every hour, 24 tries a day, until the delivery's deadline
 * (BACKCHANNEL_LOGOUT_SESSION_DEADLINE_MS, BACKCHANNEL_LOGOUT_ACCESS_DEADLINE_MS).
 */
export const BACKCHANNEL_LOGOUT_RETRY_MAX_MS = HOUR;
/**
 * How long a logout is retried when a browser session ended (sign-out, a session replaced, a password change):
 * as long as that session could have been used (SESSION_TTL_SECONDS, 12 h), the longest an application can have
 * gone on trusting it; past it the delivery is given up, logged and counted. A longer AUTHCLI_SESSION_TTL keeps it
 * longer (config.ts), never shorter.
 */
export const BACKCHANNEL_LOGOUT_SESSION_DEADLINE_MS = 12 * HOUR;
/**
 * How long a logout is retried when an application's access ended (an access removed, every application signed
 * out by a password change or reset, a user disabled): as long as the sign-ins it ends could have been renewed
 * (GRANT_TTL_SECONDS, 30 days), the longest the application could have gone on using them. A longer
 * AUTHCLI_REFRESH_TOKEN_TTL keeps it longer (config.ts), never shorter.
 */
export const BACKCHANNEL_LOGOUT_ACCESS_DEADLINE_MS = 30 * DAY;
/**
 * Logout tokens being posted at once, per instance: a signout reaches a handful of applications; a burst of
 * signouts (the end of a working day, an operator disabling many users) waits in turn instead of opening a
 * socket per delivery.
 */
export const BACKCHANNEL_LOGOUT_CONCURRENCY = 16;
/**
 * How often each instance looks in the outbox for deliveries due (a retry, or one another instance left when
 * it stopped): a query on an index that finds nothing when nothing is due. A delivery made here is tried at
 * once, without waiting for it.
 */
export const BACKCHANNEL_LOGOUT_POLL_MS = 1 * SECOND;
/**
 * Deliveries still pending for one application, at most: past it a new one is given up at once (logged and
 * counted), so a receiver that is gone for good, or a self-registered client's unreachable URI and a loop of
 * sign-ins and sign-outs, cannot fill the store. 10 000 rows of about 200 bytes.
 */
export const BACKCHANNEL_LOGOUT_PENDING_PER_CLIENT = 10_000;
/** Delivered and given-up rows are kept this long for `authcli-server logouts`, then purged. */
export const BACKCHANNEL_LOGOUT_KEPT_MS = 7 * DAY;

/** What ServerConfig.backchannelLogout holds: the numbers above, the timeout as the environment set it. */
export interface BackchannelLogoutSettings {
  timeoutMs: number;
  retryDelaysMs: readonly number[];
  retryMaxMs: number;
  /** How long a delivery is retried after a session ended, and after an application's access ended. */
  sessionDeadlineMs: number;
  accessDeadlineMs: number;
  concurrency: number;
  pendingPerClient: number;
  pollMs: number;
}

/** The settings above that no environment variable changes. */
export const BACKCHANNEL_LOGOUT_BUILT_IN: Omit<BackchannelLogoutSettings, 'timeoutMs'> = {
  retryDelaysMs: BACKCHANNEL_LOGOUT_RETRY_DELAYS_MS,
  retryMaxMs: BACKCHANNEL_LOGOUT_RETRY_MAX_MS,
  sessionDeadlineMs: BACKCHANNEL_LOGOUT_SESSION_DEADLINE_MS,
  accessDeadlineMs: BACKCHANNEL_LOGOUT_ACCESS_DEADLINE_MS,
  concurrency: BACKCHANNEL_LOGOUT_CONCURRENCY,
  pendingPerClient: BACKCHANNEL_LOGOUT_PENDING_PER_CLIENT,
  pollMs: BACKCHANNEL_LOGOUT_POLL_MS,
};

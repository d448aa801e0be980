/**
 * The numbers of OpenID Connect Back-Channel Logout 1.0 (oauth/backchannel-logout.ts, oauth/backchannel-delivery.ts),
 * each with its reason. Part of defaults.ts, which re-exports them.
 */
import { SECOND } from './units.js';

/**
 * §2.4 `exp` of a logout token: two minutes after `iat`. The token is posted at once and, when the receiver
 * fails, again within the retries below, all well inside it; an RP that keeps `jti`s to refuse replays (§2.6)
 * need keep them only this long.
 */
export const LOGOUT_TOKEN_TTL_SECONDS = 120;
/**
 * Each POST of a logout token (env AUTHCLI_BACKCHANNEL_LOGOUT_TIMEOUT, seconds): connecting, TLS and the
 * answer's status line. An RP ends a session in milliseconds; 5 s, as for an upstream identity provider
 * (CONNECTOR_TIMEOUT_MS), tells a receiver that hangs from a slow one without holding a slot for long.
 */
export const BACKCHANNEL_LOGOUT_TIMEOUT_MS = 5 * SECOND;
/**
 * Bounds of AUTHCLI_BACKCHANNEL_LOGOUT_TIMEOUT in seconds: at 20 s, four attempts and the waits between them
 * (below) end within 101 s, still inside the token's 120 s lifetime, so no attempt posts an expired token.
 */
export const BACKCHANNEL_LOGOUT_TIMEOUT_BOUNDS = { min: 1, max: 20 } as const;
/**
 * The waits before the second, third and fourth attempts of a delivery that failed in a way another try may
 * mend: no connection, a timeout, 5xx, 408 or 429. Growing fourfold (1, 4, 16 s): a receiver restarting
 * (seconds) is reached; one that is down stops costing anything after 21 s of waiting. Any other answer
 * (3xx, the other 4xx: the RP refused the token) is final, as is an address refused (non-public).
 */
export const BACKCHANNEL_LOGOUT_RETRY_DELAYS_MS: readonly number[] = [1 * SECOND, 4 * SECOND, 16 * SECOND];
/**
 * Logout tokens being posted at once, per instance: a signout reaches a handful of applications; a burst of
 * signouts (the end of a working day, an operator disabling many users) waits in turn instead of opening a
 * socket per delivery.
 */
export const BACKCHANNEL_LOGOUT_CONCURRENCY = 16;
/**
 * Deliveries waiting for a slot or a retry, per instance, at most: past it a new one is dropped (logged and
 * counted failed) rather than let a flood of logouts with unreachable receivers grow memory without bound.
 * 10 000 tokens of about 1 KB each.
 */
export const BACKCHANNEL_LOGOUT_QUEUE_MAX = 10_000;

/** What ServerConfig.backchannelLogout holds: the numbers above, the timeout as the environment set it. */
export interface BackchannelLogoutSettings {
  timeoutMs: number;
  retryDelaysMs: readonly number[];
  concurrency: number;
  queueMax: number;
}

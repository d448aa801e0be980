/**
 * The abuse limits, each with its reason: how many of an event one subject (a client IP, an account, an
 * application) may cause in a window. Counted in the store, so they hold across instances (oauth/limits.ts);
 * operators override them with AUTHCLI_LIMITS (config.ts). Part of defaults.ts, which re-exports them.
 */
import { HOUR, MINUTE } from './units.js';

/** `limit` events per fixed window of `windowMs`. */
export interface Limit {
  readonly limit: number;
  readonly windowMs: number;
}

/**
 * Every abuse limit, by the counter it applies to. A counter is consumed
 * before the work it protects; the first one over its limit refuses.
 */
export const LIMITS = {
  /** Failed sign-ins per client IP across usernames: one place spraying many accounts. */
  'signin-ip': { limit: 100, windowMs: 15 * MINUTE },
  /** Failed sign-ins per client IP and username: an online guess of one password from one place. */
  'signin-account-ip': { limit: 10, windowMs: 15 * MINUTE },
  /**
   * Failed sign-ins per username across every IP (distributed guessing),
   * from browsers where that user has not signed in before. Past it the
   * account is slowed to `signin-account-slowed` for such browsers until the
   * window ends; its owner, on a browser they signed in with before, is
   * counted by `signin-device` instead and is not slowed at all.
   */
  'signin-account': { limit: 50, windowMs: 15 * MINUTE },
  /** Attempts on an account past `signin-account` from unknown browsers: one a minute, from anywhere. */
  'signin-account-slowed': { limit: 1, windowMs: MINUTE },
  /** Failed sign-ins per device cookie (a browser where this user signed in before; web/trusted-device.ts). */
  'signin-device': { limit: 10, windowMs: 15 * MINUTE },
  /**
   * User-code guesses per client IP (RFC 8628 §5.1): the same budget for the
   * code typed at /device and the code posted to /device/decision, since both
   * guess the same secret. 20^8 codes and 10 guesses per 10 minutes: finding
   * one live code from one IP takes on the order of a million years.
   */
  'user-code-ip': { limit: 10, windowMs: 10 * MINUTE },
  /** User-code guesses per signed-in account across IPs. */
  'user-code-account': { limit: 30, windowMs: 10 * MINUTE },
  /**
   * Sign-in continuations one client IP may make (each signed-out visit to a page that needs sign-in stores
   * one, up to ~4 KB, for 15 minutes). Past it the sign-in still works; it just lands on the home page.
   */
  'continuation-ip': { limit: 300, windowMs: 10 * MINUTE },
  /** Device authorizations one client IP may start for one application (a person needs a handful). */
  'device-authz-ip': { limit: 30, windowMs: 10 * MINUTE },
  /** Device authorizations per application from everywhere: each row is kept a day. */
  'device-authz-client': { limit: 600, windowMs: MINUTE },
  /**
   * Client registrations per client IP with AUTHCLI_REGISTRATION=open (RFC 7591 §3): a developer's tooling
   * registers a handful; each registered client is a row kept until it is deleted.
   */
  'registration-ip': { limit: 20, windowMs: HOUR },
  /**
   * Pushed authorization requests (RFC 9126) a public client may make from one IP: each is a row kept up to
   * 15 minutes, and a public client authenticates nothing. A person starts a handful.
   */
  'par-ip': { limit: 30, windowMs: 10 * MINUTE },
  /** Pushed authorization requests per application from everywhere (a confidential web app pushes for all its users). */
  'par-client': { limit: 1200, windowMs: MINUTE },
  /**
   * Failed client authentications per client IP: requests to the token, introspection, revocation, PAR and
   * device authorization endpoints that present a client secret (RFC 6749 §2.3.1) and do not authenticate (a
   * wrong secret, or one for an unknown or public client). Secrets are 256 random bits the server made, so the
   * limit is not what keeps them unguessed; it stops one source that keeps presenting wrong ones (a scan, a
   * flood, a deployment still sending a rotated-out secret) and shows it in `limits list` and the metrics. A
   * client with a stale secret fails a few times per instance before someone looks; a hundred is a loop or a
   * guesser. Only failures count: a request that authenticates reads the counter and adds nothing, so a busy
   * backend's bursts never meet it. Past it every secret from that address is refused, the right one too
   * (else the limit would still answer guesses), until the window ends or `limits clear-ip`.
   */
  'client-auth-ip': { limit: 100, windowMs: 15 * MINUTE },
  /**
   * Passkey ceremonies one client IP may start (each stores a challenge row for 5 minutes, and each sign-in
   * attempt with a passkey needs one of its own). A person starts a few; autofill starts one per page view.
   */
  'webauthn-ip': { limit: 300, windowMs: 10 * MINUTE },
  /**
   * Writes to the admin API (/admin/v1) per caller (an administrator, or an application by client_id): ten a
   * second for a minute. A Terraform apply or a provisioning script makes a few hundred; a loop gone wrong
   * making users or applications without end is stopped before it fills the store.
   */
  'admin-write': { limit: 600, windowMs: MINUTE },
} as const satisfies Record<string, Limit>;

export type CounterKind = keyof typeof LIMITS;
export type Limits = Readonly<Record<CounterKind, Limit>>;

/**
 * How stale an instance's list of the client IPs with failed client authentications may be (oauth/limits.ts
 * ClientAuthFailures): a request from an address on no list reads no counter, so a confidential client's token
 * requests cost no store round trip for the limit; the list is read again in the background at most this often,
 * which is also how long another instance's first failure from an address may go unseen here. One second: a
 * query a second per instance, and a guess is counted (and refused past the limit) by the store either way.
 */
export const CLIENT_AUTH_FAILURES_REFRESH_MS = 1000;

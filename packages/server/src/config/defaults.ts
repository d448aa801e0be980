/**
 * Every lifetime, limit, window and size the server uses, each with its
 * reason, in one place. Operators override the ones marked (env) through the
 * environment (see config.ts); the rest are protocol or security choices.
 */

import { DAY, MINUTE, SECOND } from './units.js';

// The abuse limits (LIMITS, counted in the store) are a section of their own: abuse-limits.ts; so are the
// connectors' numbers: connector-defaults.ts, back-channel logout's: backchannel-defaults.ts, and those of client
// assertions: client-assertion-defaults.ts.
export * from './abuse-limits.js';
export * from './backchannel-defaults.js';
export * from './connector-defaults.js';
export * from './client-assertion-defaults.js';
// Tokens', sign-ins' and sessions' lifetimes, with the bounds an operator may set them within.
export * from './lifetime-defaults.js';

// ---- lifetimes ----------------------------------------------------------------

/** RFC 8628 §3.2: lifetime of a device code and its user code. */
export const DEVICE_CODE_TTL_SECONDS = 600;
/** RFC 8628 §3.2: the first polling interval; §3.5: slow_down adds 5 seconds. */
export const DEVICE_POLL_INTERVAL_SECONDS = 5;
/** Bounds of AUTHCLI_DEVICE_CODE_TTL: a minute to type a code at the least; past an hour a code on a screen is a risk left lying about. */
export const DEVICE_CODE_TTL_BOUNDS = { min: 60, max: 3600 } as const;
/** Bounds of AUTHCLI_DEVICE_POLL_INTERVAL (RFC 8628 §3.2 `interval`). */
export const DEVICE_POLL_INTERVAL_BOUNDS = { min: 1, max: 60 } as const;
/**
 * How long after a device asked for a code its sign-in can still be approved (env
 * AUTHCLI_DEVICE_APPROVAL_WINDOW, seconds): a person who starts a sign-in on a device in front of them types the
 * code within a minute or two, signing in first included; a code a phisher started and sent (RFC 8628 §5.4,
 * draft-ietf-oauth-cross-device-security "short-lived codes") travels by mail or chat and is read later. Past
 * it the confirmation page offers only Deny and asks the person to start again on the device, which shows a
 * new code. The device code keeps its lifetime (AUTHCLI_DEVICE_CODE_TTL), so a slow person is told to restart
 * rather than left waiting; a window longer than that lifetime changes nothing.
 */
export const DEVICE_APPROVAL_WINDOW_SECONDS = 300;
/** Bounds of AUTHCLI_DEVICE_APPROVAL_WINDOW: a minute to type a code at the least; past an hour no code lives anyway. */
export const DEVICE_APPROVAL_WINDOW_BOUNDS = { min: 60, max: 3600 } as const;
/** On SIGTERM/SIGINT, requests in flight get this long to finish before their connections are cut. */
export const SHUTDOWN_GRACE_MS = 10_000;
/**
 * On SIGTERM/SIGINT the server first keeps serving this long with /readyz at 503: a load balancer or an
 * orchestrator polling readiness every few seconds (commonly 2-5 s) stops sending new requests within it, and
 * the ones already sent, or queued in the listener's backlog, are answered instead of reset. Then the listener
 * closes and requests in flight get SHUTDOWN_GRACE_MS. A second signal ends the drain at once.
 */
export const SHUTDOWN_DRAIN_MS = 5_000;
/** Bounds of AUTHCLI_SHUTDOWN_DRAIN in seconds: 0 (no drain, a single server with nothing in front) to 10 minutes. */
export const SHUTDOWN_DRAIN_BOUNDS = { min: 0, max: 600 } as const;
/** A sign-in continuation (the authorization request or page a sign-in resumes) outlives a slow typist. */
export const CONTINUATION_TTL_MS = 15 * MINUTE;
/**
 * RFC 9126 §2.2 `expires_in` of a pushed request's request_uri: the time from the push to the browser opening
 * it, which a client does at once. Once opened it lives as long as a sign-in continuation (a person may have
 * to sign in first), and it is used up by the one authorization response it gets.
 */
export const PAR_REQUEST_TTL_SECONDS = 90;
/** Pushing authorization requests is required of every client (AUTHCLI_REQUIRE_PAR; RFC 9126 §5); off: per application. */
export const REQUIRE_PAR = false;
/** How long a dashboard flash (a new client secret, a saved notice) waits for the page after its redirect. */
export const FLASH_TTL_MS = 5 * MINUTE;
/** Flashes kept per session: a few tabs acting at once, never an unbounded queue. */
export const FLASHES_PER_SESSION = 8;
/** Consumed codes and device authorizations are kept this long past expiry, so a late replay still revokes. */
export const REPLAY_EVIDENCE_MS = DAY;
/**
 * A user's sign-in records (password sign-ins, device approvals and denials; the account page's "Recent
 * sign-ins") are kept this long: as long as a sign-in they record can last (GRANT_TTL_SECONDS), so a device
 * still signed in can be traced to the approval that let it in. Then they are purged.
 */
export const SIGNIN_EVENTS_KEPT_MS = 30 * DAY;
/**
 * At most this many sign-in records per user, the newest (each new one drops the oldest past it): a month of
 * daily sign-ins, what the account page shows, and a bound a script signing in over and over cannot pass.
 */
export const SIGNIN_EVENTS_PER_USER = 30;
/** Rate-limit counters are purged this long after their window started (every window is far shorter). */
export const RATE_LIMIT_ROWS_KEPT_MS = DAY;
/** How often expired rows are purged. */
export const PURGE_INTERVAL_MS = 10 * MINUTE;
/** How long an application read from the store answers lookups on one instance (another's changes show within it). */
export const APPLICATION_CACHE_MS = SECOND;
/**
 * How long one instance answers from its copy of the resources (RFC 8707 APIs and their scopes) before reading
 * them again: another instance's `resources add|update|remove` shows within it, as an application's change does.
 */
export const RESOURCE_CACHE_MS = SECOND;
/** The same for CI workloads' trust policies (`workloads add|remove`). */
export const WORKLOAD_CACHE_MS = SECOND;
/** A new signing key waits this long before use, so every instance publishes it first. */
export const KEY_ACTIVATION_DELAY_MS = MINUTE;
/** How often an instance re-reads the signing keys. */
export const KEY_REFRESH_MS = 30 * SECOND;
/**
 * Default lifetime of an initial access token (`registration token create
 * --expires-in`): a day to hand it to whoever registers the client. Each
 * token registers one client (single use), so a longer life only widens the
 * window in which a leaked copy works.
 */
export const INITIAL_ACCESS_TOKEN_TTL_SECONDS = DAY / SECOND;
/** The longest `--expires-in` accepted: past 30 days a registration credential is a standing secret, not a hand-over. */
export const INITIAL_ACCESS_TOKEN_TTL_MAX_SECONDS = 30 * (DAY / SECOND);
/** Used, expired and revoked initial access tokens stay listed this long past expiry, then are purged. */
export const INITIAL_ACCESS_TOKENS_KEPT_MS = 7 * DAY;

// ---- DPoP (RFC 9449; oauth/dpop.ts) ----------------------------------------------

/**
 * RFC 9449 §4.3 (11), §11.1: a proof's `iat` may be this far from the
 * server's clock, either way. A minute covers clock skew and a slow network;
 * the `jti` of every accepted proof is kept just as long (a proof outside
 * the window is refused anyway), so the window also bounds that table.
 */
export const DPOP_IAT_WINDOW_SECONDS = 60;
/**
 * RFC 9449 §8: a server nonce is an HMAC of the current time window; the
 * current and the previous window's nonces are accepted, so a nonce lives
 * 5 to 10 minutes and a client that keeps the latest `DPoP-Nonce` it saw
 * never has to retry.
 */
export const DPOP_NONCE_WINDOW_SECONDS = 300;
/**
 * RFC 9449 §8: the token endpoint requires a server nonce in every proof
 * (env AUTHCLI_DPOP_NONCE, on/off). A nonce limits a proof made ahead of time
 * on a compromised machine to the nonce's lifetime; it costs a client one
 * extra request the first time (oauth4webapi and authcli retry by
 * themselves). Protected resources (userinfo) check a nonce a proof carries
 * but do not require one.
 */
export const DPOP_NONCE_REQUIRED = true;
/** Public keys of DPoP proofs kept imported (oauth/dpop-signature.ts `DpopKeys`): one per active client key, a few hundred bytes each. */
export const DPOP_KEYS_CACHED = 10_000;
/** RFC 9449 §4.2: the longest `jti` accepted (a client sends ~22-43 characters of randomness). */
export const DPOP_JTI_MAX = 256;
/** The longest DPoP header read: an RSA-4096 JWK and the claims fit in well under this. */
export const DPOP_PROOF_MAX = 4096;

// ---- dynamic client registration (RFC 7591, RFC 7592) ----------------------------

/**
 * Who may register clients at `POST /oauth/register` (env AUTHCLI_REGISTRATION):
 * `off` (the default: applications come from the dashboard and `apps add`
 * only, and the endpoint is not there), `token` (a caller presents an initial
 * access token the operator created, RFC 7591 §3), or `open` (anyone,
 * counted per client IP by `registration-ip`). Off by default: every
 * registered client can show its own name on the consent page.
 */
export const REGISTRATION_MODES = ['off', 'open', 'token'] as const;
export type RegistrationMode = (typeof REGISTRATION_MODES)[number];
export const REGISTRATION_MODE: RegistrationMode = 'off';

// ---- passkeys (WebAuthn Level 3; web/passkeys.tsx) ----------------------------------

/**
 * How long a passkey ceremony's challenge may be answered: WebAuthn's recommended range for a ceremony that
 * requires user verification is 5-10 minutes (§15.1, "Recommended Range for Ceremony Timeouts"); the lower
 * end, since a challenge waiting in the store is one someone could still answer.
 */
export const WEBAUTHN_CHALLENGE_TTL_MS = 5 * MINUTE;
/**
 * Adding or removing a way into an account (a passkey, a linked upstream account) needs a sign-in at most this
 * long ago, and a passkey sign-in when the account has a passkey (oauth/credential-change.ts): a session left
 * open on a shared computer, or one opened with a stolen password, must not hand out a new way in. 10 minutes is
 * what the step just before takes (sign in, open the account page, name the passkey) with room to spare; GitHub's
 * "sudo mode" uses 2 hours, which is longer than anyone needs between signing in and adding a key.
 */
export const CREDENTIAL_CHANGE_REAUTH_MS = 10 * MINUTE;
/** Passkeys one account may hold: a person has a handful of devices and keys; each is a row and a list entry. */
export const PASSKEYS_PER_USER_MAX = 20;
/** A passkey's name, characters ("Work laptop"). */
export const PASSKEY_NAME_MAX = 64;
/** A WebAuthn response as posted (JSON of base64url fields; an attestation with a certificate chain is a few KB). */
export const WEBAUTHN_RESPONSE_MAX = 12 * 1024;

// ---- input sizes: what is refused (or never looked up) before any work -------------------

/** Longest `state` an authorization request may carry (RFC 6749 §4.1.1): it comes back in a URL. */
export const AUTHORIZE_STATE_MAX = 2048;
/** Longest `nonce` (OIDC Core §3.1.2.1): it is copied into the ID token. */
export const NONCE_MAX = 512;
/**
 * Longest `claims` parameter (OIDC Core §5.5), in characters: every standard
 * claim named in both members with a few values each fits in well under half.
 */
export const CLAIMS_PARAMETER_MAX = 4096;
/** Longest `state` of an RP-initiated logout request (OpenID Connect RP-Initiated Logout 1.0 §2). */
export const LOGOUT_STATE_MAX = 1024;
/**
 * Longest token revocation (RFC 7009) and introspection (RFC 7662) look at:
 * longer than any token this server issues (a JWT access token is about
 * 1 KB); anything longer is answered without a look-up.
 */
export const PRESENTED_TOKEN_MAX = 4096;
/**
 * Longest refresh token or authorization code that is hashed and looked up:
 * both are 43 characters here (256 random bits, base64url).
 */
export const PRESENTED_SECRET_MAX = 256;
/** Longest username and password the sign-in form checks; longer ones fail like a wrong password. */
export const SIGNIN_USERNAME_MAX = 128;
export const SIGNIN_PASSWORD_MAX = 1024;
/** The shortest password the operator commands accept (NIST SP 800-63B §5.1.1.2: at least 8). */
export const MIN_PASSWORD_LENGTH = 8;

/**
 * Longest text claim (OIDC Core §5.1: names, email, phone number, gender, an
 * address field): every claim is copied into ID tokens and userinfo answers,
 * so none may grow them without bound. 256 holds any real name and the
 * longest email address RFC 5321 §4.5.3.1 allows (254).
 */
export const CLAIM_TEXT_MAX = 256;
/** Longest URL claim (profile, picture, website): 2048, the length past which URLs stop working in common software. */
export const CLAIM_URL_MAX = 2048;
/**
 * Longest redirect URI (callback or post-logout) an application may register: 2048, as for URL claims. It is
 * copied into every authorization response's Location header, and a longer one breaks browsers and proxies.
 */
export const REDIRECT_URI_MAX = 2048;
/** Longest application name: what the consent page, the dashboard and `apps list` show in one line. */
export const APPLICATION_NAME_MAX = 100;
/**
 * How many times a claims update is tried again when another update of the
 * same user changed the claims between its read and its conditional write
 * (store/repositories/users.ts). Each loser retries at once, so N concurrent
 * writers of one user need at most N-1 retries; past this the store is in
 * trouble and the update fails instead of spinning.
 */
export const CLAIMS_UPDATE_ATTEMPTS = 32;

/** What a username may be (letters, digits, `. _ @ -`, 1-64); per-account limits count only names of this form. */
export const USERNAME_PATTERN = /^[A-Za-z0-9._@-]{1,64}$/;

// ---- password hashing ----------------------------------------------------------

/**
 * Cost of user password hashes (env AUTHCLI_PASSWORD_HASH_COST) as log2 of Argon2id's memory in KiB, with 3
 * passes and 1 lane: 16 is 64 MiB, RFC 9106's memory-constrained recommendation (64 MiB, 3 passes), above the
 * OWASP Password Storage Cheat Sheet's first choice (Argon2id, 19 MiB, 2 passes), and the production floor: below
 * it the server warns at start. About 50 ms a hash on one core of the 2-core VM of bench/README.md, where the
 * scrypt this replaced (N=2^17, r=8, 128 MiB, OWASP's second choice) took 600 ms: a guesser's work per guess is of
 * the same order (64 MiB filled 3 times against 128 MiB written and read once), but Argon2id's implementation
 * fills memory at the hardware's speed where OpenSSL's scrypt does not, so the server pays a tenth, and 50 people
 * signing in at once are served in about 2 s instead of 18 (issue 38). Tests run at the bottom of the bounds (1 MiB, about a
 * millisecond); 18 (256 MiB) is the most a hash is written with.
 */
export const PASSWORD_HASH_COST = 16;
export const PASSWORD_HASH_COST_BOUNDS = { min: 10, max: 18 } as const;
/** Argon2id's parameters at a cost. */
export interface PasswordHashParams {
  /** Memory, KiB (Argon2's m). */
  readonly memoryKiB: number;
  /** Passes over it (Argon2's t). */
  readonly passes: number;
  /** Lanes (Argon2's p): 1, as OWASP gives it, because a hashing thread computes one at a time anyway. */
  readonly lanes: number;
}
/** The Argon2id parameters of a cost (log2 of the memory in KiB). */
export const passwordHashParams = (cost: number): PasswordHashParams => ({ memoryKiB: 2 ** cost, passes: 3, lanes: 1 });
/** Argon2id parameters at the default cost. */
export const PASSWORD_HASH = passwordHashParams(PASSWORD_HASH_COST);
/**
 * Password-hashing threads (env AUTHCLI_PASSWORD_HASH_THREADS): one per core. The threads run at the lowest
 * priority (nice 19, util/password-pool.ts), so the kernel gives the event loop, which signs tokens and answers
 * every other request, a core whenever it has work, and the hashing takes only what is left: a burst of sign-ins
 * uses every idle core. Measured on 2 cores in one run of the mixed scenario (bench/README.md): 20 at once all
 * signed in with the last after 5.3 s instead of 10.6 s, 50 at once all 50 instead of 39 (11 x 503), and the code
 * exchange's p99 during the wrong-password flood 58 ms against 57 ms. Half the cores left one idle in exactly the
 * bursts that need it.
 */
export const passwordHashThreads = (cores: number) => Math.max(1, cores);
/**
 * The longest a password hash waits for a thread (env AUTHCLI_PASSWORD_HASH_QUEUE_DEADLINE, seconds): a burst
 * of sign-ins (everyone at the start of a meeting, all the browsers of an office after a restart) is served in
 * turn within it, and the queue admits only as many hashes as the threads can start by then (util/password-pool.ts),
 * so past it the answer is 503 with `Retry-After` at once, and a hash that still has not started when its deadline
 * comes (hashes got slower meanwhile) is answered then, never later. 20 s: fifty people at once (a class, an office
 * at nine) on the smallest server, one hashing thread at the highest cost (18, about 0.2 s a hash), take 10 s to
 * serve, and a wait on a page that ends signed in beats a "try again" that starts the wait over; it is well inside the 60 s a proxy
 * commonly waits for a backend, so the person gets our answer, not the proxy's 504.
 */
export const PASSWORD_HASH_QUEUE_DEADLINE_MS = 20 * SECOND;
/** Bounds of AUTHCLI_PASSWORD_HASH_QUEUE_DEADLINE in seconds: at least one hash's wait; at most the 60 s a proxy commonly waits. */
export const PASSWORD_HASH_QUEUE_DEADLINE_BOUNDS = { min: 1, max: 60 } as const;
/**
 * The time a hash is taken to last before any has been measured: about 50 ms at cost 16 on a server core
 * (above), and Argon2id's time grows with its memory. The queue then follows the hashes it measures, so a slower machine
 * (or one where the nice-19 threads get little CPU) shortens its queue within a few hashes.
 */
export const passwordHashMsEstimate = (cost: number) => 50 * 2 ** (cost - PASSWORD_HASH_COST);
/**
 * Weight of each measured hash in the moving average of the time a hash takes (RFC 6298's 1/8 for a TCP round
 * trip): hashes that got slower under load show within a few hashes, and one slow hash does not halve the queue.
 */
export const PASSWORD_HASH_ESTIMATE_WEIGHT = 1 / 8;
/**
 * Password hashes in flight (running or waiting) per client IP: one address cannot take every place and shut
 * sign-in for all. Now that places wait in turn, a handful of people behind one office address who press
 * "Sign in" in the same seconds are all served; 8 is a fiftieth of the places on the smallest server (one thread
 * at the default cost starts about 400 hashes within the deadline), so filling them takes at least 50 addresses,
 * each of which the sign-in limits charge (`signin-ip`).
 */
export const PASSWORD_HASHES_PER_CLIENT = 8;

// ---- network (env overrides in config.ts) ----------------------------------------

/** Largest request body, bytes (env AUTHCLI_BODY_LIMIT). Every form the server takes is far smaller. */
export const BODY_LIMIT_BYTES = 16 * 1024;
/** Time to receive a request's headers (env AUTHCLI_HEADERS_TIMEOUT, seconds). */
export const HEADERS_TIMEOUT_MS = 10 * SECOND;
/** Time to receive a whole request, body included (env AUTHCLI_REQUEST_TIMEOUT, seconds). */
export const REQUEST_TIMEOUT_MS = 30 * SECOND;
/**
 * An idle kept-alive connection is closed after this (env
 * AUTHCLI_KEEPALIVE_TIMEOUT, seconds). Longer than the idle timeout of the
 * proxies that reuse connections to a backend (60 s at AWS ALB and at
 * nginx's upstream keepalive): a server that closes first races with the
 * proxy's next request on that connection, and a POST lost that way is a
 * 502. Fastify's default, for that reason. Idle connections cost a socket
 * each and count against {@link MAX_CONNECTIONS}, which is what bounds them.
 */
export const KEEPALIVE_TIMEOUT_MS = 72 * SECOND;
/** Open connections at most (env AUTHCLI_MAX_CONNECTIONS); kept below the file-descriptor limit. */
export const MAX_CONNECTIONS = 8192;
/** Database connect, pool-acquire and statement timeout (env AUTHCLI_DB_TIMEOUT, seconds). */
export const DB_TIMEOUT_MS = 5 * SECOND;
/**
 * `Retry-After` of a 503 for a store that failed or did not answer. Not
 * sooner: each retry during an outage holds a connection and waits up to the
 * database timeout again.
 */
export const STORE_RETRY_AFTER_SECONDS = 5;
/** /readyz answers 503 when the store does not answer within this. */
export const READY_TIMEOUT_MS = SECOND;

// ---- metrics (env AUTHCLI_METRICS_PORT, AUTHCLI_METRICS_HOST; util/metrics.ts) ---------------

/**
 * Where `GET /metrics` listens when AUTHCLI_METRICS_PORT is set (it is off by
 * default): loopback, because the figures (traffic, errors, refused sign-ins)
 * are for the operator's scraper, never for the public listener's clients.
 * Set AUTHCLI_METRICS_HOST to a private address for a scraper on another machine.
 */
export const METRICS_HOST = '127.0.0.1';
/** Open connections at most on the metrics listener: it serves a scraper or two. */
export const METRICS_MAX_CONNECTIONS = 32;
/**
 * Request latency buckets, seconds: a device poll answers in well under a
 * millisecond, a code exchange in a few, a sign-in (an Argon2id hash) in tens to
 * hundreds; 5 s is where the database timeout cuts a request anyway.
 */
export const HTTP_DURATION_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5] as const;
/**
 * Store latency buckets, seconds: an embedded statement takes tens of
 * microseconds, a PostgreSQL round trip about a millisecond on a local
 * network; the top bucket is the database timeout (DB_TIMEOUT_MS).
 */
export const STORE_DURATION_BUCKETS_S = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
] as const;

// ---- the store ---------------------------------------------------------------------

/** Applications one instance keeps in its lookup cache (see APPLICATION_CACHE_MS); past it the cache starts over. */
export const APPLICATION_CACHE_SIZE = 1000;
/** PostgreSQL connections per instance: the hot paths hold one for a statement or a short transaction. */
export const POSTGRES_POOL_SIZE = 10;
/**
 * PostgreSQL: how much longer than the statement timeout pg waits for an
 * answer before giving the connection up (enough for the server's own
 * cancellation to travel back over a working network).
 */
export const QUERY_TIMEOUT_MARGIN_MS = 250;
/** SQLite: how long a statement waits for another process's write lock (an operator command) before failing. */
export const SQLITE_BUSY_TIMEOUT_MS = 5 * SECOND;
/** How often the embedded store's background thread copies committed WAL pages into the database file. */
export const CHECKPOINT_INTERVAL_MS = 50;
/**
 * With background checkpoints, the most pages the write-ahead log may hold
 * (64 MiB of 4 KiB pages) before the commit that grows it past that finishes
 * the checkpoint itself (see store/sqlite-engine.ts).
 */
export const WAL_LIMIT_PAGES = 16_384;
/** A write-ahead log that grew past this (a long reader kept it from starting over) is cut back once it can be. */
export const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

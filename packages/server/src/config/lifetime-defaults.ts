/**
 * How long what the server issues lives, each with its reason and, where the operator may change it, its
 * bounds and their reasons: the server's default through the environment (config.ts), and an application's
 * own access and refresh token lifetimes (`apps add|update --access-token-ttl|--refresh-token-ttl`).
 */

/** Authorization code: RFC 6749 §4.1.2 says at most 10 minutes; a client redeems within seconds. */
export const CODE_TTL_SECONDS = 60;

/** Access token (env AUTHCLI_ACCESS_TOKEN_TTL): short, because a JWT is valid until it expires. */
export const ACCESS_TOKEN_TTL_SECONDS = 900;
/**
 * Bounds of an access token's lifetime, the server's and an application's: past a day, a token that leaked
 * (a log, a shell history) works for longer than anyone would notice, and a revocation reaches only the
 * resource servers that introspect. At least a second: tests and demos of expiry use short ones.
 */
export const ACCESS_TOKEN_TTL_BOUNDS = { min: 1, max: 86_400 } as const;

/** ID token (env AUTHCLI_ID_TOKEN_TTL): read once, at sign-in, by the application it is for (OIDC Core §3.1.3.7). */
export const ID_TOKEN_TTL_SECONDS = 900;
/**
 * Bounds of AUTHCLI_ID_TOKEN_TTL: at least a minute, since an application checks `exp` against its own clock
 * and a clock a little behind would refuse a shorter one on arrival; at most a day, since an ID token says
 * how someone signed in then, and older than that it is used as a session, which it is not.
 */
export const ID_TOKEN_TTL_BOUNDS = { min: 60, max: 86_400 } as const;

/**
 * A sign-in (refresh-token family) ends this long after it began, whatever its use (RFC 9700 §4.14.2): env
 * AUTHCLI_REFRESH_TOKEN_TTL, or an application's own.
 */
export const GRANT_TTL_SECONDS = 30 * 24 * 3600;
/**
 * Bounds of a sign-in's lifetime: at least an hour, or a refresh token would hardly outlive the access token
 * it renews (it must not be shorter than the access token; config.ts and the applications check that); at most
 * 90 days, a quarter: a lost laptop's sign-in should not outlive the access reviews a team does.
 */
export const GRANT_TTL_BOUNDS = { min: 3_600, max: 90 * 24 * 3600 } as const;

/** A device cookie (a browser where a user signed in) is trusted this long after its last sign-in. */
export const TRUSTED_DEVICE_TTL_SECONDS = 180 * 24 * 3600;

/** Browser session at the server's pages (env AUTHCLI_SESSION_TTL): a working day and its evening. */
export const SESSION_TTL_SECONDS = 12 * 3600;
/**
 * Bounds of AUTHCLI_SESSION_TTL: at least 5 minutes, the time a sign-in, a consent and a device approval take;
 * at most 30 days: a session is what signs a person in to the next application without a password, so a
 * browser left signed in for longer on a shared machine is an account left open.
 */
export const SESSION_TTL_BOUNDS = { min: 300, max: 30 * 24 * 3600 } as const;

/**
 * The numbers of client authentication by signed assertion (`private_key_jwt`, RFC 7523; oauth/client-assertion.ts,
 * oauth/client-jwks.ts, http/outbound.ts), each with its reason. Part of defaults.ts, which re-exports them.
 */
import { DAY, MINUTE, SECOND } from './units.js';

// ---- client assertions: private_key_jwt (RFC 7523; oauth/client-assertion.ts, oauth/client-jwks.ts) ----

/**
 * The furthest a client assertion's `exp` may be from the server's clock (RFC 7523 §3 (4) leaves the bound to
 * the server): a client signs an assertion just before sending it (oauth4webapi and openid-client give it 60 s),
 * so 5 minutes is ample; a longer-lived one would be worth more to whoever copied it, and its `jti` is kept
 * until it expires.
 */
export const CLIENT_ASSERTION_MAX_LIFETIME_SECONDS = 300;
/**
 * How far a client's clock may be from ours when its assertion's `exp`, `nbf` and `iat` are checked (RFC 7523
 * §3 (4), (5), (6) "reasonable leeway"): servers kept by NTP differ by milliseconds, a virtual machine after a
 * pause by seconds; 30 s covers both and stays small beside the 5 minutes above.
 */
export const CLIENT_ASSERTION_CLOCK_SKEW_SECONDS = 30;
/** The longest `client_assertion` read (characters): an RS256 or PS256 signature by a 4096-bit key and the claims fit in 2 KB. */
export const CLIENT_ASSERTION_MAX = 8192;
/** The longest `jti` accepted in a client assertion (a client sends 22-43 characters of randomness). */
export const CLIENT_ASSERTION_JTI_MAX = 256;
/**
 * The largest JWK Set a client may register (`jwks`) or serve at its `jwks_uri`, bytes of JSON: a few RSA
 * keys with their X.509 chains (`x5c`) during a rotation take 10-20 KB; anything larger is not a key set.
 */
export const CLIENT_JWKS_MAX_BYTES = 32 * 1024;
/** Keys one client's JWK Set may hold: two or three during a rotation, a handful more for other uses. */
export const CLIENT_JWKS_MAX_KEYS = 20;
/** The longest `jwks_uri` accepted, as for redirect URIs. */
export const CLIENT_JWKS_URI_MAX = 2048;
/**
 * A fetch of a client's `jwks_uri`, connection, TLS and body included: the client's token request waits on it,
 * and a static JSON document is served within milliseconds by anything that works; past it the request is
 * answered invalid_client at once (and the next fetch waits for the cooldown below).
 */
export const CLIENT_JWKS_TIMEOUT_MS = 3 * SECOND;
/**
 * How long a fetched JWK Set is used when its answer says nothing (no `Cache-Control: max-age`): keys change
 * seldom, and a new key is picked up at once anyway by its unknown `kid` (after the cooldown below).
 */
export const CLIENT_JWKS_CACHE_MS = 10 * MINUTE;
/**
 * The bounds within which a `Cache-Control: max-age` (or `no-cache`, `no-store`: the lower bound) is honoured:
 * at least a minute, so a client that says "do not cache" cannot make every token request a fetch; at most a
 * day, so a key it stopped serving stops working within a day whatever it said.
 */
export const CLIENT_JWKS_CACHE_BOUNDS_MS = { min: MINUTE, max: DAY } as const;
/**
 * The least time between two fetches of one `jwks_uri` made for an unknown `kid` or after a failed fetch:
 * a stream of assertions with made-up `kid`s, or a jwks_uri that is down, costs its server one request per
 * 30 s from each instance, never one per token request; a client that rotated its key waits at most this long.
 */
export const CLIENT_JWKS_REFETCH_COOLDOWN_MS = 30 * SECOND;
/** JWK Sets one instance keeps fetched (by jwks_uri); past it the cache starts over. */
export const CLIENT_JWKS_CACHED = 1000;
/**
 * The FAPI 2.0 Security Profile (env AUTHCLI_FAPI2, on/off): off by default, so RS256 assertions and DPoP proofs
 * (what most client libraries sign with RSA keys) are accepted besides PS256, ES256 and EdDSA (§5.4.1), and every
 * refresh token is rotated (RFC 9700 §4.14.2). On, RS256 is refused, an assertion's `aud` must be the issuer alone,
 * and a confidential client's refresh token stays the same: §5.3.2.1 asks for no rotation, as the client
 * authenticates each refresh (and a lost answer then costs it nothing).
 */
export const FAPI2 = false;

/**
 * The numbers of upstream identity (connectors/, web/connectors.tsx), each with its reason: the round trip to
 * an upstream, and the GitHub and LDAP connectors' bounds. Part of defaults.ts, which re-exports them.
 */
import { MINUTE, SECOND } from './units.js';

// ---- connectors (upstream identity; connectors/, web/connectors.tsx) ---------------------

/**
 * How long a person may spend at an upstream (its sign-in page, its consent) before coming back: the state,
 * PKCE verifier and nonce kept for the round trip live this long, as a sign-in continuation does.
 */
export const CONNECTOR_STATE_TTL_MS = 15 * MINUTE;
/**
 * Each request to an upstream (discovery, the token endpoint, its keys): a provider that does not answer within
 * it is answered "unavailable" at once, well within the 15 s a person waits, and local sign-in goes on.
 */
export const CONNECTOR_TIMEOUT_MS = 5 * SECOND;
/**
 * How long an OpenID Connect upstream's discovery document is kept for the callbacks (connectors/oidc.ts
 * `UpstreamMetadata`), per instance. A round trip's start always asks (so an upstream that is down is said on our
 * page at once); the callback, moments after the upstream answered, takes the kept document, and with it the
 * upstream's keys, which oauth4webapi keeps 5 minutes with the document: before, each sign-in was two discoveries
 * and a key fetch at the upstream. 10 minutes bounds how long a moved endpoint goes unseen by a callback.
 */
export const CONNECTOR_DISCOVERY_TTL_MS = 10 * MINUTE;

// ---- upstream identity: the GitHub connector (connectors/github.ts) -----------------------

/**
 * The longest one request to GitHub (or GitHub Enterprise) may take, its body included: GitHub's token
 * endpoint and REST API answer in well under a second, so 5 s is only reached by a GitHub that is down or
 * overloaded, and the person is looking at a blank callback page meanwhile. Past it the sign-in is
 * `unavailable` (try again later), never a refusal.
 */
export const GITHUB_REQUEST_TIMEOUT_MS = 5 * SECOND;
/**
 * The whole GitHub sign-in (the code exchange, the user, the emails and each organization or team asked
 * about): requests that each answer just within their timeout must not add up to a minute of waiting. 15 s
 * holds the usual four requests at a slow but working GitHub's pace and stays well inside the 30-60 s a
 * reverse proxy commonly waits for a backend, so the person gets our page, not the proxy's 504.
 */
export const GITHUB_SIGNIN_TIMEOUT_MS = 15 * SECOND;
/**
 * The largest answer read from GitHub, bytes: the largest one asked for is a page of 100 email addresses
 * (about 100 bytes each) or a membership with its organization and user objects (about 3 KB). A server that
 * sends more is not GitHub as documented, and reading it would only cost memory.
 */
export const GITHUB_RESPONSE_MAX_BYTES = 64 * 1024;
/**
 * Email addresses asked for in one page of `GET /user/emails`: the REST API's largest page (default 30). A
 * person has a handful; one page keeps the sign-in to one request, and a primary past the hundredth is not
 * looked for (no verified primary email: refused).
 */
export const GITHUB_EMAILS_PER_PAGE = 100;
/**
 * The longest access token accepted from GitHub's token endpoint: GitHub asks integrators to take tokens of
 * up to 255 characters of [A-Za-z0-9_] (changelog 2021-03-04, "Authentication token format updates").
 */
export const GITHUB_TOKEN_MAX = 255;

// ---- upstream directories: the LDAP connector (connectors/ldap.ts) ----------------------

/**
 * Time to open a connection to an LDAP directory, the TLS handshake of ldaps:// and StartTLS included: a
 * directory on the same network answers in milliseconds; 5 s outlasts two lost SYNs (Linux retries a SYN after
 * 1 s, then after 2 s more) and a slow handshake. Past it the directory is down, filtered or overloaded, and the
 * person is better told so than kept waiting.
 */
export const LDAP_CONNECT_TIMEOUT_MS = 5 * SECOND;
/**
 * Time for one LDAP operation (a bind, a search, the StartTLS request) to be answered: an indexed search or a
 * bind takes milliseconds, a busy directory hundreds; 5 s as the database's own timeout (DB_TIMEOUT_MS). A
 * directory that stopped (SIGSTOP, a hung replica) still accepts connections in the kernel and answers nothing:
 * this is what ends that wait.
 */
export const LDAP_OPERATION_TIMEOUT_MS = 5 * SECOND;
/**
 * The most one LDAP sign-in takes, every step together (connect, StartTLS, service bind, user search, user bind,
 * service bind again and group search: up to seven round trips). Each step alone is bounded by the timeouts above,
 * but seven steps each just under them would be 35 s: 10 s bounds the sum, so a directory that is slow at every step
 * still gets the person an answer ("unavailable") within 10 s, a third of the request timeout (REQUEST_TIMEOUT_MS)
 * and far inside the 60 s a proxy commonly waits. A healthy directory takes tens of milliseconds for all seven.
 */
export const LDAP_TOTAL_TIMEOUT_MS = 10 * SECOND;
/**
 * Entries the user search asks for: the answer has to be exactly one entry, so two are enough to tell "one" from
 * "more than one" (the directory stops there, RFC 4511 §4.5.1.5 sizeLimit), whatever a broad filter matches.
 */
export const LDAP_USER_SEARCH_SIZE_LIMIT = 2;
/**
 * Groups of one user read at most (their CNs only): a person is in tens of groups, a service account in some
 * directories in hundreds; the limit bounds the answer and what a sign-in carries. A user in more groups is checked
 * against the first 1000 the directory returns, which can only refuse someone, never admit them.
 */
export const LDAP_GROUPS_MAX = 1000;
/** The user filter when a connector names none: the posixAccount/inetOrgPerson login name (RFC 4519 §2.39 uid). */
export const LDAP_DEFAULT_USER_FILTER = '(uid={username})';

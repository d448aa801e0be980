/** The numbers of CI workloads' token exchange (oauth/workloads.ts), each with its reason, as config/defaults.ts has the rest. */

const MINUTE = 60_000;

/**
 * How long an access token exchanged for a CI token lives unless its policy says (`workloads add
 * --token-lifetime`): 10 minutes, a deploy step's length; within 1 minute and 1 hour, since a CI job asks
 * again for free and a leaked token should die with the job.
 */
export const WORKLOAD_TOKEN_LIFETIME_S = 600;
export const WORKLOAD_TOKEN_LIFETIME_BOUNDS_S = { min: 60, max: 3600 } as const;
/** The clock skew a CI token's `exp` and `nbf` are allowed (seconds): runners' clocks drift a little; 30 s is what GitHub's own docs allow. */
export const SUBJECT_TOKEN_SKEW_S = 30;
/** How long a CI provider's discovery document (its jwks_uri) is kept before it is read again. */
export const UPSTREAM_DISCOVERY_CACHE_MS = 60 * MINUTE;

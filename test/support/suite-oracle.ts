/**
 * What the OpenID Foundation's conformance suite itself holds, shared by the plan tests that check what its
 * conditions check (conformance-basic-op, conformance-fapi2-op*): the suite's own lists and estimates, not the
 * server's, so the server is measured against them.
 */

/** Claims an ID token may carry unasked (EnsureIdTokenDoesNotContainNonRequestedClaims). */
export const ID_TOKEN_CLAIMS: readonly string[] = [
  'iss',
  'sub',
  'aud',
  'exp',
  'iat',
  'auth_time',
  'nonce',
  'acr',
  'amr',
  'azp',
  'at_hash',
  'c_hash',
  'nbf',
  'jti',
  'sid',
  's_hash',
];

/** The OpenID Connect standard claims (AddAllSupportedStandardClaimsToAuthorizationEndpointRequest...oidcClaims). */
export const OIDC_STANDARD_CLAIMS: readonly string[] = [
  'sub',
  'name',
  'given_name',
  'family_name',
  'middle_name',
  'nickname',
  'preferred_username',
  'profile',
  'picture',
  'website',
  'email',
  'email_verified',
  'gender',
  'birthdate',
  'zoneinfo',
  'locale',
  'phone_number',
  'phone_number_verified',
  'address',
  'updated_at',
];

/** Shannon entropy of a string times its length, as the suite estimates it (AbstractEnsureMinimumEntropy). */
export function entropyBits(s: string): number {
  const counts = new Map<string, number>();
  for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
  let perChar = 0;
  for (const n of counts.values()) perChar -= (n / s.length) * Math.log2(n / s.length);
  return perChar * s.length;
}

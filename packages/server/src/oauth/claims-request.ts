/**
 * The `claims` request parameter (OIDC Core §5.5): a client names individual
 * claims it wants in the UserInfo response and in the ID token, instead of
 * (or besides) whole scopes. Parsed and reduced here to the claims this
 * server can release for the application; what is left is stored with the
 * authorization code and its grant, so refreshes and userinfo keep it.
 */
import { CLAIMS_PARAMETER_MAX } from '../config/defaults.js';
import { isSupportedAcr } from './acr.js';
import { SCOPE_CLAIMS } from './claims.js';
import { InvalidRequest } from './errors.js';

/** One claim's request (§5.5.1): null, or these members; others are ignored. */
export interface ClaimRequest {
  essential?: boolean;
  value?: string | number | boolean;
  values?: (string | number | boolean)[];
}

/** The parsed `claims` parameter: per destination, the claims named (§5.5). */
export interface ClaimsRequest {
  userinfo: Record<string, ClaimRequest | null>;
  id_token: Record<string, ClaimRequest | null>;
}

/**
 * OIDC Core §5.4: the scope that releases each standard claim (the
 * inverse of {@link SCOPE_CLAIMS}). A claim named in the `claims` parameter
 * is released when the application may use its scope; the user approves
 * that scope on the consent page like a requested one.
 */
export const CLAIM_SCOPES: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(SCOPE_CLAIMS).flatMap(([scope, claims]) => claims.map((claim) => [claim, scope])),
);

/** Every scope that releases claims. */
export const CLAIM_SCOPE_NAMES: readonly string[] = [...new Set(Object.values(CLAIM_SCOPES))];

/** Claims of the ID token itself that a request may name (§2, §5.5.1.1): acr with its values, sub with its value. */
const ID_TOKEN_OWN_CLAIMS = new Set(['acr', 'sub', 'auth_time']);

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isClaimValue = (v: unknown): v is string | number | boolean =>
  typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

function claimRequest(v: unknown): ClaimRequest | null {
  if (v === null) return null;
  if (!isPlainObject(v)) throw new InvalidRequest('each claim in the claims parameter must be null or a JSON object');
  const out: ClaimRequest = {};
  if (v.essential !== undefined) {
    if (typeof v.essential !== 'boolean') throw new InvalidRequest('essential in the claims parameter must be true or false');
    out.essential = v.essential;
  }
  if (v.value !== undefined) {
    if (!isClaimValue(v.value)) throw new InvalidRequest('value in the claims parameter must be a string, number or boolean');
    out.value = v.value;
  }
  if (v.values !== undefined) {
    if (!Array.isArray(v.values) || !v.values.every(isClaimValue)) {
      throw new InvalidRequest('values in the claims parameter must be an array of strings, numbers or booleans');
    }
    out.values = v.values;
  }
  return out;
}

/**
 * Parses the `claims` parameter and keeps what this server may release to
 * the application: standard claims whose scope it is allowed, and (for the
 * ID token) `acr`, `sub` and `auth_time`. Unknown claims and members are
 * ignored (§5.5); malformed JSON is `invalid_request`. Undefined when the
 * parameter is absent or nothing in it is kept.
 * @throws InvalidRequest
 */
export function parseClaimsRequest(raw: string | undefined, allowedScopes: readonly string[]): ClaimsRequest | undefined {
  if (raw === undefined) return undefined;
  if (raw.length > CLAIMS_PARAMETER_MAX) throw new InvalidRequest('the claims parameter is too long');
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new InvalidRequest('the claims parameter is not valid JSON');
  }
  if (!isPlainObject(parsed)) throw new InvalidRequest('the claims parameter must be a JSON object');
  const out: ClaimsRequest = { userinfo: {}, id_token: {} };
  for (const target of ['userinfo', 'id_token'] as const) {
    const member = parsed[target];
    if (member === undefined) continue;
    if (!isPlainObject(member)) throw new InvalidRequest(`${target} in the claims parameter must be a JSON object`);
    for (const [name, request] of Object.entries(member)) {
      const parsedRequest = claimRequest(request);
      const scope = CLAIM_SCOPES[name];
      const released = scope !== undefined ? allowedScopes.includes(scope) : target === 'id_token' && ID_TOKEN_OWN_CLAIMS.has(name);
      if (released) out[target][name] = parsedRequest;
    }
  }
  return Object.keys(out.userinfo).length + Object.keys(out.id_token).length > 0 ? out : undefined;
}

/** The scopes the claims named in a request belong to: the user approves them with the requested scopes. */
export function claimsScopes(request: ClaimsRequest | undefined): string[] {
  if (!request) return [];
  const scopes = new Set<string>();
  for (const target of [request.userinfo, request.id_token]) {
    for (const name of Object.keys(target)) {
      const scope = CLAIM_SCOPES[name];
      if (scope !== undefined) scopes.add(scope);
    }
  }
  return [...scopes];
}

/** `claims` as it is stored with a code and a grant (JSON text), or null. */
export function serializeClaimsRequest(request: ClaimsRequest | undefined): string | null {
  return request ? JSON.stringify(request) : null;
}

/** A stored claims request back; a value this version cannot read counts as none. */
export function storedClaimsRequest(text: string | null | undefined): ClaimsRequest | undefined {
  if (!text) return undefined;
  try {
    const v = JSON.parse(text) as ClaimsRequest;
    return isPlainObject(v) && isPlainObject(v.userinfo) && isPlainObject(v.id_token) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** The claims of `all` (a user's releasable claims) that a destination of the request names. */
export function pickClaims(
  all: Readonly<Record<string, unknown>>,
  named: Readonly<Record<string, unknown>> | undefined,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!named) return out;
  for (const name of Object.keys(named)) if (Object.hasOwn(all, name) && CLAIM_SCOPES[name] !== undefined) out[name] = all[name];
  return out;
}

/** OIDC Core §5.5.1.1: the classes an essential `acr` claim lists (`value` or `values`), if it is essential and lists any. */
export function essentialAcrValues(request: ClaimsRequest | undefined): string[] | undefined {
  const acr = request?.id_token.acr;
  if (!acr?.essential) return undefined;
  const wanted = acr.values ?? (acr.value !== undefined ? [acr.value] : undefined);
  return wanted?.filter((v): v is string => typeof v === 'string');
}

/**
 * OIDC Core §5.5.1.1: `acr` requested as an Essential Claim with values this server cannot satisfy at all.
 * That outcome is a failed authentication; one it can satisfy is met by a step-up if the sign-in is below it
 * (authorization-step.ts). `acr_values` (§3.1.2.1) is a preference: a person with a passkey is asked for it when
 * the sign-in is below (oauth/acr.ts `acrRequirement`), one without goes on; a voluntary `acr` claim is answered
 * with the class the sign-in had.
 */
export function essentialAcrUnmet(request: ClaimsRequest | undefined): boolean {
  const wanted = essentialAcrValues(request);
  return wanted !== undefined && !wanted.some(isSupportedAcr);
}

/** The subject a request insists on (§3.1.2.2, §5.5.1: `sub` with a `value` in the ID token member), if any. */
export function requestedSubject(request: ClaimsRequest | undefined): string | undefined {
  const value = request?.id_token.sub?.value;
  return typeof value === 'string' ? value : undefined;
}

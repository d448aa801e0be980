/**
 * CI workloads: a CI job's own OIDC token (GitHub Actions, GitLab CI, any provider that publishes discovery and
 * a JWKS) becomes a short-lived token of one application, with no stored secret, when it matches a trust policy
 * an operator added (`authcli-server workloads add`, PyPI's "trusted publishing" model). This module holds the
 * policies' rules and the verification of the CI token against its issuer; grants/token-exchange.ts the grant.
 */
import { errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import { CLIENT_JWKS_MAX_BYTES, CLIENT_JWKS_REFETCH_COOLDOWN_MS, CLIENT_JWKS_TIMEOUT_MS } from '../config/defaults.js';
import { SUBJECT_TOKEN_SKEW_S, UPSTREAM_DISCOVERY_CACHE_MS, WORKLOAD_TOKEN_LIFETIME_BOUNDS_S } from '../config/workload-defaults.js';
import { FetchJsonError, fetchJson } from '../http/fetch-json.js';
import type { Workload } from '../store/store.js';
import { InputError } from '../util/input-error.js';
import { ClientJwks, KeySetUnavailable } from './client-jwks.js';
import { isLoopbackHost } from '@authcli/protocol';

/** The asymmetric algorithms a CI token may be signed with: never `none`, never HMAC (a public key is no secret). */
export const SUBJECT_TOKEN_ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'EdDSA'];

const WORKLOAD_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const CLAIM_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/;

/** Whether `value` matches `pattern`, where `*` stands for any run of characters (none included) and nothing else is special. */
export function matchesPattern(pattern: string, value: string): boolean {
  const parts = pattern.split('*');
  if (parts.length === 1) return pattern === value;
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (!value.startsWith(first) || value.length < first.length + last.length || !value.endsWith(last)) return false;
  let at = first.length;
  const end = value.length - last.length;
  for (const part of parts.slice(1, -1)) {
    const found = value.indexOf(part, at);
    if (found === -1 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}

/** The problem with an issuer URL an operator gives: https, or http on loopback (a stand-in issuer in tests). */
export function issuerProblem(issuer: string): string | undefined {
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    return `--issuer ${JSON.stringify(issuer)} is not a URL`;
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
    return '--issuer must be https (http only on loopback)';
  }
  if (url.search || url.hash) return '--issuer has no query or fragment';
  return undefined;
}

/** "10m", "1h", "600" (seconds): a policy's token lifetime. */
export function parseLifetime(text: string): number {
  const m = /^(\d{1,6})\s*([smh]?)$/.exec(text.trim());
  const seconds = m ? Number(m[1]) * ({ '': 1, s: 1, m: 60, h: 3600 } as const)[m[2] as '' | 's' | 'm' | 'h'] : Number.NaN;
  const { min, max } = WORKLOAD_TOKEN_LIFETIME_BOUNDS_S;
  if (!Number.isInteger(seconds) || seconds < min || seconds > max) {
    throw new InputError(`--token-lifetime must be from ${min} s to ${max / 60} min, e.g. 10m; got ${JSON.stringify(text)}`);
  }
  return seconds;
}

/** Checks the parts of a policy that need no store (the application and its scopes are checked by the caller). */
export function validateWorkload(input: { id: string; issuer: string; audience: string; subject: string; claims: readonly string[] }): {
  id: string;
  issuer: string;
  audience: string;
  subject: string;
  claims: Record<string, string>;
} {
  if (!WORKLOAD_ID.test(input.id)) throw new InputError('--id is 1-64 letters, digits, dots, dashes or underscores');
  const issuer = input.issuer;
  const problem = issuerProblem(issuer);
  if (problem) throw new InputError(problem);
  if (!input.audience || input.audience.length > 255) throw new InputError('--audience is 1-255 characters');
  if (!input.subject || /^[*:/]*$/.test(input.subject)) {
    throw new InputError('--subject must name the jobs trusted (e.g. repo:my-org/my-repo:ref:refs/heads/main), not every subject');
  }
  const claims: Record<string, string> = {};
  for (const c of input.claims) {
    const eq = c.indexOf('=');
    const name = eq === -1 ? '' : c.slice(0, eq);
    if (!CLAIM_NAME.test(name) || name === '__proto__' || name === 'constructor' || eq === c.length - 1)
      throw new InputError(`--claim takes NAME=PATTERN, e.g. repository_owner=my-org; got ${JSON.stringify(c)}`);
    claims[name] = c.slice(eq + 1);
  }
  return { id: input.id, issuer, audience: input.audience, subject: input.subject, claims };
}

/** A jwks_uri the issuer's discovery may name: https on the issuer's host (or its loopback stand-in's origin). */
function sameSite(issuer: string, jwksUri: string): boolean {
  try {
    const i = new URL(issuer);
    const j = new URL(jwksUri);
    if (i.protocol === 'http:') return j.origin === i.origin;
    return j.protocol === 'https:' && (j.hostname === i.hostname || j.hostname.endsWith(`.${i.hostname}`));
  } catch {
    return false;
  }
}

/** Whether a verified CI token's claims meet a policy's patterns (`sub` and every claim named). */
export function meetsPolicy(policy: Workload, payload: JWTPayload): boolean {
  if (typeof payload.sub !== 'string' || !matchesPattern(policy.subject, payload.sub)) return false;
  for (const [name, pattern] of Object.entries(policy.claims)) {
    const value = payload[name];
    const text = typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined;
    if (text === undefined || !matchesPattern(pattern, text)) return false;
  }
  return true;
}

/** A CI token that did not verify; the message is fixed text for the error description. */
export class SubjectTokenInvalid extends Error {
  override name = 'SubjectTokenInvalid';
}

/**
 * The CI providers' keys, per issuer: discovery (kept UPSTREAM_DISCOVERY_CACHE_MS) names the jwks_uri, whose set
 * is kept and refetched on an unknown `kid` at most once per cooldown (client-jwks.ts). Only issuers a policy
 * names are ever fetched: a token's `iss` alone never makes the server fetch anything.
 */
export class UpstreamIssuers {
  private readonly discovered = new Map<string, { jwksUri: string | undefined; until: number }>();
  private readonly keys: ClientJwks;

  constructor(private readonly now: () => number) {
    this.keys = new ClientJwks(now);
  }

  private async jwksUri(issuer: string): Promise<string> {
    const kept = this.discovered.get(issuer);
    if (kept && this.now() < kept.until) {
      if (kept.jwksUri === undefined) throw new SubjectTokenInvalid("the CI provider's discovery document could not be had");
      return kept.jwksUri;
    }
    try {
      const { json } = await fetchJson(`${issuer}/.well-known/openid-configuration`, {
        timeoutMs: CLIENT_JWKS_TIMEOUT_MS,
        maxBytes: CLIENT_JWKS_MAX_BYTES,
        publicOnly: false,
      });
      const doc = (typeof json === 'object' && json !== null ? json : {}) as { issuer?: unknown; jwks_uri?: unknown };
      if (doc.issuer !== issuer || typeof doc.jwks_uri !== 'string' || !sameSite(issuer, doc.jwks_uri)) {
        throw new SubjectTokenInvalid("the CI provider's discovery document does not name this issuer and an https jwks_uri of its own");
      }
      this.discovered.set(issuer, { jwksUri: doc.jwks_uri, until: this.now() + UPSTREAM_DISCOVERY_CACHE_MS });
      return doc.jwks_uri;
    } catch (err) {
      if (!(err instanceof FetchJsonError || err instanceof SubjectTokenInvalid)) throw err;
      if (kept?.jwksUri !== undefined) return kept.jwksUri;
      // Tried again after a cooldown, not on every request that names the issuer.
      this.discovered.set(issuer, { jwksUri: undefined, until: this.now() + CLIENT_JWKS_REFETCH_COOLDOWN_MS });
      throw err instanceof SubjectTokenInvalid ? err : new SubjectTokenInvalid("the CI provider's discovery document could not be fetched");
    }
  }

  /**
   * Verifies a CI token of `issuer` for `audience`: its signature by a key of the issuer's JWKS (an asymmetric
   * algorithm), `iss`, `aud`, `exp` and `nbf` with SUBJECT_TOKEN_SKEW_S of skew, and a `jti` and `sub`.
   * @throws SubjectTokenInvalid
   */
  async verify(token: string, issuer: string, audience: string): Promise<JWTPayload & { jti: string; sub: string; exp: number }> {
    const attempt = async (jwksUri: string, unknownKid: boolean) => {
      const set = await this.keys.keySet({ jwksUri, anyAddress: true }, unknownKid);
      return {
        set,
        result: await jwtVerify(token, set.getKey, {
          issuer,
          audience,
          algorithms: SUBJECT_TOKEN_ALGS,
          clockTolerance: SUBJECT_TOKEN_SKEW_S,
          currentDate: new Date(this.now()),
          requiredClaims: ['jti', 'sub', 'exp'],
        }),
      };
    };
    try {
      const jwksUri = await this.jwksUri(issuer);
      try {
        return (await attempt(jwksUri, false)).result.payload as JWTPayload & { jti: string; sub: string; exp: number };
      } catch (err) {
        if (!(err instanceof joseErrors.JWKSNoMatchingKey)) throw err;
        return (await attempt(jwksUri, true)).result.payload as JWTPayload & { jti: string; sub: string; exp: number };
      }
    } catch (err) {
      if (err instanceof SubjectTokenInvalid) throw err;
      if (err instanceof KeySetUnavailable) throw new SubjectTokenInvalid("the CI provider's keys could not be fetched");
      if (err instanceof joseErrors.JWTExpired) throw new SubjectTokenInvalid('the CI token has expired');
      if (err instanceof joseErrors.JOSEError || err instanceof TypeError) throw new SubjectTokenInvalid('the CI token did not verify');
      throw err;
    }
  }
}

import * as oauth from 'oauth4webapi';
import { isLoopbackHost } from '@authcli/protocol';
import { CONNECTOR_DISCOVERY_TTL_MS } from '../config/connector-defaults.js';
import { FEDERATED_ACR, PHISHING_RESISTANT_ACR } from '../oauth/acr.js';
import type { UpstreamIdentity } from './accounts.js';
import type { OidcSettings } from './registry.js';

/**
 * An upstream OpenID Connect provider, as a relying party with panva's
 * oauth4webapi: discovery, the code flow with PKCE S256, state and nonce,
 * `iss` checked against the response (RFC 9207) when the upstream sends it,
 * the ID token's claims validated and its signature checked against the
 * upstream's JWKS. Every request to the upstream is bounded by a timeout.
 */

/** What came back from the upstream: a person, a refusal with its reason, or the upstream could not be used. */
export type UpstreamOutcome =
  | { kind: 'ok'; identity: UpstreamIdentity }
  /** `detail`: what only the log may say (the rule that refused: the groups, organizations or teams let in). */
  | { kind: 'refused'; reason: string; detail?: string }
  | { kind: 'unavailable'; reason: string };

/** RFC 8176 §2's registered method values: only these are carried from an upstream into our tokens. */
const RFC8176 = new Set([
  'face',
  'fpt',
  'geo',
  'hwk',
  'iris',
  'kba',
  'mca',
  'mfa',
  'otp',
  'pin',
  'pwd',
  'rba',
  'retina',
  'sc',
  'sms',
  'swk',
  'tel',
  'user',
  'vbm',
  'wia',
]);

interface Options {
  timeoutMs: number;
  /** Test transport (oauth4webapi's customFetch). */
  fetch?: typeof fetch | undefined;
  /** The upstreams' discovery documents kept between sign-ins; without it each call asks. */
  metadata?: UpstreamMetadata | undefined;
}

/** Plain http only for an upstream on this machine (a test's, or one beside it): loopback as @authcli/protocol defines it. */
function loopback(url: URL): boolean {
  return url.protocol === 'http:' && isLoopbackHost(url.hostname);
}

function requestOptions(issuer: URL, o: Options) {
  return {
    signal: AbortSignal.timeout(o.timeoutMs),
    ...(loopback(issuer) && { [oauth.allowInsecureRequests]: true }),
    ...(o.fetch && { [oauth.customFetch]: o.fetch }),
  };
}

/**
 * The upstream's discovery document. `fresh` (a round trip's start) always asks, so an upstream that is down is
 * said at once on our page instead of the person's browser failing at it; the callback, a moment after the
 * upstream answered, takes the kept one ({@link UpstreamMetadata}).
 */
async function discover(s: OidcSettings, o: Options, fresh: boolean): Promise<oauth.AuthorizationServer> {
  if (!o.metadata) return fetchMetadata(s, o);
  return fresh ? o.metadata.fetched(s, () => fetchMetadata(s, o)) : o.metadata.get(s, () => fetchMetadata(s, o));
}

async function fetchMetadata(s: OidcSettings, o: Options): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(s.issuer);
  const res = await oauth.discoveryRequest(issuer, { ...requestOptions(issuer, o), algorithm: 'oidc' });
  return oauth.processDiscoveryResponse(issuer, res);
}

/**
 * The OpenID Connect upstreams' discovery documents, one per issuer, kept CONNECTOR_DISCOVERY_TTL_MS for the
 * callbacks: before, a sign-in asked at its start and again at its callback, and fetched the upstream's keys
 * each time. oauth4webapi keeps an upstream's keys with its document (by the object), so a document that has not
 * changed stays the same object, and the keys are fetched once per five minutes rather than once per sign-in. A
 * discovery that fails keeps nothing. One per server instance (web/connectors.tsx); an entry per connector issuer.
 */
export class UpstreamMetadata {
  private readonly entries = new Map<string, { at: number; metadata: oauth.AuthorizationServer }>();

  constructor(
    private readonly now: () => number,
    private readonly ttlMs = CONNECTOR_DISCOVERY_TTL_MS,
  ) {}

  /** The kept document while it is young enough, else {@link fetched}. */
  get(s: OidcSettings, fetchMetadata: () => Promise<oauth.AuthorizationServer>): Promise<oauth.AuthorizationServer> {
    const kept = this.entries.get(s.issuer);
    if (kept && this.now() - kept.at < this.ttlMs) return Promise.resolve(kept.metadata);
    return this.fetched(s, fetchMetadata);
  }

  /** A new document, always asked for; the kept object when the upstream says the same as before. */
  async fetched(s: OidcSettings, fetchMetadata: () => Promise<oauth.AuthorizationServer>): Promise<oauth.AuthorizationServer> {
    const metadata = await fetchMetadata();
    const before = this.entries.get(s.issuer)?.metadata;
    const kept = before !== undefined && JSON.stringify(before) === JSON.stringify(metadata) ? before : metadata;
    this.entries.set(s.issuer, { at: this.now(), metadata: kept });
    return kept;
  }
}

/** Why an upstream step failed, in a line a person can read (never a token or a secret). */
function unavailable(err: unknown): Exclude<UpstreamOutcome, { kind: 'ok' }> {
  const e = err as Error & { code?: string; error?: string };
  if (e.name === 'TimeoutError' || e.name === 'AbortError')
    return { kind: 'unavailable', reason: 'the sign-in service did not answer in time' };
  if (e instanceof oauth.ResponseBodyError) return { kind: 'refused', reason: `the sign-in service refused: ${e.error}` };
  if (e instanceof oauth.AuthorizationResponseError) return { kind: 'refused', reason: `the sign-in service answered ${e.error}` };
  return { kind: 'unavailable', reason: `the sign-in service's answer could not be used (${e.code ?? e.name})` };
}

/** The URL the browser goes to at the upstream; the PKCE verifier, state and nonce stay here. */
export async function oidcAuthorizationUrl(
  s: OidcSettings,
  p: { redirectUri: string; state: string; codeVerifier: string; nonce: string },
  o: Options,
): Promise<URL | Exclude<UpstreamOutcome, { kind: 'ok' }>> {
  let as: oauth.AuthorizationServer;
  try {
    as = await discover(s, o, true);
  } catch (err) {
    return unavailable(err);
  }
  if (!as.authorization_endpoint) return { kind: 'unavailable', reason: 'the sign-in service has no authorization endpoint' };
  const url = new URL(as.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: s.clientId,
    redirect_uri: p.redirectUri,
    scope: s.scopes.join(' '),
    state: p.state,
    nonce: p.nonce,
    code_challenge: await oauth.calculatePKCECodeChallenge(p.codeVerifier),
    code_challenge_method: 'S256',
  }).toString();
  return url;
}

/** The callback: the response checked (state, iss, error), the code exchanged, the ID token validated. */
export async function oidcCallback(
  s: OidcSettings,
  secret: string,
  p: { callbackUrl: URL; redirectUri: string; state: string; codeVerifier: string; nonce: string },
  o: Options,
): Promise<UpstreamOutcome> {
  try {
    const as = await discover(s, o, false);
    const client: oauth.Client = { client_id: s.clientId };
    const params = oauth.validateAuthResponse(as, client, p.callbackUrl, p.state);
    const opts = requestOptions(new URL(s.issuer), o);
    const res = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.ClientSecretBasic(secret),
      params,
      p.redirectUri,
      p.codeVerifier,
      opts,
    );
    const result = await oauth.processAuthorizationCodeResponse(as, client, res, { expectedNonce: p.nonce, requireIdToken: true });
    try {
      await oauth.validateApplicationLevelSignature(as, res, opts);
    } catch (err) {
      // A key the kept set lacks: the upstream rotated its keys within a minute of their fetch (oauth4webapi asks
      // again only after that). Once more with the keys fetched anew (a copy of the document has none kept).
      if (!(err instanceof oauth.OperationProcessingError && err.code === oauth.KEY_SELECTION)) throw err;
      await oauth.validateApplicationLevelSignature({ ...as }, res, opts);
    }
    const idToken = oauth.getValidatedIdTokenClaims(result)!;
    // Many providers put the profile and email claims at userinfo, not in the ID token (OIDC Core §5.4): asked
    // there too, for the ID token's subject only (§5.3.2).
    let info: Record<string, unknown> = {};
    if (as.userinfo_endpoint) {
      const ui = await oauth.userInfoRequest(as, client, result.access_token, opts);
      info = { ...(await oauth.processUserInfoResponse(as, client, idToken.sub, ui)) };
    }
    return admit(s, { ...info, ...idToken } as oauth.IDToken & Record<string, unknown>);
  } catch (err) {
    return unavailable(err);
  }
}

/** Who the ID token (with the userinfo claims beside it) names, if the connector lets them in. */
export function admit(s: OidcSettings, claims: oauth.IDToken & Record<string, unknown>): UpstreamOutcome {
  const str = (v: unknown) => (typeof v === 'string' && v.length <= 256 ? v : undefined);
  const email = str(claims.email)?.toLowerCase();
  const verified = claims.email_verified === true;
  if (s.allowedEmailDomains.length > 0) {
    const domain = email?.split('@')[1];
    if (!email || !verified || !domain || !s.allowedEmailDomains.includes(domain)) {
      return {
        kind: 'refused',
        reason: `only people with a verified email address at ${s.allowedEmailDomains.join(' or ')} may sign in here`,
      };
    }
  }
  const amr = Array.isArray(claims.amr) ? claims.amr.filter((m): m is string => typeof m === 'string' && RFC8176.has(m)) : [];
  return {
    kind: 'ok',
    identity: {
      subject: claims.sub,
      claims: { preferred_username: str(claims.preferred_username), email, email_verified: verified, name: str(claims.name) },
      amr,
      // Carried through only when the upstream asserted it and the operator trusts this upstream's assurance.
      acr: s.trustUpstreamAcr === true && claims.acr === PHISHING_RESISTANT_ACR ? PHISHING_RESISTANT_ACR : FEDERATED_ACR,
    },
  };
}

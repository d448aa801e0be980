/**
 * `private_key_jwt` client authentication (RFC 7523 §2.2 and §3, OIDC Core
 * §9, FAPI 2.0 Security Profile §5.3.2.1): the client signs a short-lived JWT
 * about itself with a key whose public half it registered, and sends it as
 * `client_assertion` with `client_assertion_type`
 * `urn:ietf:params:oauth:client-assertion-type:jwt-bearer`.
 *
 * What is checked, in order: the form (a compact JWS within
 * {@link CLIENT_ASSERTION_MAX}); its `alg` (allow-list, client-keys.ts
 * `assertionAlgs`); `iss` = `sub` = the client_id (and the `client_id`
 * parameter, when sent); the signature, by a key the client registered (its
 * `jwks`, or its `jwks_uri` fetched again for an unknown `kid`,
 * client-jwks.ts); `aud`; `exp` (required, not past, at most
 * {@link CLIENT_ASSERTION_MAX_LIFETIME_SECONDS} ahead); `nbf` and `iat` not in
 * the future; the algorithm it registered, if any; `jti` (required), then used
 * once, on any instance, until `exp`.
 * Every failure is invalid_client with a description of its own; claims are
 * only ever described once the signature has verified.
 */
import { decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import {
  CLIENT_ASSERTION_CLOCK_SKEW_SECONDS,
  CLIENT_ASSERTION_JTI_MAX,
  CLIENT_ASSERTION_MAX,
  CLIENT_ASSERTION_MAX_LIFETIME_SECONDS,
} from '../config/defaults.js';
import type { Application } from '../store/store.js';
import { sha256Hex } from '../util/crypto.js';
import { KeySetUnavailable } from './client-jwks.js';
import { assertionAlgs, CLIENT_ASSERTION_TYPE } from './client-keys.js';
import type { OAuthContext } from './context.js';
import { InvalidClient } from './errors.js';

/** The endpoints of this server that authenticate clients, under the issuer: an assertion may name any as its audience. */
const CLIENT_AUTH_PATHS = ['/oauth/token', '/oauth/par', '/oauth/introspect', '/oauth/revoke', '/oauth/device/authorization'];

/** The client of an assertion that has not been checked yet: what a failure says when no key of the client verifies it. */
const NOT_SIGNED = new InvalidClient('the client assertion is not signed by a key registered for the client (private_key_jwt)');

/** What a request presented for private_key_jwt. */
export interface PresentedAssertion {
  assertionType: string | undefined;
  assertion: string | undefined;
  /** The `client_id` parameter, when sent (RFC 7521 §4.2: optional). */
  clientId: string | undefined;
}

const fail = (description: string) => new InvalidClient(description);

/** The values `aud` may have: the issuer identifier alone under FAPI 2.0, else also the endpoints' URLs. */
function audiences(ctx: Pick<OAuthContext, 'config'>): string[] {
  const iss = ctx.config.issuer;
  return ctx.config.fapi2 ? [iss] : [iss, ...CLIENT_AUTH_PATHS.map((p) => `${iss}${p}`)];
}

/** The header and claims of an assertion, read before its signature is checked, to know whose keys to check it with. */
function unverified(assertion: string): { alg: unknown; payload: JWTPayload } {
  if (assertion.length > CLIENT_ASSERTION_MAX) throw fail(`client_assertion is longer than ${CLIENT_ASSERTION_MAX} characters`);
  try {
    const header = decodeProtectedHeader(assertion);
    if (assertion.split('.').length !== 3) throw new Error('not a compact JWS');
    return { alg: header.alg, payload: decodeJwt(assertion) };
  } catch {
    throw fail('client_assertion must be a signed JWT in compact form (RFC 7523 section 2.2)');
  }
}

/** The description of a claim jose refused, once the signature verified. */
function claimProblem(err: errors.JWTClaimValidationFailed | errors.JWTExpired, ctx: Pick<OAuthContext, 'config'>): string {
  const { claim, reason } = err;
  if (err instanceof errors.JWTExpired) return 'the client assertion has expired';
  if (reason === 'missing') {
    if (claim === 'exp') return 'the client assertion has no exp (RFC 7523 section 3)';
    if (claim === 'jti') return 'the client assertion has no jti: each assertion is used once (OIDC Core section 9)';
    return `the client assertion has no ${claim}`;
  }
  if (reason === 'check_failed' && claim === 'nbf') return 'the client assertion is not valid yet (nbf)';
  if (claim === 'aud') {
    return ctx.config.fapi2
      ? 'the client assertion aud must be the issuer identifier (FAPI 2.0)'
      : 'the client assertion aud must be the issuer identifier or the token endpoint URL';
  }
  return `the client assertion ${claim} is not valid`;
}

/**
 * Verifies a client assertion and returns the application it authenticates.
 * @throws InvalidClient
 */
export async function verifyClientAssertion(
  ctx: Pick<OAuthContext, 'config' | 'store' | 'clientJwks'>,
  presented: PresentedAssertion,
): Promise<Application> {
  if (presented.assertionType !== CLIENT_ASSERTION_TYPE) throw fail(`client_assertion_type must be ${CLIENT_ASSERTION_TYPE}`);
  if (!presented.assertion) throw fail('client_assertion is missing');
  const { alg, payload } = unverified(presented.assertion);
  const allowed = assertionAlgs(ctx.config.fapi2);
  if (typeof alg !== 'string' || !allowed.includes(alg)) throw fail(`the client assertion alg must be one of ${allowed.join(', ')}`);
  const clientId = payload.iss;
  if (typeof clientId !== 'string' || clientId === '' || payload.sub !== clientId) {
    throw fail('the client assertion iss and sub must both be the client_id (RFC 7523 section 3)');
  }
  if (presented.clientId !== undefined && presented.clientId !== clientId) throw fail('client_id differs from the client assertion iss');
  const app = await ctx.store.applications.get(clientId);
  const keys = app?.kind === 'confidential' ? app.clientKeys : null;
  if (!app || !keys) throw NOT_SIGNED;

  const now = ctx.config.now();
  const options = {
    algorithms: [alg],
    issuer: clientId,
    subject: clientId,
    audience: audiences(ctx),
    requiredClaims: ['exp', 'jti'],
    clockTolerance: CLIENT_ASSERTION_CLOCK_SKEW_SECONDS,
    currentDate: new Date(now),
  };
  let claims: JWTPayload;
  try {
    let keySet = await ctx.clientJwks.keySet(keys);
    try {
      claims = (await jwtVerify(presented.assertion, keySet.getKey, options)).payload;
    } catch (err) {
      // A kid the kept set does not have: the client may have rotated its keys (fetched again, within the cooldown).
      if (!(err instanceof errors.JWKSNoMatchingKey) || keySet.fetchedNow) throw err;
      keySet = await ctx.clientJwks.keySet(keys, true);
      claims = (await jwtVerify(presented.assertion, keySet.getKey, options)).payload;
    }
  } catch (err) {
    if (err instanceof KeySetUnavailable) throw fail(err.message);
    if (err instanceof errors.JWTClaimValidationFailed || err instanceof errors.JWTExpired) throw fail(claimProblem(err, ctx));
    // Web Crypto refusing a key of the set (a point off the curve, a modulus too short for jose).
    if (err instanceof DOMException || (err instanceof TypeError && /modulusLength|key/i.test(err.message))) {
      throw fail("the client's key for this assertion is not a valid public key (RFC 7517, RFC 7518 section 6)");
    }
    if (err instanceof errors.JOSEError) throw NOT_SIGNED;
    throw err;
  }
  // Said only now: which algorithm a client registered is not for whoever cannot sign as it.
  if (keys.signingAlg !== undefined && alg !== keys.signingAlg) {
    throw fail(`the client registered token_endpoint_auth_signing_alg ${keys.signingAlg}: its assertions must use it`);
  }
  // FAPI 2.0 (and RFC 7523bis): the issuer identifier as a single string, not within an array of audiences.
  if (ctx.config.fapi2 && claims.aud !== ctx.config.issuer) throw fail('the client assertion aud must be the issuer identifier (FAPI 2.0)');
  const nowSeconds = now / 1000;
  const exp = claims.exp!;
  if (exp > nowSeconds + CLIENT_ASSERTION_MAX_LIFETIME_SECONDS + CLIENT_ASSERTION_CLOCK_SKEW_SECONDS) {
    throw fail(
      `the client assertion exp is more than ${CLIENT_ASSERTION_MAX_LIFETIME_SECONDS} seconds ahead: sign a short-lived one per request`,
    );
  }
  if (claims.iat !== undefined && claims.iat > nowSeconds + CLIENT_ASSERTION_CLOCK_SKEW_SECONDS) {
    throw fail('the client assertion iat is in the future');
  }
  const jti = claims.jti;
  if (typeof jti !== 'string' || jti === '' || jti.length > CLIENT_ASSERTION_JTI_MAX) {
    throw fail(`the client assertion jti must be a string of 1-${CLIENT_ASSERTION_JTI_MAX} characters`);
  }
  // Kept until it could no longer be accepted anyway (its exp, with the leeway).
  const keepUntil = (exp + CLIENT_ASSERTION_CLOCK_SKEW_SECONDS) * 1000;
  if (!(await ctx.store.clientAssertions.use(sha256Hex(JSON.stringify([clientId, jti])), keepUntil))) {
    throw fail('the client assertion was used already: sign a new one, with a new jti, for each request');
  }
  return app;
}

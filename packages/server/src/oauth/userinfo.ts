import { boundJkt, verifyAccessToken } from './access-token.js';
import type { OAuthContext } from './context.js';
import { dpopAlgs, validateDpopProof } from './dpop.js';
import { InsufficientScope, InvalidDpopProof, InvalidRequest, InvalidToken } from './errors.js';
import { standardClaims } from './claims.js';
import { CLAIM_SCOPE_NAMES, pickClaims, storedClaimsRequest } from './claims-request.js';

/** Where a userinfo request carried its credentials. */
export interface UserinfoRequest {
  /** The Authorization header, if any. */
  authorization: string | undefined;
  /** The `access_token` parameter of a form-encoded POST body (RFC 6750 §2.2), if one was sent. */
  bodyToken: string | undefined;
  /** The body named `access_token` more than once. */
  bodyTokenRepeated: boolean;
  /** An `access_token` query parameter was sent (RFC 6750 §2.3). */
  tokenInQuery: boolean;
  /** The `DPoP` header's values (RFC 9449 §4.1), as for the token endpoint. */
  dpop: readonly string[] | undefined;
  /** GET or POST (a DPoP proof's `htm`). */
  method: string;
}

/** The userinfo endpoint's path under the issuer (a DPoP proof's `htu`). */
export const USERINFO_PATH = '/oauth/userinfo';

/** RFC 6750 §2.1: `b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`. */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * The UserInfo answer (OIDC Core §5.3) for a Bearer access token in the
 * Authorization header (RFC 6750 §2.1) or in a form-encoded POST body
 * (§2.2), never in the query string (§2.3 is not supported: URLs end up in
 * logs), or a DPoP-bound one as `Authorization: DPoP` with a proof whose key
 * is the token's `cnf.jkt` and whose `ath` is the token's hash (RFC 9449
 * §7.1); a DPoP-bound token sent as a Bearer token is refused, so a stolen
 * one is useless without the key. `sub` and the claims of the token's
 * scopes. A request must use one method only (§2). Undefined when the request carries no credentials at
 * all: RFC 6750 §3.1 answers that with the bare challenge. Errors (RFC 6750
 * §3) are thrown as OAuthError.
 */
export async function userinfo(ctx: OAuthContext, req: UserinfoRequest): Promise<Record<string, unknown> | undefined> {
  const { authorization, bodyToken, bodyTokenRepeated, tokenInQuery } = req;
  // The DPoP challenge of this protected resource (RFC 9449 §7.1).
  const dpopResource = { algs: dpopAlgs(ctx.config.fapi2) };
  if (authorization === undefined && bodyToken === undefined && !tokenInQuery) return undefined;
  if (tokenInQuery) throw new InvalidRequest('the access token must not be sent in the query string');
  if (authorization !== undefined && bodyToken !== undefined) {
    throw new InvalidRequest('send the access token by one method only: the Authorization header or the request body');
  }
  let token: string;
  let dpopScheme = false;
  if (bodyToken !== undefined) {
    if (bodyTokenRepeated) throw new InvalidRequest('the access_token parameter is repeated');
    if (!B64TOKEN.test(bodyToken)) throw new InvalidRequest('the access_token parameter is not a bearer token');
    token = bodyToken;
  } else {
    const m = /^(Bearer|DPoP) (\S+)$/i.exec(authorization!.trim());
    if (!m || !B64TOKEN.test(m[2]!)) throw new InvalidRequest("the Authorization header must be 'Bearer <token>' or 'DPoP <token>'");
    dpopScheme = m[1]!.toLowerCase() === 'dpop';
    token = m[2]!;
  }
  let verified;
  try {
    verified = await verifyAccessToken(ctx, token);
  } catch (err) {
    if (dpopScheme && err instanceof InvalidToken) throw new InvalidToken(err.description, dpopResource);
    throw err;
  }
  const { payload, user, grant } = verified;
  // RFC 9449 §7.1: https://www.rfc-editor.org/rfc/rfc9449#section-7.1
  const jkt = boundJkt(payload);
  if (!dpopScheme) {
    if (jkt !== undefined) {
      throw new InvalidToken(
        'the access token is DPoP-bound: send it as Authorization: DPoP with a DPoP proof (RFC 9449 §7.1)',
        dpopResource,
      );
    }
  } else {
    if (jkt === undefined) throw new InvalidToken('the access token is not DPoP-bound: send it as a Bearer token', dpopResource);
    const proof = await validateDpopProof(ctx, {
      header: req.dpop,
      method: req.method,
      path: USERINFO_PATH,
      accessToken: token,
      requireNonce: false,
      resource: true,
    });
    if (!proof) throw new InvalidDpopProof('the DPoP scheme needs a DPoP proof (RFC 9449 §7.1)', dpopResource);
    if (proof.jkt !== jkt)
      throw new InvalidToken('the DPoP proof is not by the key the access token is bound to (RFC 9449 §7.1)', dpopResource);
  }
  const scopes = payload.scope.split(' ');
  if (!scopes.includes('openid')) throw new InsufficientScope('userinfo needs the openid scope', 'openid');
  // OIDC Core §5.4 the claims of the granted scopes, and §5.5 those the sign-in's claims request named here.
  const named = pickClaims(standardClaims(user, CLAIM_SCOPE_NAMES), storedClaimsRequest(grant.claims)?.userinfo);
  return { sub: user.id, ...standardClaims(user, scopes), ...named };
}

import { boundJkt, personToken, verifyAccessTokenJwt, verifyClientAccessToken } from '../oauth/access-token.js';
import type { OAuthContext } from '../oauth/context.js';
import { dpopAlgs, validateDpopProof } from '../oauth/dpop.js';
import { InsufficientScope, InvalidDpopProof, InvalidRequest, InvalidToken, resourceChallenges } from '../oauth/errors.js';
import type { Actor } from '../store/store.js';
import { Problem } from './problems.js';

/** Where the admin API is served under the issuer. */
export const ADMIN_PATH = '/admin/v1';
/** Its scopes: reading, and changing (which includes reading). */
export const ADMIN_READ = 'admin:read';
export const ADMIN_WRITE = 'admin:write';
export const ADMIN_SCOPES: readonly string[] = [ADMIN_READ, ADMIN_WRITE];

/** The resource identifier (RFC 8707) of the admin API: the `aud` of the access tokens it takes. */
export const adminResourceId = (issuer: string) => `${issuer}${ADMIN_PATH}`;

/** RFC 6750 §2.1 b64token. */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

export interface AdminRequest {
  authorization: string | undefined;
  dpop: readonly string[] | undefined;
  method: string;
  /** The request's path without its query (a DPoP proof's `htu`). */
  path: string;
}

/**
 * Who calls the admin API, from the access token of its request (Bearer, or
 * DPoP with a proof by the token's key, RFC 9449 §7.1): a token issued here
 * for the admin API's resource, not revoked, carrying `admin:write` to
 * change anything and `admin:read` (or `admin:write`) to read. A person's
 * token is taken only while the person is an administrator and enabled; an
 * application's own (client credentials, or a CI workload's exchange) while
 * the application exists. Refusals are 401 `invalid_token` and 403
 * `insufficient_scope`, with their challenges.
 */
export async function adminCaller(ctx: OAuthContext, req: AdminRequest, write: boolean): Promise<Actor> {
  const algs = dpopAlgs(ctx.config.fapi2);
  const challenge = resourceChallenges(algs);
  if (req.authorization === undefined) {
    throw new Problem(401, 'invalid_token', 'send an access token for the admin API (Authorization: Bearer or DPoP)', {
      'www-authenticate': challenge,
    });
  }
  const m = /^(Bearer|DPoP) (\S+)$/i.exec(req.authorization.trim());
  if (!m || !B64TOKEN.test(m[2]!)) throw new InvalidRequest("the Authorization header must be 'Bearer <token>' or 'DPoP <token>'");
  const dpopScheme = m[1]!.toLowerCase() === 'dpop';
  const token = m[2]!;
  const resource = dpopScheme ? { algs } : undefined;
  const refuse = (description: string) => new InvalidToken(description, resource);
  let payload;
  try {
    payload = await verifyAccessTokenJwt(ctx, token, 'any');
  } catch (err) {
    if (err instanceof InvalidToken) throw refuse(err.description);
    throw err;
  }
  if (payload.aud !== adminResourceId(ctx.config.issuer)) {
    throw refuse(`the access token is not for the admin API: ask for it with resource=${adminResourceId(ctx.config.issuer)}`);
  }
  const jkt = boundJkt(payload);
  if (!dpopScheme && jkt !== undefined) {
    throw new InvalidToken('the access token is DPoP-bound: send it as Authorization: DPoP with a DPoP proof (RFC 9449 §7.1)', { algs });
  }
  if (dpopScheme) {
    if (jkt === undefined) throw refuse('the access token is not DPoP-bound: send it as a Bearer token');
    const proof = await validateDpopProof(ctx, {
      header: req.dpop,
      method: req.method,
      path: req.path,
      accessToken: token,
      requireNonce: false,
      resource: true,
    });
    if (!proof) throw new InvalidDpopProof('the DPoP scheme needs a DPoP proof (RFC 9449 §7.1)', { algs });
    if (proof.jkt !== jkt) throw refuse('the DPoP proof is not by the key the access token is bound to (RFC 9449 §7.1)');
  }
  const scopes = payload.scope.split(' ');
  if (write ? !scopes.includes(ADMIN_WRITE) : !scopes.includes(ADMIN_READ) && !scopes.includes(ADMIN_WRITE)) {
    const needed = write ? ADMIN_WRITE : ADMIN_READ;
    throw new InsufficientScope(`this needs the ${needed} scope`, needed);
  }
  // The application the token was issued to must still be allowed what it carries (the operator took the scope
  // back, or deleted it: its tokens stop here at once, not at their expiry).
  const client = await ctx.store.applications.get(payload.client_id);
  if (!client || !scopes.some((s) => ADMIN_SCOPES.includes(s) && client.scopes.includes(s))) {
    throw refuse('the application this token was issued to is no longer allowed the admin API');
  }
  let actor: Actor;
  try {
    const own = await verifyClientAccessToken(ctx, payload);
    if (own) {
      actor = { type: 'client', id: own.client_id, name: client.name };
    } else {
      const { user } = await personToken(ctx, payload);
      if (user.is_admin !== 1) {
        throw new Problem(403, 'insufficient_scope', 'only administrators may use the admin API', {
          'www-authenticate': `Bearer realm="authcli", error="insufficient_scope", error_description="only administrators may use the admin API"`,
        });
      }
      actor = { type: 'user', id: user.id, name: user.username };
    }
  } catch (err) {
    if (err instanceof InvalidToken) throw refuse(err.description);
    throw err;
  }
  return actor;
}

import { createHash } from 'node:crypto';
import type { TokenResponse } from '@authcli/protocol';
import { decodeJwt } from 'jose';
import { PRESENTED_TOKEN_MAX } from '../../config/defaults.js';
import type { Application } from '../../store/store.js';
import type { OAuthContext } from '../context.js';
import type { DpopProof } from '../dpop.js';
import { InvalidRequest, InvalidScope, InvalidTarget } from '../errors.js';
import { coveredResources, namedResources, tokenAudience } from '../resources.js';
import { parseScope } from '../scopes.js';
import { meetsPolicy, SubjectTokenInvalid } from '../workloads.js';

type Params = Readonly<Record<string, string>>;

/** RFC 8693 §3: the subject token types a CI provider's OIDC token is sent as. */
const SUBJECT_TOKEN_TYPES = ['urn:ietf:params:oauth:token-type:jwt', 'urn:ietf:params:oauth:token-type:id_token'];
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

/**
 * RFC 8693 token exchange of a CI job's OIDC token under a trust policy (oauth/workloads.ts): the application
 * names itself with its client_id and sends no secret (the CI token is the credential). Only issuers a policy of
 * this application names are looked at; the token must verify against that issuer's keys for a policy's
 * audience, its `sub` and claims must match the policy's patterns, the scope must be within the policy's, and it
 * is used once (its `jti`; of parallel uses one wins). The access token is for one API, names the upstream `sub`
 * and the policy (`workload`), lives as long as the policy says, and comes with no refresh token. Every refusal
 * of the CI token itself is invalid_request, as RFC 8693 §2.2.2 says ("invalid for any reason, or unacceptable
 * based on policy").
 */
export async function tokenExchangeGrant(
  ctx: OAuthContext,
  app: Application,
  params: Params,
  dpop: DpopProof | undefined,
  resources: readonly string[] = [],
): Promise<TokenResponse> {
  const token = params.subject_token;
  if (!token) throw new InvalidRequest('subject_token is missing');
  if (!params.subject_token_type || !SUBJECT_TOKEN_TYPES.includes(params.subject_token_type)) {
    throw new InvalidRequest(`subject_token_type must be one of ${SUBJECT_TOKEN_TYPES.join(', ')} (a CI provider's OIDC token)`);
  }
  if (params.actor_token !== undefined || params.actor_token_type !== undefined) throw new InvalidRequest('actor tokens are not supported');
  if (params.requested_token_type !== undefined && params.requested_token_type !== ACCESS_TOKEN_TYPE) {
    throw new InvalidRequest(`requested_token_type may only be ${ACCESS_TOKEN_TYPE}`);
  }
  // RFC 8693 §2.1 `audience`: this server names APIs by `resource` (RFC 8707).
  if (params.audience !== undefined) throw new InvalidTarget('name the API with resource (RFC 8707), not audience');
  if (token.length > PRESENTED_TOKEN_MAX) throw new InvalidRequest('the CI token is not a JWT');
  let issuer: unknown;
  try {
    issuer = decodeJwt(token).iss;
  } catch {
    throw new InvalidRequest('the CI token is not a JWT');
  }
  const candidates = (await ctx.store.workloads.list()).filter((w) => w.clientId === app.clientId && w.issuer === issuer);
  // Nothing is fetched for an issuer no policy of this application names.
  if (candidates.length === 0) throw new InvalidRequest('no trust policy of this application takes tokens of that issuer');
  let payload;
  let failure: SubjectTokenInvalid | undefined;
  for (const audience of new Set(candidates.map((w) => w.audience))) {
    try {
      payload = await ctx.upstreamIssuers.verify(token, issuer as string, audience);
      break;
    } catch (err) {
      if (!(err instanceof SubjectTokenInvalid)) throw err;
      failure = err;
    }
  }
  if (!payload) throw new InvalidRequest(failure?.message ?? 'the CI token did not verify');
  if (typeof payload.jti !== 'string' || typeof payload.sub !== 'string') throw new InvalidRequest('the CI token has no jti or sub');
  const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  const matching = candidates.filter((w) => audiences.includes(w.audience) && meetsPolicy(w, payload));
  if (matching.length === 0) throw new InvalidRequest('the CI token matches no trust policy of this application (its subject or claims)');

  const catalog = await ctx.store.resources.catalog();
  if (resources.length > 1) throw new InvalidTarget('name one resource per token request: each token is for one API');
  const named = namedResources(resources, catalog, app.scopes);
  const asked = params.scope === undefined ? undefined : parseScope(params.scope, app.scopes, catalog.byScope);
  const policy = matching.find((w) => (asked ?? w.scopes).every((s) => w.scopes.includes(s) && app.scopes.includes(s)));
  if (!policy) throw new InvalidScope('the scope asked for is wider than the trust policy allows');
  const scopes = (asked ?? policy.scopes).filter((s) => named.length === 0 || catalog.byScope.get(s)?.id === named[0]);
  const audience = tokenAudience(catalog, coveredResources(named, scopes, catalog).join(' '), scopes, named);
  if (!audience || audience.scopes.length === 0)
    throw new InvalidScope("a CI workload's token is for an API: its policy names the API's scopes");
  const elsewhere = scopes.find((s) => !audience.scopes.includes(s));
  if (elsewhere !== undefined)
    throw new InvalidTarget(`the ${elsewhere} scope is not one of ${audience.resource.id}: each token is for one API`);

  // Used once, whichever instance sees it: the last check, so a refused request leaves the token unused.
  const used = createHash('sha256')
    .update(`${issuer as string} ${payload.jti}`)
    .digest('hex');
  if (!(await ctx.store.workloads.useSubjectToken(used, payload.exp * 1000 + 60_000))) {
    throw new InvalidRequest('the CI token was already exchanged: each is used once');
  }
  const answer = await ctx.tokens.issueToClient(app, audience, dpop?.jkt, {
    subject: payload.sub,
    id: policy.id,
    issuer: issuer as string,
    lifetimeSeconds: policy.tokenLifetimeSeconds,
  });
  return { ...answer, issued_token_type: ACCESS_TOKEN_TYPE } as TokenResponse;
}

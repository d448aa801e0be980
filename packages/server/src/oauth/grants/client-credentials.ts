import type { TokenResponse } from '@authcli/protocol';
import type { Application } from '../../store/store.js';
import type { OAuthContext } from '../context.js';
import type { DpopProof } from '../dpop.js';
import { InvalidScope, InvalidTarget, UnauthorizedClient } from '../errors.js';
import { coveredResources, namedResources, tokenAudience } from '../resources.js';
import { isSupportedScope, parseScope } from '../scopes.js';

type Params = Readonly<Record<string, string>>;

/**
 * RFC 6749 §4.4 client credentials: a confidential application's own access token, for one of the team's APIs,
 * with no person: `sub` is its client_id (RFC 9068 §2.2), and there is no refresh token (§4.4.3) and no ID token.
 * The client authenticated already (secret or private_key_jwt, counted by the client-authentication limits);
 * a DPoP proof binds the token (RFC 9449 §5), and an application that requires DPoP gets none without one
 * (token.ts). `scope` names API scopes the application is allowed (OpenID Connect's are about a person:
 * `invalid_scope`); left out, it is every scope the application is allowed of the API asked for with
 * `resource` (RFC 8707), or of its one API. The token is for one API: `invalid_target` when the scopes span
 * several and `resource` names none, or it names one the application has no scope of.
 */
export async function clientCredentialsGrant(
  ctx: OAuthContext,
  app: Application,
  params: Params,
  dpop: DpopProof | undefined,
  resources: readonly string[] = [],
): Promise<TokenResponse> {
  // A public client only named itself: nothing proves who asks (RFC 6749 §4.4.2 "MUST only be used by confidential clients").
  if (app.kind !== 'confidential') throw new UnauthorizedClient('client credentials are for confidential applications');
  const catalog = await ctx.store.resources.catalog();
  if (resources.length > 1) throw new InvalidTarget('name one resource per token request: each token is for one API');
  const named = namedResources(resources, catalog, app.scopes);
  const apiScopes = app.scopes.filter((s) => catalog.byScope.has(s));
  let scopes: string[];
  if (params.scope === undefined) {
    scopes = named.length > 0 ? apiScopes.filter((s) => catalog.byScope.get(s)!.id === named[0]) : apiScopes;
    if (scopes.length === 0) {
      throw new InvalidScope("this application is allowed no API's scopes: an operator allows them with `apps update --scope`");
    }
  } else {
    scopes = parseScope(params.scope, app.scopes, catalog.byScope);
    const personal = scopes.find(isSupportedScope);
    if (personal) throw new InvalidScope(`the ${personal} scope is about a person; a client credentials token carries API scopes only`);
  }
  const covered = coveredResources(named, scopes, catalog);
  const audience = tokenAudience(catalog, covered.join(' '), scopes, named);
  if (!audience) throw new InvalidScope('a client credentials token is for an API: ask for its scopes');
  const elsewhere = scopes.find((s) => !audience.scopes.includes(s));
  if (elsewhere !== undefined) {
    throw new InvalidTarget(`the ${elsewhere} scope is not one of ${audience.resource.id}: each token is for one API and its scopes`);
  }
  return ctx.tokens.issueToClient(app, audience, dpop?.jkt);
}

import type { GrantType } from '../store/store.js';
import { authenticateClient } from './client-auth.js';
import type { OAuthContext } from './context.js';
import { validateDpopProof } from './dpop.js';
import { InvalidDpopProof, InvalidRequest, type OAuthError, UnauthorizedClient, UnsupportedGrantType } from './errors.js';
import { grantHandler, supportedGrantTypes } from './grants/registry.js';
import type { TokenResponse } from '@authcli/protocol';

/** The token endpoint's path under the issuer (a DPoP proof's `htu`, RFC 9449 §4.3). */
export const TOKEN_PATH = '/oauth/token';

/**
 * One token request (RFC 6749 §3.2, §5): the grant type is known and the
 * client authenticated and allowed it, then the DPoP proof, if any, is
 * checked (RFC 9449 §4.3, §5: a server nonce required when
 * `AUTHCLI_DPOP_NONCE` is on; an application that requires DPoP gets
 * invalid_dpop_proof without one), then the grant runs. Tokens, or the
 * error the grant returned (device polls); other protocol errors are thrown
 * as OAuthError.
 */
export async function tokenRequest(
  ctx: OAuthContext,
  params: Readonly<Record<string, string>>,
  authorization: string | undefined,
  clientIp: string,
  dpopHeader?: readonly string[] | undefined,
  resources: readonly string[] = [],
): Promise<TokenResponse | OAuthError> {
  const grantType = params.grant_type;
  if (!grantType) throw new InvalidRequest('grant_type is missing');
  const handler = grantHandler(grantType);
  if (!handler) throw new UnsupportedGrantType(`the grant_type is not supported (supported: ${supportedGrantTypes().join(', ')})`);
  const client = await authenticateClient(ctx, authorization, params, clientIp);
  if (!client.grantTypes.includes(grantType as GrantType)) {
    throw new UnauthorizedClient(`this application may not use the ${grantType} grant`);
  }
  // No DPoP header (most requests): no proof to check, and no async call made to find that out.
  const dpop =
    dpopHeader === undefined || dpopHeader.length === 0
      ? undefined
      : await validateDpopProof(ctx, {
          header: dpopHeader,
          method: 'POST',
          path: TOKEN_PATH,
          requireNonce: ctx.config.dpopNonce,
          resource: false,
        });
  // RFC 9449 §5.2 `dpop_bound_access_tokens`, the application's "require DPoP" setting.
  if (!dpop && client.requireDpop) {
    throw new InvalidDpopProof('this application requires DPoP: send a DPoP proof with every token request (RFC 9449 §5)');
  }
  return handler(ctx, client, params, dpop, resources);
}

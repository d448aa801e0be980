import type { GrantType } from '../store/store.js';
import { authenticateClient } from './client-auth.js';
import type { OAuthContext } from './context.js';
import { InvalidRequest, type OAuthError, UnauthorizedClient, UnsupportedGrantType } from './errors.js';
import { grantHandler, supportedGrantTypes } from './grants/registry.js';
import type { TokenResponse } from '@authcli/protocol';

/**
 * One token request (RFC 6749 §3.2, §5): the grant type is known and the
 * client authenticated and allowed it, then the grant runs. Tokens, or the
 * error the grant returned (device polls); other protocol errors are thrown
 * as OAuthError.
 */
export async function tokenRequest(
  ctx: OAuthContext,
  params: Readonly<Record<string, string>>,
  authorization: string | undefined,
): Promise<TokenResponse | OAuthError> {
  const grantType = params.grant_type;
  if (!grantType) throw new InvalidRequest('grant_type is missing');
  const handler = grantHandler(grantType);
  if (!handler) throw new UnsupportedGrantType(`the grant_type is not supported (supported: ${supportedGrantTypes().join(', ')})`);
  const client = await authenticateClient(ctx.store, authorization, params);
  if (!client.grantTypes.includes(grantType as GrantType)) {
    throw new UnauthorizedClient(`this application may not use the ${grantType} grant`);
  }
  return handler(ctx, client, params);
}

import type { Application, GrantType } from '../../store/store.js';
import type { OAuthContext } from '../context.js';
import type { DpopProof } from '../dpop.js';
import type { OAuthError } from '../errors.js';
import {
  AUTHORIZATION_CODE_GRANT_TYPE,
  CLIENT_CREDENTIALS_GRANT_TYPE,
  DEVICE_CODE_GRANT_TYPE,
  REFRESH_TOKEN_GRANT_TYPE,
  TOKEN_EXCHANGE_GRANT_TYPE,
  type TokenResponse,
} from '@authcli/protocol';
import { authorizationCodeGrant } from './authorization-code.js';
import { clientCredentialsGrant } from './client-credentials.js';
import { tokenExchangeGrant } from './token-exchange.js';
import { deviceCodeGrant } from './device-code.js';
import { refreshTokenGrant } from './refresh-token.js';

/**
 * A grant's outcome: tokens, or a protocol error. Errors are thrown, except
 * the expected answers of a device poll (authorization_pending, slow_down),
 * which are returned: one comes back for nearly every poll, and an error
 * thrown through two async functions costs more than the rest of the answer.
 * `dpop` is the request's valid DPoP proof, if it had one (RFC 9449 §5): the
 * access token is bound to its key. `resources` are the request's RFC 8707
 * `resource` values (at most one is honoured: a token is for one API).
 */
export type GrantHandler = (
  ctx: OAuthContext,
  app: Application,
  params: Readonly<Record<string, string>>,
  dpop: DpopProof | undefined,
  resources: readonly string[],
) => Promise<TokenResponse | OAuthError>;

/**
 * The grants the token endpoint serves, by `grant_type` (RFC 6749 §4.1.3,
 * §6; RFC 8628 §3.4); each is also a grant type an application must be
 * allowed. Discovery's `grant_types_supported` is read from here, so adding
 * a grant is one module and one line.
 */
export const GRANT_HANDLERS: Partial<Record<GrantType, GrantHandler>> = {
  [AUTHORIZATION_CODE_GRANT_TYPE]: authorizationCodeGrant,
  [DEVICE_CODE_GRANT_TYPE]: deviceCodeGrant,
  [REFRESH_TOKEN_GRANT_TYPE]: refreshTokenGrant,
  [CLIENT_CREDENTIALS_GRANT_TYPE]: clientCredentialsGrant,
  [TOKEN_EXCHANGE_GRANT_TYPE]: tokenExchangeGrant,
};

/** The grant handler for `grantType`, if this server serves it. */
export function grantHandler(grantType: string): GrantHandler | undefined {
  return Object.hasOwn(GRANT_HANDLERS, grantType) ? GRANT_HANDLERS[grantType as GrantType] : undefined;
}

/** The grant types the token endpoint serves (discovery's `grant_types_supported`). */
export function supportedGrantTypes(): string[] {
  return Object.keys(GRANT_HANDLERS);
}

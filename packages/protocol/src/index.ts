/**
 * The OAuth 2.0 / OpenID Connect wire protocol that the authcli server and
 * the `authcli` CLI share: the JSON shapes they exchange, the grant type
 * names, the device flow's user-code alphabet and the one issuer
 * normalization both sides apply. Types and constants, plus one pure
 * function and its error class: no dependencies, no `node:` imports, no
 * side effects, so it runs in Node.js 20 and in browsers and importing it
 * costs nothing.
 *
 * @packageDocumentation
 */

export {
  AUTHORIZATION_CODE_GRANT_TYPE,
  CLIENT_CREDENTIALS_GRANT_TYPE,
  DEVICE_CODE_GRANT_TYPE,
  REFRESH_TOKEN_GRANT_TYPE,
  TOKEN_EXCHANGE_GRANT_TYPE,
} from './grant-types.js';
export type { OAuthErrorResponse, TokenResponse } from './token.js';
export { type DeviceAuthorizationResponse, USER_CODE_ALPHABET, USER_CODE_LENGTH } from './device.js';
export {
  type AuthorizationServerMetadata,
  OAUTH_AUTHORIZATION_SERVER_PATH,
  OPENID_CONFIGURATION_PATH,
  type OpenIDProviderMetadata,
} from './metadata.js';
export { IssuerError, isLoopbackHost, normalizeIssuer } from './issuer.js';

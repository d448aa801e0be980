/** The authorization code grant (RFC 6749 §4.1.3, {@link https://www.rfc-editor.org/rfc/rfc6749#section-4.1.3}). */
export const AUTHORIZATION_CODE_GRANT_TYPE = 'authorization_code';

/** The refresh token grant (RFC 6749 §6, {@link https://www.rfc-editor.org/rfc/rfc6749#section-6}). */
export const REFRESH_TOKEN_GRANT_TYPE = 'refresh_token';

/**
 * The device authorization grant's `grant_type` URN (RFC 8628 §3.4,
 * {@link https://www.rfc-editor.org/rfc/rfc8628#section-3.4}).
 */
export const DEVICE_CODE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code';

/** The client credentials grant (RFC 6749 §4.4, {@link https://www.rfc-editor.org/rfc/rfc6749#section-4.4}): an application's own token. */
export const CLIENT_CREDENTIALS_GRANT_TYPE = 'client_credentials';

/** Token exchange (RFC 8693 §2.1, {@link https://www.rfc-editor.org/rfc/rfc8693#section-2.1}): a CI job's OIDC token for an application's. */
export const TOKEN_EXCHANGE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:token-exchange';

/**
 * A successful token response (RFC 6749 §5.1,
 * {@link https://www.rfc-editor.org/rfc/rfc6749#section-5.1}), with the ID
 * token of OpenID Connect (OIDC Core §3.1.3.3,
 * {@link https://openid.net/specs/openid-connect-core-1_0.html#TokenResponse}).
 * The authcli server's access tokens are JWTs of the RFC 9068 profile
 * ({@link https://www.rfc-editor.org/rfc/rfc9068#section-2}); to a client
 * they stay opaque strings.
 */
export interface TokenResponse {
  /** REQUIRED. The access token. */
  access_token: string;
  /**
   * REQUIRED. `Bearer` (RFC 6750 §4); compared case-insensitively
   * (RFC 6749 §5.1, §7.1).
   */
  token_type: string;
  /** RECOMMENDED. Lifetime of the access token in seconds. */
  expires_in?: number;
  /** OPTIONAL. Issued with the `offline_access` scope and on refresh (rotated). */
  refresh_token?: string;
  /** OPTIONAL if identical to the scope requested, else REQUIRED (RFC 6749 §3.3): space-separated. */
  scope?: string;
  /** The ID token when `openid` was granted (OIDC Core §3.1.3.3). */
  id_token?: string;
}

/**
 * An error response (RFC 6749 §5.2,
 * {@link https://www.rfc-editor.org/rfc/rfc6749#section-5.2}), as the
 * token, device authorization (RFC 8628 §3.5), revocation and introspection
 * endpoints send it.
 */
export interface OAuthErrorResponse {
  /** REQUIRED. An error code such as `invalid_grant` or, while polling, `authorization_pending` (RFC 8628 §3.5). */
  error: string;
  /** OPTIONAL. Human-readable text for the developer. */
  error_description?: string;
  /** OPTIONAL. A page about the error. */
  error_uri?: string;
}

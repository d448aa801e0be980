import type { normalizeIssuer } from './issuer.js';

/** Where OpenID Connect Discovery publishes provider metadata (OIDC Discovery §4, {@link https://openid.net/specs/openid-connect-discovery-1_0.html#ProviderConfig}). */
export const OPENID_CONFIGURATION_PATH = '/.well-known/openid-configuration';

/** The RFC 8414 well-known URI suffix for authorization server metadata (RFC 8414 §3, {@link https://www.rfc-editor.org/rfc/rfc8414#section-3}). */
export const OAUTH_AUTHORIZATION_SERVER_PATH = '/.well-known/oauth-authorization-server';

/**
 * Authorization server metadata (RFC 8414 §2,
 * {@link https://www.rfc-editor.org/rfc/rfc8414#section-2}): the fields
 * authcli publishes or reads, with the device authorization endpoint of
 * RFC 8628 §4 and the `iss` parameter flag of RFC 9207 §3.
 */
export interface AuthorizationServerMetadata {
  /** REQUIRED. The issuer identifier, identical to the one the metadata was fetched for (§3.3); see {@link normalizeIssuer}. */
  issuer: string;
  /** REQUIRED unless no grant type uses the authorization endpoint. */
  authorization_endpoint?: string;
  /** REQUIRED unless only the implicit grant is supported. */
  token_endpoint?: string;
  /** OPTIONAL. The issuer's JSON Web Key Set (RFC 7517). */
  jwks_uri?: string;
  /** RECOMMENDED. */
  scopes_supported?: string[];
  /** REQUIRED. */
  response_types_supported: string[];
  /** OPTIONAL. */
  response_modes_supported?: string[];
  /** OPTIONAL. Values of `grant_type`, such as {@link DEVICE_CODE_GRANT_TYPE}. */
  grant_types_supported?: string[];
  /** OPTIONAL. */
  token_endpoint_auth_methods_supported?: string[];
  /** OPTIONAL. The JWS algorithms of `private_key_jwt` client assertions (RFC 7523) at the token endpoint. */
  token_endpoint_auth_signing_alg_values_supported?: string[];
  /** OPTIONAL. The client registration endpoint (RFC 7591 §3); only when registration is on. */
  registration_endpoint?: string;
  /** OPTIONAL. The revocation endpoint (RFC 7009). */
  revocation_endpoint?: string;
  /** OPTIONAL. */
  revocation_endpoint_auth_methods_supported?: string[];
  /** OPTIONAL. As token_endpoint_auth_signing_alg_values_supported, at the revocation endpoint. */
  revocation_endpoint_auth_signing_alg_values_supported?: string[];
  /** OPTIONAL. The introspection endpoint (RFC 7662). */
  introspection_endpoint?: string;
  /** OPTIONAL. */
  introspection_endpoint_auth_methods_supported?: string[];
  /** OPTIONAL. As token_endpoint_auth_signing_alg_values_supported, at the introspection endpoint. */
  introspection_endpoint_auth_signing_alg_values_supported?: string[];
  /** OPTIONAL. PKCE methods (RFC 7636); `S256` here. */
  code_challenge_methods_supported?: string[];
  /** The device authorization endpoint (RFC 8628 §4, {@link https://www.rfc-editor.org/rfc/rfc8628#section-4}). */
  device_authorization_endpoint?: string;
  /** The pushed authorization request endpoint (RFC 9126 §5, {@link https://www.rfc-editor.org/rfc/rfc9126#section-5}). */
  pushed_authorization_request_endpoint?: string;
  /** Whether every client must push its authorization requests (RFC 9126 §5); false when absent. */
  require_pushed_authorization_requests?: boolean;
  /** Whether authorization responses carry `iss` (RFC 9207 §3, {@link https://www.rfc-editor.org/rfc/rfc9207#section-3}). */
  authorization_response_iss_parameter_supported?: boolean;
  /** The JWS algorithms DPoP proofs may use (RFC 9449 §5.1, {@link https://www.rfc-editor.org/rfc/rfc9449#section-5.1}). */
  dpop_signing_alg_values_supported?: string[];
}

/**
 * OpenID provider metadata (OIDC Discovery §3,
 * {@link https://openid.net/specs/openid-connect-discovery-1_0.html#ProviderMetadata}):
 * RFC 8414 metadata with the fields OpenID Connect adds or requires that
 * authcli publishes or reads, and `end_session_endpoint` of OIDC
 * RP-Initiated Logout §2.1.
 */
export interface OpenIDProviderMetadata extends AuthorizationServerMetadata {
  /** REQUIRED. */
  authorization_endpoint: string;
  /** REQUIRED. */
  jwks_uri: string;
  /** RECOMMENDED. The userinfo endpoint (OIDC Core §5.3). */
  userinfo_endpoint?: string;
  /** REQUIRED. */
  subject_types_supported: string[];
  /** REQUIRED. */
  id_token_signing_alg_values_supported: string[];
  /** RECOMMENDED. */
  claims_supported?: string[];
  /** OPTIONAL; false when absent. */
  claims_parameter_supported?: boolean;
  /** OPTIONAL. The authentication context class references supported (OIDC Discovery §3). */
  acr_values_supported?: string[];
  /** OPTIONAL; false when absent. */
  request_parameter_supported?: boolean;
  /** OPTIONAL; true when absent. */
  request_uri_parameter_supported?: boolean;
  /** The `prompt` values supported (Initiating User Registration via OpenID Connect 1.0, {@link https://openid.net/specs/openid-connect-prompt-create-1_0.html}). */
  prompt_values_supported?: string[];
  /** Where relying parties send the browser to log out (OIDC RP-Initiated Logout §2.1, {@link https://openid.net/specs/openid-connect-rpinitiated-1_0.html#OPMetadata}). */
  end_session_endpoint?: string;
  /** Whether logout tokens are posted to `backchannel_logout_uri`s (OIDC Back-Channel Logout §2.1, {@link https://openid.net/specs/openid-connect-backchannel-1_0.html#BCSupport}). */
  backchannel_logout_supported?: boolean;
  /** Whether logout tokens and ID tokens carry `sid` (OIDC Back-Channel Logout §2.1). */
  backchannel_logout_session_supported?: boolean;
}

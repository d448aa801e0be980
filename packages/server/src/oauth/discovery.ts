import type { OpenIDProviderMetadata } from '@authcli/protocol';
import type { OAuthContext } from './context.js';
import { STANDARD_CLAIM_NAMES } from './claims.js';
import { SIGNING_ALGS } from './keys.js';
import { dpopAlgs } from './dpop.js';
import { ACR_VALUES_SUPPORTED } from './acr.js';
import { SUPPORTED_SCOPES } from './scopes.js';
import { supportedGrantTypes } from './grants/registry.js';
import { REGISTRATION_PATH } from './dynamic-registration.js';
import { PAR_PATH } from './par.js';
import { RESPONSE_MODES } from './authorize-checks.js';
import { assertionAlgs } from './client-keys.js';
import type { ResourceCatalog } from '../store/store.js';

/** How clients may authenticate (RFC 8414 §2; `private_key_jwt`: RFC 7523 §2.2, client-assertion.ts); `none` identifies a public client. */
const AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'private_key_jwt'];

/** Authorization server metadata (RFC 8414 §2, OIDC Discovery §3). */
export function metadata(ctx: OAuthContext, catalog?: ResourceCatalog): OpenIDProviderMetadata {
  const iss = ctx.config.issuer;
  const assertionSigning = assertionAlgs(ctx.config.fapi2);
  return {
    issuer: iss,
    authorization_endpoint: `${iss}/oauth/authorize`,
    token_endpoint: `${iss}/oauth/token`,
    jwks_uri: `${iss}/oauth/jwks`,
    userinfo_endpoint: `${iss}/oauth/userinfo`,
    revocation_endpoint: `${iss}/oauth/revoke`,
    revocation_endpoint_auth_methods_supported: [...AUTH_METHODS, 'none'],
    revocation_endpoint_auth_signing_alg_values_supported: assertionSigning,
    end_session_endpoint: `${iss}/oauth/logout`,
    // OpenID Connect Back-Channel Logout 1.0 §2.1: logout tokens, naming the session (`sid`, also in ID tokens).
    backchannel_logout_supported: true,
    backchannel_logout_session_supported: true,
    introspection_endpoint: `${iss}/oauth/introspect`,
    // RFC 7662 §2.1: introspection needs client authentication; public clients (`none`) are refused.
    introspection_endpoint_auth_methods_supported: [...AUTH_METHODS],
    introspection_endpoint_auth_signing_alg_values_supported: assertionSigning,
    device_authorization_endpoint: `${iss}/oauth/device/authorization`,
    // RFC 9126 §5: where requests are pushed, and whether every client must (per application otherwise).
    pushed_authorization_request_endpoint: `${iss}${PAR_PATH}`,
    require_pushed_authorization_requests: ctx.config.requirePushedAuthorizationRequests,
    // RFC 8414 §2 / OIDC Discovery §3: advertised only when clients may register (AUTHCLI_REGISTRATION).
    ...(ctx.config.registration !== 'off' && { registration_endpoint: `${iss}${REGISTRATION_PATH}` }),
    // OpenID Connect's scopes, then every API's (RFC 8707 resources, oauth/resources.ts).
    scopes_supported: [...SUPPORTED_SCOPES, ...(catalog?.list ?? []).flatMap((r) => r.scopes.map((s) => s.name))],
    response_types_supported: ['code'],
    response_modes_supported: [...RESPONSE_MODES],
    grant_types_supported: supportedGrantTypes(),
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [...SIGNING_ALGS],
    token_endpoint_auth_methods_supported: [...AUTH_METHODS, 'none'],
    // RFC 8414 §2: the algorithms of private_key_jwt assertions (FAPI 2.0's alone with AUTHCLI_FAPI2).
    token_endpoint_auth_signing_alg_values_supported: assertionSigning,
    code_challenge_methods_supported: ['S256'],
    prompt_values_supported: ['none', 'login', 'consent', 'select_account'],
    claims_supported: [
      'sub',
      'iss',
      'aud',
      'exp',
      'iat',
      'auth_time',
      'nonce',
      'azp',
      'at_hash',
      'acr',
      'amr',
      'sid',
      ...STANDARD_CLAIM_NAMES,
    ],
    claims_parameter_supported: true,
    acr_values_supported: [...ACR_VALUES_SUPPORTED],
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    authorization_response_iss_parameter_supported: true,
    // RFC 9449 §5.1: https://www.rfc-editor.org/rfc/rfc9449#section-5.1
    dpop_signing_alg_values_supported: [...dpopAlgs(ctx.config.fapi2)],
  };
}

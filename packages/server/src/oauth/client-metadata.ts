/**
 * Client metadata (RFC 7591 §2) as a self-registering client sends it, at
 * registration and when it replaces its registration (RFC 7592 §2.2): checked
 * and turned into an application's fields under the same rules as the
 * dashboard and `apps add` (registration.ts `validateApplicationFields`,
 * redirect-uri.ts `callbackUrlProblem`). What only a self-registered client
 * has (its token endpoint auth method, application type, informational URIs
 * and contacts) is kept beside the application as JSON.
 */
import { ACR_VALUES_SUPPORTED, isSupportedAcr, PHISHING_RESISTANT_ACR } from './acr.js';
import { type ClientKeysInput, keysOfMetadata } from './client-keys.js';
import { GRANT_TYPES } from '../store/store.js';
import { InputError } from '../util/input-error.js';
import { InvalidClientMetadata, InvalidRedirectUri } from './errors.js';
import { CALLBACK_URLS_FIELD, validateApplicationFields, type ApplicationFields } from './registration.js';
import { isSupportedScope, SUPPORTED_SCOPES } from './scopes.js';

/** RFC 7591 §2 `token_endpoint_auth_method` values this server can check (client-auth.ts). */
const AUTH_METHODS = ['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'] as const;
type AuthMethod = (typeof AUTH_METHODS)[number];

/** OpenID Connect Dynamic Client Registration 1.0 §2 `application_type`. */
const APPLICATION_TYPES = ['web', 'native'] as const;

/** The scopes a client gets when it names none (RFC 7591 §2: the server picks a default). */
const DEFAULT_SCOPES = ['openid', 'profile', 'email'];

/** Informational metadata (RFC 7591 §2) kept and returned as given: URIs a consent page could link to, and plain strings. */
const INFORMATIONAL_URIS = ['client_uri', 'logo_uri', 'tos_uri', 'policy_uri'] as const;
const INFORMATIONAL_STRINGS = ['software_id', 'software_version'] as const;
/** Bounds on informational values: they are stored and sent back, never acted on. */
const URI_MAX = 2000;
const STRING_MAX = 255;
const CONTACTS_MAX = 20;
const CONTACT_MAX = 320;

/** The metadata only a self-registered client has, stored as JSON beside its application. */
export interface RegistrationMetadata {
  token_endpoint_auth_method: AuthMethod;
  application_type: (typeof APPLICATION_TYPES)[number];
  /** Whether the client named itself; when it did not, its client_id is its name on the consent page. */
  client_name_given: boolean;
  client_uri?: string;
  logo_uri?: string;
  tos_uri?: string;
  policy_uri?: string;
  contacts?: string[];
  software_id?: string;
  software_version?: string;
}

/** Metadata checked and turned into what an application is made of. */
export interface ParsedMetadata {
  kind: 'public' | 'confidential';
  fields: ApplicationFields;
  stored: RegistrationMetadata;
  /** The keys of a private_key_jwt client (RFC 7523), still to be checked (client-keys.ts `checkRegisteredKeys`). */
  keys?: ClientKeysInput;
}

type Json = Record<string, unknown>;

/** A JSON object (not null, not an array): what a metadata body must be. */
export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A metadata value; JSON null is the same as leaving the field out (RFC 7592 §2.2 treats omitted fields as null). */
export function field(body: Json, name: string): unknown {
  return Object.hasOwn(body, name) ? (body[name] ?? undefined) : undefined;
}

function optionalString(body: Json, name: string, max = STRING_MAX): string | undefined {
  const value = field(body, name);
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length > max)
    throw new InvalidClientMetadata(`${name} must be a string of at most ${max} characters`);
  return value;
}

function optionalBoolean(body: Json, name: string): boolean | undefined {
  const value = field(body, name);
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw new InvalidClientMetadata(`${name} must be true or false`);
  return value;
}

/**
 * OpenID Connect Dynamic Client Registration §2 `default_acr_values`: the client is held to the weakest listed
 * class this server satisfies (any of them will do), as `apps update --require-acr` would hold it; the password
 * class holds it to nothing. A list of classes none of which this server knows is refused.
 */
function requiredAcrOf(values: string[] | undefined): string | null {
  if (values === undefined || values.length === 0) return null;
  const known = values.filter(isSupportedAcr);
  if (known.length === 0) {
    throw new InvalidClientMetadata(`default_acr_values: none of them is supported here (${ACR_VALUES_SUPPORTED.join(', ')})`);
  }
  return known.every((v) => v === PHISHING_RESISTANT_ACR) ? PHISHING_RESISTANT_ACR : null;
}

function optionalStrings(body: Json, name: string, invalid: (message: string) => Error): string[] | undefined {
  const value = field(body, name);
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw invalid(`${name} must be an array of strings`);
  return value as string[];
}

function isHttpUrl(value: string): boolean {
  try {
    return /^https?:$/.test(new URL(value).protocol);
  } catch {
    return false;
  }
}

/**
 * Checks registration metadata (RFC 7591 §2) and turns it into an
 * application's fields. Unknown fields are ignored (§2); anything this server
 * cannot honour is refused rather than silently replaced, so what the client
 * asked for and what it got never differ without its knowing.
 * @throws InvalidRedirectUri, InvalidClientMetadata
 */
export function parseMetadata(body: unknown, clientId: string, apiScopes: ReadonlyMap<string, unknown> = new Map()): ParsedMetadata {
  if (!isObject(body)) throw new InvalidClientMetadata('the request body must be a JSON object of client metadata (RFC 7591 §2)');
  const metadataError = (message: string) => new InvalidClientMetadata(message);

  const applicationType = optionalString(body, 'application_type') ?? 'web';
  if (applicationType !== 'web' && applicationType !== 'native') {
    throw new InvalidClientMetadata(`application_type must be one of ${APPLICATION_TYPES.join(', ')}`);
  }
  // RFC 7591 §2: client_secret_basic when omitted; a native app is a public client (RFC 8252 §8.4), so none.
  const method = optionalString(body, 'token_endpoint_auth_method') ?? (applicationType === 'native' ? 'none' : 'client_secret_basic');
  if (!(AUTH_METHODS as readonly string[]).includes(method)) {
    throw new InvalidClientMetadata(`token_endpoint_auth_method must be one of ${AUTH_METHODS.join(', ')}`);
  }
  if (applicationType === 'native' && method !== 'none') {
    throw new InvalidClientMetadata(
      'a native application is a public client and gets no secret (RFC 8252 §8.4): use token_endpoint_auth_method none',
    );
  }

  const grantTypes = optionalStrings(body, 'grant_types', metadataError) ?? ['authorization_code'];
  // RFC 7591 §2.1: the code response type goes with the authorization_code grant and nothing else does; the
  // default follows the grants, so a device-only client that names no response types is consistent.
  const responseTypes =
    optionalStrings(body, 'response_types', metadataError) ?? (grantTypes.includes('authorization_code') ? ['code'] : []);
  for (const r of responseTypes) if (r !== 'code') throw new InvalidClientMetadata('response_types may only hold code');
  if (responseTypes.includes('code') !== grantTypes.includes('authorization_code')) {
    throw new InvalidClientMetadata(
      'grant_types and response_types disagree (RFC 7591 §2.1): the code response type needs the authorization_code grant and the other way round',
    );
  }

  // Said without echoing the values sent (RFC 6749 §5.2 text): the lists of what is supported instead.
  // A client that registers itself gets no tokens of its own (client_credentials): they would carry API scopes no
  // person approved. An operator allows that grant (`apps update --grant client_credentials`).
  const registrable = GRANT_TYPES.filter((g) => g !== 'client_credentials' && g !== 'urn:ietf:params:oauth:grant-type:token-exchange');
  for (const g of grantTypes) {
    if (!(registrable as readonly string[]).includes(g))
      throw new InvalidClientMetadata(`grant_types may only hold ${registrable.join(', ')}`);
  }
  const scope = optionalString(body, 'scope', 1000);
  const scopes = scope === undefined ? [...DEFAULT_SCOPES] : scope.split(' ').filter(Boolean);
  // The admin API's scopes (admin/auth.ts) are the operator's to allow: a client registering itself never gets them.
  if (scopes.some((s) => s === 'admin:read' || s === 'admin:write')) {
    throw new InvalidClientMetadata("scope must not hold the admin API's scopes: only an operator or an administrator allows them");
  }
  if (!scopes.every((s) => isSupportedScope(s) || apiScopes.has(s))) {
    throw new InvalidClientMetadata(
      `scope may only hold ${SUPPORTED_SCOPES.join(', ')} and the scopes of this server's APIs (scopes_supported)`,
    );
  }
  const idTokenAlg = optionalString(body, 'id_token_signed_response_alg');
  const clientName = optionalString(body, 'client_name');
  let fields: ApplicationFields;
  try {
    fields = validateApplicationFields(
      {
        name: clientName ?? clientId,
        callbackUrls: optionalStrings(body, 'redirect_uris', (m) => new InvalidRedirectUri(m)) ?? [],
        postLogoutRedirectUris: optionalStrings(body, 'post_logout_redirect_uris', metadataError) ?? [],
        scopes,
        grantTypes,
        ...(idTokenAlg !== undefined && { idTokenAlg }),
        // RFC 9449 §5.2 and RFC 9126 §6: what the client asks to be held to.
        requireDpop: optionalBoolean(body, 'dpop_bound_access_tokens') ?? false,
        requirePushedAuthorizationRequests: optionalBoolean(body, 'require_pushed_authorization_requests') ?? false,
        requireAcr: requiredAcrOf(optionalStrings(body, 'default_acr_values', metadataError)),
        // OpenID Connect Back-Channel Logout 1.0 §2.2, held to the rules of a self-registered client (backchannel-uri.ts).
        backchannelLogoutUri: optionalString(body, 'backchannel_logout_uri', URI_MAX),
        backchannelLogoutSessionRequired: optionalBoolean(body, 'backchannel_logout_session_required'),
        selfRegistered: true,
      },
      clientId,
      apiScopes,
    );
  } catch (err) {
    if (!(err instanceof InputError)) throw err;
    throw err.field === CALLBACK_URLS_FIELD ? new InvalidRedirectUri(err.message) : new InvalidClientMetadata(err.message);
  }

  const stored: RegistrationMetadata = {
    token_endpoint_auth_method: method as AuthMethod,
    application_type: applicationType,
    client_name_given: clientName !== undefined,
  };
  for (const name of INFORMATIONAL_URIS) {
    const uri = optionalString(body, name, URI_MAX);
    if (uri === undefined) continue;
    if (!isHttpUrl(uri)) throw new InvalidClientMetadata(`${name} must be an absolute http or https URL`);
    stored[name] = uri;
  }
  for (const name of INFORMATIONAL_STRINGS) {
    const value = optionalString(body, name);
    if (value !== undefined) stored[name] = value;
  }
  const contacts = optionalStrings(body, 'contacts', metadataError);
  if (contacts !== undefined) {
    if (contacts.length > CONTACTS_MAX || contacts.some((c) => c.length === 0 || c.length > CONTACT_MAX)) {
      throw new InvalidClientMetadata(`contacts must be at most ${CONTACTS_MAX} strings of 1-${CONTACT_MAX} characters`);
    }
    stored.contacts = contacts;
  }
  const keys = keysOfMetadata(body, method);
  const kind = method === 'none' ? 'public' : 'confidential';
  return { kind, fields, stored, ...(keys && { keys }) };
}

/**
 * Dynamic client registration (RFC 7591) and client management (RFC 7592):
 * a client registers itself at `POST /oauth/register` with JSON metadata and
 * reads, replaces or deletes its registration at `/oauth/register/<client_id>`
 * with the registration access token it was given.
 *
 * The metadata become an application under the same rules as the dashboard
 * and `apps add` (registration.ts `validateApplicationFields`, redirect-uri.ts
 * `callbackUrlProblem`); what only a self-registered client has (its token
 * endpoint auth method, application type, informational URIs and contacts)
 * is kept beside it as JSON. Registration access tokens and initial access
 * tokens are stored as their SHA-256 only, like client secrets.
 */

import { INITIAL_ACCESS_TOKEN_TTL_MAX_SECONDS, PRESENTED_SECRET_MAX } from '../config/defaults.js';
import { GRANT_TYPES, StoreError, type Application, type InitialAccessToken, type Store } from '../store/store.js';
import { hashesEqual, randomHex, randomToken, sha256Hex } from '../util/crypto.js';
import { InputError } from '../util/input-error.js';
import type { Admission } from './limits.js';
import type { OAuthContext } from './context.js';
import { isSupportedScope, SUPPORTED_SCOPES } from './scopes.js';
import { BearerRequired, InvalidClientMetadata, InvalidRedirectUri, InvalidToken, TemporarilyUnavailable } from './errors.js';
import {
  CALLBACK_URLS_FIELD,
  newClientId,
  registerApplication,
  validateApplicationFields,
  type ApplicationFields,
} from './registration.js';

/** The client registration endpoint (RFC 7591 §3); the client configuration endpoint is below it (RFC 7592 §2). */
export const REGISTRATION_PATH = '/oauth/register';

/** RFC 7591 §2 `token_endpoint_auth_method` values this server can check (client-auth.ts). */
const AUTH_METHODS = ['none', 'client_secret_basic', 'client_secret_post'] as const;
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
interface RegistrationMetadata {
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
interface ParsedMetadata {
  kind: 'public' | 'confidential';
  fields: ApplicationFields;
  stored: RegistrationMetadata;
}

type Json = Record<string, unknown>;

/** The client information response (RFC 7591 §3.2.1, RFC 7592 §3). */
export type ClientInformation = Record<string, unknown> & { client_id: string; registration_access_token: string };

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A metadata value; JSON null is the same as leaving the field out (RFC 7592 §2.2 treats omitted fields as null). */
function field(body: Json, name: string): unknown {
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
function parseMetadata(body: unknown, clientId: string): ParsedMetadata {
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
  for (const g of grantTypes) {
    if (!(GRANT_TYPES as readonly string[]).includes(g))
      throw new InvalidClientMetadata(`grant_types may only hold ${GRANT_TYPES.join(', ')}`);
  }
  const scope = optionalString(body, 'scope', 1000);
  const scopes = scope === undefined ? [...DEFAULT_SCOPES] : scope.split(' ').filter(Boolean);
  if (!scopes.every(isSupportedScope)) throw new InvalidClientMetadata(`scope may only hold ${SUPPORTED_SCOPES.join(', ')}`);
  const idTokenAlg = optionalString(body, 'id_token_signed_response_alg');
  const clientName = optionalString(body, 'client_name');
  let fields: ApplicationFields;
  try {
    fields = validateApplicationFields({
      name: clientName ?? clientId,
      callbackUrls: optionalStrings(body, 'redirect_uris', (m) => new InvalidRedirectUri(m)) ?? [],
      postLogoutRedirectUris: optionalStrings(body, 'post_logout_redirect_uris', metadataError) ?? [],
      scopes,
      grantTypes,
      ...(idTokenAlg !== undefined && { idTokenAlg }),
      // RFC 9449 §5.2 and RFC 9126 §6: what the client asks to be held to.
      requireDpop: optionalBoolean(body, 'dpop_bound_access_tokens') ?? false,
      requirePushedAuthorizationRequests: optionalBoolean(body, 'require_pushed_authorization_requests') ?? false,
    });
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
  return { kind: method === 'none' ? 'public' : 'confidential', fields, stored };
}

/** The client information response (RFC 7591 §3.2.1, RFC 7592 §3): the effective metadata, the management token and URI. */
function clientInformation(ctx: OAuthContext, app: Application, registrationAccessToken: string, clientSecret?: string): ClientInformation {
  const stored = JSON.parse(app.registrationMetadata ?? '{}') as RegistrationMetadata;
  const { client_name_given, ...informational } = stored;
  return {
    client_id: app.clientId,
    ...(clientSecret !== undefined && { client_secret: clientSecret }),
    client_id_issued_at: Math.floor(app.createdAt / 1000),
    // The secret never expires (0, §3.2.1); it changes only when rotated in the dashboard.
    ...(app.kind === 'confidential' && { client_secret_expires_at: 0 }),
    registration_access_token: registrationAccessToken,
    registration_client_uri: `${ctx.config.issuer}${REGISTRATION_PATH}/${encodeURIComponent(app.clientId)}`,
    redirect_uris: [...app.callbackUrls],
    grant_types: [...app.grantTypes],
    response_types: app.grantTypes.includes('authorization_code') ? ['code'] : [],
    scope: app.scopes.join(' '),
    id_token_signed_response_alg: app.idTokenAlg,
    ...(client_name_given && { client_name: app.name }),
    ...(app.postLogoutRedirectUris.length > 0 && { post_logout_redirect_uris: [...app.postLogoutRedirectUris] }),
    ...(app.requireDpop && { dpop_bound_access_tokens: true }),
    ...(app.requirePushedAuthorizationRequests && { require_pushed_authorization_requests: true }),
    ...informational,
  };
}

/** A new registration access token (256 bits) and its SHA-256, all the store keeps. */
function newRegistrationToken(): { token: string; hash: string } {
  const token = randomToken(32);
  return { token, hash: sha256Hex(token) };
}

/**
 * The token of `Authorization: Bearer <token>` (RFC 6750 §2.1). No
 * credentials at all, or another scheme, is the bare challenge (§3.1);
 * a malformed or oversize token is invalid_token.
 */
function bearerToken(authorization: string | undefined): string {
  const value = authorization?.trim() ?? '';
  if (!/^Bearer\s/i.test(value)) throw new BearerRequired('a Bearer token is required');
  const m = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i.exec(value);
  if (!m || m[1]!.length > PRESENTED_SECRET_MAX) throw INVALID_REGISTRATION_TOKEN;
  return m[1]!;
}

/** The one answer to a registration access token that does not manage this client id: never which of the two is wrong. */
const INVALID_REGISTRATION_TOKEN = new InvalidToken('the token is not valid for this client registration');
const INVALID_INITIAL_ACCESS_TOKEN = new InvalidToken('the initial access token is unknown, expired, revoked or already used');

/**
 * POST /oauth/register (RFC 7591 §3). With AUTHCLI_REGISTRATION=token the
 * request must carry a usable initial access token, which it uses up; with
 * `open` each registration counts against `registration-ip` first. Metadata
 * are checked before either is spent. Returns the 201 answer, with the
 * client secret (confidential clients only) shown this once.
 */
export async function registerClient(
  ctx: OAuthContext,
  body: unknown,
  authorization: string | undefined,
  ip: string,
): Promise<ClientInformation> {
  const { store, config } = ctx;
  let initialTokenHash: string | undefined;
  if (config.registration === 'token') {
    initialTokenHash = sha256Hex(bearerToken(authorization));
    if (!(await store.initialAccessTokens.findUsable(initialTokenHash, config.now()))) throw INVALID_INITIAL_ACCESS_TOKEN;
  }
  const clientId = newClientId();
  const metadata = parseMetadata(body, clientId);
  let admission: Admission | undefined;
  if (initialTokenHash !== undefined) {
    // Single use: of parallel registrations presenting the same token, one conditional UPDATE wins.
    if (!(await store.initialAccessTokens.use(initialTokenHash, clientId, config.now()))) throw INVALID_INITIAL_ACCESS_TOKEN;
  } else {
    admission = await ctx.limits.registration(ip);
    if (!admission.admitted) {
      throw new TemporarilyUnavailable('too many client registrations from this address; retry later', admission.retryAfterSeconds, {
        status: 429,
      });
    }
  }
  const registration = newRegistrationToken();
  try {
    const { app, clientSecret } = await registerApplication(
      store,
      {
        ...metadata.fields,
        kind: metadata.kind,
        ownerId: null,
        clientId,
        registrationTokenHash: registration.hash,
        registrationMetadata: JSON.stringify(metadata.stored),
      },
      config.now(),
    );
    return clientInformation(ctx, app, registration.token, clientSecret);
  } catch (err) {
    // Nothing was registered: the initial access token (or the attempt) is given back, best effort.
    if (initialTokenHash !== undefined) await store.initialAccessTokens.giveBack(initialTokenHash, clientId).catch(() => undefined);
    if (admission?.admitted) await admission.giveBack();
    throw err;
  }
}

/**
 * The self-registered application `clientId` whose registration access token
 * was presented (RFC 7592 §2), with that token's SHA-256. An unknown client
 * id, an application that did not register itself, and a wrong token (another
 * client's included) are one answer: 401 invalid_token (§2.1), so the answer
 * never tells whether a client exists.
 */
async function managedClient(store: Store, clientId: string, authorization: string | undefined) {
  const tokenHash = sha256Hex(bearerToken(authorization));
  // Client ids this server issues are base64url; anything else cannot be one of them (nor reach the store).
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(clientId)) throw INVALID_REGISTRATION_TOKEN;
  const app = await store.applications.get(clientId);
  if (!app?.registrationTokenHash || !hashesEqual(tokenHash, app.registrationTokenHash)) throw INVALID_REGISTRATION_TOKEN;
  return { app, tokenHash };
}

/**
 * Changes a managed application only while its registration access token is
 * still `tokenHash` (a conditional UPDATE), so a token is good for exactly one
 * change even when presented in parallel; a lost race is invalid_token.
 */
async function updateManaged(
  ctx: OAuthContext,
  clientId: string,
  tokenHash: string,
  patch: Parameters<Store['applications']['update']>[1],
): Promise<Application> {
  try {
    return await ctx.store.applications.update(clientId, patch, ctx.config.now(), { registrationTokenHash: tokenHash });
  } catch (err) {
    if (err instanceof StoreError && err.code === 'not_found') throw INVALID_REGISTRATION_TOKEN;
    throw err;
  }
}

/**
 * GET /oauth/register/<client_id> (RFC 7592 §2.1): the client's current
 * metadata. The response must carry a registration access token (§3) and
 * only its SHA-256 is stored, so every read issues a new one and the one
 * presented stops working (§3 allows rotation; the client keeps the new one).
 */
export async function readClient(ctx: OAuthContext, clientId: string, authorization: string | undefined): Promise<ClientInformation> {
  const { tokenHash } = await managedClient(ctx.store, clientId, authorization);
  const next = newRegistrationToken();
  const app = await updateManaged(ctx, clientId, tokenHash, { registrationTokenHash: next.hash });
  return clientInformation(ctx, app, next.token);
}

/**
 * PUT /oauth/register/<client_id> (RFC 7592 §2.2): replaces the client's
 * metadata with the request's; omitted fields go back to their defaults.
 * `client_id` must be the client's own; a `client_secret`, if sent, must be
 * its current secret (a client never chooses its secret). The client type
 * cannot change (a public client has no secret to keep, a confidential one
 * would lose it): register a new client for that. The registration access
 * token is rotated as for a read.
 */
export async function updateClient(
  ctx: OAuthContext,
  clientId: string,
  body: unknown,
  authorization: string | undefined,
): Promise<ClientInformation> {
  const { app, tokenHash } = await managedClient(ctx.store, clientId, authorization);
  if (!isObject(body)) throw new InvalidClientMetadata('the request body must be a JSON object of client metadata (RFC 7591 §2)');
  if (body.client_id !== clientId) throw new InvalidClientMetadata("client_id must be the client's own (RFC 7592 §2.2)");
  const secret = field(body, 'client_secret');
  if (secret !== undefined) {
    const matches = typeof secret === 'string' && app.secretHash !== null && hashesEqual(sha256Hex(secret), app.secretHash);
    if (!matches) throw new InvalidClientMetadata("client_secret must be the client's current secret; a client cannot choose its secret");
  }
  const metadata = parseMetadata(body, clientId);
  if (metadata.kind !== app.kind) {
    throw new InvalidClientMetadata(
      'token_endpoint_auth_method cannot change between none and a client secret method: register a new client instead',
    );
  }
  const next = newRegistrationToken();
  // Whose tokens it may introspect is the operator's to say (`apps update --introspection`), not the client's.
  const { introspection: _operatorsToSay, ...fields } = metadata.fields;
  const updated = await updateManaged(ctx, clientId, tokenHash, {
    ...fields,
    registrationMetadata: JSON.stringify(metadata.stored),
    registrationTokenHash: next.hash,
  });
  return clientInformation(ctx, updated, next.token);
}

/**
 * DELETE /oauth/register/<client_id> (RFC 7592 §2.3): deletes the
 * application as the dashboard does, so its client id, secret, registration
 * access token, refresh tokens, codes and device codes stop working at once
 * and its access tokens fail verification (their grant is gone).
 */
export async function deleteClient(ctx: OAuthContext, clientId: string, authorization: string | undefined): Promise<void> {
  const { tokenHash } = await managedClient(ctx.store, clientId, authorization);
  try {
    await ctx.store.applications.delete(clientId, { registrationTokenHash: tokenHash });
  } catch (err) {
    if (err instanceof StoreError && err.code === 'not_found') throw INVALID_REGISTRATION_TOKEN;
    throw err;
  }
}

/** A new initial access token, shown once. */
export interface NewInitialAccessToken {
  id: string;
  token: string;
  expiresAt: number;
}

/**
 * Creates an initial access token (RFC 7591 §3) for AUTHCLI_REGISTRATION=token
 * (`authcli-server registration token create`): 256 random bits, stored as
 * their SHA-256, good for one registration until it expires.
 */
export async function createInitialAccessToken(store: Store, expiresInSeconds: number, now: number): Promise<NewInitialAccessToken> {
  if (!Number.isInteger(expiresInSeconds) || expiresInSeconds < 1 || expiresInSeconds > INITIAL_ACCESS_TOKEN_TTL_MAX_SECONDS) {
    throw new InputError(`--expires-in must be a whole number of seconds from 1 to ${INITIAL_ACCESS_TOKEN_TTL_MAX_SECONDS}`);
  }
  const token = randomToken(32);
  const id = randomHex(8);
  const expiresAt = now + expiresInSeconds * 1000;
  await store.initialAccessTokens.create({ id, tokenHash: sha256Hex(token), createdAt: now, expiresAt });
  return { id, token, expiresAt };
}

/** What became of an initial access token, as `registration token list` shows it. */
export function initialAccessTokenState(t: InitialAccessToken, now: number): 'active' | 'used' | 'revoked' | 'expired' {
  if (t.usedAt !== null) return 'used';
  if (t.revokedAt !== null) return 'revoked';
  return now >= t.expiresAt ? 'expired' : 'active';
}

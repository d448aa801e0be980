/**
 * Registering applications (RFC 6749 §2): the rules every way of doing it
 * shares (operator CLI, dashboard), and the built-in application of a new
 * store.
 */

import { PHISHING_RESISTANT_ACR } from './acr.js';
import {
  GRANT_TYPES,
  INTROSPECTION_SCOPES,
  StoreError,
  SYSTEM,
  type Application,
  type ClientKeys,
  type GrantType,
  type IntrospectionScope,
  type Store,
} from '../store/store.js';
import { APPLICATION_NAME_MAX } from '../config/defaults.js';
import { randomToken, sha256Hex } from '../util/crypto.js';
import { InputError } from '../util/input-error.js';
import { callbackUrlProblem } from './redirect-uri.js';
import { backchannelFields, type BackchannelFields } from './backchannel-uri.js';
import { SUPPORTED_SCOPES } from './scopes.js';
import { checkFapi2 } from './fapi2.js';

/** The CLI's own public application, created on the first start of an empty store. */
export const BUILTIN_CLIENT_ID = 'authcli';

/**
 * First start on an empty store: create the built-in public `authcli`
 * application (loopback callback, device grant allowed) so `authcli login`
 * works out of the box. Runs once per store; deleting the application later
 * is respected.
 */
export async function bootstrapStore(store: Store, now: number): Promise<void> {
  const marker = await store.settings.getOrCreate('bootstrapped_at', () => 'pending');
  if (marker !== 'pending') return;
  try {
    await store.changes(async () => {
      const app = await store.applications.create({
        clientId: BUILTIN_CLIENT_ID,
        ownerId: null,
        name: 'authcli',
        kind: 'public',
        secretHash: null,
        callbackUrls: ['http://127.0.0.1/callback'],
        scopes: [...SUPPORTED_SCOPES],
        // Every grant a person signs in with; client_credentials is for confidential applications only.
        grantTypes: GRANT_TYPES.filter((g) => g !== 'client_credentials' && g !== 'urn:ietf:params:oauth:grant-type:token-exchange'),
        idTokenAlg: 'RS256',
        createdAt: now,
      });
      await store.audit.append({
        at: now,
        actor: SYSTEM,
        action: 'app.created',
        target: { type: 'app', id: app.clientId, name: app.name },
        detail: {
          name: app.name,
          kind: app.kind,
          redirect_uris: app.callbackUrls,
          scope: app.scopes.join(' '),
          grant_types: app.grantTypes,
        },
      });
    });
  } catch (err) {
    if (!(err instanceof StoreError && err.code === 'duplicate')) throw err;
  }
  await store.settings.set('bootstrapped_at', String(now));
}

/**
 * RFC 6749 §4.4.2: only a confidential client may use client credentials (its own token, with no person): a
 * public client proves nothing about who asks.
 * @throws InputError
 */
export function checkGrantsForKind(kind: string, grantTypes: readonly string[]): void {
  if (kind !== 'confidential' && grantTypes.includes('client_credentials')) {
    throw new InputError('the client_credentials grant is for confidential applications only (RFC 6749 section 4.4)');
  }
}

/** The grants an application gets when none are named: the code flow and its refresh tokens. */
export const DEFAULT_GRANT_TYPES: readonly GrantType[] = ['authorization_code', 'refresh_token'];

export interface NewAppInput {
  name: string;
  kind: string;
  callbackUrls: string[];
  scopes: string[];
  grantTypes?: string[];
  idTokenAlg?: string;
  ownerId?: string | null;
  /** OpenID Connect RP-Initiated Logout 1.0 §3.1; the same rules as callback URLs. */
  postLogoutRedirectUris?: string[];
  /** Whose tokens it may introspect (RFC 7662 §2.1); `own` when not given. */
  introspection?: string;
  /** RFC 9449 §5.2 and RFC 9126 §6; false when not given. */
  requireDpop?: boolean;
  requirePushedAuthorizationRequests?: boolean;
  /** The class every sign-in for it must meet (`phr`: a passkey); none when not given. */
  requireAcr?: string | null;
  /** A client that registers itself (RFC 7591, oauth/dynamic-registration.ts): its id chosen beforehand, its registration access token's SHA-256 and metadata. */
  clientId?: string;
  registrationTokenHash?: string;
  registrationMetadata?: string;
  /** OpenID Connect Back-Channel Logout 1.0 §2.2 (backchannel-uri.ts); none when not given. */
  backchannelLogoutUri?: string | null;
  backchannelLogoutSessionRequired?: boolean;
  /** The application registered itself over the network (RFC 7591): held to backchannel-uri.ts's public-address rule. */
  selfRegistered?: boolean;
  /** A confidential application's keys (private_key_jwt, RFC 7523), checked already (client-keys.ts): then it gets no secret. */
  clientKeys?: ClientKeys | null;
  /** Its own token lifetimes, seconds, checked already (lifetimes.ts `checkLifetimes`); the server's when not given. */
  accessTokenTtl?: number | null;
  refreshTokenTtl?: number | null;
}

/** The field names of {@link InputError}s about redirect URIs (RFC 7591 §3.2.2 answers them as invalid_redirect_uri). */
export const CALLBACK_URLS_FIELD = 'callbackUrls';

export interface ApplicationFields extends BackchannelFields {
  name: string;
  callbackUrls: string[];
  scopes: string[];
  grantTypes: GrantType[];
  idTokenAlg: 'RS256' | 'ES256';
  postLogoutRedirectUris: string[];
  introspection: IntrospectionScope;
  requireDpop: boolean;
  requirePushedAuthorizationRequests: boolean;
  requireAcr: string | null;
}

/**
 * Characters a name must not hold: controls (Cc), format characters (Cf: the bidi overrides and isolates that
 * reverse what follows them on the consent page, zero-width characters that hide a difference) and the line
 * and paragraph separators.
 */
const NAME_UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

/**
 * Whether `name` would read as the built-in application's (`authcli`): compared after NFKC (full-width and
 * other compatibility forms fold to plain letters), without case, spaces or punctuation.
 */
function readsAsBuiltin(name: string): boolean {
  return (
    name
      .normalize('NFKC')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}]/gu, '') === BUILTIN_CLIENT_ID
  );
}

/**
 * Checks what a person or operator typed for an application; the same rules for the CLI, the dashboard and
 * self-registering clients. `clientId` is the application's when it exists already (an update).
 */
export function validateApplicationFields(
  input: Omit<NewAppInput, 'kind' | 'ownerId'>,
  clientId?: string,
  /** The scopes of the team's APIs (resources), which an application may be allowed as well as OpenID Connect's. */
  apiScopes: ReadonlyMap<string, unknown> = new Map(),
): ApplicationFields {
  const name = input.name.trim();
  if (!name || name.length > APPLICATION_NAME_MAX) throw new InputError(`name must be 1-${APPLICATION_NAME_MAX} characters`);
  if (NAME_UNSAFE.test(name)) {
    throw new InputError('name must not contain control characters or invisible formatting (bidi overrides, zero-width characters)');
  }
  if (clientId !== BUILTIN_CLIENT_ID && readsAsBuiltin(name)) {
    throw new InputError(`the name ${name} reads as the server's own ${BUILTIN_CLIENT_ID} application: choose another`);
  }
  const grantTypes = input.grantTypes ?? [...DEFAULT_GRANT_TYPES];
  if (grantTypes.length === 0) throw new InputError('allow at least one grant type');
  for (const g of grantTypes) {
    if (!(GRANT_TYPES as readonly string[]).includes(g)) throw new InputError(`unknown grant type ${g} (one of ${GRANT_TYPES.join(', ')})`);
  }
  const callbackUrls = [...new Set(input.callbackUrls.map((u) => u.trim()).filter(Boolean))];
  if (grantTypes.includes('authorization_code') && callbackUrls.length === 0) {
    throw new InputError('at least one callback URL is required for the authorization code grant', CALLBACK_URLS_FIELD);
  }
  if (callbackUrls.length > 20) throw new InputError('at most 20 callback URLs', CALLBACK_URLS_FIELD);
  for (const url of callbackUrls) {
    const problem = callbackUrlProblem(url);
    if (problem) throw new InputError(problem, CALLBACK_URLS_FIELD);
  }
  if (input.scopes.length === 0) throw new InputError('at least one scope is required');
  for (const s of input.scopes) {
    if (!(SUPPORTED_SCOPES as readonly string[]).includes(s) && !apiScopes.has(s)) {
      const apis =
        apiScopes.size > 0 ? `, or an API's: ${[...apiScopes.keys()].join(', ')}` : '; an API scope is defined with `resources add`';
      throw new InputError(`unknown scope ${s} (one of ${SUPPORTED_SCOPES.join(', ')}${apis})`);
    }
  }
  // OIDC Core §11: offline_access asks for a refresh token. Allowing the scope without the grant would show it on
  // the consent page and then issue none; refused, so the operator chooses which one is meant.
  if (input.scopes.includes('offline_access') && !grantTypes.includes('refresh_token')) {
    throw new InputError(
      'the offline_access scope needs the refresh_token grant: allow refresh_token as well, or drop offline_access from the scopes',
    );
  }
  const postLogoutRedirectUris = [...new Set((input.postLogoutRedirectUris ?? []).map((u) => u.trim()).filter(Boolean))];
  if (postLogoutRedirectUris.length > 20) throw new InputError('at most 20 post-logout redirect URIs');
  for (const url of postLogoutRedirectUris) {
    const problem = callbackUrlProblem(url);
    if (problem) throw new InputError(`post-logout redirect URI: ${problem}`);
  }
  const idTokenAlg = input.idTokenAlg ?? 'RS256';
  if (idTokenAlg !== 'RS256' && idTokenAlg !== 'ES256') throw new InputError('ID token algorithm must be RS256 or ES256');
  const introspection = input.introspection ?? 'own';
  if (!(INTROSPECTION_SCOPES as readonly string[]).includes(introspection)) {
    throw new InputError(`introspection must be one of ${INTROSPECTION_SCOPES.join(', ')}`);
  }
  return {
    name,
    callbackUrls,
    scopes: [...new Set(input.scopes)],
    grantTypes: [...new Set(grantTypes)] as GrantType[],
    idTokenAlg,
    postLogoutRedirectUris,
    introspection: introspection as IntrospectionScope,
    requireDpop: input.requireDpop ?? false,
    requirePushedAuthorizationRequests: input.requirePushedAuthorizationRequests ?? false,
    requireAcr: checkRequiredAcr(input.requireAcr),
    ...backchannelFields(input, input.selfRegistered ?? input.registrationTokenHash !== undefined),
  };
}

/** The class an application may require: `phr` (a passkey; every other class is met by any sign-in), or none. */
function checkRequiredAcr(acr: string | null | undefined): string | null {
  if (acr === undefined || acr === null || acr === '' || acr === 'none') return null;
  if (acr !== PHISHING_RESISTANT_ACR) throw new InputError(`require-acr must be ${PHISHING_RESISTANT_ACR} (a passkey sign-in) or none`);
  return acr;
}

/** A fresh client secret (256 bits) and the SHA-256 that is all the store keeps of it. */
export function newClientSecret(): { secret: string; hash: string } {
  const secret = randomToken(32);
  return { secret, hash: sha256Hex(secret) };
}

/**
 * A new client_id: 128 random bits, base64url, drawn again while it starts
 * with `-` or `_`: on a command line (`authcli-server apps update <client_id>`,
 * `authcli --client-id`) an argument that starts with `-` reads as an option.
 */
export function newClientId(): string {
  for (;;) {
    const id = randomToken(16);
    if (/^[A-Za-z0-9]/.test(id)) return id;
  }
}

/** Validates and registers an application; returns it with the one-time plaintext secret for confidential ones. */
export async function registerApplication(
  store: Store,
  input: NewAppInput,
  now: number,
  options: { fapi2?: boolean } = {},
): Promise<{ app: Application; clientSecret: string | undefined }> {
  if (input.kind !== 'public' && input.kind !== 'confidential') throw new InputError('kind must be public or confidential');
  // Under FAPI 2.0 an application that names no ID token algorithm gets ES256, which the profile allows.
  const { byScope } = await store.resources.catalog();
  const fields = validateApplicationFields(
    options.fapi2 ? { ...input, idTokenAlg: input.idTokenAlg ?? 'ES256' } : input,
    undefined,
    byScope,
  );
  if (input.clientKeys && input.kind !== 'confidential') throw new InputError('only a confidential application authenticates with keys');
  checkGrantsForKind(input.kind, fields.grantTypes);
  checkFapi2(options.fapi2 === true, { kind: input.kind, clientKeys: input.clientKeys ?? null, idTokenAlg: fields.idTokenAlg });
  const secret = input.kind === 'confidential' && !input.clientKeys ? newClientSecret() : undefined;
  const app = await store.applications.create({
    clientId: input.clientId ?? newClientId(),
    ownerId: input.ownerId ?? null,
    kind: input.kind,
    secretHash: secret?.hash ?? null,
    clientKeys: input.clientKeys ?? null,
    ...fields,
    ...(input.registrationTokenHash !== undefined && { registrationTokenHash: input.registrationTokenHash }),
    ...(input.registrationMetadata !== undefined && { registrationMetadata: input.registrationMetadata }),
    accessTokenTtl: input.accessTokenTtl ?? null,
    refreshTokenTtl: input.refreshTokenTtl ?? null,
    createdAt: now,
  });
  return { app, clientSecret: secret?.secret };
}

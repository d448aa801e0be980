/**
 * Dynamic client registration (RFC 7591) and client management (RFC 7592):
 * a client registers itself at `POST /oauth/register` with JSON metadata and
 * reads, replaces or deletes its registration at `/oauth/register/<client_id>`
 * with the registration access token it was given.
 *
 * The metadata are checked by client-metadata.ts and become an application
 * under the same rules as the dashboard and `apps add`. Registration access
 * tokens and initial access tokens (made by initial-access-tokens.ts) are
 * stored as their SHA-256 only, like client secrets.
 */

import { recordApp, recordAppUpdate } from '../admin/apps.js';
import { PRESENTED_SECRET_MAX } from '../config/defaults.js';
import { StoreError, type Application, type Store } from '../store/store.js';
import { hashesEqual, randomToken, sha256Hex } from '../util/crypto.js';
import type { Admission } from './limits.js';
import type { OAuthContext } from './context.js';
import { field, isObject, parseMetadata, type RegistrationMetadata } from './client-metadata.js';
import { checkRegisteredKeys, keysMetadata } from './client-keys.js';
import { BearerRequired, InvalidClientMetadata, InvalidToken, TemporarilyUnavailable } from './errors.js';
import { type ApplicationFields, newClientId, registerApplication } from './registration.js';
import { Fapi2Refused, fapi2Problem } from './fapi2.js';

/** The client registration endpoint (RFC 7591 §3); the client configuration endpoint is below it (RFC 7592 §2). */
export const REGISTRATION_PATH = '/oauth/register';

/** The client information response (RFC 7591 §3.2.1, RFC 7592 §3). */
export type ClientInformation = Record<string, unknown> & { client_id: string; registration_access_token: string };

/** The client information response (RFC 7591 §3.2.1, RFC 7592 §3): the effective metadata, the management token and URI. */
function clientInformation(ctx: OAuthContext, app: Application, registrationAccessToken: string, clientSecret?: string): ClientInformation {
  const stored = JSON.parse(app.registrationMetadata ?? '{}') as RegistrationMetadata;
  const { client_name_given, ...informational } = stored;
  return {
    client_id: app.clientId,
    ...(clientSecret !== undefined && { client_secret: clientSecret }),
    client_id_issued_at: Math.floor(app.createdAt / 1000),
    // The secret never expires (0, §3.2.1); it changes only when rotated in the dashboard.
    ...(app.secretHash !== null && { client_secret_expires_at: 0 }),
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
    ...(app.requireAcr !== null && { default_acr_values: [app.requireAcr] }),
    ...(app.backchannelLogoutUri !== null && {
      backchannel_logout_uri: app.backchannelLogoutUri,
      backchannel_logout_session_required: app.backchannelLogoutSessionRequired,
    }),
    ...keysMetadata(app.clientKeys),
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

/**
 * Under FAPI 2.0, a client that names no `id_token_signed_response_alg` gets ES256 (OIDC Registration's RS256
 * default is one the profile forbids); otherwise what it asked for, checked as ever.
 */
function idTokenAlgOf(ctx: OAuthContext, body: unknown, asked: ApplicationFields['idTokenAlg']): ApplicationFields['idTokenAlg'] {
  const named = isObject(body) && body.id_token_signed_response_alg !== undefined;
  return ctx.config.fapi2 && !named ? 'ES256' : asked;
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
  const metadata = parseMetadata(body, clientId, (await ctx.store.resources.catalog()).byScope);
  const clientKeys = metadata.keys && (await checkRegisteredKeys(metadata.keys, config.fapi2));
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
    const { app, clientSecret } = await store.changes(async () => {
      const made = await registerApplication(
        store,
        {
          ...metadata.fields,
          idTokenAlg: idTokenAlgOf(ctx, body, metadata.fields.idTokenAlg),
          kind: metadata.kind,
          ownerId: null,
          clientId,
          registrationTokenHash: registration.hash,
          registrationMetadata: JSON.stringify(metadata.stored),
          ...(clientKeys && { clientKeys }),
        },
        config.now(),
        { fapi2: config.fapi2 },
      ).catch((err: unknown) => {
        // What FAPI 2.0 forbids (a secret, a public client, RS256 ID tokens) is metadata this server will not take.
        throw err instanceof Fapi2Refused ? new InvalidClientMetadata(err.message) : err;
      });
      await recordApp(clientRecorder(ctx, made.app, ip), 'created', made.app);
      return made;
    });
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
    return await ctx.store.changes(async () => {
      const before = await ctx.store.applications.get(clientId);
      const after = await ctx.store.applications.update(clientId, patch, ctx.config.now(), { registrationTokenHash: tokenHash });
      // A read rotates the registration token and changes nothing else: no row for it.
      if (before) await recordAppUpdate(clientRecorder(ctx, after, null), before, after);
      return after;
    });
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
  const metadata = parseMetadata(body, clientId, (await ctx.store.resources.catalog()).byScope);
  if (metadata.kind !== app.kind || (metadata.keys !== undefined) !== (app.clientKeys !== null)) {
    throw new InvalidClientMetadata(
      'token_endpoint_auth_method cannot change between none, a client secret method and private_key_jwt: register a new client instead',
    );
  }
  const clientKeys = metadata.keys && (await checkRegisteredKeys(metadata.keys, ctx.config.fapi2));
  const idTokenAlg = idTokenAlgOf(ctx, body, metadata.fields.idTokenAlg);
  const fapi2 = ctx.config.fapi2 ? fapi2Problem({ kind: app.kind, clientKeys: clientKeys ?? app.clientKeys, idTokenAlg }) : undefined;
  if (fapi2) throw new InvalidClientMetadata(fapi2);
  const next = newRegistrationToken();
  // Whose tokens it may introspect is the operator's to say (`apps update --introspection`), not the client's.
  const { introspection: _operatorsToSay, ...fields } = { ...metadata.fields, idTokenAlg };
  const updated = await updateManaged(ctx, clientId, tokenHash, {
    ...fields,
    registrationMetadata: JSON.stringify(metadata.stored),
    registrationTokenHash: next.hash,
    ...(clientKeys && { clientKeys }),
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
  const { app, tokenHash } = await managedClient(ctx.store, clientId, authorization);
  try {
    await ctx.store.changes(async () => {
      await ctx.store.applications.delete(clientId, { registrationTokenHash: tokenHash });
      await recordApp(clientRecorder(ctx, app, null), 'deleted', app);
    });
  } catch (err) {
    if (err instanceof StoreError && err.code === 'not_found') throw INVALID_REGISTRATION_TOKEN;
    throw err;
  }
}

/** The audit trail's actor of a client managing its own registration (RFC 7591, 7592): the client itself. */
function clientRecorder(ctx: OAuthContext, app: Application, address: string | null) {
  return { store: ctx.store, actor: { type: 'client' as const, id: app.clientId, name: app.name }, address, now: ctx.config.now() };
}

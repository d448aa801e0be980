import { authMethodOf, keysMetadata } from '../oauth/client-keys.js';
import { checkFapi2 } from '../oauth/fapi2.js';
import { checkLifetimes } from '../oauth/lifetimes.js';
import {
  checkGrantsForKind,
  type NewAppInput,
  newClientSecret,
  registerApplication,
  validateApplicationFields,
} from '../oauth/registration.js';
import { type Application, type ClientKeys, StoreError, type Store } from '../store/store.js';
import { InputError } from '../util/input-error.js';
import { type AdminContext, audited, changedFields, type Page, type PageRequest, pageOf, type Recorder } from './context.js';

/** Who registered an application: a dashboard user, an operator (`apps add`, the admin API, the built-in one), or the client itself (RFC 7591). */
export function registeredBy(a: Application): 'dashboard' | 'operator' | 'client' {
  if (a.registrationTokenHash !== null) return 'client';
  return a.ownerId === null ? 'operator' : 'dashboard';
}

/**
 * An application as the admin API answers it: RFC 7591 §2 client metadata
 * names (`redirect_uris`, `scope`, `grant_types`, ...), the server's own
 * settings beside them, and never its secret (answered once, at creation or
 * rotation, as `client_secret`).
 */
export function appResource(a: Application) {
  return {
    client_id: a.clientId,
    name: a.name,
    kind: a.kind,
    redirect_uris: [...a.callbackUrls],
    post_logout_redirect_uris: [...a.postLogoutRedirectUris],
    scope: a.scopes.join(' '),
    grant_types: [...a.grantTypes],
    token_endpoint_auth_method: authMethodOf(a),
    ...keysMetadata(a.clientKeys),
    id_token_signed_response_alg: a.idTokenAlg,
    introspection: a.introspection,
    dpop_bound_access_tokens: a.requireDpop,
    require_pushed_authorization_requests: a.requirePushedAuthorizationRequests,
    require_acr: a.requireAcr,
    backchannel_logout_uri: a.backchannelLogoutUri,
    backchannel_logout_session_required: a.backchannelLogoutSessionRequired,
    // Seconds; null: the server's (AUTHCLI_ACCESS_TOKEN_TTL, AUTHCLI_REFRESH_TOKEN_TTL).
    access_token_ttl: a.accessTokenTtl,
    refresh_token_ttl: a.refreshTokenTtl,
    registered_by: registeredBy(a),
    owner: a.ownerId,
    created: new Date(Number(a.createdAt)).toISOString(),
  };
}
export type AppResource = ReturnType<typeof appResource>;

/** The audit target of an application. */
const target = (a: Pick<Application, 'clientId' | 'name'>) => ({ type: 'app', id: a.clientId, name: a.name });

/** An application's settings as its audit rows record them: the resource without what only restates them. */
function audible(a: Application): Record<string, unknown> {
  const { client_id: _id, registered_by: _by, owner: _owner, created: _created, ...rest } = appResource(a);
  return rest;
}

/** Records that `app` was created, deleted, or given a new secret (never the secret), as `ctx`'s actor. */
export function recordApp(ctx: Recorder, change: 'created' | 'deleted' | 'secret_rotated', app: Application): Promise<unknown> {
  return audited(ctx, { action: `app.${change}`, target: target(app), detail: change === 'secret_rotated' ? {} : audible(app) });
}

/** Records what an update changed in an application (nothing when nothing did). */
export async function recordAppUpdate(ctx: Recorder, before: Application, after: Application): Promise<void> {
  const detail = changedFields(audible(before), audible(after));
  if (Object.keys(detail).length > 0) await audited(ctx, { action: 'app.updated', target: target(after), detail });
}

export async function findApp(store: Store, clientId: string): Promise<Application> {
  const app = await store.applications.get(clientId);
  if (!app) throw new StoreError('not_found', `no application ${clientId} (see apps list)`);
  return app;
}

/** Every application, or a page of them in client_id order. */
export async function listApps(store: Store, page?: PageRequest): Promise<Page<Application>> {
  const all = await store.applications.list();
  return page ? pageOf(all, (a) => a.clientId, page) : { items: all, next: undefined };
}

/** Registers an application (the operator's: no owner); the secret of a confidential one comes back once. */
export async function createApp(
  ctx: AdminContext,
  input: Omit<NewAppInput, 'ownerId' | 'clientId' | 'registrationTokenHash' | 'registrationMetadata' | 'selfRegistered'>,
  names: { access: string; refresh: string } = LIFETIME_NAMES,
): Promise<{ app: Application; clientSecret: string | undefined }> {
  checkLifetimes({ accessTokenTtl: input.accessTokenTtl ?? null, refreshTokenTtl: input.refreshTokenTtl ?? null }, ctx.config, names);
  return ctx.store.changes(async () => {
    const made = await registerApplication(ctx.store, input, ctx.now, { fapi2: ctx.config.fapi2 });
    await recordApp(ctx, 'created', made.app);
    return made;
  });
}

/** What an update may change; what is absent stays. */
export interface AppPatch {
  name?: string | undefined;
  callbackUrls?: string[] | undefined;
  postLogoutRedirectUris?: string[] | undefined;
  scopes?: string[] | undefined;
  grantTypes?: string[] | undefined;
  idTokenAlg?: string | undefined;
  introspection?: string | undefined;
  requireDpop?: boolean | undefined;
  requirePushedAuthorizationRequests?: boolean | undefined;
  /** `phr`, or null (or `none`) for any sign-in. */
  requireAcr?: string | null | undefined;
  /** Null stops telling it (and with it the sid requirement, unless asked for again, which is then refused). */
  backchannelLogoutUri?: string | null | undefined;
  backchannelLogoutSessionRequired?: boolean | undefined;
  /** Authenticate with these keys (private_key_jwt), checked already: its secret stops working. */
  clientKeys?: ClientKeys | undefined;
  /** Authenticate with a new client secret (or rotate the secret): answered once. */
  newSecret?: boolean | undefined;
  /** Its own token lifetimes, seconds; null: the server's again. */
  accessTokenTtl?: number | null | undefined;
  refreshTokenTtl?: number | null | undefined;
}

/** How the admin API names an application's lifetimes (the operator CLI says its flags instead). */
export const LIFETIME_NAMES = { access: 'access_token_ttl', refresh: 'refresh_token_ttl' };

/**
 * Changes an application: the whole of it checked again with the changes, by
 * the rules it was registered with (a self-registered application stays
 * held to the public-address rule whoever changes it). One `app.updated` row
 * with what changed, and `app.secret_rotated` when a new secret is made
 * (never the secret itself).
 */
export async function updateApp(
  ctx: AdminContext,
  clientId: string,
  patch: AppPatch,
  /** What the lifetimes are called in the caller's input, for messages (the admin API's fields by default). */
  names?: { access: string; refresh: string },
): Promise<{ app: Application; clientSecret: string | undefined }> {
  return ctx.store.changes(async () => {
    const app = await findApp(ctx.store, clientId);
    if ((patch.clientKeys || patch.newSecret) && app.kind !== 'confidential') {
      throw new InputError('a public application has no secret and no keys: register a confidential one');
    }
    if (patch.clientKeys && patch.newSecret) throw new InputError('give a new client secret or keys (jwks_uri, jwks), not both');
    const backchannelLogoutUri = patch.backchannelLogoutUri === undefined ? app.backchannelLogoutUri : patch.backchannelLogoutUri;
    const fields = validateApplicationFields(
      {
        name: patch.name ?? app.name,
        callbackUrls: patch.callbackUrls ?? [...app.callbackUrls],
        postLogoutRedirectUris: patch.postLogoutRedirectUris ?? [...app.postLogoutRedirectUris],
        scopes: patch.scopes ?? [...app.scopes],
        grantTypes: patch.grantTypes ?? [...app.grantTypes],
        idTokenAlg: patch.idTokenAlg ?? app.idTokenAlg,
        introspection: patch.introspection ?? app.introspection,
        requireDpop: patch.requireDpop ?? app.requireDpop,
        requirePushedAuthorizationRequests: patch.requirePushedAuthorizationRequests ?? app.requirePushedAuthorizationRequests,
        requireAcr: patch.requireAcr === undefined ? app.requireAcr : patch.requireAcr,
        backchannelLogoutUri,
        backchannelLogoutSessionRequired:
          patch.backchannelLogoutSessionRequired ?? (backchannelLogoutUri !== null && app.backchannelLogoutSessionRequired),
        selfRegistered: app.registrationTokenHash !== null,
      },
      clientId,
      (await ctx.store.resources.catalog()).byScope,
    );
    checkGrantsForKind(app.kind, fields.grantTypes);
    // Checked when one is given: another change never fails on lifetimes set before the server's changed.
    const lifetimes =
      patch.accessTokenTtl === undefined && patch.refreshTokenTtl === undefined
        ? {}
        : checkLifetimes(
            {
              accessTokenTtl: patch.accessTokenTtl === undefined ? app.accessTokenTtl : patch.accessTokenTtl,
              refreshTokenTtl: patch.refreshTokenTtl === undefined ? app.refreshTokenTtl : patch.refreshTokenTtl,
            },
            ctx.config,
            names ?? LIFETIME_NAMES,
          );
    const secret = patch.newSecret ? newClientSecret() : undefined;
    const authentication = patch.clientKeys
      ? { clientKeys: patch.clientKeys, secretHash: null }
      : secret
        ? { clientKeys: null, secretHash: secret.hash }
        : {};
    checkFapi2(ctx.config.fapi2, {
      kind: app.kind,
      clientKeys: 'clientKeys' in authentication ? (authentication.clientKeys ?? null) : app.clientKeys,
      idTokenAlg: fields.idTokenAlg,
    });
    const updated = await ctx.store.applications.update(clientId, { ...fields, ...authentication, ...lifetimes }, ctx.now);
    await recordAppUpdate(ctx, app, updated);
    if (secret) await recordApp(ctx, 'secret_rotated', updated);
    return { app: updated, clientSecret: secret?.secret };
  });
}

/** Deletes an application with its grants, codes and tokens (the foreign keys' cascades). */
export async function deleteApp(ctx: AdminContext, clientId: string): Promise<void> {
  await ctx.store.changes(async () => {
    const app = await findApp(ctx.store, clientId);
    await ctx.store.applications.delete(clientId);
    await recordApp(ctx, 'deleted', app);
  });
}

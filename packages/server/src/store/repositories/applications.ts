import { APPLICATION_CACHE_MS, APPLICATION_CACHE_SIZE } from '../../config/defaults.js';
import type { Engine } from '../engine.js';
import { isUniqueViolation, StoreError } from '../errors.js';
import { Prepared } from '../prepared.js';
import type { ApplicationRow } from '../schema.js';

/** Grant types an application may be allowed (RFC 6749 §4.1, §6; RFC 8628 §3.4). */
export const GRANT_TYPES = [
  'authorization_code',
  'refresh_token',
  'urn:ietf:params:oauth:grant-type:device_code',
  'client_credentials',
  'urn:ietf:params:oauth:grant-type:token-exchange',
] as const;
export type GrantType = (typeof GRANT_TYPES)[number];

/**
 * Whose tokens an application may introspect (RFC 7662 §2.1 leaves it to the
 * server): `own` only those issued to it; `owner` those of every application
 * of the same dashboard user (a resource server next to its apps); `all`
 * every token (set by an operator or an administrator).
 */
export const INTROSPECTION_SCOPES = ['own', 'owner', 'all'] as const;
export type IntrospectionScope = (typeof INTROSPECTION_SCOPES)[number];

/**
 * Where the public keys of a client that authenticates with `private_key_jwt` are (RFC 7523 §2.2, OIDC Core §9;
 * RFC 7591 §2 `jwks`, `jwks_uri`, `token_endpoint_auth_signing_alg`): exactly one of `jwks` and `jwksUri`.
 * Checked before they are stored (oauth/client-keys.ts).
 */
export interface ClientKeys {
  /** The JWK Set itself: public keys only. */
  jwks?: { keys: Record<string, unknown>[] };
  /** Where the JWK Set is fetched from (oauth/client-jwks.ts). */
  jwksUri?: string;
  /**
   * The jwks_uri may be http and reach any address (loopback, private networks): only an operator sets it
   * (`apps add|update --jwks-uri`); one from a dashboard user or a registering client must be https and reach a
   * public address only.
   */
  anyAddress?: boolean;
  /** The one algorithm its assertions may use (RFC 7591 §2 `token_endpoint_auth_signing_alg`); any allowed one when absent. */
  signingAlg?: string;
}

/** A registered client application (RFC 6749 §2). */
export interface Application {
  clientId: string;
  ownerId: string | null;
  name: string;
  kind: 'public' | 'confidential';
  secretHash: string | null;
  /** The keys it authenticates with (`private_key_jwt`; then it has no secret); null for every other application. */
  clientKeys: ClientKeys | null;
  callbackUrls: string[];
  scopes: string[];
  grantTypes: GrantType[];
  idTokenAlg: 'RS256' | 'ES256';
  createdAt: number;
  updatedAt: number;
  /** Where RP-initiated logout may send the browser back to, exact-matched (OpenID Connect RP-Initiated Logout 1.0 §3.1). */
  postLogoutRedirectUris: string[];
  /**
   * SHA-256 (hex) of the registration access token of a client that
   * registered itself (RFC 7591 §3.2.1, RFC 7592 §1); null for applications
   * made in the dashboard or with `apps add`.
   */
  registrationTokenHash: string | null;
  /** The metadata only a self-registered client has (oauth/client-metadata.ts `RegistrationMetadata`), as JSON; null otherwise. */
  registrationMetadata: string | null;
  /** Whose tokens it may introspect (RFC 7662 §2.1). */
  introspection: IntrospectionScope;
  /** Every token request must carry a DPoP proof (RFC 9449 §5.2 `dpop_bound_access_tokens`). */
  requireDpop: boolean;
  /** Authorization requests must be pushed first (RFC 9126 §6 `require_pushed_authorization_requests`). */
  requirePushedAuthorizationRequests: boolean;
  /** The authentication context class every sign-in for it must meet (`phr`: a passkey); null for any. */
  requireAcr: string | null;
  /** Where logouts are posted (OpenID Connect Back-Channel Logout 1.0 §2.2); null: it is not told. */
  backchannelLogoutUri: string | null;
  /** Every logout token it gets must carry `sid` (§2.2 `backchannel_logout_session_required`). */
  backchannelLogoutSessionRequired: boolean;
  /** Its own access token lifetime, seconds; null: the server's. */
  accessTokenTtl: number | null;
  /** Its own sign-in (refresh token family) lifetime, seconds; null: the server's. */
  refreshTokenTtl: number | null;
}

/** The settings a new application may leave out, with their defaults. */
type Defaulted =
  | 'clientKeys'
  | 'postLogoutRedirectUris'
  | 'registrationTokenHash'
  | 'registrationMetadata'
  | 'introspection'
  | 'requireDpop'
  | 'requirePushedAuthorizationRequests'
  | 'requireAcr'
  | 'backchannelLogoutUri'
  | 'backchannelLogoutSessionRequired'
  | 'accessTokenTtl'
  | 'refreshTokenTtl';

export type NewApplication = Omit<Application, 'updatedAt' | Defaulted> & Partial<Pick<Application, Defaulted>>;

/** What an application update may change. */
export type ApplicationPatch = Partial<
  Pick<
    Application,
    | 'name'
    | 'callbackUrls'
    | 'scopes'
    | 'grantTypes'
    | 'idTokenAlg'
    | 'secretHash'
    | 'clientKeys'
    | 'postLogoutRedirectUris'
    | 'registrationTokenHash'
    | 'registrationMetadata'
    | 'introspection'
    | 'requireDpop'
    | 'requirePushedAuthorizationRequests'
    | 'requireAcr'
    | 'backchannelLogoutUri'
    | 'backchannelLogoutSessionRequired'
    | 'accessTokenTtl'
    | 'refreshTokenTtl'
  >
>;

/**
 * A condition on a change (RFC 7592): it happens only while the application's
 * registration access token is still the one with this SHA-256, so of two
 * requests presenting the same token after it was rotated, only one acts.
 */
export interface RegistrationTokenCondition {
  registrationTokenHash: string;
}

/** Registered client applications (RFC 6749 §2). */
export interface Applications {
  /** Registers an application; `duplicate` when its client_id is taken. */
  create(app: NewApplication): Promise<Application>;
  /**
   * The application with this client_id. Every token, device and revocation
   * request looks its client up, so answers are kept for
   * {@link APPLICATION_CACHE_MS}; this instance's own changes take effect at
   * once, another instance's within that time. The answer is frozen.
   */
  get(clientId: string): Promise<Application | undefined>;
  /**
   * The application with this client_id when {@link get} would answer from its cache without reading (outside a
   * transaction, within APPLICATION_CACHE_MS); otherwise undefined, and the caller asks {@link get}. A token
   * request's client is nearly always one of these: it is found without waiting for anything.
   */
  cached(clientId: string): Application | undefined;
  /** Applications owned by `ownerId`, or all of them when `ownerId` is undefined. */
  list(ownerId?: string): Promise<Application[]>;
  /** The longest access token lifetime an application has of its own (seconds); null when none has one. */
  longestAccessTokenTtl(): Promise<number | null>;
  /** Changes an application; `not_found` when there is none (or, with `when`, when its registration token has changed). */
  update(clientId: string, patch: ApplicationPatch, now: number, when?: RegistrationTokenCondition): Promise<Application>;
  /**
   * Deletes an application (its consents, codes, device authorizations and
   * grants with their refresh tokens go with it, ON DELETE CASCADE; its access
   * tokens fail verification once their grant is gone); `not_found` when there
   * is none (or, with `when`, when its registration token has changed).
   */
  delete(clientId: string, when?: RegistrationTokenCondition): Promise<void>;
}

function freezeApplication(app: Application): Application {
  Object.freeze(app.callbackUrls);
  Object.freeze(app.postLogoutRedirectUris);
  Object.freeze(app.scopes);
  Object.freeze(app.grantTypes);
  if (app.clientKeys) deepFreeze(app.clientKeys);
  return Object.freeze(app);
}

function deepFreeze(value: object): void {
  for (const v of Object.values(value)) if (typeof v === 'object' && v !== null) deepFreeze(v);
  Object.freeze(value);
}

function toApplication(row: ApplicationRow): Application {
  return {
    clientId: row.client_id,
    ownerId: row.owner_id,
    name: row.name,
    kind: row.kind,
    secretHash: row.secret_hash,
    clientKeys: row.client_keys === null ? null : (JSON.parse(row.client_keys) as ClientKeys),
    callbackUrls: JSON.parse(row.callback_urls) as string[],
    scopes: row.scopes.split(' ').filter(Boolean),
    grantTypes: JSON.parse(row.grant_types) as GrantType[],
    idTokenAlg: row.id_token_alg,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    postLogoutRedirectUris: JSON.parse(row.post_logout_redirect_uris) as string[],
    registrationTokenHash: row.registration_token_hash,
    registrationMetadata: row.registration_metadata,
    introspection: row.introspection,
    requireDpop: row.require_dpop === 1,
    requirePushedAuthorizationRequests: row.require_par === 1,
    requireAcr: row.require_acr,
    backchannelLogoutUri: row.backchannel_logout_uri,
    backchannelLogoutSessionRequired: row.backchannel_logout_session_required === 1,
    // PostgreSQL's integer comes back a number; a null is the server's lifetime.
    accessTokenTtl: row.access_token_ttl === null ? null : Number(row.access_token_ttl),
    refreshTokenTtl: row.refresh_token_ttl === null ? null : Number(row.refresh_token_ttl),
  };
}

/** {@link Applications} on Kysely, with the per-instance lookup cache; the lookup is prepared (every token request makes it). */
export class KyselyApplications implements Applications {
  private readonly byClientId = new Prepared<'clientId', ApplicationRow>('application_by_client_id', ['clientId'], (db, p) =>
    db.selectFrom('applications').selectAll().where('client_id', '=', p.clientId),
  );

  /** Recently read applications by client_id (see get). */
  private readonly cache = new Map<string, { app: Application; at: number }>();

  constructor(
    private readonly engine: Engine,
    private readonly cacheClock: () => number = () => performance.now(),
  ) {}

  async create(app: NewApplication): Promise<Application> {
    try {
      await this.engine.db
        .insertInto('applications')
        .values({
          client_id: app.clientId,
          owner_id: app.ownerId,
          name: app.name,
          kind: app.kind,
          secret_hash: app.secretHash,
          client_keys: app.clientKeys ? JSON.stringify(app.clientKeys) : null,
          callback_urls: JSON.stringify(app.callbackUrls),
          scopes: app.scopes.join(' '),
          grant_types: JSON.stringify(app.grantTypes),
          id_token_alg: app.idTokenAlg,
          created_at: app.createdAt,
          updated_at: app.createdAt,
          post_logout_redirect_uris: JSON.stringify(app.postLogoutRedirectUris ?? []),
          registration_token_hash: app.registrationTokenHash ?? null,
          registration_metadata: app.registrationMetadata ?? null,
          introspection: app.introspection ?? 'own',
          require_dpop: app.requireDpop ? 1 : 0,
          require_par: app.requirePushedAuthorizationRequests ? 1 : 0,
          require_acr: app.requireAcr ?? null,
          backchannel_logout_uri: app.backchannelLogoutUri ?? null,
          backchannel_logout_session_required: app.backchannelLogoutSessionRequired ? 1 : 0,
          access_token_ttl: app.accessTokenTtl ?? null,
          refresh_token_ttl: app.refreshTokenTtl ?? null,
        })
        .execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw new StoreError('duplicate', `client_id ${app.clientId} already exists`);
      throw err;
    }
    return (await this.reload(app.clientId))!;
  }

  cached(clientId: string): Application | undefined {
    // Inside a change's transaction: its own view, never cached (it may roll back).
    if (this.engine.inside) return undefined;
    const hit = this.cache.get(clientId);
    return hit && this.cacheClock() - hit.at < APPLICATION_CACHE_MS ? hit.app : undefined;
  }

  async get(clientId: string): Promise<Application | undefined> {
    // Inside a change's transaction: its own view, never cached (it may roll back).
    if (this.engine.inside) {
      const [own] = (await this.engine.run(this.byClientId, { clientId })).rows;
      return own && freezeApplication(toApplication(own));
    }
    const hit = this.cached(clientId);
    if (hit) return hit;
    const now = this.cacheClock();
    const [row] = (await this.engine.run(this.byClientId, { clientId })).rows;
    if (!row) {
      this.cache.delete(clientId);
      return undefined;
    }
    const app = freezeApplication(toApplication(row));
    if (this.cache.size >= APPLICATION_CACHE_SIZE) this.cache.clear();
    this.cache.set(clientId, { app, at: now });
    return app;
  }

  /** Reads the application past the cache (after changing it). */
  private async reload(clientId: string): Promise<Application | undefined> {
    this.cache.delete(clientId);
    return this.get(clientId);
  }

  async list(ownerId?: string): Promise<Application[]> {
    let q = this.engine.db.selectFrom('applications').selectAll().orderBy('created_at').orderBy('client_id');
    if (ownerId !== undefined) q = q.where('owner_id', '=', ownerId);
    return (await q.execute()).map(toApplication);
  }

  async longestAccessTokenTtl(): Promise<number | null> {
    const row = await this.engine.db
      .selectFrom('applications')
      .select((eb) => eb.fn.max('access_token_ttl').as('longest'))
      .executeTakeFirst();
    return row?.longest === null || row?.longest === undefined ? null : Number(row.longest);
  }

  async update(clientId: string, patch: ApplicationPatch, now: number, when?: RegistrationTokenCondition): Promise<Application> {
    let q = this.engine.db
      .updateTable('applications')
      .set({
        ...(patch.name !== undefined && { name: patch.name }),
        ...(patch.callbackUrls !== undefined && { callback_urls: JSON.stringify(patch.callbackUrls) }),
        ...(patch.postLogoutRedirectUris !== undefined && { post_logout_redirect_uris: JSON.stringify(patch.postLogoutRedirectUris) }),
        ...(patch.scopes !== undefined && { scopes: patch.scopes.join(' ') }),
        ...(patch.grantTypes !== undefined && { grant_types: JSON.stringify(patch.grantTypes) }),
        ...(patch.idTokenAlg !== undefined && { id_token_alg: patch.idTokenAlg }),
        ...(patch.secretHash !== undefined && { secret_hash: patch.secretHash }),
        ...(patch.clientKeys !== undefined && { client_keys: patch.clientKeys ? JSON.stringify(patch.clientKeys) : null }),
        ...(patch.registrationTokenHash !== undefined && { registration_token_hash: patch.registrationTokenHash }),
        ...(patch.registrationMetadata !== undefined && { registration_metadata: patch.registrationMetadata }),
        ...(patch.introspection !== undefined && { introspection: patch.introspection }),
        ...(patch.requireDpop !== undefined && { require_dpop: patch.requireDpop ? 1 : 0 }),
        ...(patch.requirePushedAuthorizationRequests !== undefined && { require_par: patch.requirePushedAuthorizationRequests ? 1 : 0 }),
        ...(patch.requireAcr !== undefined && { require_acr: patch.requireAcr }),
        ...(patch.backchannelLogoutUri !== undefined && { backchannel_logout_uri: patch.backchannelLogoutUri }),
        ...(patch.backchannelLogoutSessionRequired !== undefined && {
          backchannel_logout_session_required: patch.backchannelLogoutSessionRequired ? 1 : 0,
        }),
        ...(patch.accessTokenTtl !== undefined && { access_token_ttl: patch.accessTokenTtl }),
        ...(patch.refreshTokenTtl !== undefined && { refresh_token_ttl: patch.refreshTokenTtl }),
        updated_at: now,
      })
      .where('client_id', '=', clientId);
    if (when) q = q.where('registration_token_hash', '=', when.registrationTokenHash);
    const r = await q.executeTakeFirst();
    this.forget(clientId);
    if (Number(r.numUpdatedRows) === 0) throw new StoreError('not_found', `no application ${clientId}`);
    return (await this.reload(clientId))!;
  }

  async delete(clientId: string, when?: RegistrationTokenCondition): Promise<void> {
    let q = this.engine.db.deleteFrom('applications').where('client_id', '=', clientId);
    if (when) q = q.where('registration_token_hash', '=', when.registrationTokenHash);
    const r = await q.executeTakeFirst();
    this.forget(clientId);
    if (Number(r.numDeletedRows) === 0) throw new StoreError('not_found', `no application ${clientId}`);
  }

  /** Drops a changed application from the cache, now and once the change commits (a read in between kept the old one). */
  private forget(clientId: string): void {
    this.cache.delete(clientId);
    this.engine.afterCommit?.(() => this.cache.delete(clientId));
  }
}

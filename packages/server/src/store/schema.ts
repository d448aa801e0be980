import type { ColumnType, Insertable, Selectable, Updateable } from 'kysely';
import type { ConnectorStatesTable, ConnectorsTable, FederatedIdentitiesTable } from './repositories/connector-tables.js';
import type { LogoutOutboxTable } from './repositories/logout-outbox.js';
import type { ResourceScopesTable, ResourcesTable } from './repositories/resources.js';
import type { SubjectTokensTable, WorkloadsTable } from './repositories/workloads.js';
import type { AuditEventsTable, AuditHeadTable } from './repositories/audit-tables.js';

export type { ConnectorStatesTable, ConnectorsTable, FederatedIdentitiesTable } from './repositories/connector-tables.js';

/**
 * Table types shared by both dialects. Times are epoch milliseconds
 * (`bigint` columns, parsed to numbers on PostgreSQL); flags are 0/1 integers;
 * lists are JSON text, so SQLite and PostgreSQL hold the same values.
 */
export interface UsersTable {
  id: string;
  username: string;
  password_hash: string;
  /**
   * JSON object of the user's OpenID Connect standard claims (OIDC Core §5.1),
   * only those that are set; `{}` when none is. See repositories/users.ts.
   */
  claims: ColumnType<string, string | undefined, string>;
  /** When the claims last changed (epoch ms); null while none was ever set. `updated_at` is this in seconds. */
  claims_updated_at: number | null;
  is_admin: number;
  disabled_at: number | null;
  created_at: number;
}

export interface ApplicationsTable {
  client_id: string;
  owner_id: string | null;
  name: string;
  kind: 'public' | 'confidential';
  /** SHA-256 (hex) of the client secret; null for public clients. */
  secret_hash: string | null;
  /**
   * JSON of the keys a `private_key_jwt` client signs its assertions with (RFC 7523 §2.2; repositories/applications.ts
   * `ClientKeys`); null for every other application.
   */
  client_keys: ColumnType<string | null, string | null | undefined, string | null>;
  /** JSON array of registered redirect URIs. */
  callback_urls: string;
  /** Space-separated allowed scopes. */
  scopes: string;
  /** JSON array of allowed grant types. */
  grant_types: string;
  id_token_alg: 'RS256' | 'ES256';
  created_at: number;
  updated_at: number;
  /** JSON array of registered post-logout redirect URIs (OpenID Connect RP-Initiated Logout 1.0 §3.1). */
  post_logout_redirect_uris: string;
  /**
   * SHA-256 (hex) of the registration access token (RFC 7592 §1) of a client
   * that registered itself (RFC 7591); null for applications made in the
   * dashboard or with `apps add`, which RFC 7592 cannot manage.
   */
  registration_token_hash: string | null;
  /** JSON of the client metadata only a self-registered client has (RFC 7591 §2: auth method, URIs, contacts...); null otherwise. */
  registration_metadata: string | null;
  /** Whose tokens the application may introspect (RFC 7662 §2.1): 'own', 'owner' (its owner's applications) or 'all'. */
  introspection: ColumnType<'own' | 'owner' | 'all', 'own' | 'owner' | 'all' | undefined, 'own' | 'owner' | 'all'>;
  /** 1 when every token request must carry a DPoP proof (RFC 9449 §5.2 `dpop_bound_access_tokens`). */
  require_dpop: ColumnType<number, number | undefined, number>;
  /** 1 when authorization requests must be pushed first (RFC 9126 §6 `require_pushed_authorization_requests`). */
  require_par: ColumnType<number, number | undefined, number>;
  /** The class (`acr`) every sign-in for it must meet, e.g. `phr`; null for any. */
  require_acr: ColumnType<string | null, string | null | undefined, string | null>;
  /** Where logouts are posted (OpenID Connect Back-Channel Logout 1.0 §2.2); null: not told. */
  backchannel_logout_uri: ColumnType<string | null, string | null | undefined, string | null>;
  /** 1 when every logout token it gets must carry `sid` (§2.2 `backchannel_logout_session_required`). */
  backchannel_logout_session_required: ColumnType<number, number | undefined, number>;
  /** Its own access token lifetime, seconds; null: the server's (AUTHCLI_ACCESS_TOKEN_TTL). */
  access_token_ttl: ColumnType<number | null, number | null | undefined, number | null>;
  /** Its own sign-in (refresh token family) lifetime, seconds; null: the server's (AUTHCLI_REFRESH_TOKEN_TTL). */
  refresh_token_ttl: ColumnType<number | null, number | null | undefined, number | null>;
}

/** Initial access tokens (RFC 7591 §3) the operator created for `AUTHCLI_REGISTRATION=token`; each registers one client. */
export interface InitialAccessTokensTable {
  /** A short id the operator names the token by (list, revoke); not a secret. */
  id: string;
  /** SHA-256 (hex) of the token; the token itself is shown once, at creation. */
  token_hash: string;
  created_at: number;
  expires_at: number;
  /** When a registration used it up (single use). */
  used_at: number | null;
  revoked_at: number | null;
  /** The client registered with it. */
  client_id: string | null;
}

export interface SessionsTable {
  /** SHA-256 (hex) of the cookie value; the raw value never reaches the store. */
  id_hash: string;
  user_id: string;
  auth_time: number;
  created_at: number;
  expires_at: number;
  /** How the person signed in (RFC 8176 `amr`, space-separated); null: a password, before passkeys. */
  amr: ColumnType<string | null, string | null | undefined, string | null>;
  /** The class of a federated sign-in (its connector's, or `phr` the upstream asserted); null: derived from `amr`. */
  acr: ColumnType<string | null, string | null | undefined, string | null>;
  /**
   * The session ID (OpenID Connect Back-Channel Logout 1.0 §2.1): random, not a secret, kept when the same user
   * signs in again in this browser; null for sessions made before it was kept (repositories/sessions.ts `sidOf`).
   */
  sid: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface ConsentsTable {
  user_id: string;
  client_id: string;
  /** Sorted, space-separated scope set the user approved. */
  scope: string;
  created_at: number;
}

/** Pushed authorization requests (RFC 9126), until they expire. */
export interface PushedRequestsTable {
  /** SHA-256 (hex) of the random part of the request_uri. */
  request_uri_hash: string;
  client_id: string;
  /** The authorization request's query, as the server serialized it after validating it (oauth/authorization-query.ts requestQuery). */
  query: string;
  created_at: number;
  /** Until a browser opens it: the `expires_in` given to the client; once opened, the time a sign-in may take. */
  expires_at: number;
  opened_at: number | null;
  /** When an authorization response (a code, or the user's denial) used it up. */
  used_at: number | null;
}

export interface AuthorizationCodesTable {
  /** SHA-256 (hex) of the code. */
  code_hash: string;
  client_id: string;
  user_id: string;
  redirect_uri: string;
  code_challenge: string | null;
  code_challenge_method: string | null;
  scope: string;
  nonce: string | null;
  /** The OIDC Core §5.5 `claims` request, reduced to what may be released (JSON), or null. */
  claims: string | null;
  auth_time: number;
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
  /** The grant the code was exchanged into; revoked when the code is replayed. */
  grant_id: string | null;
  /** RFC 9449 §10: the JWK SHA-256 thumbprint of the `dpop_jkt` parameter; the token request's proof must be by that key. */
  dpop_jkt: string | null;
  /** How the person signed in (RFC 8176 `amr`, space-separated); null: a password, before passkeys. */
  amr: ColumnType<string | null, string | null | undefined, string | null>;
  /** The class of a federated sign-in (its connector's, or `phr` the upstream asserted); null: derived from `amr`. */
  acr: ColumnType<string | null, string | null | undefined, string | null>;
  /** The browser session it was issued in (its `sid`); null before sessions had one. */
  sid: ColumnType<string | null, string | null | undefined, string | null>;
  /** The resource identifiers (RFC 8707) the grant covers, space-separated; null: OpenID Connect scopes alone. */
  resource: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface GrantsTable {
  id: string;
  client_id: string;
  user_id: string;
  scope: string;
  /** The OIDC Core §5.5 `claims` request of the sign-in (JSON), or null. */
  claims: string | null;
  auth_time: number;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
  /** RFC 9449 §5: the JWK thumbprint a public client's refresh tokens are bound to; null when not bound. */
  dpop_jkt: string | null;
  /** How the person signed in (RFC 8176 `amr`, space-separated); null: a password, before passkeys. */
  amr: ColumnType<string | null, string | null | undefined, string | null>;
  /** The class of a federated sign-in (its connector's, or `phr` the upstream asserted); null: derived from `amr`. */
  acr: ColumnType<string | null, string | null | undefined, string | null>;
  /** The browser session whose code made it (its `sid`); null for a device's grant and grants made before. */
  sid: ColumnType<string | null, string | null | undefined, string | null>;
  /** The resource identifiers (RFC 8707) the grant covers, space-separated; null: OpenID Connect scopes alone. */
  resource: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface SigningKeysTable {
  kid: string;
  alg: 'RS256' | 'ES256';
  private_jwk: string;
  public_jwk: string;
  created_at: number;
  retired_at: number | null;
}

export interface SettingsTable {
  key: string;
  value: string;
}

export type DeviceStatus = 'pending' | 'approved' | 'denied' | 'consumed';

export interface DeviceAuthorizationsTable {
  /** SHA-256 (hex) of the device_code. */
  device_code_hash: string;
  /** The 8 user-code characters, normalized: upper case, no dash. */
  user_code: string;
  client_id: string;
  scope: string;
  status: DeviceStatus;
  user_id: string | null;
  auth_time: number | null;
  /** How the approver signed in (RFC 8176 `amr`, space-separated); null: a password, or not approved. */
  amr: ColumnType<string | null, string | null | undefined, string | null>;
  /** The class of a federated sign-in (its connector's, or `phr` the upstream asserted); null: derived from `amr`. */
  acr: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: number;
  expires_at: number;
  /** Current polling interval in seconds (RFC 8628 §3.5: grows by 5 on slow_down). */
  interval_s: number;
  last_poll_at: number | null;
  /** Whether the latest poll was answered slow_down (set by the same statement that records the poll). */
  last_poll_slowed: number;
  grant_id: string | null;
  /**
   * The client address of the device authorization request (http/client-ip.ts `clientAddress`: an IPv4
   * address or an IPv6 /56), shown on the confirmation page; null for rows made before it was kept.
   */
  client_ip: string | null;
  /** The resource identifiers (RFC 8707) the grant covers, space-separated; null: OpenID Connect scopes alone. */
  resource: ColumnType<string | null, string | null | undefined, string | null>;
}

/** What a sign-in record records: a password sign-in, or a device sign-in the user approved or denied. */
export type SignInKind = 'password' | 'passkey' | 'federated' | 'device-approved' | 'device-denied' | CredentialEventKind;
/** A way into the account added or removed on the account page (`detail`: the passkey's name, the connector's id). */
export type CredentialEventKind = 'passkey-added' | 'passkey-removed' | 'connector-linked' | 'connector-unlinked';

/**
 * A user's sign-ins and device decisions (the account page's "Recent sign-ins"), only what the user needs to
 * recognise them: when, how, from which address, and for a device, the device's address and the application.
 * Stored as audit rows since migration 0024 (repositories/signin-events.ts); the account page shows those of
 * SIGNIN_EVENTS_KEPT_MS, at most SIGNIN_EVENTS_PER_USER.
 */
export interface SignInEventsTable {
  id: string;
  user_id: string;
  at: number;
  kind: SignInKind;
  /** The browser's address (the person who signed in, approved or denied), as `clientAddress` gives it. */
  client_ip: string;
  /** For a device decision: the address the device asked for its code from (null when not known). */
  device_ip: string | null;
  /** For a device decision: the application the device signs in to. */
  client_id: string | null;
  /** For a credential event: the passkey's name, or the connector's id. */
  detail: string | null;
}

export interface RefreshTokensTable {
  /** SHA-256 (hex) of the refresh token. */
  token_hash: string;
  /** The grant is the token family: revoking it ends every token in it. */
  grant_id: string;
  created_at: number;
  expires_at: number;
  /** Set when the token is rotated; a second use of it is a reuse (RFC 9700 §4.14.2). */
  used_at: number | null;
}

export interface RevokedAccessTokensTable {
  jti: string;
  expires_at: number;
}

/** RFC 9449 §11.1: DPoP proofs accepted, by SHA-256 of key thumbprint and `jti`, while their `iat` is in the window. */
export interface DpopProofsTable {
  jti_hash: string;
  expires_at: number;
}

/** RFC 7523 §3 (7): client assertions accepted, by SHA-256 of client_id and `jti`, until they expire. */
export interface ClientAssertionsTable {
  jti_hash: string;
  expires_at: number;
}

export interface RateLimitsTable {
  key: string;
  window_start: number;
  count: number;
}

/**
 * Sign-in continuations: what a sign-in resumes (an authorization request, the
 * device page, a dashboard page), kept on the server so that the sign-in form
 * carries only a random id and no URL (see web/continuation.ts).
 */
export interface ContinuationsTable {
  /** SHA-256 (hex) of the random id in the sign-in URL and form. */
  id_hash: string;
  /** SHA-256 (hex) of the browser-binding cookie: only the browser that started the sign-in may resume it. */
  browser_hash: string;
  /** JSON of a Continuation the server built from validated input; never a URL. */
  target: string;
  created_at: number;
  expires_at: number;
}

/** A passkey (WebAuthn public key credential) a user registered. */
export interface PasskeysTable {
  /** The credential id (base64url). */
  id: string;
  user_id: string;
  /** The credential's COSE public key (base64url). */
  public_key: string;
  /** The signature counter last seen (0 for authenticators that keep none, as synced passkeys do). */
  counter: number;
  /** JSON array of the transports the authenticator named (usb, nfc, ble, internal, hybrid). */
  transports: string;
  /** 'singleDevice' or 'multiDevice' (a synced passkey), from the backup eligibility flag. */
  device_type: string;
  /** 1 when the credential is backed up (the BS flag), as last seen. */
  backed_up: number;
  /** The authenticator model's AAGUID (all zeros when it does not say). */
  aaguid: string;
  /** The person's label for it ("Laptop", "Phone"). */
  name: string;
  created_at: number;
  last_used_at: number | null;
  /** The address it was added from (clientAddress); null for passkeys added before it was recorded. */
  added_from: string | null;
}

/** A WebAuthn ceremony's challenge, used once. */
export interface WebauthnChallengesTable {
  challenge_hash: string;
  purpose: 'register' | 'authenticate';
  user_id: string | null;
  browser_hash: string;
  expires_at: number;
}

export interface Database {
  audit_events: AuditEventsTable;
  audit_head: AuditHeadTable;
  resources: ResourcesTable;
  workloads: WorkloadsTable;
  subject_tokens: SubjectTokensTable;
  resource_scopes: ResourceScopesTable;
  connectors: ConnectorsTable;
  federated_identities: FederatedIdentitiesTable;
  connector_states: ConnectorStatesTable;
  passkeys: PasskeysTable;
  webauthn_challenges: WebauthnChallengesTable;
  continuations: ContinuationsTable;
  initial_access_tokens: InitialAccessTokensTable;
  pushed_requests: PushedRequestsTable;
  device_authorizations: DeviceAuthorizationsTable;
  logout_outbox: LogoutOutboxTable;
  refresh_tokens: RefreshTokensTable;
  revoked_access_tokens: RevokedAccessTokensTable;
  rate_limits: RateLimitsTable;
  dpop_proofs: DpopProofsTable;
  client_assertions: ClientAssertionsTable;
  users: UsersTable;
  applications: ApplicationsTable;
  sessions: SessionsTable;
  consents: ConsentsTable;
  authorization_codes: AuthorizationCodesTable;
  grants: GrantsTable;
  signing_keys: SigningKeysTable;
  settings: SettingsTable;
}

export type User = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type ApplicationRow = Selectable<ApplicationsTable>;
export type ApplicationUpdate = Updateable<ApplicationsTable>;
export type Session = Selectable<SessionsTable>;
export type NewSession = Insertable<SessionsTable>;
export type Passkey = Selectable<PasskeysTable>;
export type AuthorizationCode = Selectable<AuthorizationCodesTable>;
export type Grant = Selectable<GrantsTable>;
export type SigningKeyRow = Selectable<SigningKeysTable>;
export type DeviceAuthorization = Selectable<DeviceAuthorizationsTable>;
export type SignInEvent = SignInEventsTable;
export type RefreshToken = Selectable<RefreshTokensTable>;

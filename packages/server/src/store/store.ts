import { sql } from 'kysely';
import type { Dialect, Engine } from './engine.js';
import { AmbientEngine } from './ambient.js';
import { KyselyAudit } from './repositories/audit.js';
import { AUDIT_RETENTION_MS } from '../config/audit-defaults.js';
import { purgeExpired } from './housekeeping.js';
import { latestMigration, migrationApplied } from './migrate.js';
import { type Applications, KyselyApplications } from './repositories/applications.js';
import { type Codes, KyselyCodes } from './repositories/codes.js';
import { KyselyPushedRequests, type PushedRequests } from './repositories/pushed-requests.js';
import { type Consents, KyselyConsents } from './repositories/consents.js';
import { type Continuations, KyselyContinuations } from './repositories/continuations.js';
import { type DeviceGrants, KyselyDeviceGrants } from './repositories/device-grants.js';
import { type DpopProofs, KyselyDpopProofs } from './repositories/dpop-proofs.js';
import { type ClientAssertions, KyselyClientAssertions } from './repositories/client-assertions.js';
import { grantStatements, type Grants, KyselyGrants } from './repositories/grants.js';
import { type InitialAccessTokens, KyselyInitialAccessTokens } from './repositories/initial-access-tokens.js';
import { KyselySigningKeys, type SigningKeys } from './repositories/keys.js';
import { KyselyPasskeys, type Passkeys } from './repositories/passkeys.js';
import { type Connectors, KyselyConnectors } from './repositories/connectors.js';
import { KyselyRateLimits, type RateLimits } from './repositories/rate-limits.js';
import { KyselySessions, type Sessions } from './repositories/sessions.js';
import { KyselySettings, type Settings } from './repositories/settings.js';
import { AuditSignInEvents, type SignInEvents } from './repositories/signin-events.js';
import { KyselyLogoutOutbox, type LogoutOutbox } from './repositories/logout-outbox.js';
import { KyselyUsers, type Users } from './repositories/users.js';
import { KyselyResources, type Resources } from './repositories/resources.js';
import { KyselyWorkloads, type Workloads } from './repositories/workloads.js';

export type { Dialect } from './engine.js';
export { StoreError, type StoreErrorCode } from './errors.js';
export {
  GRANT_TYPES,
  INTROSPECTION_SCOPES,
  type Application,
  type ApplicationPatch,
  type ClientKeys,
  type GrantType,
  type IntrospectionScope,
  type NewApplication,
} from './repositories/applications.js';
export type { AuthorizationCode } from './repositories/codes.js';
export type { Resource, ResourceCatalog, ResourceScope } from './repositories/resources.js';
export type { Workload } from './repositories/workloads.js';
export {
  ANONYMOUS,
  OPERATOR,
  SYSTEM,
  type Actor,
  type AuditEvent,
  type AuditFilter,
  type AuditVerdict,
  type NewAuditEvent,
} from './repositories/audit.js';
export type { PushedRequest } from './repositories/pushed-requests.js';
export type { DeviceAuthorization, DeviceDecision, DevicePoll, DevicePollSummary } from './repositories/device-grants.js';
export type { Grant, GrantHolder, RefreshToken } from './repositories/grants.js';
export type { InitialAccessToken } from './repositories/initial-access-tokens.js';
export type { SigningKeyRow } from './repositories/keys.js';
export type { Passkey, WebauthnChallenge } from './repositories/passkeys.js';
export type { AttemptEnd, LogoutRow, LogoutState, NewLogout } from './repositories/logout-outbox.js';
export type { ConnectorRow, ConnectorState } from './repositories/connectors.js';
export type { RateLimitRow } from './repositories/rate-limits.js';
export { sidOf, type Session } from './repositories/sessions.js';
export type { NewSignInEvent, SignInEvent, SignInKind } from './repositories/signin-events.js';
export { claimsOf, serializeClaims, type AddressClaim, type NewUser, type User, type UserClaims } from './repositories/users.js';

/**
 * All persistent state of the authorization server: one repository per
 * aggregate, all on one {@link Engine} (SQLite or PostgreSQL), with every
 * query written once in Kysely. Every single-use transition (code
 * consumption, key retirement) is a single conditional statement so it stays
 * atomic across server instances. Open one with `openStore` (open.ts).
 */
export class Store {
  readonly applications: Applications;
  /** The team's APIs (RFC 8707 resources) and their scopes. */
  readonly resources: Resources;
  /** CI workloads' trust policies (RFC 8693 token exchange), and the CI tokens exchanged. */
  readonly workloads: Workloads;
  readonly users: Users;
  readonly consents: Consents;
  readonly sessions: Sessions;
  readonly codes: Codes;
  readonly deviceGrants: DeviceGrants;
  readonly grants: Grants;
  readonly keys: SigningKeys;
  readonly rateLimits: RateLimits;
  readonly settings: Settings;
  readonly continuations: Continuations;
  readonly initialAccessTokens: InitialAccessTokens;
  readonly pushedRequests: PushedRequests;
  readonly dpopProofs: DpopProofs;
  /** The `jti`s of the client assertions accepted (private_key_jwt), until they expire. */
  readonly clientAssertions: ClientAssertions;
  readonly passkeys: Passkeys;
  readonly connectors: Connectors;
  /** A user's sign-ins and device decisions (the account page's "Recent sign-ins"). */
  readonly signInEvents: SignInEvents;
  /** Back-channel logout tokens to deliver, until delivered or given up (oauth/backchannel-delivery.ts). */
  readonly logoutOutbox: LogoutOutbox;
  /** The audit trail: changes and security events, hash-chained (repositories/audit.ts). */
  readonly audit: KyselyAudit;
  /** Which database this store is on (messages and operator advice). */
  readonly dialect: Dialect;
  private readonly engine: AmbientEngine;

  /** The newest migration this version knows (see schemaIsCurrent). */
  private latestMigration: string | undefined;

  /** `cacheClock`: the monotonic clock of the lookup caches (see OpenOptions). */
  constructor(below: Engine, cacheClock: () => number = () => performance.now()) {
    const engine = new AmbientEngine(below);
    this.engine = engine;
    this.dialect = engine.dialect;
    const statements = grantStatements();
    this.applications = new KyselyApplications(engine, cacheClock);
    this.resources = new KyselyResources(engine, cacheClock);
    this.workloads = new KyselyWorkloads(engine, cacheClock);
    this.users = new KyselyUsers(engine);
    this.consents = new KyselyConsents(engine);
    this.sessions = new KyselySessions(engine);
    this.codes = new KyselyCodes(engine, statements);
    const audit = new KyselyAudit(engine);
    this.audit = audit;
    this.deviceGrants = new KyselyDeviceGrants(engine, statements, audit);
    this.grants = new KyselyGrants(engine, statements);
    this.keys = new KyselySigningKeys(engine);
    this.rateLimits = new KyselyRateLimits(engine);
    this.settings = new KyselySettings(engine);
    this.continuations = new KyselyContinuations(engine);
    this.initialAccessTokens = new KyselyInitialAccessTokens(engine);
    this.pushedRequests = new KyselyPushedRequests(engine);
    this.dpopProofs = new KyselyDpopProofs(engine);
    this.clientAssertions = new KyselyClientAssertions(engine);
    this.passkeys = new KyselyPasskeys(engine);
    this.connectors = new KyselyConnectors(engine);
    this.signInEvents = new AuditSignInEvents(audit, async (id) => (await this.users.findById(id))?.username ?? null);
    this.logoutOutbox = new KyselyLogoutOutbox(engine);
  }

  /**
   * Runs `work` as one transaction: every store call it makes (any
   * repository) and the audit rows it appends commit together, or not at
   * all. What it ships to the audit log goes out after the commit.
   */
  changes<T>(work: () => Promise<T>): Promise<T> {
    return this.engine.within(work);
  }

  /** Brings the schema up to date; safe to run concurrently from several instances on PostgreSQL. */
  migrate(): Promise<void> {
    return this.engine.migrate();
  }

  /** Stops the engine's background work and closes its connections. */
  close(): Promise<void> {
    return this.engine.close();
  }

  /** One round trip to the database. */
  async ping(): Promise<void> {
    await sql`select 1`.execute(this.engine.db);
  }

  /**
   * Readiness: whether the newest migration this version knows is recorded
   * as applied, in one round trip. False when it is not (a store never
   * migrated, or one an older version migrated and this one has not yet);
   * throws when the migration table is missing or the database fails. A
   * newer version's migrations beyond it do not matter here.
   */
  async schemaIsCurrent(): Promise<boolean> {
    this.latestMigration ??= await latestMigration();
    return migrationApplied(this.engine.db, this.latestMigration);
  }

  /** Deletes what has expired (see housekeeping.ts for what is kept, and why), and audit rows past their retention. */
  async purgeExpired(now: number, auditRetentionMs = AUDIT_RETENTION_MS): Promise<void> {
    await purgeExpired(this.engine.db, now);
    await this.audit.prune(now - auditRetentionMs, now);
  }

  /**
   * Embedded store: copies the write-ahead log into the database file and
   * empties it, so that the file alone holds every commit (before measuring
   * or copying the file). Nothing on PostgreSQL.
   */
  checkpoint(): Promise<void> {
    return this.engine.checkpoint();
  }
}

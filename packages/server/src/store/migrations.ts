import { sql, type Migration, type MigrationProvider } from 'kysely';

/**
 * Schema migrations, in order. Column types are the portable subset of
 * SQLite and PostgreSQL: text, bigint (epoch ms), integer (flags). From 0013
 * on, each is a file of its own in migrations/, named as its key.
 */
import { deviceOrigin } from './migrations/0013_device_origin.js';
import { passkeys } from './migrations/0014_passkeys.js';
import { requiredAcr } from './migrations/0015_required_acr.js';
import { connectors } from './migrations/0016_connectors.js';
import { backchannelLogout } from './migrations/0017_backchannel_logout.js';
import { privateKeyJwt } from './migrations/0018_private_key_jwt.js';
import { credentialHistory } from './migrations/0019_credential_history.js';
import { logoutOutbox } from './migrations/0020_logout_outbox.js';
import { resources } from './migrations/0021_resources.js';
import { workloads } from './migrations/0022_workloads.js';
import { audit } from './migrations/0023_audit.js';
import { signInsAudited } from './migrations/0024_signins_audited.js';
import { applicationLifetimes } from './migrations/0025_application_lifetimes.js';
import type { Past } from './migrations/past.js';

const migrations: Record<string, Migration> = {
  '0001_foundation': {
    async up(db: Past) {
      await db.schema
        .createTable('users')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('username', 'text', (c) => c.notNull().unique())
        .addColumn('password_hash', 'text', (c) => c.notNull())
        .addColumn('name', 'text')
        .addColumn('email', 'text')
        .addColumn('is_admin', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('disabled_at', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('applications')
        .addColumn('client_id', 'text', (c) => c.primaryKey())
        .addColumn('owner_id', 'text', (c) => c.references('users.id').onDelete('set null'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('secret_hash', 'text')
        .addColumn('callback_urls', 'text', (c) => c.notNull())
        .addColumn('scopes', 'text', (c) => c.notNull())
        .addColumn('grant_types', 'text', (c) => c.notNull())
        .addColumn('id_token_alg', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('applications_owner').on('applications').column('owner_id').execute();

      await db.schema
        .createTable('sessions')
        .addColumn('id_hash', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('auth_time', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('sessions_expires').on('sessions').column('expires_at').execute();

      await db.schema
        .createTable('consents')
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('client_id', 'text', (c) => c.notNull().references('applications.client_id').onDelete('cascade'))
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('consents_pk', ['user_id', 'client_id', 'scope'])
        .execute();

      await db.schema
        .createTable('grants')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('client_id', 'text', (c) => c.notNull().references('applications.client_id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('auth_time', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('revoked_at', 'bigint')
        .execute();
      await db.schema.createIndex('grants_expires').on('grants').column('expires_at').execute();

      await db.schema
        .createTable('authorization_codes')
        .addColumn('code_hash', 'text', (c) => c.primaryKey())
        .addColumn('client_id', 'text', (c) => c.notNull().references('applications.client_id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('redirect_uri', 'text', (c) => c.notNull())
        .addColumn('code_challenge', 'text')
        .addColumn('code_challenge_method', 'text')
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('nonce', 'text')
        .addColumn('auth_time', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('consumed_at', 'bigint')
        .addColumn('grant_id', 'text')
        .execute();
      await db.schema.createIndex('authorization_codes_expires').on('authorization_codes').column('expires_at').execute();

      await db.schema
        .createTable('signing_keys')
        .addColumn('kid', 'text', (c) => c.primaryKey())
        .addColumn('alg', 'text', (c) => c.notNull())
        .addColumn('private_jwk', 'text', (c) => c.notNull())
        .addColumn('public_jwk', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('retired_at', 'bigint')
        .execute();

      await db.schema
        .createTable('settings')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute();
    },
  },
  '0002_device_refresh_revocation': {
    async up(db: Past) {
      await db.schema
        .createTable('device_authorizations')
        .addColumn('device_code_hash', 'text', (c) => c.primaryKey())
        .addColumn('user_code', 'text', (c) => c.notNull().unique())
        .addColumn('client_id', 'text', (c) => c.notNull().references('applications.client_id').onDelete('cascade'))
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('user_id', 'text', (c) => c.references('users.id').onDelete('cascade'))
        .addColumn('auth_time', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('interval_s', 'integer', (c) => c.notNull())
        .addColumn('last_poll_at', 'bigint')
        .addColumn('last_poll_slowed', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('grant_id', 'text')
        .execute();
      await db.schema.createIndex('device_authorizations_expires').on('device_authorizations').column('expires_at').execute();

      await db.schema
        .createTable('refresh_tokens')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('grant_id', 'text', (c) => c.notNull().references('grants.id').onDelete('cascade'))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('used_at', 'bigint')
        .execute();
      await db.schema.createIndex('refresh_tokens_grant').on('refresh_tokens').column('grant_id').execute();

      await db.schema
        .createTable('revoked_access_tokens')
        .addColumn('jti', 'text', (c) => c.primaryKey())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('rate_limits')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('window_start', 'bigint', (c) => c.notNull())
        .addColumn('count', 'integer', (c) => c.notNull())
        .execute();
    },
  },
  '0003_continuations': {
    async up(db: Past) {
      await db.schema
        .createTable('continuations')
        .addColumn('id_hash', 'text', (c) => c.primaryKey())
        .addColumn('browser_hash', 'text', (c) => c.notNull())
        .addColumn('target', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('continuations_expires').on('continuations').column('expires_at').execute();
    },
  },
  '0004_username_case_insensitive': {
    async up(db: Past) {
      // Usernames are matched without regard to case (sign-in, `users disable`), so two that differ only in
      // case would make one of them unreachable. Existing ones are reported for the operator to rename or
      // remove: merging accounts (their sessions, grants, applications) is not a decision a migration can make.
      const clashes = await db
        .selectFrom('users')
        .select([sql<string>`lower(username)`.as('folded')])
        .groupBy(sql`lower(username)`)
        .having(sql`count(*)`, '>', 1)
        .execute();
      if (clashes.length > 0) {
        const names = await db
          .selectFrom('users')
          .select('username')
          .where(
            sql`lower(username)`,
            'in',
            clashes.map((c) => c.folded),
          )
          .orderBy(sql`lower(username)`)
          .orderBy('username')
          .execute();
        throw new Error(
          `usernames that differ only in case must be made unique first (rename or remove all but one of each): ${names.map((n) => n.username).join(', ')}`,
        );
      }
      await db.schema.createIndex('users_username_lower').on('users').unique().expression(sql`lower(username)`).execute();
    },
  },
  '0005_post_logout_redirect_uris': {
    async up(db: Past) {
      // Existing applications have none registered: RP-initiated logout then never redirects for them.
      await db.schema
        .alterTable('applications')
        .addColumn('post_logout_redirect_uris', 'text', (c) => c.notNull().defaultTo('[]'))
        .execute();
    },
  },
  '0006_dynamic_client_registration': {
    async up(db: Past) {
      // RFC 7591 / RFC 7592: existing applications were not registered by themselves and get no registration
      // access token (null), so the client configuration endpoint never manages them.
      await db.schema.alterTable('applications').addColumn('registration_token_hash', 'text').execute();
      await db.schema.alterTable('applications').addColumn('registration_metadata', 'text').execute();
      await db.schema
        .createTable('initial_access_tokens')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('used_at', 'bigint')
        .addColumn('revoked_at', 'bigint')
        .addColumn('client_id', 'text')
        .execute();
      await db.schema.createIndex('initial_access_tokens_expires').on('initial_access_tokens').column('expires_at').execute();
    },
  },
  '0007_claims_request': {
    async up(db: Past) {
      // OIDC Core §5.5: the claims a client named in the `claims` parameter (JSON, or null when none) go with
      // the code into its grant, so the ID tokens of later refreshes and every userinfo answer keep them.
      await db.schema.alterTable('authorization_codes').addColumn('claims', 'text').execute();
      await db.schema.alterTable('grants').addColumn('claims', 'text').execute();
    },
  },
  '0008_user_claims': {
    async up(db: Past) {
      // The standard claims (OIDC Core §5.1) as one JSON object per user: the name and email columns move into
      // it, so there is one place a claim is read from. Until now name and email could only be given when the
      // user was added, so created_at is when they were last updated; no email was ever verified by anyone.
      // SQLite's migrations run outside a transaction (Kysely), PostgreSQL's inside one: all or nothing on both.
      const work = async (trx: Past) => {
        await trx.schema
          .alterTable('users')
          .addColumn('claims', 'text', (c) => c.notNull().defaultTo('{}'))
          .execute();
        await trx.schema.alterTable('users').addColumn('claims_updated_at', 'bigint').execute();
        const rows: { id: string; name: string | null; email: string | null; created_at: number | string }[] = await trx
          .selectFrom('users')
          .select(['id', 'name', 'email', 'created_at'])
          .where((eb) => eb.or([eb('name', 'is not', null), eb('email', 'is not', null)]))
          .execute();
        for (const r of rows) {
          const claims: Record<string, unknown> = {};
          if (r.email?.trim()) Object.assign(claims, { email: r.email, email_verified: false });
          if (r.name?.trim()) claims.name = r.name;
          if (Object.keys(claims).length === 0) continue;
          await trx
            .updateTable('users')
            .set({ claims: JSON.stringify(claims, Object.keys(claims).sort()), claims_updated_at: Number(r.created_at) })
            .where('id', '=', r.id)
            .execute();
        }
        await trx.schema.alterTable('users').dropColumn('name').execute();
        await trx.schema.alterTable('users').dropColumn('email').execute();
      };
      if (db.isTransaction) await work(db);
      else await db.transaction().execute(work);
    },
  },
  '0009_application_settings': {
    async up(db: Past) {
      // Per-application settings: whose tokens the application may introspect (RFC 7662 §2.1: 'own', 'owner' =
      // every application of the same dashboard user, 'all'), and whether it must use DPoP (RFC 9449 §5.2) and
      // pushed authorization requests (RFC 9126 §6). Existing applications keep what they could do: their own
      // tokens, neither required.
      await db.schema
        .alterTable('applications')
        .addColumn('introspection', 'text', (c) => c.notNull().defaultTo('own'))
        .execute();
      await db.schema
        .alterTable('applications')
        .addColumn('require_dpop', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('applications')
        .addColumn('require_par', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    },
  },
  '0010_pushed_authorization_requests': {
    async up(db: Past) {
      // RFC 9126: the authorization requests clients pushed, by the SHA-256 of their request_uri's random part,
      // until they expire (housekeeping.ts). `query` is the request as the server serialized it after checking it.
      await db.schema
        .createTable('pushed_requests')
        .addColumn('request_uri_hash', 'text', (c) => c.primaryKey())
        .addColumn('client_id', 'text', (c) => c.notNull().references('applications.client_id').onDelete('cascade'))
        .addColumn('query', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('opened_at', 'bigint')
        .addColumn('used_at', 'bigint')
        .execute();
      await db.schema.createIndex('pushed_requests_expires').on('pushed_requests').column('expires_at').execute();
    },
  },
  '0011_dpop': {
    async up(db: Past) {
      // RFC 9449 §4.3 (12), §11.1: the jti of every DPoP proof accepted within the iat window, by the SHA-256 of
      // key thumbprint and jti, kept until the proof could no longer be accepted anyway; the primary key makes
      // the insert that records a proof fail for a replay, on any instance.
      await db.schema
        .createTable('dpop_proofs')
        .addColumn('jti_hash', 'text', (c) => c.primaryKey())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('dpop_proofs_expires').on('dpop_proofs').column('expires_at').execute();
      // RFC 9449 §10: the JWK thumbprint a code is bound to (`dpop_jkt`); §5: the key a public client's refresh
      // tokens are bound to. Null: not bound (every row until now).
      await db.schema.alterTable('authorization_codes').addColumn('dpop_jkt', 'text').execute();
      await db.schema.alterTable('grants').addColumn('dpop_jkt', 'text').execute();
    },
  },
  '0012_grants_by_user': {
    async up(db: Past) {
      // A user's applications (the account page lists them) and ending their access, one application or all
      // of them (a password change): by user, then application.
      await db.schema.createIndex('grants_user_client').on('grants').columns(['user_id', 'client_id']).execute();
    },
  },
  '0013_device_origin': deviceOrigin,
  '0014_passkeys': passkeys,
  '0015_required_acr': requiredAcr,
  '0016_connectors': connectors,
  '0017_backchannel_logout': backchannelLogout,
  '0018_private_key_jwt': privateKeyJwt,
  '0019_credential_history': credentialHistory,
  '0020_logout_outbox': logoutOutbox,
  '0021_resources': resources,
  '0022_workloads': workloads,
  '0023_audit': audit,
  '0024_signins_audited': signInsAudited,
  '0025_application_lifetimes': applicationLifetimes,
};

/** Provides the migrations above, then those in migrations/, to Kysely's Migrator. */
export const migrationProvider: MigrationProvider = {
  async getMigrations() {
    return migrations;
  },
};

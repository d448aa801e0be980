import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomInt, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { addUser } from '../src/oauth/accounts.js';
import { bootstrapStore, registerApplication } from '../src/oauth/registration.js';
import { openEngine, openStore, parseDatabaseUrl, type OpenOptions } from '../src/store/open.js';
import { SqliteEngine, syncConnection } from '../src/store/sqlite-engine.js';
import { BackgroundCheckpointer } from '../src/store/checkpointer.js';
import { sidOf } from '../src/store/repositories/sessions.js';
import { GroupCommit } from '../src/store/group-commit.js';
import {
  APPLICATION_CACHE_MS,
  INITIAL_ACCESS_TOKENS_KEPT_MS,
  RATE_LIMIT_ROWS_KEPT_MS,
  REPLAY_EVIDENCE_MS,
  SIGNIN_EVENTS_KEPT_MS,
  SIGNIN_EVENTS_PER_USER,
  WAL_LIMIT_PAGES,
} from '../src/config/defaults.js';
import { claimsOf, Store, StoreError, type DeviceAuthorization } from '../src/store/store.js';
import { generateSigningKey } from '../src/oauth/keys.js';
import { sha256Hex } from '../src/util/crypto.js';
import { dialects, freshStore, TEST_PASSWORD_HASH } from './helpers.js';
import { Migrator, type MigrationResultSet, sql } from 'kysely';
import { freshPostgresSchema } from '@authcli/test-support/databases';
import { migrationProvider } from '../src/store/migrations.js';
import type { Past } from '../src/store/migrations/past.js';
import { testRows } from '../src/testing.js';

/** A pending device authorization as the device authorization endpoint stores one (RFC 8628 §3.2), 5 s interval. */
function pendingDevice(hash: string, userCode: string, clientId: string, now: number, expiresAt = now + 600_000): DeviceAuthorization {
  return {
    device_code_hash: hash,
    user_code: userCode,
    client_id: clientId,
    scope: 'openid',
    status: 'pending',
    user_id: null,
    auth_time: null,
    amr: null,
    acr: null,
    created_at: now,
    expires_at: expiresAt,
    interval_s: 5,
    last_poll_at: null,
    last_poll_slowed: 0,
    grant_id: null,
    client_ip: '203.0.113.7',
    resource: null,
  };
}

/** A random user code (8 of the 20 consonants: collisions are one in 25 billion). */
function userCode(): string {
  return Array.from({ length: 8 }, () => 'BCDFGHJKLMNPQRSTVWXZ'[randomInt(20)]).join('');
}

/** An embedded store with its engine in reach, for what only the engine shows (its settings). */
async function openSqlite(file: string, options: OpenOptions = {}): Promise<{ engine: SqliteEngine; store: Store }> {
  const engine = await openEngine(file, options);
  if (!(engine instanceof SqliteEngine)) throw new Error(`${file} is not an SQLite store`);
  return { engine, store: new Store(engine) };
}

describe('DATABASE_URL parsing', () => {
  it('postgres URLs select PostgreSQL', () => {
    expect(parseDatabaseUrl('postgres://u@h/db')).toEqual({ dialect: 'postgres', url: 'postgres://u@h/db' });
    expect(parseDatabaseUrl('postgresql://h/db').dialect).toBe('postgres');
  });
  it('paths and sqlite: URLs select SQLite', () => {
    expect(parseDatabaseUrl('./data/authcli.db')).toMatchObject({ dialect: 'sqlite' });
    expect(parseDatabaseUrl('sqlite:///tmp/x.db')).toEqual({ dialect: 'sqlite', path: '/tmp/x.db' });
    expect(parseDatabaseUrl('sqlite:rel.db')).toMatchObject({ dialect: 'sqlite' });
  });
  it('rejects unknown schemes and empty values', () => {
    expect(() => parseDatabaseUrl('mysql://h/db')).toThrow(StoreError);
    expect(() => parseDatabaseUrl('  ')).toThrow(StoreError);
    expect(() => parseDatabaseUrl('sqlite:')).toThrow(StoreError);
  });
});

describe.each(dialects())('store contract (%s)', (dialect) => {
  let store: Store;
  let url: string;
  let cleanup: () => Promise<void>;
  const now = Date.now();

  beforeAll(async () => {
    ({ store, url, cleanup } = await freshStore(dialect));
    await bootstrapStore(store, now);
  });
  afterAll(async () => cleanup());

  /** A name no other test uses: every test makes its own rows, so tests pass in any order. */
  const unique = (prefix: string) => `${prefix}-${randomUUID()}`;

  /** A user (its hash is not a real one: these tests never check a password) and an application of their own. */
  async function userAndApp(on: Store = store) {
    const user = await on.users.create({
      id: randomUUID(),
      username: unique('u'),
      password_hash: 'scrypt$test',
      is_admin: 0,
      disabled_at: null,
      created_at: now,
    });
    const { app } = await registerApplication(
      on,
      { name: unique('app'), kind: 'public', callbackUrls: ['http://127.0.0.1/cb'], scopes: ['openid'] },
      now,
    );
    return { user, app };
  }

  type Fixture = Awaited<ReturnType<typeof userAndApp>>;

  const codeRow = (f: Fixture, codeHash: string, expiresAt = now + 60_000) => ({
    code_hash: codeHash,
    client_id: f.app.clientId,
    user_id: f.user.id,
    redirect_uri: 'http://127.0.0.1/cb',
    code_challenge: 'x'.repeat(43),
    code_challenge_method: 'S256',
    scope: 'openid',
    resource: null,
    nonce: null,
    dpop_jkt: null,
    claims: null,
    auth_time: now,
    created_at: now,
    expires_at: expiresAt,
  });
  const grantRow = (f: Fixture, id: string, expiresAt = now + 1000) => ({
    id,
    client_id: f.app.clientId,
    user_id: f.user.id,
    scope: 'openid',
    claims: null,
    auth_time: now,
    created_at: now,
    expires_at: expiresAt,
    revoked_at: null,
    dpop_jkt: null,
    amr: null,
    acr: null,
    sid: null as string | null,
    resource: null,
  });
  const refreshRow = (hash: string, grantId: string, expiresAt = now + 1000) => ({
    token_hash: hash,
    grant_id: grantId,
    created_at: now,
    expires_at: expiresAt,
    used_at: null,
  });

  it('migrations are idempotent', async () => {
    await store.migrate();
    await store.migrate();
    await store.ping();
    expect(await store.schemaIsCurrent()).toBe(true);
  });

  it("migrations find their own tables, not another schema's (PostgreSQL: two stores side by side in one database)", async () => {
    // This store's schema already holds Kysely's migration tables; a second, empty schema in the same database
    // must still get its own instead of taking this one's for them.
    const second = await freshStore(dialect);
    try {
      await second.store.migrate();
      await second.store.ping();
      expect(await second.store.users.count()).toBe(0);
    } finally {
      await second.cleanup();
    }
  });

  it('first start creates the built-in public authcli application, once', async () => {
    const own = await freshStore(dialect);
    try {
      await bootstrapStore(own.store, now);
      const app = await own.store.applications.get('authcli');
      expect(app).toMatchObject({ kind: 'public', callbackUrls: ['http://127.0.0.1/callback'], secretHash: null });
      expect(app!.grantTypes).toContain('urn:ietf:params:oauth:grant-type:device_code');
      await own.store.applications.delete('authcli');
      await bootstrapStore(own.store, now);
      expect(await own.store.applications.get('authcli')).toBeUndefined();
    } finally {
      await own.cleanup();
    }
  });

  it('users: Argon2id hash stored, username unique', async () => {
    const username = unique('carol');
    const u = await addUser(store, { username, password: 'pa55word!' }, now, TEST_PASSWORD_HASH);
    expect(u.password_hash).toMatch(/^\$argon2id\$/);
    expect(u.password_hash).not.toContain('pa55word!');
    await expect(addUser(store, { username, password: 'another1!' }, now, TEST_PASSWORD_HASH)).rejects.toMatchObject({ code: 'duplicate' });
    expect((await store.users.findByUsername(username))?.id).toBe(u.id);
    await store.users.setDisabled(username, now);
    expect((await store.users.findById(u.id))?.disabled_at).toBe(now);
    await expect(store.users.setDisabled(unique('nobody'), now)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('user claims: a round trip as JSON, updated_at moved only by a change, unset removes, the session sees them', async () => {
    const { user } = await userAndApp();
    expect(claimsOf(user)).toEqual({});
    expect(user.claims_updated_at).toBeNull();
    const set = { given_name: 'Ada', email_verified: true, address: { locality: 'Paris', country: 'FR' } };
    const first = await store.users.updateClaims(user.id, (c) => ({ ...c, ...set }), now + 10);
    expect(claimsOf(first)).toEqual(set);
    const read = (await store.users.findById(user.id))!;
    expect(claimsOf(read)).toEqual(set);
    expect(read.claims_updated_at).toBe(now + 10);
    // The same claims again (in another key order) change nothing, updated_at included.
    const same = await store.users.updateClaims(
      user.id,
      () => ({ address: { country: 'FR', locality: 'Paris' }, email_verified: true, given_name: 'Ada' }),
      now + 20,
    );
    expect(same.claims_updated_at).toBe(now + 10);
    const { given_name: _, ...rest } = set;
    await store.users.updateClaims(user.id, (c) => ({ ...c, given_name: undefined }), now + 30);
    const after = (await store.users.findByUsername(user.username))!;
    expect(claimsOf(after)).toEqual(rest);
    expect(after.claims_updated_at).toBe(now + 30);
    const idHash = unique('session');
    await store.sessions.create({ id_hash: idHash, user_id: user.id, auth_time: now, created_at: now, expires_at: now + 1000 });
    const seen = (await store.sessions.find(idHash, now))!.user;
    expect([claimsOf(seen), seen.claims_updated_at]).toEqual([rest, now + 30]);
    // A refused change writes nothing.
    await expect(
      store.users.updateClaims(
        user.id,
        () => {
          throw new Error('refused');
        },
        now + 40,
      ),
    ).rejects.toThrow('refused');
    expect((await store.users.findById(user.id))!.claims_updated_at).toBe(now + 30);
    await expect(store.users.updateClaims(unique('nobody'), (c) => c, now)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('user claims: concurrent updates of different claims are all kept (no lost update)', async () => {
    const { user } = await userAndApp();
    const names = ['given_name', 'family_name', 'nickname', 'gender', 'middle_name', 'website', 'locale', 'zoneinfo'] as const;
    await Promise.all(names.map((n, i) => store.users.updateClaims(user.id, (c) => ({ ...c, [n]: `v${i}` }), now + i)));
    expect(claimsOf((await store.users.findById(user.id))!)).toEqual(Object.fromEntries(names.map((n, i) => [n, `v${i}`])));
  });

  it('password change by the user: the new hash, every other session of the user ended, this one kept', async () => {
    const { user } = await userAndApp();
    const { user: other } = await userAndApp();
    const [mine, elsewhere, theirs] = [unique('s'), unique('s'), unique('s')];
    for (const [id, u] of [
      [mine, user],
      [elsewhere, user],
      [theirs, other],
    ] as const) {
      await store.sessions.create({ id_hash: id, user_id: u.id, auth_time: now, created_at: now, expires_at: now + 1000 });
    }
    // The ended session's ID (`sid`), as its ID tokens named it (sidOf: a session stored without one derives it).
    expect(await store.users.changePassword(user.id, 'scrypt$new', mine)).toEqual([sidOf({ id_hash: elsewhere, sid: null })]);
    expect((await store.users.findById(user.id))!.password_hash).toBe('scrypt$new');
    expect(await store.sessions.find(mine, now)).toBeDefined();
    expect(await store.sessions.find(elsewhere, now)).toBeUndefined();
    expect(await store.sessions.find(theirs, now)).toBeDefined();
  });

  it('applications: secret stored as SHA-256 only; lists round-trip', async () => {
    const { app, clientSecret } = await registerApplication(
      store,
      { name: 'CI', kind: 'confidential', callbackUrls: ['https://ci.example/cb', 'http://127.0.0.1/cb'], scopes: ['openid', 'email'] },
      now,
    );
    expect(clientSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const stored = await store.applications.get(app.clientId);
    expect(stored!.secretHash).toBe(sha256Hex(clientSecret!));
    expect(stored!.callbackUrls).toEqual(['https://ci.example/cb', 'http://127.0.0.1/cb']);
    expect(stored!.scopes).toEqual(['openid', 'email']);
    const updated = await store.applications.update(app.clientId, { name: 'CI 2', scopes: ['openid'] }, now + 1);
    expect(updated).toMatchObject({ name: 'CI 2', scopes: ['openid'], updatedAt: now + 1 });
    await expect(store.applications.update(unique('missing'), { name: 'x' }, now)).rejects.toMatchObject({ code: 'not_found' });
  });

  it("applications: cached() answers get()'s last read without waiting, never inside a transaction; this instance's changes show at once", async () => {
    const { app } = await registerApplication(
      store,
      { name: 'Cached', kind: 'confidential', callbackUrls: ['https://cached.example/cb'], scopes: ['openid'] },
      now,
    );
    const read = await store.applications.get(app.clientId);
    expect(store.applications.cached(app.clientId)).toBe(read);
    // Inside a change's transaction the application is read from it (the change may roll back): never the cache.
    await store.changes(async () => {
      expect(store.applications.cached(app.clientId)).toBeUndefined();
      expect(await store.applications.get(app.clientId)).toEqual(read);
    });
    const updated = await store.applications.update(app.clientId, { name: 'Cached 2' }, now + 1);
    expect(store.applications.cached(app.clientId)).toEqual(updated);
    await store.applications.delete(app.clientId);
    expect(store.applications.cached(app.clientId)).toBeUndefined();
    expect(store.applications.cached(unique('missing'))).toBeUndefined();
  });

  it('applications: the back-channel logout URI and its sid requirement round-trip; none by default, cleared by null', async () => {
    const { app } = await userAndApp();
    expect(app).toMatchObject({ backchannelLogoutUri: null, backchannelLogoutSessionRequired: false });
    const set = await store.applications.update(
      app.clientId,
      { backchannelLogoutUri: 'https://rp.example/bcl', backchannelLogoutSessionRequired: true },
      now,
    );
    expect(set).toMatchObject({ backchannelLogoutUri: 'https://rp.example/bcl', backchannelLogoutSessionRequired: true });
    expect((await store.applications.list()).find((a) => a.clientId === app.clientId)).toMatchObject({
      backchannelLogoutUri: 'https://rp.example/bcl',
    });
    const cleared = await store.applications.update(
      app.clientId,
      { backchannelLogoutUri: null, backchannelLogoutSessionRequired: false },
      now,
    );
    expect(cleared).toMatchObject({ backchannelLogoutUri: null, backchannelLogoutSessionRequired: false });
  });

  it('applications: a change conditioned on the registration access token happens once (RFC 7592), others are not_found', async () => {
    const { app } = await registerApplication(
      store,
      {
        name: 'Self-registered',
        kind: 'public',
        callbackUrls: ['http://127.0.0.1/cb'],
        scopes: ['openid'],
        registrationTokenHash: 'a'.repeat(64),
      },
      now,
    );
    expect(app.registrationTokenHash).toBe('a'.repeat(64));
    const when = { registrationTokenHash: 'a'.repeat(64) };
    const outcomes = await Promise.allSettled(
      ['b', 'c', 'd', 'e'].map((h) => store.applications.update(app.clientId, { registrationTokenHash: h.repeat(64) }, now + 1, when)),
    );
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).toMatchObject({ code: 'not_found' });
    const current = (await store.applications.get(app.clientId))!.registrationTokenHash!;
    await expect(store.applications.delete(app.clientId, when)).rejects.toMatchObject({ code: 'not_found' });
    await store.applications.delete(app.clientId, { registrationTokenHash: current });
    expect(await store.applications.get(app.clientId)).toBeUndefined();
  });

  it('applications: the keys of a private_key_jwt client round-trip as given; patched to null they are gone', async () => {
    const jwks = { keys: [{ kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo', kid: 'k1' }] };
    const { app, clientSecret } = await registerApplication(
      store,
      { name: unique('keys'), kind: 'confidential', callbackUrls: ['https://k.example/cb'], scopes: ['openid'], clientKeys: { jwks } },
      now,
    );
    expect(clientSecret).toBeUndefined();
    expect(await store.applications.get(app.clientId)).toMatchObject({ secretHash: null, clientKeys: { jwks } });
    const byUri = { jwksUri: 'https://k.example/jwks', signingAlg: 'ES256' };
    expect((await store.applications.update(app.clientId, { clientKeys: byUri }, now + 1)).clientKeys).toEqual(byUri);
    expect((await store.applications.update(app.clientId, { clientKeys: null, secretHash: 'h' }, now + 2)).clientKeys).toBeNull();
    // Applications made before private_key_jwt, and every other one, have none.
    expect((await userAndApp()).app.clientKeys).toBeNull();
  });

  it('rfc7523 §3 client assertion jti: of 20 parallel uses of one, exactly one records it; another client may use the same jti', async () => {
    const hash = sha256Hex(unique('assertion'));
    const results = await Promise.all(Array.from({ length: 20 }, () => store.clientAssertions.use(hash, now + 60_000)));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await store.clientAssertions.use(hash, now + 60_000)).toBe(false);
    expect(await store.clientAssertions.use(sha256Hex(unique('other-client')), now + 60_000)).toBe(true);
  });

  it('initial access tokens: used once under concurrency, given back after a failed registration, revoked, listed', async () => {
    const id = unique('iat');
    const hash = sha256Hex(unique('token'));
    await store.initialAccessTokens.create({ id, tokenHash: hash, createdAt: now, expiresAt: now + 60_000 });
    expect(await store.initialAccessTokens.findUsable(hash, now)).toMatchObject({ id, usedAt: null });
    expect(await store.initialAccessTokens.findUsable(hash, now + 60_000)).toBeUndefined();
    const uses = await Promise.all(Array.from({ length: 8 }, (_, i) => store.initialAccessTokens.use(hash, `client-${i}`, now + 1)));
    expect(uses.filter(Boolean)).toHaveLength(1);
    const winner = `client-${uses.indexOf(true)}`;
    expect(await store.initialAccessTokens.findUsable(hash, now + 1)).toBeUndefined();
    // Another client's give-back changes nothing; the winner's makes the token usable again.
    await store.initialAccessTokens.giveBack(hash, 'client-other');
    expect(await store.initialAccessTokens.findUsable(hash, now + 1)).toBeUndefined();
    await store.initialAccessTokens.giveBack(hash, winner);
    expect(await store.initialAccessTokens.findUsable(hash, now + 1)).toMatchObject({ id, clientId: null });
    expect(await store.initialAccessTokens.revoke(id, now + 2)).toMatchObject({ id, revokedAt: now + 2 });
    expect(await store.initialAccessTokens.use(hash, 'late', now + 3)).toBe(false);
    expect((await store.initialAccessTokens.list()).find((t) => t.id === id)).toMatchObject({ revokedAt: now + 2, usedAt: null });
    await expect(store.initialAccessTokens.revoke(unique('missing'), now)).rejects.toMatchObject({ code: 'not_found' });
    await expect(
      store.initialAccessTokens.create({ id: unique('iat'), tokenHash: hash, createdAt: now, expiresAt: now + 1 }),
    ).rejects.toMatchObject({ code: 'duplicate' });
  });

  it('pushed requests (RFC 9126): opened once (the longer lifetime starts then), used once under concurrency, never after expiry', async () => {
    const { app } = await userAndApp();
    const hash = sha256Hex(unique('request-uri'));
    await store.pushedRequests.insert(hash, { clientId: app.clientId, query: 'a=1', createdAt: now, expiresAt: now + 90_000 });
    expect(await store.pushedRequests.find(hash)).toEqual({
      clientId: app.clientId,
      query: 'a=1',
      createdAt: now,
      expiresAt: now + 90_000,
      openedAt: null,
      usedAt: null,
    });
    await store.pushedRequests.open(hash, now + 1, now + 900_000);
    await store.pushedRequests.open(hash, now + 2, now + 5);
    expect(await store.pushedRequests.find(hash)).toMatchObject({ openedAt: now + 1, expiresAt: now + 900_000 });
    const uses = await Promise.all(Array.from({ length: 10 }, () => store.pushedRequests.use(hash, now + 3)));
    expect(uses.filter(Boolean)).toHaveLength(1);
    expect((await store.pushedRequests.find(hash))?.usedAt).toBe(now + 3);
    // Unopened past its expiry: neither opened nor used.
    const late = sha256Hex(unique('request-uri'));
    await store.pushedRequests.insert(late, { clientId: app.clientId, query: 'b=2', createdAt: now, expiresAt: now + 10 });
    await store.pushedRequests.open(late, now + 10, now + 900_000);
    expect(await store.pushedRequests.use(late, now + 10)).toBe(false);
    expect(await store.pushedRequests.find(late)).toMatchObject({ openedAt: null, usedAt: null });
    expect(await store.pushedRequests.use(sha256Hex(unique('unknown')), now)).toBe(false);
    // Deleting the application takes its requests with it (housekeeping: see the purge test).
    await store.applications.delete(app.clientId);
    expect(await store.pushedRequests.find(late)).toBeUndefined();
    expect(await store.pushedRequests.find(hash)).toBeUndefined();
  });

  it('sessions: found by hash while live and the user enabled', async () => {
    const { user } = await userAndApp();
    const idHash = unique('session');
    await store.sessions.create({ id_hash: idHash, user_id: user.id, auth_time: now, created_at: now, expires_at: now + 1000 });
    expect((await store.sessions.find(idHash, now))?.user.username).toBe(user.username);
    expect(await store.sessions.find(idHash, now + 1000)).toBeUndefined();
    await store.users.setDisabled(user.username, now);
    expect(await store.sessions.find(idHash, now)).toBeUndefined();
  });

  it('sessions: each has a session ID (sid) that is neither its id hash nor derived from nothing; deleting returns the row once', async () => {
    const { user } = await userAndApp();
    const idHash = unique('session');
    await store.sessions.create({
      id_hash: idHash,
      user_id: user.id,
      auth_time: now,
      created_at: now,
      expires_at: now + 1000,
      sid: 'sid-1',
    });
    expect((await store.sessions.find(idHash, now))?.session.sid).toBe('sid-1');
    // A session stored before sessions had a sid gets one derived from its id hash, stable and unlike it.
    const legacy = unique('legacy');
    await store.sessions.create({ id_hash: legacy, user_id: user.id, auth_time: now, created_at: now, expires_at: now + 1000 });
    const derived = (await store.sessions.find(legacy, now))?.session.sid;
    expect(derived).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(derived).not.toContain(legacy);
    expect((await store.sessions.find(legacy, now))?.session.sid).toBe(derived);
    expect(await store.sessions.delete(idHash)).toMatchObject({ id_hash: idHash, user_id: user.id, sid: 'sid-1' });
    expect(await store.sessions.delete(idHash)).toBeUndefined();
  });

  it('backchannel logout §2.7 ending a session: its pending codes expire, its grants without offline_access are revoked, the rest kept', async () => {
    const f = await userAndApp();
    const { app: other } = await registerApplication(
      store,
      { name: unique('other'), kind: 'public', callbackUrls: ['http://127.0.0.1/cb'], scopes: ['openid', 'offline_access'] },
      now,
    );
    const g = { ...f, app: other };
    const sid = unique('sid');
    const [pending, redeemed, elsewhere] = [unique('c'), unique('c'), unique('c')];
    await store.codes.insert({ ...codeRow(f, pending), sid });
    await store.codes.insert({ ...codeRow(g, redeemed), sid });
    await store.codes.insert({ ...codeRow(f, elsewhere), sid: unique('sid') });
    const [online, offline, device, otherSession] = [unique('g'), unique('g'), unique('g'), unique('g')];
    expect(await store.codes.redeem(redeemed, { ...grantRow(g, offline), scope: 'openid offline_access', sid }, now)).toBe(true);
    await store.grants.insert({ ...grantRow(f, online), sid });
    await store.grants.insert(grantRow(f, device));
    await store.grants.insert({ ...grantRow(f, otherSession), sid: unique('sid') });
    expect((await store.grants.endSession(sid, now + 1)).sort()).toEqual([f.app.clientId, other.clientId].sort());
    expect((await store.codes.find(pending))?.expires_at).toBe(now + 1);
    expect((await store.codes.find(elsewhere))?.expires_at).toBe(now + 60_000);
    expect((await store.grants.find(online))?.revoked_at).toBe(now + 1);
    expect((await store.grants.find(offline))?.revoked_at).toBeNull();
    expect((await store.grants.find(device))?.revoked_at).toBeNull();
    expect((await store.grants.find(otherSession))?.revoked_at).toBeNull();
    // Again: the same applications, nothing revoked twice.
    expect((await store.grants.endSession(sid, now + 2)).sort()).toEqual([f.app.clientId, other.clientId].sort());
    expect((await store.grants.find(online))?.revoked_at).toBe(now + 1);
    expect(await store.grants.endSession(unique('sid'), now)).toEqual([]);
  });

  it("backchannel logout: a user's live grants by application and session, each pair once; revoked and expired ones left out", async () => {
    const f = await userAndApp();
    const [s1, s2] = [unique('sid'), unique('sid')];
    await store.grants.insert({ ...grantRow(f, unique('g')), sid: s1 });
    await store.grants.insert({ ...grantRow(f, unique('g')), sid: s1 });
    await store.grants.insert({ ...grantRow(f, unique('g')), sid: s2 });
    await store.grants.insert(grantRow(f, unique('g')));
    const revoked = unique('g');
    await store.grants.insert({ ...grantRow(f, revoked), sid: unique('sid') });
    await store.grants.revoke(revoked, now);
    await store.grants.insert({ ...grantRow(f, unique('g'), now), sid: unique('sid') });
    const holders = await store.grants.holders(f.user.id, now);
    const key = (h: { clientId: string; sid: string | null }) => `${h.clientId} ${h.sid}`;
    expect(holders.map(key).sort()).toEqual([s1, s2, null].map((sid) => key({ clientId: f.app.clientId, sid })).sort());
    // revokeForUser answers with the same live grants it revoked (one per grant), by the statement that revokes them.
    const ended = await store.grants.revokeForUser(f.user.id, now);
    expect(ended.map(key).sort()).toEqual([s1, s1, s2, null].map((sid) => key({ clientId: f.app.clientId, sid })).sort());
    expect(await store.grants.holders(f.user.id, now)).toEqual([]);
    expect(await store.grants.revokeForUser(f.user.id, now)).toEqual([]);
  });

  it('consent is remembered per user, application and scope set', async () => {
    const { user: u } = await userAndApp();
    const { app } = await registerApplication(
      store,
      { name: 'A', kind: 'public', callbackUrls: ['https://a.example/cb'], scopes: ['openid', 'profile', 'email'] },
      now,
    );
    expect(await store.consents.covers(u.id, app.clientId, ['openid'])).toBe(false);
    await store.consents.add(u.id, app.clientId, ['profile', 'openid'], now);
    await store.consents.add(u.id, app.clientId, ['openid', 'profile'], now);
    expect(await store.consents.covers(u.id, app.clientId, ['openid'])).toBe(true);
    expect(await store.consents.covers(u.id, app.clientId, ['openid', 'profile'])).toBe(true);
    expect(await store.consents.covers(u.id, app.clientId, ['openid', 'email'])).toBe(false);
  });

  it('authorization code consumption is atomic: one winner among concurrent consumers', async () => {
    const f = await userAndApp();
    const c = unique('code');
    // Foreign keys hold on both stores: a code for an unknown client is refused.
    await expect(store.codes.insert({ ...codeRow(f, unique('code')), client_id: unique('nope') })).rejects.toThrow();
    await store.codes.insert(codeRow(f, c));
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => store.codes.consume(c, `g${i}`, now)));
    expect(results.filter(Boolean)).toHaveLength(1);
    const row = await store.codes.find(c);
    expect(row!.consumed_at).toBe(now);
    expect(row!.grant_id).toBe(`g${results.indexOf(true)}`);
    expect(await store.codes.consume(c, 'again', now)).toBe(false);
  });

  it('redeeming a code into a grant: one winner, and the losers leave no grant behind', async () => {
    const f = await userAndApp();
    const c = unique('code');
    await store.codes.insert(codeRow(f, c));
    const ids = Array.from({ length: 8 }, () => unique('grant'));
    const results = await Promise.all(ids.map((id) => store.codes.redeem(c, grantRow(f, id), now)));
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = ids[results.indexOf(true)]!;
    expect((await store.codes.find(c))!.grant_id).toBe(winner);
    for (const id of ids) {
      expect(await store.grants.find(id), id).toEqual(id === winner ? expect.objectContaining({ id: winner }) : undefined);
    }
  });

  it('redemptions that arrive together stand or fall each on its own: a failing one undoes only its own writes', async () => {
    const f = await userAndApp();
    const [c4, c5, c6] = [unique('c4'), unique('c5'), unique('c6')];
    const [g4, g5, g6] = [unique('g4'), unique('g5'), unique('g6')];
    for (const h of [c4, c5, c6]) await store.codes.insert(codeRow(f, h));
    const taken = unique('rt-taken');
    const rt6 = unique('rt6');
    // c4 and c5 want the same refresh-token hash: whichever runs second fails at its last step, after its grant
    // and its code's consumption ran (on SQLite that is c5, in batch order; on PostgreSQL the race decides).
    const [r4, r5, r6] = await Promise.allSettled([
      store.codes.redeem(c4, grantRow(f, g4), now, refreshRow(taken, g4)),
      store.codes.redeem(c5, grantRow(f, g5), now, refreshRow(taken, g5)),
      store.codes.redeem(c6, grantRow(f, g6), now, refreshRow(rt6, g6)),
    ]);
    expect(r6).toEqual({ status: 'fulfilled', value: true });
    expect([r4.status, r5.status].sort()).toEqual(['fulfilled', 'rejected']);
    const [won, lost] =
      r4.status === 'fulfilled'
        ? [
            { c: c4, g: g4 },
            { c: c5, g: g5 },
          ]
        : [
            { c: c5, g: g5 },
            { c: c4, g: g4 },
          ];
    expect(r4.status === 'fulfilled' ? r4.value : r5.status === 'fulfilled' && r5.value).toBe(true);
    expect(await store.codes.find(lost.c)).toMatchObject({ consumed_at: null, grant_id: null });
    expect(await store.grants.find(lost.g)).toBeUndefined();
    expect(await store.codes.find(won.c)).toMatchObject({ consumed_at: now, grant_id: won.g });
    expect(await store.codes.find(c6)).toMatchObject({ consumed_at: now, grant_id: g6 });
    expect(await store.grants.findRefreshToken(taken)).toMatchObject({ grant_id: won.g });
    expect(await store.grants.findRefreshToken(rt6)).toMatchObject({ grant_id: g6 });
    // The failed one can be redeemed afterwards: nothing of it was left half-done.
    expect(await store.codes.redeem(lost.c, grantRow(f, lost.g), now, refreshRow(unique('rt-later'), lost.g))).toBe(true);
    // Alone in its turn, a losing redemption leaves nothing behind either.
    const again = unique('g-again');
    const rtAgain = unique('rt-again');
    expect(await store.codes.redeem(lost.c, grantRow(f, again), now, refreshRow(rtAgain, again))).toBe(false);
    expect(await store.grants.find(again)).toBeUndefined();
    expect(await store.grants.findRefreshToken(rtAgain)).toBeUndefined();
  });

  it('an expired code cannot be consumed', async () => {
    const f = await userAndApp();
    const c = unique('code');
    await store.codes.insert(codeRow(f, c, now + 10));
    expect(await store.codes.consume(c, 'g', now + 10)).toBe(false);
  });

  it('grants are revoked idempotently', async () => {
    const f = await userAndApp();
    const id = unique('grant');
    await store.grants.insert(grantRow(f, id));
    await store.grants.revoke(id, now + 5);
    await store.grants.revoke(id, now + 9);
    expect((await store.grants.find(id))?.revoked_at).toBe(now + 5);
  });

  it('refresh-token rotation: the old token is used once; a second rotation of it is refused and stores nothing', async () => {
    const f = await userAndApp();
    const grant = unique('grant');
    const [first, second, third] = [unique('rt'), unique('rt'), unique('rt')];
    await store.grants.insert(grantRow(f, grant));
    await store.grants.insertRefreshToken(refreshRow(first, grant));
    expect(await store.grants.rotateRefreshToken(first, refreshRow(second, grant), now + 1)).toBe(true);
    expect(await store.grants.findRefreshToken(first)).toMatchObject({ used_at: now + 1 });
    expect(await store.grants.rotateRefreshToken(first, refreshRow(third, grant), now + 2)).toBe(false);
    expect(await store.grants.findRefreshToken(third)).toBeUndefined();
  });

  it('key rotation retires the previous key and keeps it listed while published', async () => {
    const k1 = await generateSigningKey('ES256', now);
    await store.keys.insert(k1);
    const k2 = await generateSigningKey('ES256', now + 100);
    await store.keys.rotate([k2], now + 100);
    const listed = await store.keys.list(now);
    expect(listed.map((k) => k.kid)).toEqual(expect.arrayContaining([k1.kid, k2.kid]));
    expect(listed.find((k) => k.kid === k1.kid)!.retired_at).toBe(now + 100);
    expect(listed.find((k) => k.kid === k2.kid)!.retired_at).toBeNull();
    const later = await store.keys.list(now + 101);
    expect(later.map((k) => k.kid)).not.toContain(k1.kid);
  });

  it('settings: the first writer wins under concurrency', async () => {
    const key = unique('race');
    const values = await Promise.all(Array.from({ length: 8 }, (_, i) => store.settings.getOrCreate(key, () => `v${i}`)));
    expect(new Set(values).size).toBe(1);
  });

  it("applications: this instance's changes count at once, another instance's within the lookup cache time", async () => {
    const { app } = await registerApplication(
      store,
      { name: 'Cached', kind: 'public', callbackUrls: ['http://127.0.0.1/cb'], scopes: ['openid'] },
      now,
    );
    expect((await store.applications.get(app.clientId))!.name).toBe('Cached');
    await store.applications.update(app.clientId, { name: 'Renamed' }, now + 1);
    expect((await store.applications.get(app.clientId))!.name).toBe('Renamed');
    expect(Object.isFrozen((await store.applications.get(app.clientId))!.callbackUrls)).toBe(true);

    // Another instance changes it; an instance that has it cached, on a clock of its own, sees that once its cache
    // time has passed (the clock moved, not waited for).
    const other = await openStore(url);
    let t = 0;
    const cached = await openStore(url, { cacheClock: () => t });
    try {
      expect((await cached.applications.get(app.clientId))!.name).toBe('Renamed');
      await other.applications.update(app.clientId, { name: 'Elsewhere' }, now + 2);
      await other.applications.delete(app.clientId);
      t += APPLICATION_CACHE_MS - 1;
      expect((await cached.applications.get(app.clientId))?.name).toBe('Renamed');
      t += 1;
      expect(await cached.applications.get(app.clientId)).toBeUndefined();
      await cached.applications.delete(unique('nope')).catch(() => undefined);
      expect(await cached.applications.get(app.clientId)).toBeUndefined();
    } finally {
      await other.close();
      await cached.close();
    }
  });

  it('device polls that arrive together are each answered on their own and all recorded (RFC 8628 §3.5)', async () => {
    const { app } = await userAndApp();
    const [dA, dB] = [unique('dA'), unique('dB')];
    await store.deviceGrants.insert(pendingDevice(dA, userCode(), app.clientId, now));
    await store.deviceGrants.insert(pendingDevice(dB, userCode(), app.clientId, now));
    const answers = await Promise.all([
      store.deviceGrants.recordPoll(dA, app.clientId, now + 1000),
      store.deviceGrants.recordPoll(dA, app.clientId, now + 1001),
      store.deviceGrants.recordPoll(dB, app.clientId, now + 1000),
      store.deviceGrants.recordPoll(dB, 'someone-else', now + 1000),
      store.deviceGrants.recordPoll(unique('missing'), app.clientId, now + 1000),
    ]);
    // The two polls of dA race (on PostgreSQL they run on two pooled connections in either order): whichever
    // comes second is too early and slowed down, never both, never neither.
    const [a1, a2, ...rest] = answers;
    expect([a1, a2].sort((x, y) => Number(x!.slowed) - Number(y!.slowed))).toEqual([{ slowed: false }, { interval_s: 10, slowed: true }]);
    expect(rest).toEqual([{ slowed: false }, undefined, undefined]);
    const rowA = await store.deviceGrants.findByCodeHash(dA);
    expect(rowA).toMatchObject({ interval_s: 10, last_poll_slowed: 1 });
    expect([now + 1000, now + 1001]).toContain(rowA!.last_poll_at);
    expect(await store.deviceGrants.findByCodeHash(dB)).toMatchObject({ interval_s: 5, last_poll_at: now + 1000, last_poll_slowed: 0 });
  });

  it("rfc8628 §3.3 a device decision is one conditional statement: of parallel approvals exactly one wins, and it is recorded with the device's address", async () => {
    const f = await userAndApp();
    const code = userCode();
    await store.deviceGrants.insert({ ...pendingDevice(unique('decide'), code, f.app.clientId, now), client_ip: '192.0.2.10' });
    expect(await store.deviceGrants.findByUserCode(code)).toMatchObject({ client_ip: '192.0.2.10' });
    const approve = { status: 'approved' as const, userId: f.user.id, authTime: now, amr: 'hwk mfa', startedAfter: now - 300_000 };
    const results = await Promise.all(
      Array.from({ length: 12 }, () => store.deviceGrants.decide(code, approve, now + 1000, '198.51.100.4')),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await store.deviceGrants.findByUserCode(code)).toMatchObject({ status: 'approved', user_id: f.user.id, auth_time: now });
    // A decided code takes no other decision, and the losers recorded nothing.
    expect(await store.deviceGrants.decide(code, { status: 'denied', userId: f.user.id }, now + 2000, '198.51.100.4')).toBe(false);
    expect(await store.signInEvents.recent(f.user.id, now + 10_000)).toEqual([
      {
        id: expect.any(String),
        user_id: f.user.id,
        at: now + 1000,
        kind: 'device-approved',
        client_ip: '198.51.100.4',
        device_ip: '192.0.2.10',
        client_id: f.app.clientId,
        detail: null,
      },
    ]);
  });

  it('rfc8628 §5.4 an authorization started at or before the approval window cannot be approved, even in parallel; it can still be denied', async () => {
    const f = await userAndApp();
    const code = userCode();
    await store.deviceGrants.insert(pendingDevice(unique('stale'), code, f.app.clientId, now));
    const approve = { status: 'approved' as const, userId: f.user.id, authTime: now, amr: 'hwk mfa', startedAfter: now };
    const results = await Promise.all(
      Array.from({ length: 8 }, () => store.deviceGrants.decide(code, approve, now + 1000, '198.51.100.5')),
    );
    expect(results.filter(Boolean)).toHaveLength(0);
    expect(await store.deviceGrants.findByUserCode(code)).toMatchObject({ status: 'pending', user_id: null });
    expect(await store.signInEvents.recent(f.user.id, now + 10_000)).toEqual([]);
    expect(await store.deviceGrants.decide(code, { status: 'denied', userId: f.user.id }, now + 1000, '198.51.100.5')).toBe(true);
    expect(await store.deviceGrants.findByUserCode(code)).toMatchObject({ status: 'denied', user_id: f.user.id, auth_time: null });
    expect(await store.signInEvents.recent(f.user.id, now + 10_000)).toMatchObject([
      { kind: 'device-denied', client_ip: '198.51.100.5', device_ip: '203.0.113.7' },
    ]);
    // One millisecond inside the window's edge: approvable.
    const edge = userCode();
    await store.deviceGrants.insert(pendingDevice(unique('edge'), edge, f.app.clientId, now));
    expect(await store.deviceGrants.decide(edge, { ...approve, startedAfter: now - 1 }, now + 2000, '198.51.100.5')).toBe(true);
    // An expired one takes no decision at all.
    const expired = userCode();
    await store.deviceGrants.insert(pendingDevice(unique('expired'), expired, f.app.clientId, now, now + 500));
    expect(await store.deviceGrants.decide(expired, { status: 'denied', userId: f.user.id }, now + 500, '198.51.100.5')).toBe(false);
  });

  it("sign-in records: newest first, at most SIGNIN_EVENTS_PER_USER shown, no other user's; each an audit row", async () => {
    const a = await userAndApp();
    const b = await userAndApp();
    const record = (userId: string, at: number) =>
      store.signInEvents.record({ user_id: userId, at, kind: 'password', client_ip: '192.0.2.1', device_ip: null, client_id: null });
    await record(b.user.id, now);
    for (let i = 0; i < SIGNIN_EVENTS_PER_USER + 5; i++) await record(a.user.id, now + i);
    const kept = await store.signInEvents.recent(a.user.id, now + 10_000);
    expect(kept).toHaveLength(SIGNIN_EVENTS_PER_USER);
    expect(kept.map((e) => e.at)).toEqual(Array.from({ length: SIGNIN_EVENTS_PER_USER }, (_, i) => now + SIGNIN_EVENTS_PER_USER + 4 - i));
    expect(await store.signInEvents.recent(b.user.id, now + 10_000)).toMatchObject([
      { at: now, kind: 'password', device_ip: null, client_id: null },
    ]);
    // Many at once: each its own row of the chain.
    await Promise.all(Array.from({ length: 20 }, (_, i) => record(a.user.id, now + 100 + i)));
    const rows = await store.audit.list({ target: a.user.id, type: 'signin.password', limit: 500 });
    expect(rows).toHaveLength(SIGNIN_EVENTS_PER_USER + 25);
    expect(rows[0]).toMatchObject({ actor_type: 'user', actor: a.user.id, actor_name: a.user.username, address: '192.0.2.1' });
    const newest = (await store.signInEvents.recent(a.user.id, now + 10_000)).slice(0, 20).map((e) => e.at);
    expect(newest.sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => now + 100 + i));
    expect(await store.audit.verify()).toMatchObject({ ok: true });
  });

  it('device authorizations in bulk: all stored, a taken user code refused as a duplicate', async () => {
    const { app } = await userAndApp();
    const rows = Array.from({ length: 1200 }, () => pendingDevice(unique('bulk'), userCode(), app.clientId, now));
    await store.deviceGrants.insertMany(rows);
    expect(await store.deviceGrants.findByCodeHash(rows[1199]!.device_code_hash)).toMatchObject({ status: 'pending' });
    const taken = pendingDevice(unique('bulk'), rows[0]!.user_code, app.clientId, now);
    await expect(store.deviceGrants.insertMany([taken])).rejects.toMatchObject({ code: 'duplicate' });
    await expect(store.deviceGrants.insert(taken)).rejects.toMatchObject({ code: 'duplicate' });
  });

  it('work issued while a transaction is open neither joins it nor is lost when it rolls back', async () => {
    // The engine under a store of its own: the test holds a transaction open on the very connection the
    // repositories use.
    const engine = await openEngine(url);
    const own = new Store(engine);
    try {
      const f = await userAndApp(own);
      const device = unique('device');
      await own.deviceGrants.insert(pendingDevice(device, userCode(), f.app.clientId, now));
      let began!: () => void;
      const open = new Promise<void>((r) => {
        began = r;
      });
      const doomed = engine
        .transaction(async (trx) => {
          await trx.updateTable('device_authorizations').set({ scope: 'changed' }).where('device_code_hash', '=', device).execute();
          began();
          await new Promise((r) => setTimeout(r, 50));
          throw new Error('roll back');
        })
        .catch((err: Error) => err.message);
      await open;
      const outside = unique('outside');
      const [poll, grantAdded] = await Promise.all([
        own.deviceGrants.recordPoll(device, f.app.clientId, now + 20_000),
        own.grants.insert(grantRow(f, outside)),
        doomed,
      ]);
      expect(await doomed).toBe('roll back');
      expect(poll).toEqual({ slowed: false });
      expect(grantAdded).toBeUndefined();
      expect(await own.deviceGrants.findByCodeHash(device)).toMatchObject({ scope: 'openid', last_poll_at: now + 20_000 });
      expect(await own.grants.find(outside)).toMatchObject({ id: outside });
    } finally {
      await own.close();
    }
  });

  it('purgeExpired deletes what has expired and keeps codes and device codes as replay evidence for REPLAY_EVIDENCE_MS', async () => {
    // A store of its own: purging at a time far ahead would take other tests' rows too.
    const own = await freshStore(dialect);
    try {
      const s = own.store;
      const f = await userAndApp(s);
      const at = now + 10 * REPLAY_EVIDENCE_MS; // the purge's "now"
      const evidenceUntil = at - REPLAY_EVIDENCE_MS; // a row that expired at or before this is no evidence any more

      // Sessions: gone at expiry.
      await s.sessions.create({ id_hash: 'session-expired', user_id: f.user.id, auth_time: now, created_at: now, expires_at: at });
      await s.sessions.create({ id_hash: 'session-live', user_id: f.user.id, auth_time: now, created_at: now, expires_at: at + 1 });
      // Codes: consumed ones kept past expiry, until REPLAY_EVIDENCE_MS after it, so that a replay still revokes its grant.
      await s.codes.insert(codeRow(f, 'code-old', evidenceUntil));
      await s.codes.insert(codeRow(f, 'code-evidence', evidenceUntil + 1));
      expect(await s.codes.consume('code-evidence', 'some-grant', now)).toBe(true);
      // Device authorizations: the same.
      await s.deviceGrants.insert(pendingDevice('device-old', userCode(), f.app.clientId, now, evidenceUntil));
      await s.deviceGrants.insert(pendingDevice('device-evidence', userCode(), f.app.clientId, now, evidenceUntil + 1));
      // Grants: gone at expiry, with their refresh tokens.
      await s.grants.insert(grantRow(f, 'grant-expired', at));
      await s.grants.insertRefreshToken(refreshRow('rt-of-expired', 'grant-expired', at + 1000));
      await s.grants.insert(grantRow(f, 'grant-live', at + 1));
      await s.grants.insertRefreshToken(refreshRow('rt-of-live', 'grant-live', at + 1));
      // Revoked access tokens: the record is needed only until the token itself expires.
      await s.grants.revokeAccessToken('jti-expired', at);
      await s.grants.revokeAccessToken('jti-live', at + 1);
      // Rate-limit counters: kept RATE_LIMIT_ROWS_KEPT_MS after their window began.
      await s.rateLimits.consume('limit-old', 60_000, at - RATE_LIMIT_ROWS_KEPT_MS);
      await s.rateLimits.consume('limit-recent', 60_000, at - RATE_LIMIT_ROWS_KEPT_MS + 1);
      // Sign-in continuations: gone at expiry.
      const continuation = (id: string, expiresAt: number) => ({
        id_hash: id,
        browser_hash: 'browser',
        target: '{}',
        created_at: now,
        expires_at: expiresAt,
      });
      await s.continuations.insert(continuation('continuation-expired', at));
      await s.continuations.insert(continuation('continuation-live', at + 1));
      // Initial access tokens: listed for INITIAL_ACCESS_TOKENS_KEPT_MS past expiry, then gone.
      const iat = (id: string, expiresAt: number) =>
        s.initialAccessTokens.create({ id, tokenHash: sha256Hex(id), createdAt: now, expiresAt });
      await iat('iat-old', at - INITIAL_ACCESS_TOKENS_KEPT_MS);
      await iat('iat-kept', at - INITIAL_ACCESS_TOKENS_KEPT_MS + 1);
      // Pushed authorization requests: gone at expiry.
      const pushed = (id: string, expiresAt: number) =>
        s.pushedRequests.insert(id, { clientId: f.app.clientId, query: '', createdAt: now, expiresAt });
      await pushed('par-expired', at);
      await pushed('par-live', at + 1);

      // Sign-in records: kept SIGNIN_EVENTS_KEPT_MS after they were made.
      const signIn = (at: number) =>
        s.signInEvents.record({ user_id: f.user.id, at, kind: 'password', client_ip: '192.0.2.1', device_ip: null, client_id: null });
      await signIn(at - SIGNIN_EVENTS_KEPT_MS);
      await signIn(at - SIGNIN_EVENTS_KEPT_MS + 1);
      // Client assertion jtis: gone once the assertion has expired (it is refused anyway).
      await s.clientAssertions.use('assertion-expired', at);
      await s.clientAssertions.use('assertion-live', at + 1);

      await s.purgeExpired(at);

      const rows = testRows(s);
      expect((await rows.select('sessions')).map((r) => r.id_hash)).toEqual(['session-live']);
      expect(await s.codes.find('code-old')).toBeUndefined();
      expect(await s.codes.find('code-evidence')).toMatchObject({ consumed_at: now, grant_id: 'some-grant' });
      expect(await s.deviceGrants.findByCodeHash('device-old')).toBeUndefined();
      expect(await s.deviceGrants.findByCodeHash('device-evidence')).toMatchObject({ status: 'pending' });
      expect(await s.grants.find('grant-expired')).toBeUndefined();
      expect(await s.grants.findRefreshToken('rt-of-expired')).toBeUndefined();
      expect(await s.grants.find('grant-live')).toMatchObject({ id: 'grant-live' });
      expect(await s.grants.findRefreshToken('rt-of-live')).toMatchObject({ grant_id: 'grant-live' });
      expect(await s.grants.isAccessTokenRevoked('jti-expired')).toBe(false);
      expect(await s.grants.isAccessTokenRevoked('jti-live')).toBe(true);
      expect((await s.rateLimits.list()).map((r) => r.key)).toEqual(['limit-recent']);
      expect((await rows.select('continuations')).map((r) => r.id_hash)).toEqual(['continuation-live']);
      expect((await s.initialAccessTokens.list()).map((t) => t.id)).toEqual(['iat-kept']);
      expect(await s.pushedRequests.find('par-expired')).toBeUndefined();
      expect(await s.pushedRequests.find('par-live')).toBeDefined();
      // The audit trail keeps sign-in records for its retention; the account page shows those of SIGNIN_EVENTS_KEPT_MS.
      expect((await s.signInEvents.recent(f.user.id, at)).map((e) => e.at)).toEqual([at - SIGNIN_EVENTS_KEPT_MS + 1]);
      expect((await rows.select('client_assertions')).map((r) => r.jti_hash)).toEqual(['assertion-live']);
      // What the purge keeps it keeps: users, applications, settings are never purged.
      expect(await s.users.findById(f.user.id)).toBeDefined();
      expect(await s.applications.get(f.app.clientId)).toBeDefined();
    } finally {
      await own.cleanup();
    }
  });
});

describe('embedded store: write-ahead log checkpoints off the event loop', () => {
  it('a background thread moves committed pages into the database file; closing stops it and removes the log', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'authcli-ckpt-'));
    const file = join(dir, 'a.db');
    try {
      const { engine, store } = await openSqlite(file, { backgroundCheckpoints: true });
      await store.migrate();
      await bootstrapStore(store, Date.now());
      expect(engine.pragma('wal_autocheckpoint')).toBe(WAL_LIMIT_PAGES); // the commits checkpoint only past the bound
      await new Promise((r) => setTimeout(r, 200));
      const before = statSync(file).size;
      const now = Date.now();
      for (let i = 0; i < 2000; i++) {
        await store.deviceGrants.insert(pendingDevice(sha256Hex(`d${i}`), `U${i}`.padEnd(8, 'X'), 'authcli', now));
      }
      const deadline = Date.now() + 5000;
      while (statSync(file).size <= before + 100_000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      expect(statSync(file).size).toBeGreaterThan(before + 100_000);
      await store.close();
      expect(existsSync(`${file}-wal`)).toBe(false); // the checkpointer's connection closed first: the last close cleans up
      const reopened = await openStore(file);
      expect((await reopened.deviceGrants.findByCodeHash(sha256Hex('d1999')))?.status).toBe('pending');
      await reopened.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('writes that never let the thread catch up still keep the log bounded: past the limit a commit finishes the checkpoint', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'authcli-ckpt-'));
    const file = join(dir, 'c.db');
    try {
      // A thread that never gets to run in this test: the commits are on their own past the limit.
      const store = await openStore(file, { backgroundCheckpoints: true, walLimitPages: 64, checkpointIntervalMs: 3_600_000 });
      await store.migrate();
      await bootstrapStore(store, Date.now());
      const now = Date.now();
      const walPages = () => Math.ceil(statSync(`${file}-wal`).size / (4096 + 24));
      let most = 0;
      for (let i = 0; i < 600; i++) {
        await store.deviceGrants.insert(pendingDevice(sha256Hex(`w${i}`), `W${i}`.padEnd(8, 'X'), 'authcli', now));
        most = Math.max(most, walPages());
      }
      // Each insert writes a few pages; without the bound the log would hold them all (well over 600 pages).
      expect(most).toBeLessThan(64 + 16);
      expect(await store.deviceGrants.findByCodeHash(sha256Hex('w599'))).toMatchObject({ status: 'pending' });
      await store.close();
      const reopened = await openStore(file);
      expect(await testRows(reopened).count('device_authorizations')).toBe(600);
      await reopened.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('when the checkpoint thread cannot work, the store is told (and turns automatic checkpoints back on)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'authcli-ckpt-'));
    try {
      // A path the thread cannot open: its connection fails at once.
      const failed = await new Promise<boolean>((res) => {
        new BackgroundCheckpointer(join(dir, 'missing', 'dir', 'x.db'), () => res(true));
        setTimeout(() => res(false), 5000);
      });
      expect(failed).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('one-shot commands keep SQLite’s own automatic checkpoints', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'authcli-ckpt-'));
    try {
      const { engine, store } = await openSqlite(join(dir, 'b.db'));
      expect(engine.pragma('wal_autocheckpoint')).toBe(1000);
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('embedded store: group commit', () => {
  it('a unit whose failure ends the whole transaction fails the batch: nothing of it is kept, nothing after it runs alone', async () => {
    const Database = (await import('better-sqlite3')).default;
    const sqlite = new Database(':memory:');
    try {
      sqlite.exec('create table t (v text primary key)');
      const conn = syncConnection(sqlite);
      const batch = new GroupCommit(conn);
      const insert = (v: string) => ({ now: () => conn.prepare('insert into t (v) values (?)').run(v).changes, alone: async () => 0 });
      const results = await Promise.allSettled([
        batch.run(insert('a')),
        // What SQLite does on a full disk or an I/O error: the transaction is rolled back under the batch's feet.
        batch.run({
          now: () => {
            conn.prepare('rollback').run();
            throw new Error('disk I/O error');
          },
          alone: async () => 0,
        }),
        batch.run(insert('c')),
      ]);
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
      expect(sqlite.prepare('select v from t').all()).toEqual([]);
      // A unit that fails on its own (a duplicate) costs only itself.
      const next = await Promise.allSettled([batch.run(insert('a')), batch.run(insert('a')), batch.run(insert('c'))]);
      expect(next.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect(sqlite.prepare('select v from t order by v').all()).toEqual([{ v: 'a' }, { v: 'c' }]);
    } finally {
      sqlite.close();
    }
  });
});

describe.each(dialects())('migrations from an older store (%s)', (dialect) => {
  /** An empty database of its own: a temp SQLite file or a fresh PostgreSQL schema, not migrated. */
  async function emptyDatabase(): Promise<{ url: string; cleanup: () => Promise<void> }> {
    if (dialect === 'postgres') {
      const { url, drop } = await freshPostgresSchema();
      return { url, cleanup: drop };
    }
    const dir = mkdtempSync(join(tmpdir(), 'authcli-migrate-'));
    return { url: join(dir, 'old.db'), cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
  }

  /** Kysely's migrator over `engine`, with this version's migrations, as the engines run it. */
  async function migrator(engine: Awaited<ReturnType<typeof openEngine>>) {
    const schema =
      dialect === 'postgres' ? (await sql<{ s: string }>`select current_schema() as s`.execute(engine.db)).rows[0]!.s : undefined;
    return new Migrator({ db: engine.db, provider: migrationProvider, ...(schema && { migrationTableSchema: schema }) });
  }

  /**
   * A migrator run, tried again (as PostgresEngine.migrate does) when its listing of every schema's tables met
   * another test's schema being dropped.
   */
  async function run(migrate: () => Promise<MigrationResultSet>): Promise<MigrationResultSet> {
    for (let attempt = 1; ; attempt++) {
      const result = await migrate();
      const code = (result.error as { code?: string } | undefined)?.code;
      if (!result.error || attempt >= 3 || !['42703', '42P01', '3F000', 'XX000'].includes(code ?? '')) return result;
      await new Promise((r) => setTimeout(r, 50 * attempt));
    }
  }

  it('a store at 0016 with a confidential application migrates through 0017 to 0018: it keeps its secret and has no keys', async () => {
    const db = await emptyDatabase();
    const engine = await openEngine(db.url);
    try {
      const to16 = await migrator(engine);
      expect((await run(() => to16.migrateTo('0016_connectors'))).error).toBeUndefined();
      const secret = 'a secret of the old days';
      // As 0016 had the table: typed as a migration types it (the columns of that time).
      await (engine.db as unknown as Past)
        .insertInto('applications')
        .values({
          client_id: 'old-backend',
          owner_id: null,
          name: 'Old backend',
          kind: 'confidential',
          secret_hash: sha256Hex(secret),
          callback_urls: '["https://old.example/cb"]',
          scopes: 'openid',
          grant_types: '["authorization_code"]',
          id_token_alg: 'RS256',
          created_at: 1,
          updated_at: 1,
        })
        .execute();
      // 0017 (back-channel logout, made on another branch) runs first, then 0018: name order.
      const latest = await migrator(engine);
      const { error, results } = await run(() => latest.migrateToLatest());
      expect(error).toBeUndefined();
      expect(results?.map((r) => r.migrationName).slice(0, 2)).toEqual(['0017_backchannel_logout', '0018_private_key_jwt']);
      const store = new Store(engine);
      expect(await store.schemaIsCurrent()).toBe(true);
      expect(await store.applications.get('old-backend')).toMatchObject({ secretHash: sha256Hex(secret), clientKeys: null });
      expect(await store.clientAssertions.use('j', 2)).toBe(true);
    } finally {
      await engine.close();
      await db.cleanup();
    }
  });
});

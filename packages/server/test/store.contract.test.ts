import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { addUser, bootstrapStore, registerApplication } from '../src/bootstrap.js';
import { openStore, parseDatabaseUrl, syncConnection, WAL_LIMIT_PAGES } from '../src/store/open.js';
import { BackgroundCheckpointer } from '../src/store/checkpointer.js';
import { GroupCommit } from '../src/store/group-commit.js';
import { APPLICATION_CACHE_MS } from '../src/config/defaults.js';
import { StoreError, type Store } from '../src/store/store.js';
import { generateSigningKey } from '../src/oauth/keys.js';
import { pendingDeviceAuthorization } from '../src/oauth/device-authorization.js';
import { sha256Hex } from '../src/util/crypto.js';
import { dialects, freshStore } from './helpers.js';

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

  it('migrations are idempotent', async () => {
    await store.migrate();
    await store.migrate();
    await store.ping();
  });

  it("migrations find their own tables, not another schema's (PostgreSQL: two stores side by side in one database)", async () => {
    // This store's schema already holds Kysely's migration tables; a second, empty schema in the same database
    // must still get its own instead of taking this one's for them.
    const second = await freshStore(dialect);
    try {
      await second.store.migrate();
      await second.store.ping();
      expect(await second.store.countUsers()).toBe(0);
    } finally {
      await second.cleanup();
    }
  });

  it('first start creates the built-in public authcli application, once', async () => {
    const app = await store.getApplication('authcli');
    expect(app).toMatchObject({ kind: 'public', callbackUrls: ['http://127.0.0.1/callback'], secretHash: null });
    expect(app!.grantTypes).toContain('urn:ietf:params:oauth:grant-type:device_code');
    await store.deleteApplication('authcli');
    await bootstrapStore(store, now);
    expect(await store.getApplication('authcli')).toBeUndefined();
  });

  it('users: scrypt hash stored, username unique', async () => {
    const u = await addUser(store, { username: 'carol', password: 'pa55word!' }, now);
    expect(u.password_hash).toMatch(/^scrypt\$/);
    expect(u.password_hash).not.toContain('pa55word!');
    await expect(addUser(store, { username: 'carol', password: 'another1!' }, now)).rejects.toMatchObject({ code: 'duplicate' });
    expect((await store.findUserByUsername('carol'))?.id).toBe(u.id);
    await store.setUserDisabled('carol', now);
    expect((await store.findUserById(u.id))?.disabled_at).toBe(now);
    await expect(store.setUserDisabled('nobody', now)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('applications: secret stored as SHA-256 only; lists round-trip', async () => {
    const { app, clientSecret } = await registerApplication(
      store,
      { name: 'CI', kind: 'confidential', callbackUrls: ['https://ci.example/cb', 'http://127.0.0.1/cb'], scopes: ['openid', 'email'] },
      now,
    );
    expect(clientSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const stored = await store.getApplication(app.clientId);
    expect(stored!.secretHash).toBe(sha256Hex(clientSecret!));
    expect(stored!.callbackUrls).toEqual(['https://ci.example/cb', 'http://127.0.0.1/cb']);
    expect(stored!.scopes).toEqual(['openid', 'email']);
    const updated = await store.updateApplication(app.clientId, { name: 'CI 2', scopes: ['openid'] }, now + 1);
    expect(updated).toMatchObject({ name: 'CI 2', scopes: ['openid'], updatedAt: now + 1 });
    await expect(store.updateApplication('missing', { name: 'x' }, now)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('sessions: found by hash while live and the user enabled', async () => {
    const u = await addUser(store, { username: 'dave', password: 'pa55word!' }, now);
    await store.createSession({ id_hash: 'h1', user_id: u.id, auth_time: now, created_at: now, expires_at: now + 1000 });
    expect((await store.findSession('h1', now))?.user.username).toBe('dave');
    expect(await store.findSession('h1', now + 1000)).toBeUndefined();
    await store.setUserDisabled('dave', now);
    expect(await store.findSession('h1', now)).toBeUndefined();
  });

  it('consent is remembered per user, application and scope set', async () => {
    const u = await addUser(store, { username: 'erin', password: 'pa55word!' }, now);
    const { app } = await registerApplication(store, { name: 'A', kind: 'public', callbackUrls: ['https://a.example/cb'], scopes: ['openid', 'profile', 'email'] }, now);
    expect(await store.hasConsent(u.id, app.clientId, ['openid'])).toBe(false);
    await store.addConsent(u.id, app.clientId, ['profile', 'openid'], now);
    await store.addConsent(u.id, app.clientId, ['openid', 'profile'], now);
    expect(await store.hasConsent(u.id, app.clientId, ['openid'])).toBe(true);
    expect(await store.hasConsent(u.id, app.clientId, ['openid', 'profile'])).toBe(true);
    expect(await store.hasConsent(u.id, app.clientId, ['openid', 'email'])).toBe(false);
  });

  it('authorization code consumption is atomic: one winner among concurrent consumers', async () => {
    const u = await addUser(store, { username: 'frank', password: 'pa55word!' }, now);
    const { app } = await registerApplication(store, { name: 'B', kind: 'public', callbackUrls: ['http://127.0.0.1/cb'], scopes: ['openid'] }, now);
    const code = {
      code_hash: 'c1',
      client_id: app.clientId,
      user_id: u.id,
      redirect_uri: 'http://127.0.0.1/cb',
      code_challenge: 'x'.repeat(43),
      code_challenge_method: 'S256',
      scope: 'openid',
      nonce: null,
      auth_time: now,
      created_at: now,
      expires_at: now + 60_000,
    };
    // Foreign keys hold on both stores: a code for an unknown client is refused.
    await expect(store.insertCode({ ...code, code_hash: 'c0', client_id: 'nope' })).rejects.toThrow();
    await store.insertCode(code);
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => store.consumeCode('c1', `g${i}`, now)));
    expect(results.filter(Boolean)).toHaveLength(1);
    const row = await store.findCode('c1');
    expect(row!.consumed_at).toBe(now);
    expect(row!.grant_id).toBe(`g${results.indexOf(true)}`);
    expect(await store.consumeCode('c1', 'again', now)).toBe(false);
  });

  it('redeeming a code into a grant: one winner, and the losers leave no grant behind', async () => {
    const u = await store.findUserByUsername('frank');
    const row = await store.findCode('c1');
    await store.insertCode({ ...row!, code_hash: 'c3', user_id: u!.id, expires_at: now + 60_000 });
    const grant = (id: string) => ({ id, client_id: row!.client_id, user_id: u!.id, scope: 'openid', auth_time: now, created_at: now, expires_at: now + 1000, revoked_at: null });
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => store.redeemCode('c3', grant(`r${i}`), now)));
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = `r${results.indexOf(true)}`;
    expect((await store.findCode('c3'))!.grant_id).toBe(winner);
    for (let i = 0; i < 8; i++) {
      expect(await store.findGrant(`r${i}`), `r${i}`).toEqual(`r${i}` === winner ? expect.objectContaining({ id: winner }) : undefined);
    }
  });

  it('redemptions that arrive together stand or fall each on its own: a failing one undoes only its own writes', async () => {
    const u = await store.findUserByUsername('frank');
    const row = await store.findCode('c1');
    for (const h of ['c4', 'c5', 'c6']) await store.insertCode({ ...row!, code_hash: h, user_id: u!.id, expires_at: now + 60_000 });
    const grant = (id: string) => ({ id, client_id: row!.client_id, user_id: u!.id, scope: 'openid', auth_time: now, created_at: now, expires_at: now + 1000, revoked_at: null });
    const refresh = (hash: string, grantId: string) => ({ token_hash: hash, grant_id: grantId, created_at: now, expires_at: now + 1000, used_at: null });
    // c4 and c5 want the same refresh-token hash: whichever runs second fails at its last step, after its grant
    // and its code's consumption ran (on SQLite that is c5, in batch order; on PostgreSQL the race decides).
    const [c4, c5, c6] = await Promise.allSettled([
      store.redeemCode('c4', grant('g4'), now, refresh('rt-taken', 'g4')),
      store.redeemCode('c5', grant('g5'), now, refresh('rt-taken', 'g5')),
      store.redeemCode('c6', grant('g6'), now, refresh('rt6', 'g6')),
    ]);
    expect(c6).toEqual({ status: 'fulfilled', value: true });
    expect([c4.status, c5.status].sort()).toEqual(['fulfilled', 'rejected']);
    const [won, lost] = c4.status === 'fulfilled' ? ['4', '5'] : ['5', '4'];
    expect(c4.status === 'fulfilled' ? c4.value : c5.status === 'fulfilled' && c5.value).toBe(true);
    expect(await store.findCode(`c${lost}`)).toMatchObject({ consumed_at: null, grant_id: null });
    expect(await store.findGrant(`g${lost}`)).toBeUndefined();
    expect(await store.findCode(`c${won}`)).toMatchObject({ consumed_at: now, grant_id: `g${won}` });
    expect(await store.findCode('c6')).toMatchObject({ consumed_at: now, grant_id: 'g6' });
    expect(await store.findRefreshToken('rt-taken')).toMatchObject({ grant_id: `g${won}` });
    expect(await store.findRefreshToken('rt6')).toMatchObject({ grant_id: 'g6' });
    // The failed one can be redeemed afterwards: nothing of it was left half-done.
    expect(await store.redeemCode(`c${lost}`, grant(`g${lost}`), now, refresh('rt-later', `g${lost}`))).toBe(true);
    // Alone in its turn, a losing redemption leaves nothing behind either.
    expect(await store.redeemCode(`c${lost}`, grant('g-again'), now, refresh('rt-again', 'g-again'))).toBe(false);
    expect(await store.findGrant('g-again')).toBeUndefined();
    expect(await store.findRefreshToken('rt-again')).toBeUndefined();
  });

  it('an expired code cannot be consumed', async () => {
    const u = await store.findUserByUsername('frank');
    const row = await store.findCode('c1');
    await store.insertCode({ ...row!, code_hash: 'c2', user_id: u!.id, expires_at: now + 10 });
    expect(await store.consumeCode('c2', 'g', now + 10)).toBe(false);
  });

  it('grants are revoked idempotently', async () => {
    const u = await store.findUserByUsername('frank');
    const row = await store.findCode('c1');
    await store.insertGrant({ id: 'grant1', client_id: row!.client_id, user_id: u!.id, scope: 'openid', auth_time: now, created_at: now, expires_at: now + 1000, revoked_at: null });
    await store.revokeGrant('grant1', now + 5);
    await store.revokeGrant('grant1', now + 9);
    expect((await store.findGrant('grant1'))?.revoked_at).toBe(now + 5);
  });

  it('key rotation retires the previous key and keeps it listed while published', async () => {
    const k1 = await generateSigningKey('ES256', now);
    await store.insertSigningKey(k1);
    const k2 = await generateSigningKey('ES256', now + 100);
    await store.rotateSigningKeys([k2], now + 100);
    const listed = await store.listSigningKeys(now);
    expect(listed.map((k) => k.kid)).toEqual(expect.arrayContaining([k1.kid, k2.kid]));
    expect(listed.find((k) => k.kid === k1.kid)!.retired_at).toBe(now + 100);
    expect(listed.find((k) => k.kid === k2.kid)!.retired_at).toBeNull();
    const later = await store.listSigningKeys(now + 101);
    expect(later.map((k) => k.kid)).not.toContain(k1.kid);
  });

  it('settings: the first writer wins under concurrency', async () => {
    const values = await Promise.all(Array.from({ length: 8 }, (_, i) => store.getOrCreateSetting('race', () => `v${i}`)));
    expect(new Set(values).size).toBe(1);
  });

  it("applications: this instance's changes count at once, another instance's within the lookup cache time", async () => {
    const { app } = await registerApplication(store, { name: 'Cached', kind: 'public', callbackUrls: ['http://127.0.0.1/cb'], scopes: ['openid'] }, now);
    expect((await store.getApplication(app.clientId))!.name).toBe('Cached');
    await store.updateApplication(app.clientId, { name: 'Renamed' }, now + 1);
    expect((await store.getApplication(app.clientId))!.name).toBe('Renamed');
    expect(Object.isFrozen((await store.getApplication(app.clientId))!.callbackUrls)).toBe(true);

    const other = await openStore(url);
    try {
      await other.updateApplication(app.clientId, { name: 'Elsewhere' }, now + 2);
      await other.deleteApplication(app.clientId);
      await new Promise((r) => setTimeout(r, APPLICATION_CACHE_MS + 50));
      expect(await store.getApplication(app.clientId)).toBeUndefined();
    } finally {
      await other.close();
    }
    await store.deleteApplication('nope').catch(() => undefined);
    expect(await store.getApplication(app.clientId)).toBeUndefined();
  });

  let deviceClient: string;
  it('device polls that arrive together are each answered on their own and all recorded (RFC 8628 §3.5)', async () => {
    deviceClient = (await registerApplication(store, { name: 'TV', kind: 'public', callbackUrls: ['http://127.0.0.1/cb'], scopes: ['openid'] }, now)).app.clientId;
    const row = (hash: string, userCode: string) =>
      pendingDeviceAuthorization({ deviceCodeHash: hash, userCode, clientId: deviceClient, scope: 'openid', now });
    await store.insertDeviceAuthorization(row('dA', 'BBBBCCCC'));
    await store.insertDeviceAuthorization(row('dB', 'BBBBDDDD'));
    const answers = await Promise.all([
      store.recordDevicePoll('dA', deviceClient, now + 1000),
      store.recordDevicePoll('dA', deviceClient, now + 1001),
      store.recordDevicePoll('dB', deviceClient, now + 1000),
      store.recordDevicePoll('dB', 'someone-else', now + 1000),
      store.recordDevicePoll('missing', deviceClient, now + 1000),
    ]);
    // The two polls of dA race (on PostgreSQL they run on two pooled connections in either order): whichever
    // comes second is too early and slowed down, never both, never neither.
    const [a1, a2, ...rest] = answers;
    expect([a1, a2].sort((x, y) => Number(x!.slowed) - Number(y!.slowed))).toEqual([{ slowed: false }, { interval_s: 10, slowed: true }]);
    expect(rest).toEqual([{ slowed: false }, undefined, undefined]);
    const dA = await store.findDeviceByCodeHash('dA');
    expect(dA).toMatchObject({ interval_s: 10, last_poll_slowed: 1 });
    expect([now + 1000, now + 1001]).toContain(dA!.last_poll_at);
    expect(await store.findDeviceByCodeHash('dB')).toMatchObject({ interval_s: 5, last_poll_at: now + 1000, last_poll_slowed: 0 });
  });

  it('work issued while a transaction is open neither joins it nor is lost when it rolls back', async () => {
    let began!: () => void;
    const open = new Promise<void>((r) => (began = r));
    const doomed = store.db
      .transaction()
      .execute(async (trx) => {
        await trx.updateTable('device_authorizations').set({ scope: 'changed' }).where('device_code_hash', '=', 'dB').execute();
        began();
        await new Promise((r) => setTimeout(r, 50));
        throw new Error('roll back');
      })
      .catch((err: Error) => err.message);
    await open;
    const [poll, grantAdded] = await Promise.all([
      store.recordDevicePoll('dB', deviceClient, now + 20_000),
      store.insertGrant({ id: 'outside', client_id: deviceClient, user_id: (await store.findUserByUsername('frank'))!.id, scope: 'openid', auth_time: now, created_at: now, expires_at: now + 1000, revoked_at: null }),
      doomed,
    ]);
    expect(await doomed).toBe('roll back');
    expect(poll).toEqual({ slowed: false });
    expect(grantAdded).toBeUndefined();
    expect(await store.findDeviceByCodeHash('dB')).toMatchObject({ scope: 'openid', last_poll_at: now + 20_000 });
    expect(await store.findGrant('outside')).toMatchObject({ id: 'outside' });
  });
});

describe('embedded store: write-ahead log checkpoints off the event loop', () => {
  it('a background thread moves committed pages into the database file; closing stops it and removes the log', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'authcli-ckpt-'));
    const file = join(dir, 'a.db');
    try {
      const store = await openStore(file, { backgroundCheckpoints: true });
      await store.migrate();
      await bootstrapStore(store, Date.now());
      const pragma = async (name: string) => Object.values((await sql<Record<string, number>>`${sql.raw(`pragma ${name}`)}`.execute(store.db)).rows[0]!)[0];
      expect(await pragma('wal_autocheckpoint')).toBe(WAL_LIMIT_PAGES); // the commits checkpoint only past the bound
      await new Promise((r) => setTimeout(r, 200));
      const before = statSync(file).size;
      const now = Date.now();
      for (let i = 0; i < 2000; i++) {
        await store.insertDeviceAuthorization(
          pendingDeviceAuthorization({ deviceCodeHash: sha256Hex(`d${i}`), userCode: `U${i}`.padEnd(8, 'X'), clientId: 'authcli', scope: 'openid', now }),
        );
      }
      const deadline = Date.now() + 5000;
      while (statSync(file).size <= before + 100_000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      expect(statSync(file).size).toBeGreaterThan(before + 100_000);
      await store.close();
      expect(existsSync(`${file}-wal`)).toBe(false); // the checkpointer's connection closed first: the last close cleans up
      const reopened = await openStore(file);
      expect((await reopened.findDeviceByCodeHash(sha256Hex('d1999')))?.status).toBe('pending');
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
        await store.insertDeviceAuthorization(
          pendingDeviceAuthorization({ deviceCodeHash: sha256Hex(`w${i}`), userCode: `W${i}`.padEnd(8, 'X'), clientId: 'authcli', scope: 'openid', now }),
        );
        most = Math.max(most, walPages());
      }
      // Each insert writes a few pages; without the bound the log would hold them all (well over 600 pages).
      expect(most).toBeLessThan(64 + 16);
      expect(await store.findDeviceByCodeHash(sha256Hex('w599'))).toMatchObject({ status: 'pending' });
      await store.close();
      const reopened = await openStore(file);
      expect(await reopened.db.selectFrom('device_authorizations').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).toEqual({ n: 600 });
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
      const store = await openStore(join(dir, 'b.db'));
      const rows = (await sql<Record<string, number>>`pragma wal_autocheckpoint`.execute(store.db)).rows;
      expect(Object.values(rows[0]!)[0]).toBe(1000);
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

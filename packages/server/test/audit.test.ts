import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTime } from '../src/admin/audit.js';
import type { Past } from '../src/store/migrations/past.js';
import { openStore } from '../src/store/open.js';
import { OPERATOR, type Store } from '../src/store/store.js';
import { dialects, freshStore } from './helpers.js';

/** The store's own Kysely instance, for what a test does behind its back (an attacker with the database). */
// biome-ignore lint/complexity/useLiteralKeys: the engine is private to the store; this test tampers as an attacker with the database would.
const dbOf = (store: Store) => store['engine'].db;

const user = (name: string) => ({
  id: randomUUID(),
  username: name,
  password_hash: 'x',
  is_admin: 0,
  disabled_at: null,
  created_at: 1,
});

describe('audit times', () => {
  it('an age counts back from now; a date is midnight UTC; anything else is refused', () => {
    const now = Date.parse('2026-11-29T12:00:00Z');
    expect(parseTime('24h', now)).toBe(now - 86_400_000);
    expect(parseTime('90m', now)).toBe(now - 5_400_000);
    expect(parseTime('7d', now)).toBe(now - 7 * 86_400_000);
    expect(parseTime('2026-11-28', now)).toBe(Date.parse('2026-11-28T00:00:00Z'));
    expect(parseTime('2026-11-28T08:30:00Z', now)).toBe(Date.parse('2026-11-28T08:30:00Z'));
    for (const bad of ['yesterday', '1w', '', '2026-13-45', '-1d', '24 h']) expect(() => parseTime(bad, now), bad).toThrow(/since must be/);
  });
});

describe.each(dialects())('audit trail (%s)', (dialect) => {
  let store: Store;
  let url: string;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ store, url, cleanup } = await freshStore(dialect));
  });
  afterAll(async () => cleanup());

  const append = (action: string, at = Date.now(), detail: Record<string, unknown> = {}) =>
    store.audit.append({ at, actor: OPERATOR, action, target: { type: 'user', id: 'u1', name: 'alice' }, detail });

  it('rows chain; verify names the row that was changed, removed, or whose successor was cut off', async () => {
    for (let i = 0; i < 5; i++) await append('user.updated', Date.now(), { name: { from: `a${i}`, to: `b${i}` } });
    const intact = await store.audit.verify();
    expect(intact).toMatchObject({ ok: true });
    const rows = await store.audit.list({ order: 'asc' });
    const third = rows[2]!;
    const db = dbOf(store);
    // A changed detail: the row's own hash no longer matches.
    await db.updateTable('audit_events').set({ detail: '{"name":{"from":"x","to":"y"}}' }).where('seq', '=', third.seq).execute();
    expect(await store.audit.verify()).toMatchObject({ ok: false, seq: third.seq, reason: expect.stringMatching(/changed/) });
    // Its hash recomputed as well: the next row names the old one.
    const { auditHash } = await import('../src/store/repositories/audit.js');
    const edited = { ...third, detail: '{"name":{"from":"x","to":"y"}}' };
    await db
      .updateTable('audit_events')
      .set({ hash: auditHash(third.prev_hash, edited) })
      .where('seq', '=', third.seq)
      .execute();
    expect(await store.audit.verify()).toMatchObject({
      ok: false,
      seq: third.seq + 1,
      reason: `row ${third.seq} was changed: this row chains to another hash`,
    });
    // Put back, then a row removed from the middle.
    await db.updateTable('audit_events').set({ detail: third.detail, hash: third.hash }).where('seq', '=', third.seq).execute();
    expect(await store.audit.verify()).toMatchObject({ ok: true });
    await db.deleteFrom('audit_events').where('seq', '=', third.seq).execute();
    expect(await store.audit.verify()).toMatchObject({
      ok: false,
      seq: third.seq + 1,
      reason: `rows ${third.seq} to ${third.seq} are missing`,
    });
    await db.insertInto('audit_events').values(third).execute();
    // The newest row removed: the head still names it.
    const last = rows.at(-1)!;
    await db.deleteFrom('audit_events').where('seq', '=', last.seq).execute();
    expect(await store.audit.verify()).toMatchObject({ ok: false, seq: last.seq, reason: `rows ${last.seq} to ${last.seq} are missing` });
    await db.insertInto('audit_events').values(last).execute();
    expect(await store.audit.verify()).toMatchObject({ ok: true });
  });

  it('retention removes the oldest rows and says so; rows removed before them otherwise are caught', async () => {
    const old = Date.now() - 400 * 86_400_000;
    await append('user.created');
    const before = (await store.audit.list({ order: 'asc', limit: 500 })).length;
    await append('signin.password', old);
    await append('signin.password', Date.now());
    // Rows go in chain order, up to the newest one older than the cutoff (rows are appended as time passes).
    const deleted = await store.audit.prune(Date.now() - 365 * 86_400_000, Date.now());
    expect(deleted).toBe(before + 1);
    const kept = await store.audit.list({ order: 'asc' });
    expect(kept.at(-1)).toMatchObject({ action: 'audit.pruned', actor: 'system' });
    expect(JSON.parse(kept.at(-1)!.detail)).toMatchObject({ rows: deleted, through_seq: kept[0]!.seq - 1 });
    expect(await store.audit.verify()).toMatchObject({ ok: true, first: kept[0]!.seq });
    // Someone removes the oldest row kept: no audit.pruned row accounts for it.
    await dbOf(store).deleteFrom('audit_events').where('seq', '=', kept[0]!.seq).execute();
    expect(await store.audit.verify()).toMatchObject({
      ok: false,
      seq: kept[1]!.seq,
      reason: expect.stringMatching(/rows before .* are missing/),
    });
    await dbOf(store).insertInto('audit_events').values(kept[0]!).execute();
    expect(await store.audit.verify()).toMatchObject({ ok: true });
    // Nothing old enough: nothing removed, no row added.
    expect(await store.audit.prune(Date.now() - 365 * 86_400_000, Date.now())).toBe(0);
    expect((await store.audit.list({ order: 'asc' })).length).toBe(kept.length);
  });

  it('a change and its audit row commit together or not at all; rows are shipped only once committed', async () => {
    const shipped: string[] = [];
    store.audit.ship((r) => shipped.push(r.action));
    await expect(
      store.changes(async () => {
        await store.users.create(user('rolled-back'));
        await append('user.created');
        expect(shipped).toEqual([]);
        throw new Error('the operation failed after its row was written');
      }),
    ).rejects.toThrow(/failed after/);
    expect(await store.users.findByUsername('rolled-back')).toBeUndefined();
    expect(shipped).toEqual([]);
    expect(await store.audit.verify()).toMatchObject({ ok: true });
    await store.changes(async () => {
      await store.users.create(user('kept'));
      await append('user.created');
      // Work started inside the change that outlives it runs on its own, not on the finished transaction.
      setTimeout(() => void store.users.findByUsername('kept'), 0);
    });
    expect(await store.users.findByUsername('kept')).toBeDefined();
    expect(shipped).toEqual(['user.created']);
    await new Promise((r) => setTimeout(r, 20));
    expect(await store.users.findByUsername('kept')).toBeDefined();
  });

  it('60 appends at once (from two instances on PostgreSQL) each get the next seq, with no gap, and the chain holds', async () => {
    // Two SQLite connections in one process would wait on each other's locks on one thread: the embedded store's
    // second writer is another process (the operator CLI), tried in the operator's end-to-end tests.
    const other = dialect === 'postgres' ? await openStore(url) : store;
    try {
      const before = (await store.audit.verify()) as { last: number };
      await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          (i % 2 ? other : store).changes(async () => {
            await (i % 2 ? other : store).audit.append({ at: Date.now(), actor: OPERATOR, action: 'app.updated', detail: { i } });
          }),
        ),
      );
      const verdict = await store.audit.verify();
      expect(verdict).toMatchObject({ ok: true, last: before.last + 60 });
      const seqs = (await store.audit.list({ order: 'asc', limit: 500 })).map((r) => Number(r.seq));
      expect(new Set(seqs).size).toBe(seqs.length);
    } finally {
      if (other !== store) await other.close();
    }
  });

  it('filters: by time, action or its kind, actor and target; pages by seq', async () => {
    const t0 = Date.now() + 1000;
    await store.audit.append({
      at: t0,
      actor: { type: 'client', id: 'ci-bot', name: 'CI' },
      action: 'user.created',
      target: { type: 'user', id: 'u-9' },
    });
    await store.audit.append({
      at: t0 + 1,
      actor: { type: 'client', id: 'ci-bot', name: 'CI' },
      action: 'app.deleted',
      target: { type: 'app', id: 'c-1' },
    });
    expect((await store.audit.list({ since: t0 })).map((r) => r.action)).toEqual(['user.created', 'app.deleted']);
    expect((await store.audit.list({ since: t0, type: 'user' })).map((r) => r.action)).toEqual(['user.created']);
    expect((await store.audit.list({ since: t0, type: 'app.deleted' })).map((r) => r.target)).toEqual(['c-1']);
    // A kind is a prefix before the dot, never a LIKE pattern of the caller's.
    expect(await store.audit.list({ type: '%' })).toEqual([]);
    expect((await store.audit.list({ actor: 'ci-bot', order: 'desc', limit: 1 })).map((r) => r.action)).toEqual(['app.deleted']);
    const [newest] = await store.audit.list({ actor: 'ci-bot', order: 'desc', limit: 1 });
    expect((await store.audit.list({ actor: 'ci-bot', order: 'desc', after: Number(newest!.seq) })).map((r) => r.action)).toEqual([
      'user.created',
    ]);
    expect(await store.audit.list({ target: 'u-9', until: t0 })).toEqual([]);
  });

  it('a lost race inside a change rolls back only its own steps', async () => {
    const { Prepared } = await import('../src/store/prepared.js');
    const touch = new Prepared<'id', never>('test_touch', ['id'], (db, p) =>
      db.updateTable('users').set({ disabled_at: 5 }).where('id', '=', p.id),
    );
    const kept = await store.users.create(user(`race-${randomUUID().slice(0, 8)}`));
    // biome-ignore lint/complexity/useLiteralKeys: the engine's atomic sequence, as the repositories call it
    const engine = store['engine'];
    await store.changes(async () => {
      expect(
        await engine.atomically('t', [
          { q: touch, values: { id: kept.id } },
          { q: touch, values: { id: 'nobody' }, mustChange: true },
        ]),
      ).toBe(false);
      await append('user.updated');
    });
    expect((await store.users.findById(kept.id))!.disabled_at).toBeNull();
    expect((await store.audit.list({ order: 'desc', limit: 1 }))[0]!.action).toBe('user.updated');
  });
  it('migration 0024: the sign-in records of a store migrated before it become audit rows, in order, chained', async () => {
    const own = await freshStore(dialect);
    try {
      // The schema as it stood before 0024 (migrations' own untyped view): signin_events, kysely_migration.
      const db: Past = dbOf(own.store);
      const alice = await own.store.users.create(user(`migrated-${randomUUID().slice(0, 6)}`));
      await own.store.audit.append({ at: 1, actor: OPERATOR, action: 'user.created', target: { type: 'user', id: alice.id } });
      // Back to before 0024: the table, its rows as 0013 and 0019 wrote them, and the migration not yet run.
      await sql`create table signin_events (id text primary key, user_id text not null, at bigint not null, kind text not null, client_ip text not null, device_ip text, client_id text, detail text)`.execute(
        db,
      );
      await db.deleteFrom('kysely_migration').where('name', '=', '0024_signins_audited').execute();
      // And the migrations after it, undone, so that they run again after it.
      await db.deleteFrom('kysely_migration').where('name', '=', '0025_application_lifetimes').execute();
      for (const column of ['access_token_ttl', 'refresh_token_ttl'])
        await db.schema.alterTable('applications').dropColumn(column).execute();
      await db
        .insertInto('signin_events')
        .values([
          {
            id: 'b',
            user_id: alice.id,
            at: 2000,
            kind: 'device-approved',
            client_ip: '198.51.100.4',
            device_ip: '192.0.2.10',
            client_id: 'cli',
            detail: null,
          },
          {
            id: 'a',
            user_id: alice.id,
            at: 1000,
            kind: 'password',
            client_ip: '192.0.2.1',
            device_ip: null,
            client_id: null,
            detail: null,
          },
          {
            id: 'c',
            user_id: alice.id,
            at: 3000,
            kind: 'passkey-added',
            client_ip: '192.0.2.1',
            device_ip: null,
            client_id: null,
            detail: 'Laptop',
          },
        ])
        .execute();
      await own.store.migrate();
      expect(await own.store.audit.verify()).toMatchObject({ ok: true, rows: 4 });
      expect(
        (await own.store.signInEvents.recent(alice.id, 3000)).map((e) => [e.kind, e.at, e.client_ip, e.device_ip, e.client_id, e.detail]),
      ).toEqual([
        ['passkey-added', 3000, '192.0.2.1', null, null, 'Laptop'],
        ['device-approved', 2000, '198.51.100.4', '192.0.2.10', 'cli', null],
        ['password', 1000, '192.0.2.1', null, null, null],
      ]);
      expect((await own.store.audit.list({ target: alice.id }))[1]).toMatchObject({
        actor: alice.id,
        actor_name: alice.username,
        action: 'signin.password',
      });
      // Appending goes on from the head the migration left.
      await own.store.audit.append({ at: 4000, actor: OPERATOR, action: 'user.updated' });
      expect(await own.store.audit.verify()).toMatchObject({ ok: true, rows: 5 });
    } finally {
      await own.cleanup();
    }
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { loadConfig, type ServerConfig } from '../src/config/config.js';
import type { PostOutcome } from '../src/http/outbound.js';
import { BackchannelDelivery } from '../src/oauth/backchannel-delivery.js';
import { BACKCHANNEL_LOGOUT_EVENT } from '../src/oauth/backchannel-logout.js';
import { type KeyRing, serverKeyRing } from '../src/oauth/keys.js';
import { registerApplication } from '../src/oauth/registration.js';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';
import type { BackchannelOutcome } from '../src/util/metrics.js';
import { dialects, freshStore, TestClock } from './helpers.js';

/** What the deliveries reported, outcome by outcome, and what they logged. */
function recorder() {
  const outcomes: BackchannelOutcome[] = [];
  const logged: Record<string, unknown>[] = [];
  return {
    outcomes,
    logged,
    metrics: {
      tokenIssued: () => undefined,
      tokenError: () => undefined,
      rateLimited: () => undefined,
      backchannelLogout: (o: BackchannelOutcome) => outcomes.push(o),
    },
    log: { warn: (fields: Record<string, unknown>, message: string) => logged.push({ ...fields, message }) },
  };
}

const status = (s: number): PostOutcome => ({ kind: 'answered', status: s });
const SETTINGS = {
  timeoutMs: 1000,
  retryDelaysMs: [1000, 4000],
  retryMaxMs: 60_000,
  sessionDeadlineMs: 10 * 60_000,
  accessDeadlineMs: 60 * 60_000,
  concurrency: 4,
  pendingPerClient: 50,
  pollMs: 3_600_000,
};

/**
 * The back-channel logout outbox (OpenID Connect Back-Channel Logout 1.0 §2.5, §2.8): logout tokens the server
 * accepted are rows in the store, tried with growing waits on an injected clock, claimed with a lease so that of
 * several instances (each its own store connection) exactly one posts each attempt, and given up only past their
 * deadline. The running server's side (pages, restarts, two processes) is test/backchannel-logout.e2e.test.ts.
 */
describe.each(dialects())('the back-channel logout outbox (%s)', (dialect) => {
  let store: Store;
  let url: string;
  let cleanup: () => Promise<void>;
  let keys: KeyRing;
  const clock = new TestClock(Date.UTC(2026, 10, 29, 12));
  const config = (overrides: Partial<typeof SETTINGS> = {}): ServerConfig =>
    loadConfig(
      { port: 8080, host: '127.0.0.1', issuer: 'https://id.example' },
      {},
      {
        logLevel: 'silent',
        now: clock.now,
        backchannelLogout: { ...SETTINGS, ...overrides },
      },
    );

  beforeAll(async () => {
    ({ store, url, cleanup } = await freshStore(dialect));
    keys = serverKeyRing(store, config());
    await keys.init();
  });
  afterAll(async () => cleanup());
  // Tests run in any order on one store: what one leaves pending, the next one's deliveries must not find.
  afterEach(async () => {
    for (const row of await store.logoutOutbox.claim(Number.MAX_SAFE_INTEGER, 1, 100_000)) {
      await store.logoutOutbox.finish(row.id, row.attempts, { kind: 'given_up', error: 'left by a test' }, clock.now());
    }
  });

  /** An application with a back-channel logout URI of its own. */
  async function application(uri = 'https://rp.example/bcl') {
    const { app } = await registerApplication(
      store,
      { name: 'RP', kind: 'confidential', callbackUrls: ['https://rp.example/cb'], scopes: ['openid'], backchannelLogoutUri: uri },
      clock.now(),
    );
    return app;
  }

  /** A delivery over `on` (this test's store unless given another connection) whose transport answers from `answers`. */
  function delivery(answers: PostOutcome[], o: { settings?: Partial<typeof SETTINGS>; on?: Store } = {}) {
    const r = recorder();
    const posts: { url: string; token: string }[] = [];
    const cfg = config(o.settings);
    const d = new BackchannelDelivery({ config: cfg, store: o.on ?? store, keys }, r.metrics, r.log, async (target, form) => {
      posts.push({ url: target, token: form.logout_token! });
      return answers[Math.min(posts.length - 1, answers.length - 1)]!;
    });
    return { ...r, posts, d };
  }

  const rowOf = async (id: string) => (await store.logoutOutbox.list(10_000)).find((r) => r.id === id)!;
  const enqueue = (d: BackchannelDelivery, clientId: string, n = 1, giveUpAt = clock.now() + SETTINGS.sessionDeadlineMs) =>
    d.enqueue(
      Array.from({ length: n }, (_, i) => ({ clientId, sub: `user-${i}`, sid: `sid-${i}`, jti: `jti-${clientId}-${i}`, giveUpAt })),
    );

  it('§2.5 a logout is a row before it is posted; 2xx (204 too, §2.8) delivers it: a logout token signed for the application, the one form field', async () => {
    for (const answer of [200, 204]) {
      const app = await application();
      const t = delivery([status(answer)]);
      const [id] = await enqueue(t.d, app.clientId);
      await t.d.settle();
      expect(t.posts).toHaveLength(1);
      expect(t.posts[0]!.url).toBe('https://rp.example/bcl');
      expect(decodeProtectedHeader(t.posts[0]!.token)).toMatchObject({ typ: 'logout+jwt', alg: 'RS256' });
      expect(decodeJwt(t.posts[0]!.token)).toMatchObject({
        iss: 'https://id.example',
        aud: app.clientId,
        sub: 'user-0',
        sid: 'sid-0',
        jti: `jti-${app.clientId}-0`,
        events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
      });
      expect(await rowOf(id!)).toMatchObject({ state: 'delivered', attempts: 1, last_error: null, finished_at: clock.now() });
      expect(t.outcomes).toEqual(['delivered']);
      expect(t.logged).toEqual([]);
    }
  });

  it('no answer, 408, 429 and 5xx wait 1 s, 4 s, then fourfold up to retryMaxMs; each attempt signs the token anew with the same jti', async () => {
    const app = await application();
    const t = delivery([{ kind: 'unreachable', reason: 'ECONNREFUSED' }, status(408), status(429), status(503), status(500), status(200)]);
    const [id] = await enqueue(t.d, app.clientId);
    const waits = [1000, 4000, 16_000, 60_000, 60_000];
    for (const [i, wait] of waits.entries()) {
      await t.d.settle();
      expect(t.posts, `attempt ${i + 1}`).toHaveLength(i + 1);
      const row = await rowOf(id!);
      expect(row).toMatchObject({ state: 'pending', attempts: i + 1, next_attempt_at: clock.now() + wait, lease_until: null });
      // Not due yet: nothing is posted before its time.
      clock.advance(wait - 1);
      await t.d.settle();
      expect(t.posts).toHaveLength(i + 1);
      clock.advance(1);
    }
    await t.d.settle();
    expect(await rowOf(id!)).toMatchObject({ state: 'delivered', attempts: 6 });
    expect(new Set(t.posts.map((p) => decodeJwt(p.token).jti))).toEqual(new Set([`jti-${app.clientId}-0`]));
    expect(new Set(t.posts.map((p) => decodeJwt(p.token).iat)).size).toBeGreaterThan(1);
    expect(t.outcomes).toEqual(['retried', 'retried', 'retried', 'retried', 'retried', 'delivered']);
  });

  it('a refusal by the RP (400, 401, 404), a redirect (not followed) and a non-public address are given up at once, logged without the token', async () => {
    for (const answer of [status(400), status(401), status(404), status(302), { kind: 'refused', reason: 'not public' } as const]) {
      const app = await application();
      const t = delivery([answer, status(200)]);
      const [id] = await enqueue(t.d, app.clientId);
      await t.d.settle();
      expect(t.posts).toHaveLength(1);
      expect(await rowOf(id!)).toMatchObject({ state: 'given_up', attempts: 1 });
      expect(t.outcomes).toEqual(['failed']);
      expect(t.logged).toEqual([
        {
          clientId: app.clientId,
          reason: answer.kind === 'answered' ? `answered ${answer.status}` : 'not public',
          attempts: 1,
          message: 'back-channel logout given up',
        },
      ]);
      expect(JSON.stringify(t.logged)).not.toContain(t.posts[0]!.token);
    }
  });

  it('retried only while what it ends could be used: past its deadline a delivery is given up, logged and counted', async () => {
    const app = await application();
    const t = delivery([status(503)]);
    const [id] = await enqueue(t.d, app.clientId, 1, clock.now() + 4500);
    await t.d.settle(); // t=0, next at 1 s
    clock.advance(1000);
    await t.d.settle(); // t=1 s, next at 5 s: past 4.5 s
    expect(await rowOf(id!)).toMatchObject({
      state: 'given_up',
      attempts: 2,
      last_error: 'answered 503; past its deadline after 2 attempts',
    });
    expect(t.outcomes).toEqual(['retried', 'failed']);
  });

  it('the application gone, or its URI cleared, before an attempt: given up, nothing posted', async () => {
    const app = await application();
    const t = delivery([status(200)]);
    const [row] = await store.logoutOutbox.enqueue(
      [{ clientId: app.clientId, sub: 'u', jti: 'gone', giveUpAt: clock.now() + 60_000 }],
      clock.now(),
      1000,
    );
    await store.applications.update(app.clientId, { backchannelLogoutUri: null }, clock.now());
    await t.d.settle();
    expect(t.posts).toEqual([]);
    expect(await rowOf(row!.id)).toMatchObject({
      state: 'given_up',
      last_error: 'the application no longer has a back-channel logout URI',
    });
  });

  it('past pendingPerClient pending logouts of one application, a new one is given up at once, so a dead receiver cannot fill the store', async () => {
    const app = await application();
    const t = delivery([status(503)], { settings: { pendingPerClient: 3 } });
    const ids = await enqueue(t.d, app.clientId, 5);
    const rows = await Promise.all(ids.map(rowOf));
    expect(rows.map((r) => r.state)).toEqual(['pending', 'pending', 'pending', 'given_up', 'given_up']);
    expect(rows[4]!.last_error).toBe('3 logouts of this application are pending already');
    await t.d.settle();
    expect(t.posts).toHaveLength(3);
  });

  it('five instances claiming at once (each its own store connection): each of 40 logouts is posted exactly once', async () => {
    const app = await application();
    const connections = await Promise.all(Array.from({ length: 5 }, () => openStore(url)));
    try {
      const instances = connections.map((on) => delivery([status(200)], { on, settings: { concurrency: 8 } }));
      // Queued straight into the outbox (no delivery kicked), then claimed by all five at once.
      await store.logoutOutbox.enqueue(
        Array.from({ length: 40 }, (_, i) => ({ clientId: app.clientId, sub: 'u', jti: `parallel-${i}`, giveUpAt: clock.now() + 60_000 })),
        clock.now(),
        1000,
      );
      await Promise.all(instances.map((i) => i.d.settle()));
      const posted = instances.flatMap((i) => i.posts.map((p) => decodeJwt(p.token).jti as string));
      expect(posted.filter((j) => j.startsWith('parallel-')).sort()).toEqual(Array.from({ length: 40 }, (_, i) => `parallel-${i}`).sort());
    } finally {
      await Promise.all(connections.map((c) => c.close()));
    }
  });

  it('a claim whose lease ran out (its instance died mid-post) is claimed again; the first claimer, back late, cannot overwrite it', async () => {
    const app = await application();
    const [id] = await store.logoutOutbox.enqueue(
      [{ clientId: app.clientId, sub: 'u', jti: 'leased', giveUpAt: clock.now() + 60_000 }],
      clock.now(),
      1000,
    );
    const first = await store.logoutOutbox.claim(clock.now(), 1000, 10, [id!.id]);
    expect(first).toHaveLength(1);
    // Held: nobody else gets it until the lease runs out.
    expect(await store.logoutOutbox.claim(clock.now() + 999, 1000, 10, [id!.id])).toEqual([]);
    const second = await store.logoutOutbox.claim(clock.now() + 1000, 1000, 10, [id!.id]);
    expect(second.map((r) => r.attempts)).toEqual([2]);
    expect(await store.logoutOutbox.finish(id!.id, 1, { kind: 'given_up', error: 'late' }, clock.now())).toBe(false);
    expect(await store.logoutOutbox.finish(id!.id, 2, { kind: 'delivered' }, clock.now())).toBe(true);
    expect(await rowOf(id!.id)).toMatchObject({ state: 'delivered', attempts: 2 });
  });

  it('shutdown: an attempt still unanswered within the grace is cut and stays pending, for the next start or another instance', async () => {
    const app = await application();
    const r = recorder();
    const d = new BackchannelDelivery(
      { config: config(), store, keys },
      r.metrics,
      r.log,
      (_url, _form, options) =>
        new Promise<PostOutcome>((resolve) =>
          options.signal!.addEventListener('abort', () => resolve({ kind: 'unreachable', reason: 'cancelled' })),
        ),
    );
    const [id] = await enqueue(d, app.clientId);
    while (d.pending === 0) await new Promise((resolve) => setImmediate(resolve));
    await d.close(50);
    expect(await rowOf(id!)).toMatchObject({ state: 'pending', attempts: 1, last_error: 'cancelled', lease_until: null });
    expect(r.logged).toEqual([]);
    // The next instance takes it when it is due.
    const next = delivery([status(200)]);
    clock.advance(1000);
    await next.d.settle();
    expect(await rowOf(id!)).toMatchObject({ state: 'delivered', attempts: 2 });
  });
});

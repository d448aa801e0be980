import { describe, expect, it } from 'vitest';
import { PASSWORD_HASHES_PER_CLIENT, PASSWORD_HASH_QUEUE_DEADLINE_MS, passwordHashMsEstimate } from '../src/config/defaults.js';
import { PasswordHasherBusy, PasswordQueue, type PasswordQueueOptions, type RunTask } from '../src/util/password-pool.js';
import type { PasswordTask } from '../src/util/password-worker.js';

/**
 * The queue in front of the password-hashing threads (util/password-pool.ts), driven by the test: each hash
 * lasts until the test finishes it, and the clock that times hashes is the test's, so every order, bound and
 * estimate below is exact. The sign-in tests in abuse-limits.test.ts drive the same queue with real hashes
 * through the real server.
 */

interface Started {
  readonly label: string;
  finish(): void;
  fail(err: Error): void;
}

/** Hashes that last until the test ends them, in the order the queue started them, timed by `clock`. */
function threads(clock = { t: 0 }, hashMs = 0) {
  const started: Started[] = [];
  const run: RunTask = (task: PasswordTask) =>
    new Promise((resolve, reject) => {
      const label = task.op === 'verify' ? task.password : `hash ${task.password}`;
      started.push({
        label,
        finish: () => {
          clock.t += hashMs;
          resolve(true);
        },
        fail: reject,
      });
    });
  return { run, started, labels: () => started.map((s) => s.label), clock };
}

type Outcome = { state: 'waiting' } | { state: 'done' } | { state: 'busy'; retryAfter: number } | { state: 'failed'; err: unknown };

/** A hash asked of the queue, its outcome recorded as it settles. */
function ask(queue: PasswordQueue, label: string, client: string, device?: string): { outcome: Outcome } {
  const asked: { outcome: Outcome } = { outcome: { state: 'waiting' } };
  queue.run({ op: 'verify', password: label, stored: '' }, { client, device }).then(
    () => {
      asked.outcome = { state: 'done' };
    },
    (err: unknown) => {
      asked.outcome = err instanceof PasswordHasherBusy ? { state: 'busy', retryAfter: err.retryAfterSeconds } : { state: 'failed', err };
    },
  );
  return asked;
}

/** Lets settled hashes run their continuations (the next hash starts in one). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

const queueOf = (count: number, t: ReturnType<typeof threads>, options: Partial<PasswordQueueOptions> = {}) =>
  new PasswordQueue(count, t.run, {
    deadlineMs: PASSWORD_HASH_QUEUE_DEADLINE_MS,
    perClient: PASSWORD_HASHES_PER_CLIENT,
    initialHashMs: 100,
    now: () => t.clock.t,
    ...options,
  });

describe('the password-hash queue', () => {
  it('a burst is served in turn, in the order it came, and nothing is refused while it fits within the deadline', async () => {
    const t = threads();
    const queue = queueOf(1, t);
    // One thread, 0.1 s a hash, the default 20 s: 201 places, so 50 people at once all wait their turn.
    expect(queue.capacity).toBe(201);
    const asked = Array.from({ length: 50 }, (_, i) => ask(queue, `person ${i}`, `198.51.100.${i}`));
    await settle();
    expect(queue.pending).toBe(50);
    for (let i = 0; i < 50; i++) {
      expect(t.labels()).toHaveLength(i + 1);
      t.started[i]!.finish();
      await settle();
    }
    expect(t.labels()).toEqual(asked.map((_, i) => `person ${i}`));
    expect(asked.every((a) => a.outcome.state === 'done')).toBe(true);
    expect(queue.pending).toBe(0);
  });

  it('past what the threads can start within the deadline a hash is refused at once, with a Retry-After of the wait ahead', async () => {
    // Hashes take 1 s on the test's clock: 2 threads start 2 × (1 + 5) within 5 s.
    const t = threads({ t: 0 }, 1000);
    const queue = queueOf(2, t, { deadlineMs: 5000, initialHashMs: 1000 });
    expect(queue.capacity).toBe(12);
    const asked = Array.from({ length: 15 }, (_, i) => ask(queue, `person ${i}`, `198.51.100.${i}`));
    await settle();
    expect(asked.slice(0, 12).every((a) => a.outcome.state === 'waiting')).toBe(true);
    // 10 waiting on 2 threads: 5 s ahead of a newcomer.
    expect(asked.slice(12).map((a) => a.outcome)).toEqual(Array(3).fill({ state: 'busy', retryAfter: 5 }));
    expect(t.labels()).toEqual(['person 0', 'person 1']);
    // A hash that ends makes a place: the next newcomer waits instead.
    t.started[0]!.finish();
    await settle();
    const later = ask(queue, 'later', '203.0.113.1');
    await settle();
    expect(later.outcome.state).toBe('waiting');
    const tooLate = ask(queue, 'too late', '203.0.113.2');
    await settle();
    expect(tooLate.outcome.state).toBe('busy');
    expect(queue.pending).toBe(12);
  });

  it('a hash that has not started by its deadline is answered busy then, never later, and gives its place back', async () => {
    // The estimate says a millisecond a hash (thousands of places), but the first hash never ends: only the
    // deadline can answer the ones behind it.
    const t = threads();
    const queue = queueOf(1, t, { deadlineMs: 150, initialHashMs: 1, perClient: 3 });
    const began = performance.now();
    const [running, ...waiting] = ['a', 'b', 'c'].map((label) => ask(queue, label, '198.51.100.1'));
    const pastShare = ask(queue, 'past the share', '198.51.100.1');
    await settle();
    expect(pastShare.outcome.state).toBe('busy');
    expect(waiting.map((w) => w.outcome.state)).toEqual(['waiting', 'waiting']);
    await expect.poll(() => waiting.map((w) => w.outcome.state), { timeout: 2000, interval: 5 }).toEqual(['busy', 'busy']);
    const answeredAfter = performance.now() - began;
    expect(answeredAfter).toBeGreaterThanOrEqual(140);
    expect(answeredAfter).toBeLessThan(1000);
    expect(waiting[0]!.outcome).toEqual({ state: 'busy', retryAfter: 1 });
    expect(running!.outcome.state).toBe('waiting');
    // Their places are the client's again: two more wait (and the deadline answers them too).
    const again = [ask(queue, 'd', '198.51.100.1'), ask(queue, 'e', '198.51.100.1')];
    await settle();
    expect(again.map((a) => a.outcome.state)).toEqual(['waiting', 'waiting']);
    expect(t.labels()).toEqual(['a']);
    queue.close();
    await settle();
  });

  it('browsers where the person signed in before are served ahead of strangers, and take the last stranger’s place when full', async () => {
    // 1 s a hash, 4 s: 1 running and 4 waiting.
    const t = threads({ t: 0 }, 1000);
    const queue = queueOf(1, t, { deadlineMs: 4000, initialHashMs: 1000 });
    const strangers = Array.from({ length: 4 }, (_, i) => ask(queue, `stranger ${i}`, `198.51.100.${i}`));
    const owner = ask(queue, 'owner', '192.0.2.1', 'device-of-owner');
    await settle();
    expect(queue.pending).toBe(queue.capacity);
    // Full: another stranger is refused; a returning browser takes the place of the stranger who came last.
    const late = ask(queue, 'late stranger', '198.51.100.9');
    const second = ask(queue, 'second owner', '192.0.2.2', 'device-of-another');
    await settle();
    expect(late.outcome.state).toBe('busy');
    expect(strangers[3]!.outcome.state).toBe('busy');
    expect(second.outcome.state).toBe('waiting');
    for (let i = 0; i < 4; i++) {
      t.started[i]!.finish();
      await settle();
    }
    expect(t.labels()).toEqual(['stranger 0', 'owner', 'second owner', 'stranger 1', 'stranger 2']);
    expect([owner, second, ...strangers.slice(0, 2)].every((a) => a.outcome.state === 'done')).toBe(true);
    // A returning browser behind only returning browsers takes nobody's place: it is refused like anyone.
    const known = Array.from({ length: 6 }, (_, i) => ask(queue, `known ${i}`, `192.0.2.${10 + i}`, `device ${i}`));
    await settle();
    expect(known.map((k) => k.outcome.state)).toEqual(['waiting', 'waiting', 'waiting', 'waiting', 'busy', 'busy']);
    queue.close();
    await settle();
  });

  it('one client has at most its share of the places, running or waiting, known browser or not; an ended or failed hash gives it back', async () => {
    const t = threads();
    const queue = queueOf(1, t, { perClient: 3 });
    const mine = ['a0', 'a1', 'a2', 'a3'].map((label) => ask(queue, label, '198.51.100.1'));
    const mineKnown = ask(queue, 'a-known', '198.51.100.1', 'device');
    const other = ask(queue, 'b0', '198.51.100.2');
    await settle();
    expect(mine.map((a) => a.outcome.state)).toEqual(['waiting', 'waiting', 'waiting', 'busy']);
    expect(mine[3]!.outcome).toMatchObject({ retryAfter: expect.any(Number) });
    expect((mine[3]!.outcome as { retryAfter: number }).retryAfter).toBeGreaterThanOrEqual(1);
    expect(mineKnown.outcome.state).toBe('busy');
    expect(other.outcome.state).toBe('waiting');
    t.started[0]!.finish();
    await settle();
    const a4 = ask(queue, 'a4', '198.51.100.1');
    await settle();
    expect(a4.outcome.state).toBe('waiting');
    // a1 is running now; a thread that fails passes its error on (not "busy") and gives the place back too.
    t.started[1]!.fail(new Error('worker died'));
    await settle();
    expect(mine[1]!.outcome).toEqual({ state: 'failed', err: new Error('worker died') });
    const a5 = ask(queue, 'a5', '198.51.100.1');
    const a6 = ask(queue, 'a6', '198.51.100.1');
    await settle();
    expect([a5.outcome.state, a6.outcome.state]).toEqual(['waiting', 'busy']);
    queue.close();
    await settle();
  });

  it('a known browser that takes the place of a stranger from its own address keeps the count of that address right', async () => {
    // 1 s a hash, 1 s: 1 running and 1 waiting; 2 places per client.
    const t = threads({ t: 0 }, 1000);
    const queue = queueOf(1, t, { deadlineMs: 1000, initialHashMs: 1000, perClient: 2 });
    const stranger = ask(queue, 'stranger', '203.0.113.1');
    const sameOffice = ask(queue, 'same office', '198.51.100.1');
    const owner = ask(queue, 'owner', '198.51.100.1', 'device');
    await settle();
    expect([stranger, sameOffice, owner].map((a) => a.outcome.state)).toEqual(['waiting', 'busy', 'waiting']);
    t.started[0]!.finish();
    await settle();
    t.started[1]!.finish();
    await settle();
    expect(t.labels()).toEqual(['stranger', 'owner']);
    // Both ended: the address has its two places again, not one.
    const again = [ask(queue, 'one', '198.51.100.1'), ask(queue, 'two', '198.51.100.1')];
    await settle();
    expect(again.map((a) => a.outcome.state)).toEqual(['waiting', 'waiting']);
    queue.close();
    await settle();
  });

  it('a thread pool that throws instead of rejecting fails that hash alone: the next one still runs', async () => {
    let calls = 0;
    const queue = new PasswordQueue(
      1,
      (task) => {
        calls++;
        if (calls === 1) throw new Error('pool is broken');
        return Promise.resolve(task.op === 'verify' && task.password === 'second');
      },
      { deadlineMs: 1000, perClient: 2, initialHashMs: 1 },
    );
    await expect(queue.run({ op: 'verify', password: 'first', stored: '' }, { client: 'a' })).rejects.toThrow('pool is broken');
    await expect(queue.run({ op: 'verify', password: 'second', stored: '' }, { client: 'a' })).resolves.toBe(true);
    expect(queue.pending).toBe(0);
  });

  it('the queue follows the time hashes take: slower hashes than estimated shorten it within a few hashes', async () => {
    // Estimated at 0.1 s, measured at 2 s each on the test's clock (a loaded machine).
    const t = threads({ t: 0 }, 2000);
    const queue = queueOf(1, t, { deadlineMs: 10_000, initialHashMs: 100 });
    expect(queue.capacity).toBe(101);
    for (let i = 0; i < 8; i++) {
      ask(queue, `hash ${i}`, '198.51.100.1');
      await settle();
      t.started[i]!.finish();
      await settle();
    }
    // 2000 - 1900 × (7/8)^8 ≈ 1347 ms a hash: 1 running and 7 waiting start within 10 s.
    expect(queue.estimatedHashMs).toBeCloseTo(2000 - 1900 * (7 / 8) ** 8, 6);
    expect(queue.capacity).toBe(8);
    const burst = Array.from({ length: 10 }, (_, i) => ask(queue, `burst ${i}`, `203.0.113.${i}`));
    await settle();
    expect(burst.filter((b) => b.outcome.state === 'waiting')).toHaveLength(8);
    expect(burst.filter((b) => b.outcome.state === 'busy')).toHaveLength(2);
    queue.close();
    await settle();
  });

  it('the estimate before any hash is measured is the configured cost’s: 50 ms at 16, doubling with each step', () => {
    expect(passwordHashMsEstimate(16)).toBe(50);
    expect(passwordHashMsEstimate(18)).toBe(200);
    expect(passwordHashMsEstimate(14)).toBe(12.5);
    // One thread at the default cost within the default deadline (20 s): 1 + 400 places, 8 of them one client's.
    const t = threads();
    expect(queueOf(1, t, { initialHashMs: passwordHashMsEstimate(16) }).capacity).toBe(401);
  });

  it('on close the waiting hashes are answered busy at once and new ones refused; running ones finish', async () => {
    const t = threads();
    const queue = queueOf(1, t);
    const running = ask(queue, 'running', '198.51.100.1');
    const waiting = ask(queue, 'waiting', '198.51.100.2', 'device');
    await settle();
    queue.close();
    const late = ask(queue, 'late', '198.51.100.3');
    await settle();
    expect(waiting.outcome).toEqual({ state: 'busy', retryAfter: 1 });
    expect(late.outcome.state).toBe('busy');
    expect(running.outcome.state).toBe('waiting');
    t.started[0]!.finish();
    await settle();
    expect(running.outcome.state).toBe('done');
    expect(t.labels()).toEqual(['running']);
    expect(queue.pending).toBe(0);
  });
});

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuthcliError } from '../src/errors.js';
import { acquireLock, inspectLock, sessionLockPath, takeOverLock, withSessionLock, type LockHolder } from '../src/lock.js';

const ISS = 'https://id.example';
let dir: string;
let env: NodeJS.ProcessEnv;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'authcli-lock-'));
  env = { XDG_CONFIG_HOME: dir };
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The pid of a process that existed a moment ago and has been SIGKILLed. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  await new Promise((r) => child.once('spawn', r));
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
  return child.pid!;
}

/** A lock file as its holder wrote it, left behind (the holder was killed, or lives on another host). */
function leftBehind(path: string, holder: Partial<LockHolder>, ageMs = 0): void {
  writeFileSync(path, JSON.stringify({ pid: 1, host: hostname(), id: 'left-behind', since: Date.now() - ageMs, ...holder }));
  const t = new Date(Date.now() - ageMs);
  utimesSync(path, t, t);
}

describe('the session lock', () => {
  it('one holder at a time: a second taker waits until the first releases', async () => {
    const path = sessionLockPath(ISS, 'authcli', env);
    const first = await acquireLock(path);
    let secondHeld = false;
    const second = acquireLock(path).then((l) => {
      secondHeld = true;
      return l;
    });
    await sleep(300);
    expect(secondHeld).toBe(false);
    await first.release();
    const held = await second;
    expect(secondHeld).toBe(true);
    expect(JSON.parse(readFileSync(path, 'utf8')).pid).toBe(process.pid);
    await held.release();
    expect(existsSync(path)).toBe(false);
  });

  it('a wait is bounded: after its timeout the waiter fails with an error naming the holder', async () => {
    const path = sessionLockPath(ISS, 'authcli', env);
    const holder = await acquireLock(path);
    const started = Date.now();
    const err = await acquireLock(path, { timeoutMs: 400, purpose: 'refreshing the sign-in to x' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthcliError);
    expect((err as AuthcliError).code).toBe('timeout');
    expect((err as AuthcliError).message).toMatch(
      new RegExp(`waiting for another authcli process \\(pid ${process.pid}\\) refreshing the sign-in to x`),
    );
    expect(Date.now() - started).toBeLessThan(1500);
    await holder.release();
  });

  it('Ctrl-C ends a wait at once (cancelled), the holder keeps its lock', async () => {
    const path = sessionLockPath(ISS, 'authcli', env);
    const holder = await acquireLock(path);
    const ac = new AbortController();
    const waiting = acquireLock(path, { signal: ac.signal }).catch((e: unknown) => e);
    await sleep(200);
    const started = Date.now();
    ac.abort();
    const err = await waiting;
    expect((err as AuthcliError).code).toBe('cancelled');
    expect(Date.now() - started).toBeLessThan(100);
    expect(JSON.parse(readFileSync(path, 'utf8')).pid).toBe(process.pid);
    await holder.release();
  });

  it('a waiter says once, after a second, whom it waits for', async () => {
    const path = sessionLockPath(ISS, 'authcli', env);
    const holder = await acquireLock(path);
    const notices: (LockHolder | undefined)[] = [];
    let said: () => void = () => {};
    const notice = new Promise<void>((resolve) => (said = resolve));
    const started = Date.now();
    const waiting = acquireLock(path, {
      onWait: (h) => {
        notices.push(h);
        said();
      },
    });
    // The notice itself is waited for, and when it came is the check.
    await notice;
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(notices[0]?.pid).toBe(process.pid);
    // Polls go on (every 200 ms at most) without saying it again.
    await sleep(450);
    await holder.release();
    await (await waiting).release();
    expect(notices).toHaveLength(1);
  });

  it('a lock whose holder was killed (its pid is gone on this host) is taken at once', async () => {
    const path = sessionLockPath(ISS, 'authcli', env);
    await acquireLock(path).then((l) => l.release()); // creates the folder
    leftBehind(path, { pid: await deadPid() });
    const started = Date.now();
    const lock = await acquireLock(path, { timeoutMs: 2000 });
    expect(Date.now() - started).toBeLessThan(500);
    expect(JSON.parse(readFileSync(path, 'utf8')).pid).toBe(process.pid);
    await lock.release();
  });

  it('a lock untouched for the stale time is taken over (a holder on another host)', async () => {
    const path = sessionLockPath(ISS, 'authcli', env);
    await acquireLock(path).then((l) => l.release());
    leftBehind(path, { host: 'another-host' }, 20_000);
    const lock = await acquireLock(path, { timeoutMs: 1000 });
    await lock.release();

    // Fresh when first seen: taken once it has gone untouched for the stale time.
    leftBehind(path, { host: 'another-host' });
    const started = Date.now();
    const later = await acquireLock(path, { staleMs: 400, timeoutMs: 5000 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(350);
    expect(Date.now() - started).toBeLessThan(2000);
    await later.release();
  });

  it('a live holder keeps its lock past the stale time (its heartbeat touches it)', async () => {
    const path = sessionLockPath(ISS, 'authcli', env);
    const holder = await acquireLock(path, { staleMs: 300, heartbeatMs: 50 });
    // A waiter that takes over a lock untouched for 300 ms looks at it for three times that long, and never may.
    const started = Date.now();
    const err = await acquireLock(path, { staleMs: 300, timeoutMs: 900 }).catch((e: unknown) => e);
    expect((err as AuthcliError).code).toBe('timeout');
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(holder.lost).toBe(false);
    await holder.release();
  });

  it('eight waiters on one abandoned lock: exactly one holds it at any time, and all get it', async () => {
    const path = sessionLockPath(ISS, 'authcli', env);
    await acquireLock(path).then((l) => l.release());
    leftBehind(path, { pid: await deadPid() });
    let holding = 0;
    let most = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const lock = await acquireLock(path, { timeoutMs: 10_000 });
        holding++;
        most = Math.max(most, holding);
        order.push(i);
        await sleep(30);
        holding--;
        await lock.release();
      }),
    );
    expect(most).toBe(1);
    expect(order.sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('two waiters judged the same dead holder: the later takeover does not remove the lock the first one took', async () => {
    const path = sessionLockPath(ISS, 'authcli', env);
    await acquireLock(path).then((l) => l.release());
    leftBehind(path, { pid: await deadPid() });
    const judged = (await inspectLock(path))!;
    const waiter = (id: string): LockHolder => ({ pid: process.pid, host: hostname(), id, since: Date.now() });
    // The first waiter acts on its judgement and holds the lock...
    expect(await takeOverLock(path, judged, waiter('first'), 10_000)).toBe(true);
    // ...the second acts on the same, now outdated, judgement: it must neither remove nor take it.
    expect(await takeOverLock(path, judged, waiter('second'), 10_000)).toBe(false);
    expect(JSON.parse(readFileSync(path, 'utf8')).id).toBe('first');
    expect(existsSync(`${path}.takeover`)).toBe(false);
  });

  it('a takeover guard left by a crashed taker does not block takeovers beyond the stale time', async () => {
    const path = sessionLockPath(ISS, 'authcli', env);
    await acquireLock(path).then((l) => l.release());
    leftBehind(path, { pid: await deadPid() });
    leftBehind(`${path}.takeover`, {}, 20_000);
    const started = Date.now();
    const lock = await acquireLock(path, { timeoutMs: 2000 });
    expect(Date.now() - started).toBeLessThan(500);
    await lock.release();
  });

  it('locks are per issuer and client: another client of the same issuer is not blocked', async () => {
    expect(sessionLockPath(ISS, 'a', env)).not.toBe(sessionLockPath(ISS, 'b', env));
    expect(sessionLockPath(ISS, 'a', env)).not.toBe(sessionLockPath('https://other.example', 'a', env));
    expect(sessionLockPath(ISS, 'a', env).startsWith(join(dir, 'authcli'))).toBe(true);
    const a = await acquireLock(sessionLockPath(ISS, 'a', env));
    const b = await acquireLock(sessionLockPath(ISS, 'b', env), { timeoutMs: 200 });
    await Promise.all([a.release(), b.release()]);
  });

  it('withSessionLock releases on failure, and stops before an act when the lock was lost', async () => {
    await expect(withSessionLock(ISS, ['authcli'], async () => Promise.reject(new Error('boom')), {}, env)).rejects.toThrow('boom');
    expect(existsSync(sessionLockPath(ISS, 'authcli', env))).toBe(false);

    const err = await withSessionLock(
      ISS,
      ['authcli'],
      async (assertHeld) => {
        unlinkSync(sessionLockPath(ISS, 'authcli', env)); // as a takeover after a stall would
        await sleep(300);
        assertHeld();
      },
      { heartbeatMs: 100 },
      env,
    ).catch((e: unknown) => e);
    expect((err as AuthcliError).code).toBe('timeout');
    expect((err as AuthcliError).message).toMatch(/took over the lock/);
  });
});

/**
 * A cross-process lock per slot (issuer and profile, config.ts slotOf) and client, so that only one `authcli`
 * process at a time reads, refreshes and writes a session: a refresh token is
 * single-use (RFC 9700 §4.14.2), and two processes sending the same one make
 * the server revoke the whole sign-in.
 *
 * The lock is a file created with O_EXCL next to the credentials, holding the
 * holder's pid, host and a random id; the holder touches it every
 * {@link LOCK_HEARTBEAT_MS}. It is stale, and may be taken over, when its
 * holder is gone (same host, no such pid) or when it has not been touched for
 * {@link LOCK_STALE_MS} (a holder on another host sharing this folder, or a
 * reused pid). Takeovers go through a second O_EXCL file and re-check the
 * lock they judged stale, so two waiters that both saw a dead holder cannot
 * both end up holding it (the race in proper-lockfile, moxystudio/node-proper-lockfile#121,
 * which is why this is not that library).
 */
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync, unlinkSync } from 'node:fs';
import { mkdir, open, readFile, stat, unlink, utimes } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { configDir } from './config.js';
import { inProcessLock } from './storage/memory.js';
import { storageChoice } from './storage/select.js';
import { AuthcliError } from './errors.js';

/** A lock untouched for this long is abandoned, whoever holds it. */
export const LOCK_STALE_MS = 10_000;
/** How often a holder touches its lock; well inside {@link LOCK_STALE_MS}, so a busy event loop does not lose it. */
export const LOCK_HEARTBEAT_MS = 2_000;
/** How long a waiter waits before giving up with an error: longer than any refresh (three requests of at most 30 s each would be unusual). */
export const LOCK_TIMEOUT_MS = 60_000;
/** Waiting longer than this is worth one line on stderr. */
const NOTICE_AFTER_MS = 1_000;

/** Who holds a lock, as written in the lock file. */
export interface LockHolder {
  pid: number;
  host: string;
  id: string;
  since: number;
}

export interface LockOptions {
  timeoutMs?: number;
  staleMs?: number;
  heartbeatMs?: number;
  /** Called once when the lock has been busy for a second, with its holder when known. */
  onWait?: (holder: LockHolder | undefined) => void;
  /** What the holder is doing, for the timeout message ("signing in to …"). */
  purpose?: string;
  /** Ends the wait (Ctrl-C) with AuthcliError('cancelled'); a lock once held is kept until released. */
  signal?: AbortSignal | undefined;
}

export interface HeldLock {
  readonly path: string;
  /** True once the lock file is no longer ours (removed, or taken over after a heartbeat was missed). */
  readonly lost: boolean;
  release(): Promise<void>;
}

/** `<configDir>/session-<hash of slot and client>.lock`: file names cannot carry URLs. The default profile's slot is the issuer. */
export function sessionLockPath(slot: string, clientId: string, env: NodeJS.ProcessEnv = process.env): string {
  const key = createHash('sha256').update(`${slot}\n${clientId}`).digest('hex').slice(0, 24);
  return join(configDir(env), `session-${key}.lock`);
}

/** A lock file as one look saw it. */
export interface SeenLock {
  holder: LockHolder | undefined;
  raw: string;
  ino: number;
  mtimeMs: number;
}

function parseHolder(raw: string): LockHolder | undefined {
  try {
    const h = JSON.parse(raw) as Partial<LockHolder>;
    if (typeof h.pid === 'number' && typeof h.host === 'string' && typeof h.id === 'string' && typeof h.since === 'number')
      return h as LockHolder;
  } catch {
    // Empty (its creator is between create and write) or damaged: judged by its age alone.
  }
  return undefined;
}

export async function inspectLock(path: string): Promise<SeenLock | undefined> {
  try {
    const [s, raw] = await Promise.all([stat(path), readFile(path, 'utf8')]);
    return { holder: parseHolder(raw), raw, ino: s.ino, mtimeMs: s.mtimeMs };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, as another user's process.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function isStale(seen: SeenLock, staleMs: number): boolean {
  if (seen.holder && seen.holder.host === hostname() && !processExists(seen.holder.pid)) return true;
  return Date.now() - seen.mtimeMs > staleMs;
}

async function tryCreate(path: string, me: LockHolder): Promise<boolean> {
  let handle;
  try {
    handle = await open(path, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw new AuthcliError('config', `cannot create the lock file ${path}: ${(err as Error).message}`, { cause: err });
  }
  try {
    await handle.writeFile(JSON.stringify(me));
  } finally {
    await handle.close();
  }
  return true;
}

/**
 * Replaces a lock judged stale with ours. Only the holder of `<lock>.takeover`
 * may remove the lock, and only if it is still the very file judged stale
 * (same inode and content) and still stale: a waiter that judged a dead
 * holder's lock a moment before another waiter replaced it must not remove
 * the replacement. A takeover guard left by a crashed taker is removed once it
 * is older than the stale time. Exported for the tests of this rule.
 */
export async function takeOverLock(path: string, judged: SeenLock, me: LockHolder, staleMs: number): Promise<boolean> {
  const guard = `${path}.takeover`;
  try {
    await (await open(guard, 'wx', 0o600)).close();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const s = await stat(guard).catch(() => undefined);
    if (s && Date.now() - s.mtimeMs > staleMs) await unlink(guard).catch(() => undefined);
    return false;
  }
  try {
    const again = await inspectLock(path);
    if (again) {
      if (again.ino !== judged.ino || again.raw !== judged.raw || !isStale(again, staleMs)) return false;
      await unlink(path).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
    }
    return await tryCreate(path, me);
  } finally {
    await unlink(guard).catch(() => undefined);
  }
}

function ownedBy(raw: string, me: LockHolder): boolean {
  return parseHolder(raw)?.id === me.id;
}

function hold(path: string, me: LockHolder, heartbeatMs: number): HeldLock {
  let lost = false;
  let released = false;
  const beat = setInterval(() => {
    void (async () => {
      try {
        const raw = await readFile(path, 'utf8');
        if (released) return;
        if (!ownedBy(raw, me)) throw new Error('taken over');
        const now = new Date();
        await utimes(path, now, now);
      } catch {
        if (released) return;
        lost = true;
        clearInterval(beat);
      }
    })();
  }, heartbeatMs);
  beat.unref();
  // A process that ends without releasing (an uncaught error, process.exit) still frees the lock;
  // one that is killed leaves it to the stale rule.
  const onExit = () => {
    try {
      if (ownedBy(readFileSync(path, 'utf8'), me)) unlinkSync(path);
    } catch {
      // Already gone.
    }
  };
  process.once('exit', onExit);
  return {
    path,
    get lost() {
      return lost;
    },
    release: async () => {
      if (released) return;
      released = true;
      clearInterval(beat);
      process.off('exit', onExit);
      const raw = await readFile(path, 'utf8').catch(() => '');
      if (ownedBy(raw, me)) await unlink(path).catch(() => undefined);
    },
  };
}

/**
 * Takes the lock at `path`, waiting (polling with backoff, at most
 * `timeoutMs`) while a live holder has it; a stale lock is taken over at
 * once. Throws AuthcliError('timeout') naming the holder when the wait runs out,
 * AuthcliError('cancelled') when `signal` aborts it.
 */
export async function acquireLock(path: string, opts: LockOptions = {}): Promise<HeldLock> {
  const timeoutMs = opts.timeoutMs ?? LOCK_TIMEOUT_MS;
  const staleMs = opts.staleMs ?? LOCK_STALE_MS;
  const heartbeatMs = opts.heartbeatMs ?? LOCK_HEARTBEAT_MS;
  const me: LockHolder = { pid: process.pid, host: hostname(), id: randomUUID(), since: Date.now() };
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const start = Date.now();
  let delay = 10;
  let noticed = false;
  for (;;) {
    if (opts.signal?.aborted) throw new AuthcliError('cancelled', 'cancelled while waiting for another authcli process');
    if (await tryCreate(path, me)) return hold(path, me, heartbeatMs);
    const seen = await inspectLock(path);
    if (!seen) continue; // released between our attempt and the look: try again at once
    if (isStale(seen, staleMs)) {
      if (await takeOverLock(path, seen, me, staleMs)) return hold(path, me, heartbeatMs);
    }
    const waited = Date.now() - start;
    if (waited >= timeoutMs) {
      const who = seen.holder
        ? `another authcli process (pid ${seen.holder.pid}${seen.holder.host === hostname() ? '' : ` on ${seen.holder.host}`})`
        : 'another authcli process';
      throw new AuthcliError(
        'timeout',
        `gave up after ${Math.round(timeoutMs / 1000)} s waiting for ${who}${opts.purpose ? ` ${opts.purpose}` : ''} (lock ${path})`,
      );
    }
    if (!noticed && waited >= NOTICE_AFTER_MS) {
      noticed = true;
      opts.onWait?.(seen.holder);
    }
    // Jittered backoff up to 200 ms, so waiters do not poll in step.
    try {
      await sleep(Math.min(delay * (0.5 + Math.random()), timeoutMs - waited), undefined, { signal: opts.signal });
    } catch {
      throw new AuthcliError('cancelled', 'cancelled while waiting for another authcli process');
    }
    delay = Math.min(delay * 2, 200);
  }
}

/** Throws when a lock was lost while held: call it right before an act that must not happen twice. */
export type AssertHeld = () => void;

/**
 * Runs `fn` holding the session locks of `slot` for each client in
 * `clientIds` (taken in sorted order, so two callers never wait on each other
 * in a circle), and releases them whatever happens.
 */
export async function withSessionLock<T>(
  slot: string,
  clientIds: readonly string[],
  fn: (assertHeld: AssertHeld) => Promise<T>,
  opts: LockOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): Promise<T> {
  const held: HeldLock[] = [];
  const assertHeld: AssertHeld = () => {
    const lost = held.find((l) => l.lost);
    if (lost)
      throw new AuthcliError('timeout', `this process stalled and another authcli process took over the lock ${lost.path}; try again`);
  };
  // Sign-ins kept in this process's memory are locked in this process only, one lock per slot whatever the
  // clients: no file is written for them.
  if (storageChoice(env) === 'memory') return inProcessLock(slot, () => fn(() => undefined));
  try {
    for (const clientId of [...new Set(clientIds)].sort()) held.push(await acquireLock(sessionLockPath(slot, clientId, env), opts));
    return await fn(assertHeld);
  } finally {
    for (const lock of held.reverse()) await lock.release();
  }
}

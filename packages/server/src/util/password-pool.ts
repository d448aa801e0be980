import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import {
  PASSWORD_HASH_ESTIMATE_WEIGHT,
  PASSWORD_HASH_QUEUE_DEADLINE_MS,
  PASSWORD_HASHES_PER_CLIENT,
  passwordHashMsEstimate,
} from '../config/defaults.js';
import { dummyPasswordHash, needsRehash, type PasswordHashParams } from './password.js';
import type { PasswordTask } from './password-worker.js';

/**
 * Thrown when a hash cannot start within the queue's deadline (the queue is full, this client has its share of
 * it, or the deadline passed while it waited): the caller answers 503 with `Retry-After` and the client retries.
 */
export class PasswordHasherBusy extends Error {
  override name = 'PasswordHasherBusy';
  readonly code = 'busy';
  constructor(
    message: string,
    /** When a retry may find a place: about the time the queue ahead of a new arrival takes now. */
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

/** Who asks for a hash: the client IP subject (its share of the places) and, when known, the browser's device. */
export interface HashRequester {
  readonly client: string;
  /**
   * The device id of a device cookie naming the username being checked (web/trusted-device.ts): a browser
   * where that person signed in before. Such hashes are served ahead of every unknown browser's.
   */
  readonly device?: string | undefined;
}

/** How the queue in front of the hashing threads behaves (config/defaults.ts has the reasons). */
export interface PasswordQueueOptions {
  /** The longest a hash may wait for a thread; past it its request is answered busy (AUTHCLI_PASSWORD_HASH_QUEUE_DEADLINE). */
  readonly deadlineMs: number;
  /** Hashes one client IP may have running or waiting. */
  readonly perClient: number;
  /** The time a hash is taken to last until hashes have been measured (else the configured cost's estimate). */
  readonly initialHashMs?: number;
  /** A monotonic clock in milliseconds that times the hashes (performance.now; tests give their own). */
  readonly now?: () => number;
}

/** The work a queue runs: a hash or a verification on a thread. */
export type RunTask = (task: PasswordTask) => Promise<unknown>;

interface Waiting {
  readonly task: PasswordTask;
  readonly client: string;
  readonly known: boolean;
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: unknown) => void;
  timer?: NodeJS.Timeout;
}

/**
 * The queue in front of the hashing threads: a burst is served in turn, as long as each hash can start within
 * the deadline. A hash is admitted while the hashes ahead of it can be done by then (the threads times the
 * deadline over the measured time a hash takes); one that still has not started when its deadline comes
 * (hashes got slower meanwhile) is answered busy then, never later. Browsers with a device cookie for the
 * username wait in a lane of their own that is served first: an attack fills the strangers' lane and slows
 * strangers, not the account's owner. A known browser arriving at a full queue takes the place of the unknown
 * one that came last, which is answered busy at once.
 */
export class PasswordQueue {
  private readonly known: Waiting[] = [];
  private readonly unknown: Waiting[] = [];
  private readonly byClient = new Map<string, number>();
  private running = 0;
  private closed = false;
  private hashMs: number;
  private readonly now: () => number;

  constructor(
    private readonly threads: number,
    private readonly runTask: RunTask,
    private readonly options: PasswordQueueOptions & { readonly initialHashMs: number },
  ) {
    this.hashMs = options.initialHashMs;
    this.now = options.now ?? (() => performance.now());
  }

  /** Hashes running or waiting for a thread. */
  get pending(): number {
    return this.running + this.known.length + this.unknown.length;
  }

  /** The most hashes in flight: each thread's running one and as many after it as it can start within the deadline. */
  get capacity(): number {
    // At least a millisecond a hash (the cheapest cost accepted takes about that), so the bound stays a number.
    return this.threads * (1 + Math.floor(this.options.deadlineMs / Math.max(1, this.hashMs)));
  }

  /** The time a hash is taken to last now: a moving average of the hashes measured (the initial estimate before). */
  get estimatedHashMs(): number {
    return this.hashMs;
  }

  /** Seconds until a hash arriving now would start, at least 1 and at most the deadline: a refused client's Retry-After. */
  private retryAfter(): number {
    const waitMs = Math.ceil((this.known.length + this.unknown.length) / this.threads) * this.hashMs;
    return Math.min(Math.ceil(this.options.deadlineMs / 1000), Math.max(1, Math.ceil(waitMs / 1000)));
  }

  private busy(why: string): PasswordHasherBusy {
    return new PasswordHasherBusy(`password checks are busy: ${why}`, this.retryAfter());
  }

  /**
   * Runs `task` when a thread is free and its turn comes.
   * @throws PasswordHasherBusy when it cannot start within the deadline
   */
  run(task: PasswordTask, who: HashRequester): Promise<unknown> {
    if (this.closed) return Promise.reject(this.busy('the server is stopping'));
    const mine = this.byClient.get(who.client) ?? 0;
    if (mine >= this.options.perClient) return Promise.reject(this.busy('this client has its share of the places'));
    const known = who.device !== undefined;
    if (this.pending >= this.capacity) {
      // Full: a known browser takes the last stranger's place; a stranger, or a known browser behind only known
      // ones, is refused.
      const last = known ? this.unknown.pop() : undefined;
      if (!last) return Promise.reject(this.busy('every place is taken'));
      this.drop(last, 'a returning browser took the place');
    }
    // Read again: the stranger who gave up a place may have been this client.
    this.byClient.set(who.client, (this.byClient.get(who.client) ?? 0) + 1);
    return new Promise((resolve, reject) => {
      const entry: Waiting = { task, client: who.client, known, resolve, reject };
      if (this.running < this.threads) return this.start(entry);
      entry.timer = setTimeout(() => {
        const lane = entry.known ? this.known : this.unknown;
        const at = lane.indexOf(entry);
        if (at === -1) return;
        lane.splice(at, 1);
        this.drop(entry, 'the deadline passed before a thread was free');
      }, this.options.deadlineMs);
      entry.timer.unref();
      (known ? this.known : this.unknown).push(entry);
    });
  }

  /** Answers a waiting entry busy (already out of its lane) and gives its client's place back. */
  private drop(entry: Waiting, why: string): void {
    clearTimeout(entry.timer);
    this.release(entry.client);
    entry.reject(this.busy(why));
  }

  private release(client: string): void {
    const left = (this.byClient.get(client) ?? 1) - 1;
    if (left === 0) this.byClient.delete(client);
    else this.byClient.set(client, left);
  }

  private start(entry: Waiting): void {
    clearTimeout(entry.timer);
    this.running++;
    const began = this.now();
    const done = () => {
      this.running--;
      this.release(entry.client);
      this.next();
    };
    let work: Promise<unknown>;
    try {
      work = this.runTask(entry.task);
    } catch (err) {
      // A pool that throws instead of rejecting (closed, or broken) still frees the thread's place.
      work = Promise.reject(err);
    }
    work.then(
      (value) => {
        // An exponentially weighted moving average, as TCP estimates a round trip (RFC 6298): hashes got slower
        // under load show within a few hashes, and one slow hash does not halve the queue.
        this.hashMs += (this.now() - began - this.hashMs) * PASSWORD_HASH_ESTIMATE_WEIGHT;
        done();
        entry.resolve(value);
      },
      (err: unknown) => {
        done();
        entry.reject(err);
      },
    );
  }

  private next(): void {
    while (this.running < this.threads) {
      const entry = this.known.shift() ?? this.unknown.shift();
      if (!entry) return;
      this.start(entry);
    }
  }

  /** No more hashes: those waiting are answered busy at once (the client retries, on another instance); running ones finish. */
  close(): void {
    this.closed = true;
    for (const lane of [this.known, this.unknown]) for (const entry of lane.splice(0)) this.drop(entry, 'the server is stopping');
  }
}

// The worker is a CommonJS bundle of its own (dist/password-worker.cjs, next to the bundle that loads it; see
// tsup.config.ts). Tests run this module from src/util/, two folders below the package's dist/; `pnpm test`
// builds first.
const here = import.meta.url;
const WORKER = fileURLToPath(new URL(here.endsWith('.ts') ? '../../dist/password-worker.cjs' : './password-worker.cjs', here));

/**
 * Password hashing on threads of its own, so a burst of sign-ins never delays token signing (RS256 runs on
 * libuv's pool, ES256 on the event loop), behind a {@link PasswordQueue}: a burst waits its turn up to a deadline,
 * and past what the threads can start by then the answer is "busy" at once instead of a queue that grows with
 * the attack.
 */
export class PasswordHasher {
  private readonly pool: Piscina;
  private readonly queue: PasswordQueue;

  /** A hash nobody can match, at this hasher's cost: unknown usernames take as long as known ones. */
  readonly dummyHash: string;

  constructor(
    threads: number,
    /** The Argon2id parameters new hashes are made with (AUTHCLI_PASSWORD_HASH_COST). */
    readonly params: PasswordHashParams,
    options: Partial<PasswordQueueOptions> = {},
  ) {
    if (!existsSync(WORKER)) throw new Error(`password worker ${WORKER} is missing: build the server first (pnpm build)`);
    this.dummyHash = dummyPasswordHash(params);
    this.pool = new Piscina({
      filename: WORKER,
      minThreads: threads,
      maxThreads: threads,
      // The queue is the PasswordQueue's: the pool gets a task only when a thread is free.
      maxQueue: threads,
      idleTimeout: 60_000,
      // The lowest CPU priority (Linux: per thread): when cores are short, the scheduler runs the event loop and
      // the signing threads first, and a flood of sign-ins slows only sign-ins.
      niceIncrement: 19,
    });
    this.queue = new PasswordQueue(threads, (task) => this.pool.run(task), {
      deadlineMs: options.deadlineMs ?? PASSWORD_HASH_QUEUE_DEADLINE_MS,
      perClient: options.perClient ?? PASSWORD_HASHES_PER_CLIENT,
      initialHashMs: options.initialHashMs ?? passwordHashMsEstimate(Math.log2(params.memoryKiB)),
    });
  }

  /** Hashes running or waiting for a thread right now. */
  get pending(): number {
    return this.queue.pending;
  }

  /** The most hashes that may be in flight now; past it a sign-in is answered 503 at once. */
  get capacity(): number {
    return this.queue.capacity;
  }

  /**
   * Checks a password against a stored hash on a hashing thread; `who` is who asks (the per-IP subject, so one
   * client cannot fill every place, and the device cookie that puts a returning browser first).
   * @throws PasswordHasherBusy
   */
  async verify(password: string, stored: string, who: HashRequester): Promise<boolean> {
    return (await this.queue.run({ op: 'verify', password, stored }, who)) as boolean;
  }

  /** @throws PasswordHasherBusy */
  async hash(password: string, who: HashRequester): Promise<string> {
    return (await this.queue.run({ op: 'hash', password, params: this.params }, who)) as string;
  }

  /** True when a stored hash was made at a lower cost than this hasher's (upgrade it after a successful sign-in). */
  needsRehash(stored: string): boolean {
    return needsRehash(stored, this.params);
  }

  /** Answers the waiting hashes busy, lets the running ones finish (the HTTP server has stopped taking requests by then), then stops the threads. */
  async close(): Promise<void> {
    this.queue.close();
    await this.pool.close();
  }
}

import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { PASSWORD_HASHES_QUEUED_PER_THREAD } from '../config/defaults.js';
import type { PasswordTask } from './password-worker.js';

/** Thrown when the hashes in flight are at the cap: the caller answers 503 and the client retries. */
export class PasswordHasherBusy extends Error {
  override name = 'PasswordHasherBusy';
  readonly code = 'busy';
}

// The worker is its own bundle entry (dist/password-worker.js, next to the bundle that loads it). Tests run
// this module from src/, where the built worker is one folder up; `pnpm test` builds first.
const here = import.meta.url;
const WORKER = fileURLToPath(new URL(here.endsWith('.ts') ? '../../dist/password-worker.js' : './password-worker.js', here));

/**
 * Password hashing on threads of its own, so a burst of sign-ins never delays
 * token signing (RS256 runs on libuv's pool, ES256 on the event loop), with a
 * cap on hashes in flight: past it the answer is "busy" at once instead of a
 * queue that grows with the attack.
 */
export class PasswordHasher {
  private readonly pool: Piscina;
  private readonly cap: number;
  private inFlight = 0;

  constructor(threads: number, queuedPerThread = PASSWORD_HASHES_QUEUED_PER_THREAD) {
    if (!existsSync(WORKER)) throw new Error(`password worker ${WORKER} is missing: build the server first (pnpm build)`);
    this.cap = threads * queuedPerThread;
    this.pool = new Piscina({
      filename: WORKER,
      minThreads: threads,
      maxThreads: threads,
      maxQueue: this.cap,
      idleTimeout: 60_000,
      // The lowest CPU priority (Linux: per thread): when cores are short, the scheduler runs the event loop and
      // the signing threads first, and a flood of sign-ins slows only sign-ins.
      niceIncrement: 19,
    });
  }

  /** Hashes and tasks waiting for a thread right now. */
  get pending(): number {
    return this.inFlight;
  }

  private async run<T>(task: PasswordTask): Promise<T> {
    if (this.inFlight >= this.cap) throw new PasswordHasherBusy('too many password checks in progress');
    this.inFlight++;
    try {
      return (await this.pool.run(task)) as T;
    } finally {
      this.inFlight--;
    }
  }

  /** @throws PasswordHasherBusy */
  verify(password: string, stored: string): Promise<boolean> {
    return this.run({ op: 'verify', password, stored });
  }

  /** @throws PasswordHasherBusy */
  hash(password: string): Promise<string> {
    return this.run({ op: 'hash', password });
  }

  async close(): Promise<void> {
    await this.pool.close({ force: true });
  }
}

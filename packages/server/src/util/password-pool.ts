import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { PASSWORD_HASHES_PER_CLIENT, PASSWORD_HASHES_QUEUED_PER_THREAD } from '../config/defaults.js';
import { dummyPasswordHash, needsRehash, type ScryptParams } from './password.js';
import type { PasswordTask } from './password-worker.js';

/** Thrown when the hashes in flight are at the cap: the caller answers 503 and the client retries. */
export class PasswordHasherBusy extends Error {
  override name = 'PasswordHasherBusy';
  readonly code = 'busy';
}

// The worker is a CommonJS bundle of its own (dist/password-worker.cjs, next to the bundle that loads it; see
// tsup.config.ts). Tests run this module from src/util/, two folders below the package's dist/; `pnpm test`
// builds first.
const here = import.meta.url;
const WORKER = fileURLToPath(new URL(here.endsWith('.ts') ? '../../dist/password-worker.cjs' : './password-worker.cjs', here));

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

  /** A hash nobody can match, at this hasher's cost: unknown usernames take as long as known ones. */
  readonly dummyHash: string;

  constructor(
    threads: number,
    /** The scrypt parameters new hashes are made with (AUTHCLI_PASSWORD_HASH_COST). */
    readonly params: ScryptParams,
    private readonly perClient = PASSWORD_HASHES_PER_CLIENT,
    queuedPerThread = PASSWORD_HASHES_QUEUED_PER_THREAD,
  ) {
    if (!existsSync(WORKER)) throw new Error(`password worker ${WORKER} is missing: build the server first (pnpm build)`);
    this.cap = threads * queuedPerThread;
    this.dummyHash = dummyPasswordHash(params);
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

  /** The most hashes that may be in flight; past it a sign-in is answered 503 at once. */
  get capacity(): number {
    return this.cap;
  }

  /** Hashes in flight by client: one client never holds more than one of the capped places. */
  private readonly byClient = new Map<string, number>();

  private async run<T>(task: PasswordTask, client: string): Promise<T> {
    const mine = this.byClient.get(client) ?? 0;
    if (this.inFlight >= this.cap || mine >= this.perClient) throw new PasswordHasherBusy('too many password checks in progress');
    this.inFlight++;
    this.byClient.set(client, mine + 1);
    try {
      return (await this.pool.run(task)) as T;
    } finally {
      this.inFlight--;
      const left = this.byClient.get(client)! - 1;
      if (left === 0) this.byClient.delete(client);
      else this.byClient.set(client, left);
    }
  }

  /**
   * Checks a password against a stored hash on a hashing thread; `client` is
   * who asks (the per-IP subject), so one client cannot fill every place.
   * @throws PasswordHasherBusy
   */
  verify(password: string, stored: string, client: string): Promise<boolean> {
    return this.run({ op: 'verify', password, stored }, client);
  }

  /** @throws PasswordHasherBusy */
  hash(password: string, client: string): Promise<string> {
    return this.run({ op: 'hash', password, params: this.params }, client);
  }

  /** True when a stored hash was made at a lower cost than this hasher's (upgrade it after a successful sign-in). */
  needsRehash(stored: string): boolean {
    return needsRehash(stored, this.params);
  }

  /** Lets the hashes in flight finish (the HTTP server has stopped taking requests by then), then stops the threads. */
  async close(): Promise<void> {
    await this.pool.close();
  }
}

/**
 * Posting logout tokens (OpenID Connect Back-Channel Logout 1.0 §2.5) from the store's outbox
 * (store/repositories/logout-outbox.ts): a logout the server accepted is a row before anything is posted, so it
 * outlives a receiver that is down and a restart of the server. Every instance polls the outbox and claims the
 * rows due with a lease (one instance per attempt, however many there are), posts each token (signed anew at each
 * attempt), and records the end: delivered, tried again later with growing waits, or given up once the session or
 * access it ends could no longer have been used. Each outcome is counted (`authcli_backchannel_logout_total`) and
 * each give-up logged with the application and the reason, never the token. Nothing here is awaited by a page.
 */
import type { ServerConfig } from '../config/config.js';
import { type PostOptions, type PostOutcome, postForm } from '../http/outbound.js';
import type { LogoutRow, NewLogout, Store } from '../store/store.js';
import type { ProtocolMetrics } from '../util/metrics.js';
import { logoutToken } from './backchannel-logout.js';
import type { KeyRing } from './keys.js';

/** Where failures are told: pino's `warn(fields, message)` in the server, standard error in an operator command. */
export interface DeliveryLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** What became of one attempt: delivered, given up (`final`), or to be tried again later (by any instance). */
export type DeliveryResult = { delivered: true } | { delivered: false; reason: string; final: boolean };

type Post = (url: string, form: Record<string, string>, options: PostOptions) => Promise<PostOutcome>;

/** What posting needs: the settings and clock, the outbox and the applications, the keys that sign the tokens. */
export interface DeliveryContext {
  config: ServerConfig;
  store: Store;
  keys: KeyRing;
}

/**
 * Whether an attempt's outcome is final. §2.8: 200 (and 204, which some frameworks answer instead) is success;
 * 400 is the RP's refusal of the token, as is any other answer but those that say "later": 408, 429 and 5xx.
 * No answer at all (refused connection, reset, timeout) is worth another try too; an address that is not public
 * never is.
 */
function verdict(outcome: PostOutcome): { done: true; result: DeliveryResult } | { done: false; reason: string } {
  if (outcome.kind === 'refused') return { done: true, result: { delivered: false, reason: outcome.reason, final: true } };
  if (outcome.kind === 'unreachable') return { done: false, reason: outcome.reason };
  const { status } = outcome;
  if (status >= 200 && status < 300) return { done: true, result: { delivered: true } };
  if (status === 408 || status === 429 || status >= 500) return { done: false, reason: `answered ${status}` };
  return { done: true, result: { delivered: false, reason: `answered ${status}`, final: true } };
}

export class BackchannelDelivery {
  /** The attempts under way here, by row id. */
  private readonly inFlight = new Map<string, { abort: AbortController; done: Promise<void> }>();
  /** The claim under way, if any. */
  private claiming: Promise<void> | undefined;
  private claimAgain = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ctx: DeliveryContext,
    private readonly metrics: ProtocolMetrics,
    private readonly log: DeliveryLog,
    /** The transport; http/outbound.ts `postForm` unless a test gives a resolver of its own through it. */
    private readonly post: Post = postForm,
    /**
     * Whether what is queued is tried at once in the background (the server); an operator's command queues, then
     * tries its own rows with {@link deliverNow} and says what came of them.
     */
    private readonly background = true,
  ) {}

  private get settings() {
    return this.ctx.config.backchannelLogout;
  }

  /** A claim's lease: an attempt's timeout and a margin; an instance that dies mid-attempt holds a row no longer. */
  private get leaseMs(): number {
    return this.settings.timeoutMs + 30_000;
  }

  /** Attempts under way in this instance. */
  get pending(): number {
    return this.inFlight.size;
  }

  /**
   * Queues `logouts` in the outbox (one INSERT each; past an application's cap, given up at once) and starts
   * trying them in the background; returns the rows' ids once they are stored.
   */
  async enqueue(logouts: readonly NewLogout[]): Promise<string[]> {
    if (logouts.length === 0) return [];
    const rows = await this.ctx.store.logoutOutbox.enqueue(logouts, this.ctx.config.now(), this.settings.pendingPerClient);
    for (const [i, row] of rows.entries()) {
      if (!row.capped) continue;
      this.metrics.backchannelLogout('failed');
      this.log.warn(
        { clientId: logouts[i]!.clientId, reason: `${this.settings.pendingPerClient} logouts are pending already`, attempts: 0 },
        'back-channel logout given up',
      );
    }
    if (this.background && !this.closed) void this.runDue().catch((err: unknown) => this.logStoreFailure(err));
    return rows.map((r) => r.id);
  }

  /**
   * Tries the rows `ids` once each, now, and says what became of each, in order (an operator's command, which
   * does not stay to retry: what is left pending, the server tries again). A row an instance of the server took
   * first is told as it stands: delivered, given up, or pending (the server's to finish).
   */
  async deliverNow(ids: readonly string[]): Promise<DeliveryResult[]> {
    const rows = await this.ctx.store.logoutOutbox.claim(this.ctx.config.now(), this.leaseMs, ids.length, ids);
    const tried = new Map(await Promise.all(rows.map(async (row) => [row.id, await this.attempt(row, new AbortController())] as const)));
    const now = new Map((await this.ctx.store.logoutOutbox.find(ids.filter((id) => !tried.has(id)))).map((r) => [r.id, r]));
    return ids.map((id): DeliveryResult => {
      const result = tried.get(id);
      if (result) return result;
      const row = now.get(id);
      if (row?.state === 'delivered') return { delivered: true };
      return { delivered: false, reason: row?.last_error ?? 'being sent by the server', final: row?.state === 'given_up' };
    });
  }

  /** Polls the outbox every `pollMs` for rows due: retries, and rows another instance left when it stopped. */
  start(): void {
    if (this.closed || this.timer) return;
    const tick = () => {
      this.timer = setTimeout(() => {
        this.runDue()
          .catch((err: unknown) => this.logStoreFailure(err))
          .finally(() => {
            if (!this.closed) tick();
          });
      }, this.settings.pollMs);
      this.timer.unref();
    };
    tick();
  }

  /**
   * Claims the rows due, as many as there are free slots (`concurrency`), and starts their attempts; resolves once
   * they are started. One claim at a time per instance: a call during one makes it claim again after, and
   * resolves with it.
   */
  runDue(): Promise<void> {
    if (this.claiming) {
      this.claimAgain = true;
      return this.claiming;
    }
    this.claiming = this.claimLoop().finally(() => {
      this.claiming = undefined;
    });
    return this.claiming;
  }

  private async claimLoop(): Promise<void> {
    do {
      this.claimAgain = false;
      const free = this.settings.concurrency - this.inFlight.size;
      if (free <= 0 || this.closed) break;
      const rows = await this.ctx.store.logoutOutbox.claim(this.ctx.config.now(), this.leaseMs, free);
      for (const row of rows) this.begin(row);
      // A full claim may have left rows due: claim again (when a slot frees up, its end calls runDue too).
      if (rows.length === free) this.claimAgain = true;
    } while (this.claimAgain && this.inFlight.size < this.settings.concurrency);
  }

  /** Until nothing is due or under way here (tests; a retry due later is left for later). */
  async settle(): Promise<void> {
    for (;;) {
      await this.runDue();
      if (this.inFlight.size === 0) return;
      await Promise.all([...this.inFlight.values()].map((f) => f.done));
    }
  }

  private begin(row: LogoutRow): void {
    const abort = new AbortController();
    const done = this.attempt(row, abort)
      .then(() => undefined)
      .catch((err: unknown) => this.logStoreFailure(err))
      .finally(() => {
        this.inFlight.delete(row.id);
        if (!this.closed) void this.runDue().catch((err: unknown) => this.logStoreFailure(err));
      });
    this.inFlight.set(row.id, { abort, done });
  }

  /** The wait before attempt `attempts + 1`: the configured ones, then four times the last, up to `retryMaxMs`. */
  private waitAfter(attempts: number): number {
    const { retryDelaysMs, retryMaxMs } = this.settings;
    const fixed = retryDelaysMs[attempts - 1];
    if (fixed !== undefined) return fixed;
    const last = retryDelaysMs.at(-1) ?? 1000;
    return Math.min(retryMaxMs, last * 4 ** (attempts - retryDelaysMs.length));
  }

  /** One attempt of a claimed row: the token signed now, posted, and the end recorded (if the claim still holds). */
  private async attempt(row: LogoutRow, abort: AbortController): Promise<DeliveryResult> {
    const app = await this.ctx.store.applications.get(row.client_id);
    if (!app?.backchannelLogoutUri) {
      return this.giveUp(row, 'the application no longer has a back-channel logout URI');
    }
    const token = await logoutToken(this.ctx, app, row.sub, row.sid ?? undefined, row.jti);
    let outcome: PostOutcome;
    try {
      outcome = await this.post(
        app.backchannelLogoutUri,
        { logout_token: token },
        { timeoutMs: this.settings.timeoutMs, publicOnly: app.registrationTokenHash !== null, signal: abort.signal },
      );
    } catch (err) {
      // postForm never throws; whatever else does is one more way of not getting an answer.
      outcome = { kind: 'unreachable', reason: (err as Error).message };
    }
    const v = verdict(outcome);
    const now = this.ctx.config.now();
    if (v.done && v.result.delivered) {
      if (await this.ctx.store.logoutOutbox.finish(row.id, row.attempts, { kind: 'delivered' }, now)) {
        this.metrics.backchannelLogout('delivered');
      }
      return v.result;
    }
    if (v.done) return this.giveUp(row, (v.result as { reason: string }).reason);
    const retryAt = now + this.waitAfter(row.attempts);
    if (retryAt > row.give_up_at) return this.giveUp(row, `${v.reason}; past its deadline after ${row.attempts} attempts`);
    if (await this.ctx.store.logoutOutbox.finish(row.id, row.attempts, { kind: 'retry', retryAt, error: v.reason }, now)) {
      this.metrics.backchannelLogout('retried');
    }
    return { delivered: false, reason: v.reason, final: false };
  }

  private async giveUp(row: LogoutRow, reason: string): Promise<DeliveryResult> {
    const now = this.ctx.config.now();
    if (await this.ctx.store.logoutOutbox.finish(row.id, row.attempts, { kind: 'given_up', error: reason }, now)) {
      this.metrics.backchannelLogout('failed');
      this.log.warn({ clientId: row.client_id, reason, attempts: row.attempts }, 'back-channel logout given up');
    }
    return { delivered: false, reason, final: true };
  }

  private logStoreFailure(err: unknown): void {
    this.log.warn({ reason: (err as Error).message }, 'back-channel logout outbox unavailable; tried again at the next poll');
  }

  /**
   * Shutdown: no new claims; the attempts under way get until `graceMs` from now to finish. One still waiting for
   * its answer then is cut and recorded as a try to make again: the row stays pending for this server's next start
   * or another instance, nothing is given up.
   */
  async close(graceMs: number): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    if (this.inFlight.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all([...this.inFlight.values()].map((f) => f.done)),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, graceMs);
      }),
    ]);
    clearTimeout(timer);
    const left = [...this.inFlight.values()];
    for (const f of left) f.abort.abort();
    await Promise.all(left.map((f) => f.done));
  }
}

/**
 * Posting logout tokens (OpenID Connect Back-Channel Logout 1.0 §2.5) in the background: a queue per instance,
 * so many at once (`concurrency`), retried with growing waits when another try may succeed, each outcome
 * counted (`authcli_backchannel_logout_total`) and each failure logged with the application and the reason,
 * never the token. Nothing here is awaited by a page: `send` returns at once with a promise of the outcome,
 * which only the operator's commands wait for.
 */
import type { BackchannelLogoutSettings } from '../config/defaults.js';
import { type PostOptions, type PostOutcome, postForm } from '../http/outbound.js';
import type { ProtocolMetrics } from '../util/metrics.js';

/** One logout token for one application. */
export interface LogoutDelivery {
  clientId: string;
  uri: string;
  token: string;
  /** The URI was registered over the network (RFC 7591): only public addresses are connected to. */
  publicOnly: boolean;
}

/** Where failures are told: pino's `warn(fields, message)` in the server, standard error in an operator command. */
export interface DeliveryLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

export type DeliveryResult = { delivered: true } | { delivered: false; reason: string };

type Post = (url: string, form: Record<string, string>, options: PostOptions) => Promise<PostOutcome>;

interface Pending {
  job: LogoutDelivery;
  /** Attempts made so far. */
  attempts: number;
  finish: (result: DeliveryResult) => void;
  /** While waiting for a retry: its timer, and when it fires (ms, performance.now). */
  timer?: NodeJS.Timeout | undefined;
  dueAt?: number | undefined;
}

/**
 * Whether an attempt's outcome is final. §2.8: 200 (and 204, which some frameworks answer instead) is success;
 * 400 is the RP's refusal of the token, as is any other answer but those that say "later": 408, 429 and 5xx.
 * No answer at all (refused connection, reset, timeout) is worth another try too; an address that is not public
 * never is.
 */
function verdict(outcome: PostOutcome): { done: true; result: DeliveryResult } | { done: false; reason: string } {
  if (outcome.kind === 'refused') return { done: true, result: { delivered: false, reason: outcome.reason } };
  if (outcome.kind === 'unreachable') return { done: false, reason: outcome.reason };
  const { status } = outcome;
  if (status >= 200 && status < 300) return { done: true, result: { delivered: true } };
  if (status === 408 || status === 429 || status >= 500) return { done: false, reason: `answered ${status}` };
  return { done: true, result: { delivered: false, reason: `answered ${status}` } };
}

export class BackchannelDelivery {
  private readonly queue: Pending[] = [];
  private readonly retrying = new Set<Pending>();
  private readonly inFlight = new Set<AbortController>();
  private active = 0;
  /** Set by close(): from then on nothing waits past it (performance.now). */
  private deadline: number | undefined;
  private idle: (() => void)[] = [];

  constructor(
    private readonly settings: BackchannelLogoutSettings,
    private readonly metrics: ProtocolMetrics,
    private readonly log: DeliveryLog,
    /** The transport; http/outbound.ts `postForm` unless a test gives a resolver of its own through it. */
    private readonly post: Post = postForm,
  ) {}

  /** Deliveries not yet finished: sending, waiting for a slot, or waiting to be tried again. */
  get pending(): number {
    return this.active + this.queue.length + this.retrying.size;
  }

  /** Queues a delivery and returns at once; the promise says what became of it (it never rejects). */
  send(job: LogoutDelivery): Promise<DeliveryResult> {
    return new Promise((resolve) => {
      const pending: Pending = { job, attempts: 0, finish: resolve };
      if (this.deadline !== undefined) return this.fail(pending, 'the server is shutting down');
      if (this.pending >= this.settings.queueMax) return this.fail(pending, `${this.settings.queueMax} deliveries are waiting already`);
      this.queue.push(pending);
      this.pump();
    });
  }

  private pump(): void {
    while (this.active < this.settings.concurrency && this.queue.length > 0) {
      const next = this.queue.shift()!;
      this.active++;
      void this.attempt(next).finally(() => {
        this.active--;
        this.pump();
        this.checkIdle();
      });
    }
  }

  private async attempt(p: Pending): Promise<void> {
    p.attempts++;
    const abort = new AbortController();
    this.inFlight.add(abort);
    let outcome: PostOutcome;
    try {
      outcome = await this.post(
        p.job.uri,
        { logout_token: p.job.token },
        {
          timeoutMs: this.settings.timeoutMs,
          publicOnly: p.job.publicOnly,
          signal: abort.signal,
        },
      );
    } catch (err) {
      // postForm never throws; whatever else does is one more way of not getting an answer.
      outcome = { kind: 'unreachable', reason: (err as Error).message };
    } finally {
      this.inFlight.delete(abort);
    }
    const v = verdict(outcome);
    if (v.done) {
      if (v.result.delivered) {
        this.metrics.backchannelLogout('delivered');
        p.finish(v.result);
      } else {
        this.fail(p, v.result.reason);
      }
      return;
    }
    const wait = this.settings.retryDelaysMs[p.attempts - 1];
    if (wait === undefined) return this.fail(p, `${v.reason} (after ${p.attempts} attempts)`);
    if (this.deadline !== undefined && performance.now() + wait > this.deadline) {
      return this.fail(p, `${v.reason}; not tried again: the server is shutting down`);
    }
    this.metrics.backchannelLogout('retried');
    p.dueAt = performance.now() + wait;
    p.timer = setTimeout(() => {
      this.retrying.delete(p);
      p.timer = undefined;
      this.queue.push(p);
      this.pump();
    }, wait);
    this.retrying.add(p);
  }

  private fail(p: Pending, reason: string): void {
    this.metrics.backchannelLogout('failed');
    this.log.warn({ clientId: p.job.clientId, reason, attempts: p.attempts }, 'back-channel logout not delivered');
    p.finish({ delivered: false, reason });
  }

  private checkIdle(): void {
    if (this.pending > 0) return;
    for (const resolve of this.idle.splice(0)) resolve();
  }

  /**
   * Shutdown: no new deliveries; those under way and queued get until `graceMs` from now to finish, and a retry
   * is still made if it falls within it. Whatever is left then (a retry due later, an attempt still waiting
   * for its answer, the queue behind them) is given up on: logged and counted failed, one line each.
   */
  async close(graceMs: number): Promise<void> {
    this.deadline = performance.now() + graceMs;
    for (const p of [...this.retrying]) {
      if (p.dueAt !== undefined && p.dueAt > this.deadline) {
        clearTimeout(p.timer);
        this.retrying.delete(p);
        this.fail(p, 'not tried again: the server is shutting down');
      }
    }
    if (this.pending === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((resolve) => this.idle.push(resolve)),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, graceMs);
      }),
    ]);
    clearTimeout(timer);
    for (const p of this.queue.splice(0)) this.fail(p, 'not sent: the server shut down');
    for (const p of [...this.retrying]) {
      clearTimeout(p.timer);
      this.retrying.delete(p);
      this.fail(p, 'not tried again: the server shut down');
    }
    // An attempt cut here is answered by its own path (unreachable, cancelled) and fails there, as the last.
    for (const abort of this.inFlight) abort.abort();
  }
}

import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { type CounterKind, HTTP_DURATION_BUCKETS_S, LIMITS, STORE_DURATION_BUCKETS_S } from '../config/defaults.js';

/**
 * The server's Prometheus metrics (`AUTHCLI_METRICS_PORT`), on a registry of
 * their own: never prom-client's global one, so several servers in one
 * process (the tests) each count only their own traffic. Plain prom-client,
 * no Fastify: app.ts feeds the HTTP metrics from a hook, the protocol logic
 * reports through {@link ProtocolMetrics} on its context, the store through
 * its timed engine (store/timed-engine.ts).
 *
 * Every label takes its values from a set the server fixes, never from what
 * a request names: a route is Fastify's route pattern (`not_found` for no
 * route), a method one of {@link METHOD_LABELS} (`other` for the rest of the
 * thirty-odd Node's parser accepts), a grant type one the
 * token endpoint served, an error code one of oauth/errors.ts, a limit kind
 * one of config/defaults.ts LIMITS, an operation a name the store gives its
 * statements. So a flood of odd requests cannot grow the number of series.
 */

/** What the protocol logic reports; {@link NO_METRICS} when metrics are off. */
export interface ProtocolMetrics {
  /** A token response sent, by its `grant_type` (RFC 6749 §4.1.3, §6; RFC 8628 §3.4). */
  tokenIssued(grantType: string): void;
  /** An error answer of the token endpoint (RFC 6749 §5.2, RFC 8628 §3.5), by its `error` code. */
  tokenError(error: string): void;
  /** An attempt past an abuse limit (oauth/limits.ts), by the counter it went past. */
  rateLimited(kind: CounterKind): void;
  /** A logout token delivered, given up on, or about to be sent again (oauth/backchannel-delivery.ts). */
  backchannelLogout(outcome: BackchannelOutcome): void;
}

/** What became of a back-channel logout delivery, or of one of its attempts (`retried`). */
export const BACKCHANNEL_OUTCOMES = ['delivered', 'failed', 'retried'] as const;
export type BackchannelOutcome = (typeof BACKCHANNEL_OUTCOMES)[number];

/** Metrics off: every report is a call that does nothing. */
export const NO_METRICS: ProtocolMetrics = {
  tokenIssued: () => undefined,
  tokenError: () => undefined,
  rateLimited: () => undefined,
  backchannelLogout: () => undefined,
};

/** The route label of a request no route matched (any path: one series, whatever is asked). */
export const NOT_FOUND_ROUTE = 'not_found';

/** The request methods counted by name; any other (PROPFIND, MKCOL, SEARCH, ...) is counted as `other`. */
export const METHOD_LABELS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']);
const OTHER_METHOD = 'other';

/** The grant type's label: its last `:`-separated part (`urn:ietf:params:oauth:grant-type:device_code` is `device_code`). */
export const grantLabel = (grantType: string) => grantType.slice(grantType.lastIndexOf(':') + 1);

/** What the password-hash gauges read when scraped (util/password-pool.ts). */
export interface HashQueue {
  /** Hashes running or waiting for a thread. */
  readonly pending: number;
  /** The most that may be in flight; past it sign-in answers 503. */
  readonly capacity: number;
}

type HistogramChild = ReturnType<Histogram['labels']>;

/** One series of a {@link TalliedCounter}: counted here, handed to prom-client at each scrape. */
interface Tally {
  count: number;
  reported: number;
  readonly child: ReturnType<Counter['labels']>;
}

/**
 * A counter whose series count in a plain number where the event happens (an
 * addition), and reach prom-client when it is scraped: a prom-client child's
 * `inc` hashes its label values on every call (~0.6 µs here), which a request
 * would pay for each counter it touches.
 */
class TalliedCounter {
  private readonly tallies: Tally[] = [];
  private readonly counter: Counter<string>;

  constructor(config: { name: string; help: string; labelNames: string[]; registers: Registry[] }) {
    const tallies = this.tallies;
    this.counter = new Counter({
      ...config,
      collect() {
        for (const t of tallies) {
          if (t.count === t.reported) continue;
          t.child.inc(t.count - t.reported);
          t.reported = t.count;
        }
      },
    });
  }

  /** A new series, shown at 0 from now on (a rate over a series that appears at its first event misses that event). */
  series(...labelValues: string[]): Tally {
    const child = this.counter.labels(...labelValues);
    child.inc(0);
    const tally = { count: 0, reported: 0, child };
    this.tallies.push(tally);
    return tally;
  }
}

/** One method of one route: its latency series and its count by status code. */
interface RouteSeries {
  duration: HistogramChild;
  byStatus: Map<number, Tally>;
}

export class Metrics implements ProtocolMetrics {
  readonly registry = new Registry();
  private readonly requests: TalliedCounter;
  private readonly requestDuration: Histogram<'method' | 'route'>;
  private readonly tokensIssued: TalliedCounter;
  private readonly tokenErrors: TalliedCounter;
  private readonly rateLimits: TalliedCounter;
  private readonly backchannel = new Map<string, Tally>();
  private readonly storeDuration: Histogram<'engine' | 'operation'>;
  // The series, kept: a request costs a few map look-ups and additions, and one prom-client observe per
  // histogram it touches (which hashes the label values: the histograms' buckets stay prom-client's own).
  private readonly routes = new Map<string, Map<string, RouteSeries>>();
  private readonly grants = new Map<string, Tally>();
  private readonly errors = new Map<string, Tally>();
  private readonly limits = new Map<string, Tally>();
  private readonly storeOperations = new Map<string, Map<string, HistogramChild>>();

  /**
   * `grantTypes`: the token endpoint's grants, whose issued counters start at
   * 0 (a rate over a counter that appears only at its first increment misses
   * that increment); the limit kinds start at 0 likewise.
   */
  constructor(options: { version: string; grantTypes: readonly string[] }) {
    const registers = [this.registry];
    // Node's and the process's own metrics under their standard names (process_cpu_seconds_total,
    // nodejs_eventloop_lag_seconds, ...), which dashboards for any Node service expect; the registry serves
    // this server alone, so they need no prefix to be told apart.
    collectDefaultMetrics({ register: this.registry });
    new Gauge({
      name: 'authcli_build_info',
      help: 'Always 1; the running version in its label',
      labelNames: ['version'],
      registers,
    }).set({ version: options.version }, 1);
    this.requests = new TalliedCounter({
      name: 'authcli_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern (not_found: no route) and status code',
      labelNames: ['method', 'route', 'status_code'],
      registers,
    });
    this.requestDuration = new Histogram({
      name: 'authcli_http_request_duration_seconds',
      help: 'Time from a request arriving to its answer sent, by method and route pattern',
      labelNames: ['method', 'route'],
      buckets: [...HTTP_DURATION_BUCKETS_S],
      registers,
    });
    this.tokensIssued = new TalliedCounter({
      name: 'authcli_tokens_issued_total',
      help: 'Token responses sent by the token endpoint, by grant type (authorization_code, refresh_token, device_code)',
      labelNames: ['grant_type'],
      registers,
    });
    this.tokenErrors = new TalliedCounter({
      name: 'authcli_token_errors_total',
      help: 'Error answers of the token endpoint by error code (authorization_pending and slow_down included)',
      labelNames: ['error'],
      registers,
    });
    this.rateLimits = new TalliedCounter({
      name: 'authcli_rate_limited_total',
      help: 'Attempts past an abuse limit, by limit (past signin-account an account is slowed to signin-account-slowed, not refused)',
      labelNames: ['limit'],
      registers,
    });
    this.storeDuration = new Histogram({
      name: 'authcli_store_operation_duration_seconds',
      help: 'Time the server waited on the store, by engine and operation (a prepared statement, a transaction, a grouped write with its commit)',
      labelNames: ['engine', 'operation'],
      buckets: [...STORE_DURATION_BUCKETS_S],
      registers,
    });
    for (const grantType of options.grantTypes) this.series(this.grants, this.tokensIssued, grantLabel(grantType));
    for (const kind of Object.keys(LIMITS)) this.series(this.limits, this.rateLimits, kind);
    const logouts = new TalliedCounter({
      name: 'authcli_backchannel_logout_total',
      help: 'Logout tokens posted to applications (OpenID Connect Back-Channel Logout): delivered, failed (given up), retried (each retry)',
      labelNames: ['outcome'],
      registers,
    });
    for (const outcome of BACKCHANNEL_OUTCOMES) this.backchannel.set(outcome, logouts.series(outcome));
  }

  private series(cache: Map<string, Tally>, counter: TalliedCounter, label: string): Tally {
    let tally = cache.get(label);
    if (!tally) {
      tally = counter.series(label);
      cache.set(label, tally);
    }
    return tally;
  }

  /** One answered request; `route` is Fastify's route pattern, undefined when no route matched. */
  request(requestMethod: string, route: string | undefined, statusCode: number, seconds: number): void {
    const pattern = route ?? NOT_FOUND_ROUTE;
    const method = METHOD_LABELS.has(requestMethod) ? requestMethod : OTHER_METHOD;
    let methods = this.routes.get(pattern);
    if (!methods) {
      methods = new Map();
      this.routes.set(pattern, methods);
    }
    let series = methods.get(method);
    if (!series) {
      series = { duration: this.requestDuration.labels(method, pattern), byStatus: new Map() };
      methods.set(method, series);
    }
    let count = series.byStatus.get(statusCode);
    if (!count) {
      count = this.requests.series(method, pattern, String(statusCode));
      series.byStatus.set(statusCode, count);
    }
    count.count++;
    series.duration.observe(seconds);
  }

  tokenIssued(grantType: string): void {
    this.series(this.grants, this.tokensIssued, grantLabel(grantType)).count++;
  }

  tokenError(error: string): void {
    this.series(this.errors, this.tokenErrors, error).count++;
  }

  rateLimited(kind: CounterKind): void {
    this.series(this.limits, this.rateLimits, kind).count++;
  }

  backchannelLogout(outcome: BackchannelOutcome): void {
    this.backchannel.get(outcome)!.count++;
  }

  /** One store operation and how long it took (store/timed-engine.ts). */
  storeOperation(engine: string, operation: string, seconds: number): void {
    let operations = this.storeOperations.get(engine);
    if (!operations) {
      operations = new Map();
      this.storeOperations.set(engine, operations);
    }
    let child = operations.get(operation);
    if (!child) {
      child = this.storeDuration.labels(engine, operation);
      operations.set(operation, child);
    }
    child.observe(seconds);
  }

  /** Gauges of the password-hash queue, read at each scrape (nothing on the sign-in path). */
  watchPasswordHashes(queue: HashQueue): void {
    new Gauge({
      name: 'authcli_password_hashes_in_flight',
      help: 'Password hashes running or waiting for a hashing thread',
      registers: [this.registry],
      collect() {
        this.set(queue.pending);
      },
    });
    new Gauge({
      name: 'authcli_password_hashes_capacity',
      help: 'The most password hashes that may be in flight; past it a sign-in answers 503',
      registers: [this.registry],
      collect() {
        this.set(queue.capacity);
      },
    });
  }

  /**
   * The Prometheus text exposition of every metric, and its Content-Type.
   * prom-client writes a not-a-number value as `Nan` (Node's event-loop lag
   * gauges before the first sample); the text format spells it `NaN`, and
   * stricter parsers than Prometheus's refuse the other spelling.
   */
  async exposition(): Promise<{ contentType: string; body: string }> {
    const body = (await this.registry.metrics()).replace(/ Nan$/gm, ' NaN');
    return { contentType: this.registry.contentType, body };
  }
}

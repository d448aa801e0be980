// Load generation shared by the scenarios. The load generator runs on the same
// two cores as the server, so what it spends per request is taken from the
// server: requests that differ per call (single-use codes, distinct device
// codes) are built once, before the clock starts, and each connection cycles
// through its own slice of them. autocannon's per-call `setupRequest` and
// `onResponse` hooks rebuild the request and copy the headers on every call
// (≈ 30–80 µs each here), which on 2 cores costs the server a third of its
// rate; answers are checked with `verifyBody` instead (counted as mismatches).
import autocannon from 'autocannon';

export interface LoadFigures {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** Requests answered in all. */
  total: number;
  /** Answers that `verify` rejected. */
  mismatches: number;
  /** How long the run took, in seconds (until the last answer when single-use bodies ran out). */
  seconds: number;
}

export function figures(r: autocannon.Result): LoadFigures {
  return {
    rps: r.requests.average,
    total: r.requests.total,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors,
    non2xx: r.non2xx,
    mismatches: r.mismatches,
    seconds: r.duration,
  };
}

export interface DistinctLoad {
  url: string;
  connections: number;
  seconds: number;
  /** One form body per request; connection k sends bodies k, k + connections, k + 2·connections, … */
  bodies: readonly string[];
  /** Extra headers of each body's request (a DPoP proof), same order as `bodies`. */
  headers?: readonly Record<string, string>[];
  /** Each connection sends its slice once and stops (single-use bodies), instead of cycling through it. */
  once?: boolean;
  /** Must hold for every answer body; the others are counted in `mismatches`. */
  verify?: (body: string | Buffer | undefined) => boolean;
}

/** POSTs a distinct, pre-built form body per request. */
export async function distinctPosts(load: DistinctLoad): Promise<LoadFigures> {
  const { connections, bodies } = load;
  if (bodies.length < connections) throw new Error(`need at least ${connections} bodies`);
  const slices = Array.from({ length: connections }, (_, k) => {
    const slice: autocannon.Request[] = [];
    for (let i = k; i < bodies.length; i += connections) {
      slice.push({
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...load.headers?.[i] },
        body: bodies[i],
      });
    }
    return slice;
  });
  let client = 0;
  const started = performance.now();
  let lastAnswer = started;
  const r = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: load.url,
        connections,
        duration: load.seconds,
        ...(load.once ? { maxConnectionRequests: Math.floor(bodies.length / connections) } : {}),
        setupClient: (c) => c.setRequests(slices[client++ % connections]!),
        ...(load.verify ? { verifyBody: load.verify } : {}),
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
    instance.on('response', () => {
      lastAnswer = performance.now();
    });
  });
  if (!load.once) return figures(r);
  // autocannon notices that every connection is done only at its next one-second sample: its duration (and
  // its per-second average) of a run that ran out of bodies counts the idle rest of that second. The run
  // lasted until its last answer.
  const seconds = (lastAnswer - started) / 1000;
  return { ...figures(r), seconds, rps: r.requests.total / seconds };
}

/** A plain autocannon run: one request repeated. */
export async function repeated(opts: autocannon.Options): Promise<LoadFigures> {
  return figures(await autocannon(opts));
}

// Wrong-password sign-ins at a fixed rate, each from its own client address (X-Forwarded-For behind a server
// started with AUTHCLI_TRUST_PROXY=1), each for its own username: no per-IP or per-account limit refuses them,
// so every one that the hashing queue can take costs a real Argon2id hash. This is the load the password-hashing
// threads and their queue exist for: it must not delay token signing, and honest people signing in at the same
// time (honestBurst) must still get in.
import { randomUUID } from 'node:crypto';
import { openStore } from '@authcli/server';
import { Browser, hidden } from '@authcli/test-support/http';

export interface FloodFigures {
  sent: number;
  rate: number;
  /** Answers by status: 401 checked (a hash), 503 past the hashing queue (no hash), 429 a limit refused (no hash). */
  byStatus: Record<number, number>;
  failures: number;
}

export interface Flood {
  /** Resolves once the server first answers a guess 503: its hashing queue is full of the flood (or the flood stopped). */
  saturated: Promise<void>;
  stop(): Promise<FloodFigures>;
}

/** Starts `perSecond` wrong-password sign-ins a second against `issuer` until stopped. */
export async function signInFlood(issuer: string, perSecond: number): Promise<Flood> {
  // One CSRF secret and token serve every request (the token is checked against the cookie's secret).
  const jar = new Browser(issuer);
  const csrf = hidden((await jar.get('/signin')).text, '_csrf');
  const cookie = jar.cookieHeader();
  const byStatus: Record<number, number> = {};
  let sent = 0;
  let failures = 0;
  const inFlight = new Set<Promise<void>>();
  let markSaturated: () => void = () => undefined;
  const saturated = new Promise<void>((r) => (markSaturated = r));
  const started = performance.now();
  const one = (n: number) => {
    const ip = `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
    const p = fetch(`${issuer}/signin`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, 'x-forwarded-for': ip },
      body: new URLSearchParams({ _csrf: csrf, username: `flood${n}`, password: 'not the password' }).toString(),
    })
      .then(async (res) => {
        byStatus[res.status] = (byStatus[res.status] ?? 0) + 1;
        if (res.status === 503) markSaturated();
        await res.arrayBuffer();
      })
      .catch(() => {
        failures++;
      })
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  };
  // Sent on a schedule, not in a closed loop: slow answers must not slow the attack down.
  const tick = setInterval(() => {
    const due = Math.floor(((performance.now() - started) / 1000) * perSecond);
    while (sent < due) one(++sent);
  }, 10);
  return {
    saturated,
    async stop() {
      clearInterval(tick);
      markSaturated();
      const seconds = (performance.now() - started) / 1000;
      await Promise.all(inFlight);
      return { sent, rate: sent / seconds, byStatus, failures };
    },
  };
}

export interface BurstFigures {
  /** Answers by status: 303 signed in, 503 past the hashing queue (Retry-After), anything else a failure. */
  byStatus: Record<number, number>;
  /** Milliseconds from the burst's start to the median answer and to the last one. */
  p50Ms: number;
  maxMs: number;
  failures: number;
}

/** One person at a browser: a device cookie from an earlier sign-in there makes it a browser the server knows. */
export interface Person {
  readonly browser: Browser;
  readonly username: string;
  /** Their own client address (X-Forwarded-For, one proxy trusted). */
  readonly address: string;
}

/**
 * People signing in at the same moment, each with the right password: each browser fetches the sign-in page
 * first (its CSRF token), then every form is posted at once.
 */
export async function honestBurst(issuer: string, people: readonly Person[], password: string): Promise<BurstFigures> {
  const forms = await Promise.all(people.map(async (p) => hidden((await p.browser.get(`${issuer}/signin`)).text, '_csrf')));
  const byStatus: Record<number, number> = {};
  const times: number[] = [];
  let failures = 0;
  const started = performance.now();
  await Promise.all(
    people.map((p, i) =>
      p.browser
        .request('POST', `${issuer}/signin`, new URLSearchParams({ _csrf: forms[i]!, username: p.username, password }).toString(), {
          'content-type': 'application/x-www-form-urlencoded',
          'x-forwarded-for': p.address,
        })
        .then((res) => {
          byStatus[res.status] = (byStatus[res.status] ?? 0) + 1;
          times.push(performance.now() - started);
        })
        .catch(() => {
          failures++;
        }),
    ),
  );
  times.sort((a, b) => a - b);
  return {
    byStatus,
    p50Ms: Math.round(times[Math.floor(times.length / 2)] ?? 0),
    maxMs: Math.round(times.at(-1) ?? 0),
    failures,
  };
}

/** "20 × 303, 0 × 503": a burst's answers, by status. */
export const statusText = (byStatus: Record<number, number>) =>
  Object.entries(byStatus)
    .map(([status, n]) => `${n} × ${status}`)
    .join(', ');

/**
 * `count` users (person0, person1, ...) with the password of `like`, written into the server's store from this
 * process (the hash is copied: hashing each anew at the production cost would take a second apiece).
 */
export async function seedPeople(databaseUrl: string, like: string, count: number): Promise<string[]> {
  const store = await openStore(databaseUrl);
  try {
    const model = await store.users.findByUsername(like);
    if (!model) throw new Error(`no user ${like} to copy the password of`);
    const names = Array.from({ length: count }, (_, i) => `person${i}`);
    for (const username of names) {
      if (await store.users.findByUsername(username)) continue;
      await store.users.create({
        id: randomUUID(),
        username,
        password_hash: model.password_hash,
        is_admin: 0,
        disabled_at: null,
        created_at: Date.now(),
      });
    }
    return names;
  } finally {
    await store.close();
  }
}

/** Each person at a browser of their own (no cookies yet), each from their own address. */
export const atNewBrowsers = (issuer: string, usernames: readonly string[]): Person[] =>
  usernames.map((username, i) => ({ browser: new Browser(issuer), username, address: `172.16.${(i + 1) >> 8}.${(i + 1) & 255}` }));

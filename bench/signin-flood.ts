// Wrong-password sign-ins at a fixed rate, each from its own client address (X-Forwarded-For behind a server
// started with AUTHCLI_TRUST_PROXY=1), each for its own username: no per-IP or per-account limit refuses them,
// so every one that the hashers can take costs a real scrypt hash. This is the load the password-hashing pool
// and its cap exist for: it must not delay token signing.
import { Browser, hidden } from '@authcli/test-support/http';

export interface FloodFigures {
  sent: number;
  rate: number;
  /** Answers by status: 401 checked (a hash), 503 the hashers were full (no hash), 429 a limit refused (no hash). */
  byStatus: Record<number, number>;
  failures: number;
}

export interface Flood {
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
    async stop() {
      clearInterval(tick);
      const seconds = (performance.now() - started) / 1000;
      await Promise.all(inFlight);
      return { sent, rate: sent / seconds, byStatus, failures };
    },
  };
}

// A confidential client authenticating with its secret (client_secret_basic) at the introspection endpoint:
// the path every request of a confidential client takes (token, introspection, revocation, PAR, device
// authorization), with the failed-authentication limit read before the secret is compared (`client-auth-ip`).
// Each answer is `{"active":false}` (a token the server never issued): what is measured is authentication and
// a look-up, not token verification. Then the same while wrong secrets arrive from other addresses on a
// schedule (X-Forwarded-For behind AUTHCLI_TRUST_PROXY=1), each address soon past its limit: the refusals must
// not slow the client that authenticates.
import type { LoadFigures } from './load.js';

export interface ClientAuthFigures {
  right: LoadFigures;
  underFlood: LoadFigures;
  flood: { sent: number; byStatus: Record<number, number> };
}

export async function clientAuthScenario(
  issuer: string,
  client: { id: string; secret: string },
  load: (opts: {
    url: string;
    method: 'POST';
    headers: Record<string, string>;
    body: string;
    connections: number;
    verifyBody: (b: unknown) => boolean;
  }) => Promise<LoadFigures>,
  floodPerSecond: number,
): Promise<ClientAuthFigures> {
  const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
  const opts = {
    url: `${issuer}/oauth/introspect`,
    method: 'POST' as const,
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(client.id, client.secret) },
    body: 'token=not-issued-here',
    connections: 16,
    verifyBody: (b: unknown) => b === '{"active":false}',
  };
  const right = await load(opts);
  // Wrong secrets from 5 addresses in turn: each is answered 401 up to the limit, then 429 before any compare.
  const byStatus: Record<number, number> = {};
  let sent = 0;
  const inFlight = new Set<Promise<void>>();
  const started = performance.now();
  const tick = setInterval(() => {
    const due = Math.floor(((performance.now() - started) / 1000) * floodPerSecond);
    while (sent < due) {
      const n = ++sent;
      const p = fetch(opts.url, {
        method: 'POST',
        headers: { ...opts.headers, authorization: basic(client.id, `wrong ${n}`), 'x-forwarded-for': `10.0.${n % 5}.1` },
        body: opts.body,
      })
        .then(async (res) => {
          byStatus[res.status] = (byStatus[res.status] ?? 0) + 1;
          await res.arrayBuffer();
        })
        .catch(() => {
          byStatus[0] = (byStatus[0] ?? 0) + 1;
        })
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
  }, 10);
  let underFlood: LoadFigures;
  try {
    underFlood = await load(opts);
  } finally {
    clearInterval(tick);
    await Promise.all(inFlight);
  }
  return { right, underFlood, flood: { sent, byStatus } };
}

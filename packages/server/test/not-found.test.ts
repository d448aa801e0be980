import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildMetricsApp } from '../src/app.js';
import { loadConfig } from '../src/config/config.js';
import { supportedGrantTypes } from '../src/oauth/grants/registry.js';
import { Metrics } from '../src/util/metrics.js';
import { startServer, type TestServer } from './helpers.js';

/** Text no answer may repeat: it marks what the request sent, in the path and in the query. */
const MARK = 'zq7MARKzq7';
const LONG = `${MARK}${'A'.repeat(600)}`;

/** Every prefix the server answers under, and a few it does not. */
const PREFIXES = [
  '/',
  '/oauth/',
  '/oauth/authorize/',
  '/oauth/token/',
  '/oauth/device/',
  '/oauth/register/x/',
  '/.well-known/',
  '/.well-known/openid-configuration/',
  '/dashboard/',
  '/dashboard/apps/x/',
  '/account/',
  '/account/passkeys/',
  '/device/',
  '/signin/',
  '/assets/',
  '/developer/',
  '/connectors/x/y/',
  '/healthz/',
  '/no/such/',
];

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;

/**
 * Unknown addresses: Fastify's own 404 says `Route GET:/oauth/authorize/… not found`, repeating the request's
 * method and path (a phishing link's text in our answer, a scanner's probe in our logs). Every 404 is the
 * project's own: a page for people, an RFC 9457 problem for programs, and neither repeats anything.
 */
describe('404 answers are our own and repeat nothing of the request', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer('sqlite');
  });
  afterAll(async () => server.close());

  it('no unknown address under any prefix, by any method, with the path or query it sent, is repeated in the answer', async () => {
    const asked = PREFIXES.flatMap((prefix) =>
      METHODS.map(async (method) => {
        const res = await fetch(`${server.url}${prefix}${LONG}?${MARK}=${MARK}`, {
          method,
          ...(method === 'POST' || method === 'PUT' || method === 'PATCH'
            ? { body: `${MARK}=1`, headers: { 'content-type': 'application/x-www-form-urlencoded' } }
            : {}),
        });
        return { method, prefix, status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
      }),
    );
    const answers = await Promise.all(asked);
    for (const a of answers) {
      const what = `${a.method} ${a.prefix}…`;
      // 414 is the server's own limit on page paths (also ours); nothing else but 404.
      expect([404, 414], what).toContain(a.status);
      expect(a.body, what).not.toContain(MARK);
      expect(a.body, what).not.toContain('AAAAAAAAAA');
      expect(a.body, what).not.toContain('Route ');
      if (a.method === 'HEAD') continue;
      if (a.prefix.startsWith('/oauth/') || a.prefix.startsWith('/.well-known/')) {
        expect(a.type, what).toBe('application/problem+json; charset=utf-8');
        expect(JSON.parse(a.body), what).toEqual({
          type: 'about:blank',
          title: 'Not Found',
          status: 404,
          detail: 'There is nothing at this address.',
        });
      } else {
        expect(a.type, what).toBe('text/html; charset=utf-8');
      }
    }
  });

  it('the metrics listener answers an unknown address with the same problem', async () => {
    const app = buildMetricsApp(new Metrics({ version: 'test', grantTypes: supportedGrantTypes() }), loadConfig({}, {}), server.app.log);
    try {
      for (const url of [`/${LONG}`, `/metrics/${LONG}?${MARK}`, `/oauth/token/${LONG}`]) {
        const res = await app.inject({ method: 'POST', url });
        expect(res.statusCode).toBe(404);
        expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
        expect(res.body).not.toContain(MARK);
      }
    } finally {
      await app.close();
    }
  });
});

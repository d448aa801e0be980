import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp, buildMetricsApp } from '../src/app.js';
import { loadConfig } from '../src/config/config.js';
import { supportedGrantTypes } from '../src/oauth/grants/registry.js';
import { bootstrapStore } from '../src/oauth/registration.js';
import { Metrics } from '../src/util/metrics.js';
import { freshStore } from './helpers.js';

/** One sample line's value from the text exposition, by its name and labels exactly as prom-client writes them. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('metrics: a registry per server', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c();
  });

  async function server(metrics?: Metrics): Promise<FastifyInstance> {
    const { store, cleanup } = await freshStore('sqlite');
    const config = loadConfig({ port: 8080, host: '127.0.0.1' }, {}, { logLevel: 'silent' });
    await bootstrapStore(store, Date.now());
    const app = await buildApp(config, store, { metrics });
    cleanups.push(async () => {
      await app.close();
      await cleanup();
    });
    return app;
  }

  const tokenRequest = (app: FastifyInstance) =>
    app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'grant_type=password&username=a&password=b',
    });

  it('two servers in one process count only their own requests (no global registry, default metrics on each)', async () => {
    const a = new Metrics({ version: 'test', grantTypes: supportedGrantTypes() });
    const b = new Metrics({ version: 'test', grantTypes: supportedGrantTypes() });
    const appA = await server(a);
    const appB = await server(b);
    for (let i = 0; i < 3; i++) expect((await tokenRequest(appA)).statusCode).toBe(400);
    expect((await tokenRequest(appB)).statusCode).toBe(400);
    const series = 'authcli_http_requests_total{method="POST",route="/oauth/token",status_code="400"}';
    const textA = (await a.exposition()).body;
    const textB = (await b.exposition()).body;
    expect(sample(textA, series)).toBe(3);
    expect(sample(textB, series)).toBe(1);
    expect(sample(textA, 'authcli_token_errors_total{error="unsupported_grant_type"}')).toBe(3);
    expect(sample(textB, 'authcli_token_errors_total{error="unsupported_grant_type"}')).toBe(1);
    for (const text of [textA, textB]) {
      expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
      expect(sample(text, 'authcli_tokens_issued_total{grant_type="device_code"}')).toBe(0);
      expect(sample(text, 'authcli_rate_limited_total{limit="signin-ip"}')).toBe(0);
    }
  });

  it('a request is labelled by its route pattern, never by the path it asked for', async () => {
    const metrics = new Metrics({ version: 'test', grantTypes: supportedGrantTypes() });
    const app = await server(metrics);
    for (const id of ['one', 'two', 'three']) expect((await app.inject(`/dashboard/apps/${id}`)).statusCode).toBe(303);
    expect((await app.inject('/no/such/page?x=1')).statusCode).toBe(404);
    expect((await app.inject({ method: 'POST', url: '/oauth/nothing' })).statusCode).toBe(404);
    const text = (await metrics.exposition()).body;
    expect(sample(text, 'authcli_http_requests_total{method="GET",route="/dashboard/apps/:clientId",status_code="303"}')).toBe(3);
    expect(sample(text, 'authcli_http_requests_total{method="GET",route="not_found",status_code="404"}')).toBe(1);
    expect(sample(text, 'authcli_http_requests_total{method="POST",route="not_found",status_code="404"}')).toBe(1);
    expect(text).not.toMatch(/route="[^"]*(one|two|three|such|nothing)/);
  });

  it('a request is labelled by a method from a fixed set: the other methods Node accepts are one series, other', async () => {
    const metrics = new Metrics({ version: 'test', grantTypes: supportedGrantTypes() });
    const app = await server(metrics);
    const odd = ['PROPFIND', 'MKCOL', 'LOCK', 'SEARCH', 'MKCALENDAR', 'REPORT', 'PURGE'] as const;
    for (const method of odd) expect((await app.inject({ method, url: '/healthz' })).statusCode).toBeGreaterThanOrEqual(400);
    const text = (await metrics.exposition()).body;
    const methods = new Set([...text.matchAll(/authcli_http_requests_total\{method="([^"]+)"/g)].map((m) => m[1]));
    expect([...methods]).toEqual(['other']);
    expect(text).not.toMatch(new RegExp(`method="(${odd.join('|')})"`));
  });

  it('the metrics app serves /metrics in the Prometheus text format and /healthz, and nothing else', async () => {
    const metrics = new Metrics({ version: 'test', grantTypes: supportedGrantTypes() });
    const main = await server(metrics);
    const app = buildMetricsApp(metrics, loadConfig({}, {}), main.log);
    cleanups.push(() => app.close());
    const res = await app.inject('/metrics');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(sample(res.body, 'authcli_build_info{version="test"}')).toBe(1);
    expect((await app.inject('/healthz')).json()).toEqual({ status: 'ok' });
    expect((await app.inject('/oauth/token')).statusCode).toBe(404);
    expect((await main.inject('/metrics')).statusCode).toBe(404);
  });
});

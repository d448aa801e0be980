import { execFileSync } from 'node:child_process';
import { connect, createServer, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { challengeS256, generateState, generateVerifier } from '@authcli/pkce';
import { getMetricsFromStream, type PromData, type PromHistogramData, type PromMetrics } from 'prom2javascript';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { dialects, freshDatabase } from '@authcli/test-support/databases';
import { approveInBrowser, Browser, freePort, hidden, signInFields } from '@authcli/test-support/http';
import { addUsers } from '@authcli/test-support/seed';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const PASSWORD = 'metrics e2e password';
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/** Scrapes `GET /metrics` and parses it with a Prometheus text-format parser (prom2javascript, not ours). */
async function scrape(metricsBase: string): Promise<PromMetrics> {
  const res = await fetch(`${metricsBase}/metrics`);
  expect(res.status).toBe(200);
  // prom-client's registry.contentType: the Prometheus text exposition format 0.0.4.
  expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  const text = await res.text();
  // NaN is a valid sample value in the text format (Node's event-loop lag before its first sample, right after
  // start), spelled NaN, but prom2javascript cannot read one: such samples are checked here and left out.
  const nan = /^(\S+) NaN$/gm;
  for (const [, name] of text.matchAll(nan)) expect(name).toMatch(/^nodejs_eventloop_lag_/);
  return getMetricsFromStream(Readable.from([text.replace(nan, '')]));
}

const matches = (labels: Record<string, string>, want: Record<string, string>) => Object.entries(want).every(([k, v]) => labels[k] === v);

/** The samples of a counter or gauge. */
function samples(m: PromMetrics, name: string): PromData[] {
  const family = m[name];
  if (!family) throw new Error(`no metric ${name} in the scrape`);
  return family.data as PromData[];
}

/** The value of the one sample of `name` whose labels include `labels`; undefined when there is none. */
function value(m: PromMetrics, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples(m, name).filter((s) => matches(s.labels, labels));
  expect(found.length, `${name} ${JSON.stringify(labels)}`).toBeLessThanOrEqual(1);
  return found[0]?.value;
}

/** The series of histogram `name` whose labels include `labels`. */
function histogram(m: PromMetrics, name: string, labels: Record<string, string>): PromHistogramData {
  const family = m[name];
  if (!family) throw new Error(`no metric ${name} in the scrape`);
  const found = (family.data as PromHistogramData[]).filter((s) => matches(s.labels, labels));
  expect(found, `${name} ${JSON.stringify(labels)}`).toHaveLength(1);
  const series = found[0]!;
  // Cumulative buckets, ending in +Inf = the count.
  // (Sorted by bound: an object lists integer-like keys such as "1" and "5" first.)
  const counts = Object.entries(series.buckets)
    .sort(([a], [b]) => (a === '+Inf' ? Infinity : Number(a)) - (b === '+Inf' ? Infinity : Number(b)))
    .map(([, n]) => n);
  for (let i = 1; i < counts.length; i++) expect(counts[i]!).toBeGreaterThanOrEqual(counts[i - 1]!);
  expect(series.buckets['+Inf']).toBe(series.count);
  return series;
}

async function post(base: string, path: string, fields: Record<string, string>): Promise<{ status: number; body: Record<string, string> }> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

/** Whether something accepts TCP connections on 127.0.0.1:`port`. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket: Socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The TCP ports process `pid` listens on (iproute2's `ss`). */
function listeningPorts(pid: number): number[] {
  const out = execFileSync('ss', ['-Hltnp'], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((l) => l.includes(`pid=${pid},`))
    .map((l) => {
      const local = l.split(/\s+/)[3]!;
      return Number(local.slice(local.lastIndexOf(':') + 1));
    });
}

const startedLine = (server: ServerProcess) =>
  server
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => l.msg === 'authcli-server started');

describe('GET /metrics on a listener of its own (AUTHCLI_METRICS_PORT)', () => {
  let server: ServerProcess;
  let metricsBase: string;

  beforeAll(async () => {
    const metricsPort = await freePort();
    metricsBase = `http://127.0.0.1:${metricsPort}`;
    server = await startServerProcess({
      env: { AUTHCLI_METRICS_PORT: String(metricsPort), LOG_LEVEL: 'info', AUTHCLI_LIMITS: 'device-authz-ip=3/10m' },
    });
    await addUsers(server.env, [{ username: 'mia', password: PASSWORD }]);
  });
  afterAll(async () => server?.stop());

  it('counts requests by route pattern, tokens by grant, token errors by code, limit hits by limit, store time by operation', async () => {
    const base = server.issuer;
    // The other tests here only add unknown paths; in a shuffled order they may run first.
    const notFoundBefore = value(await scrape(metricsBase), 'authcli_http_requests_total', { route: 'not_found' }) ?? 0;
    let tokenRequests = 0;
    const errors = new Map<string, number>();
    const token = async (fields: Record<string, string>) => {
      tokenRequests++;
      const r = await post(base, '/oauth/token', fields);
      if (r.status !== 200) errors.set(r.body.error!, (errors.get(r.body.error!) ?? 0) + 1);
      return r;
    };

    // A device authorization, polled while pending (each poll answers authorization_pending or slow_down).
    const device = await post(base, '/oauth/device/authorization', { client_id: 'authcli', scope: 'openid offline_access' });
    expect(device.status).toBe(200);
    const pendingPolls = 4;
    for (let i = 0; i < pendingPolls; i++) {
      const poll = await token({ grant_type: DEVICE_GRANT, device_code: device.body.device_code!, client_id: 'authcli' });
      expect(poll.status).toBe(400);
      expect(['authorization_pending', 'slow_down']).toContain(poll.body.error);
    }

    // A failed sign-in, then the approval of the device at /device.
    const browser = new Browser(base);
    const signin = await browser.get('/signin');
    expect((await browser.postForm('/signin', signInFields(signin.text, 'mia', 'not the password'))).status).toBe(401);
    const again = await browser.get('/signin');
    expect((await browser.postForm('/signin', signInFields(again.text, 'mia', PASSWORD))).status).toBe(303);
    const entry = await browser.get('/device');
    const confirm = await browser.postForm('/device', { _csrf: hidden(entry.text, '_csrf'), user_code: device.body.user_code! });
    expect(confirm.status).toBe(200);
    const decided = await browser.postForm('/device/decision', {
      _csrf: hidden(confirm.text, '_csrf'),
      user_code: hidden(confirm.text, 'user_code'),
      // The box a person ticks: their device shows this code.
      code_confirmed: hidden(confirm.text, 'code_confirmed'),
      decision: 'approve',
    });
    expect(decided.status).toBeLessThan(400);

    // The device gets its tokens, then refreshes them once.
    const tokens = await token({ grant_type: DEVICE_GRANT, device_code: device.body.device_code!, client_id: 'authcli' });
    expect(tokens.status).toBe(200);
    const refreshed = await token({ grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token!, client_id: 'authcli' });
    expect(refreshed.status).toBe(200);

    // A code exchange (authorization code flow with PKCE, loopback callback).
    const verifier = generateVerifier();
    const redirectUri = 'http://127.0.0.1:53682/callback';
    const authorize = new URL('/oauth/authorize', base);
    for (const [k, v] of Object.entries({
      response_type: 'code',
      client_id: 'authcli',
      redirect_uri: redirectUri,
      scope: 'openid',
      state: generateState(),
      code_challenge: await challengeS256(verifier),
      code_challenge_method: 'S256',
    }))
      authorize.searchParams.set(k, v);
    const callback = new URL(await approveInBrowser(browser, authorize.href, 'mia', PASSWORD));
    const exchange = {
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code')!,
      redirect_uri: redirectUri,
      client_id: 'authcli',
      code_verifier: verifier,
    };
    expect((await token(exchange)).status).toBe(200);
    // The same code again: invalid_grant.
    expect((await token(exchange)).status).toBe(400);

    // device-authz-ip is 3 per 10 minutes here: the first was above, two more pass, the fourth is refused.
    for (let i = 0; i < 2; i++)
      expect((await post(base, '/oauth/device/authorization', { client_id: 'authcli', scope: 'openid' })).status).toBe(200);
    expect((await post(base, '/oauth/device/authorization', { client_id: 'authcli', scope: 'openid' })).status).toBe(429);

    // Not served on the public listener, and not advertised.
    expect((await fetch(`${base}/metrics`)).status).toBe(404);
    expect(await (await fetch(`${base}/.well-known/openid-configuration`)).text()).not.toContain('metrics');

    const m = await scrape(metricsBase);
    expect(value(m, 'authcli_tokens_issued_total', { grant_type: 'device_code' })).toBe(1);
    expect(value(m, 'authcli_tokens_issued_total', { grant_type: 'refresh_token' })).toBe(1);
    expect(value(m, 'authcli_tokens_issued_total', { grant_type: 'authorization_code' })).toBe(1);
    // Every grant the endpoint serves has its series from the start, at 0 until used.
    expect(value(m, 'authcli_tokens_issued_total', { grant_type: 'client_credentials' })).toBe(0);
    expect(value(m, 'authcli_tokens_issued_total', { grant_type: 'token-exchange' })).toBe(0);
    expect(samples(m, 'authcli_tokens_issued_total')).toHaveLength(5);
    expect(errors.get('invalid_grant')).toBe(1);
    for (const [error, n] of errors) expect(value(m, 'authcli_token_errors_total', { error }), error).toBe(n);
    expect((errors.get('authorization_pending') ?? 0) + (errors.get('slow_down') ?? 0)).toBe(pendingPolls);
    expect(samples(m, 'authcli_token_errors_total')).toHaveLength(errors.size);

    const requests = (labels: Record<string, string>) => value(m, 'authcli_http_requests_total', labels);
    expect(requests({ method: 'POST', route: '/oauth/token', status_code: '400' })).toBe(pendingPolls + 1);
    expect(requests({ method: 'POST', route: '/oauth/token', status_code: '200' })).toBe(3);
    expect(requests({ method: 'POST', route: '/signin', status_code: '401' })).toBe(1);
    expect(requests({ method: 'POST', route: '/signin', status_code: '303' })).toBe(1);
    expect(requests({ method: 'POST', route: '/oauth/device/authorization', status_code: '200' })).toBe(3);
    expect(requests({ method: 'POST', route: '/oauth/device/authorization', status_code: '429' })).toBe(1);
    const authorizeAnswers = samples(m, 'authcli_http_requests_total').filter((s) => s.labels.route === '/oauth/authorize');
    expect(authorizeAnswers.reduce((n, s) => n + s.value, 0)).toBeGreaterThanOrEqual(1);
    // GET /metrics on the public listener, and nothing else here, had no route.
    expect(requests({ method: 'GET', route: 'not_found', status_code: '404' })).toBe(notFoundBefore + 1);
    expect(histogram(m, 'authcli_http_request_duration_seconds', { method: 'POST', route: '/oauth/token' }).count).toBe(tokenRequests);

    expect(value(m, 'authcli_rate_limited_total', { limit: 'device-authz-ip' })).toBe(1);
    for (const s of samples(m, 'authcli_rate_limited_total'))
      if (s.labels.limit !== 'device-authz-ip') expect(s.value, s.labels.limit).toBe(0);

    const store = (operation: string) => histogram(m, 'authcli_store_operation_duration_seconds', { engine: 'sqlite', operation });
    // On the embedded store a pending poll is one grouped write (its statement and its share of the commit).
    expect(store('device_poll').count).toBe(pendingPolls + 1);
    expect(store('device_redemption').count).toBe(1);
    expect(store('refresh_rotation').count).toBe(1);
    expect(store('code_redemption').count).toBe(1);
    expect(store('code_by_hash').count).toBe(2);

    expect(value(m, 'authcli_password_hashes_capacity')).toBeGreaterThanOrEqual(4);
    expect(value(m, 'authcli_password_hashes_in_flight')).toBe(0);
    expect(value(m, 'authcli_build_info')).toBe(1);
    // Node's and the process's own metrics, under their standard names.
    expect(value(m, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(m.nodejs_eventloop_lag_seconds?.type).toBe('gauge');
  });

  it('a route label is a route pattern: 500 unknown paths add one not_found series, never a series per path', async () => {
    const before = await scrape(metricsBase);
    const seriesBefore = samples(before, 'authcli_http_requests_total').length;
    const notFoundBefore = value(before, 'authcli_http_requests_total', { method: 'GET', route: 'not_found', status_code: '404' }) ?? 0;
    const prefixes = ['/', '/oauth/', '/.well-known/', '/dashboard/', '/assets/'];
    for (let i = 0; i < 500; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, async (_, j) => {
          const path = `${prefixes[(i + j) % prefixes.length]}${Math.random().toString(36).slice(2)}/${i + j}?x=${i}`;
          const res = await fetch(`${server.issuer}${path}`);
          await res.arrayBuffer();
          expect(res.status, path).toBe(404);
        }),
      );
    }
    const after = await scrape(metricsBase);
    expect(value(after, 'authcli_http_requests_total', { method: 'GET', route: 'not_found', status_code: '404' })).toBe(
      notFoundBefore + 500,
    );
    // The scrapes themselves are on the other listener, so at most the not_found series is new.
    expect(samples(after, 'authcli_http_requests_total').length).toBeLessThanOrEqual(seriesBefore + 1);
    for (const s of samples(after, 'authcli_http_requests_total')) expect(s.labels.route).toMatch(/^(not_found|\/[a-z0-9/:_.-]*)$/);
    expect(after.authcli_http_request_duration_seconds!.data.length).toBeLessThanOrEqual(
      before.authcli_http_request_duration_seconds!.data.length + 1,
    );
  });

  it('the metrics listener serves only /metrics and /healthz; the start line names it', async () => {
    expect(await (await fetch(`${metricsBase}/healthz`)).json()).toEqual({ status: 'ok' });
    expect((await fetch(`${metricsBase}/oauth/token`, { method: 'POST' })).status).toBe(404);
    expect((await fetch(`${metricsBase}/`)).status).toBe(404);
    expect(startedLine(server)).toMatchObject({ listening: `127.0.0.1:${new URL(server.issuer).port}`, metrics: `${metricsBase}/metrics` });
    expect(listeningPorts(server.child.pid!).sort()).toEqual(
      [Number(new URL(server.issuer).port), Number(new URL(metricsBase).port)].sort(),
    );
  });
});

describe.each(dialects())('store time by engine and operation (%s)', (dialect) => {
  it('the statements of a device poll and a device authorization are timed under the engine that ran them', async () => {
    const database = await freshDatabase(dialect);
    const metricsPort = await freePort();
    const server = await startServerProcess({ database: database.url, env: { AUTHCLI_METRICS_PORT: String(metricsPort) } });
    try {
      const device = await post(server.issuer, '/oauth/device/authorization', { client_id: 'authcli', scope: 'openid' });
      expect(device.status).toBe(200);
      const poll = await post(server.issuer, '/oauth/token', {
        grant_type: DEVICE_GRANT,
        device_code: device.body.device_code!,
        client_id: 'authcli',
      });
      expect(poll.body.error).toBe('authorization_pending');
      const m = await scrape(`http://127.0.0.1:${metricsPort}`);
      const engines = new Set((m.authcli_store_operation_duration_seconds!.data as PromHistogramData[]).map((s) => s.labels.engine));
      expect([...engines]).toEqual([dialect]);
      const timed = (operation: string) => histogram(m, 'authcli_store_operation_duration_seconds', { engine: dialect, operation });
      expect(timed('insert_device_authorizations').count).toBe(1);
      expect(timed('application_by_client_id').count).toBeGreaterThanOrEqual(1);
      // The embedded store batches a poll with the other writes of its event-loop turn (one grouped write);
      // PostgreSQL runs its conditional UPDATE as a statement of its own.
      expect(timed(dialect === 'sqlite' ? 'device_poll' : 'device_poll_on_time').count).toBe(1);
      expect(histogram(m, 'authcli_http_request_duration_seconds', { method: 'POST', route: '/oauth/token' }).sum).toBeGreaterThan(0);
    } finally {
      await server.stop();
      await database.cleanup();
    }
  });
});

describe('the metrics listener in the life of `authcli-server start`', () => {
  let server: ServerProcess | undefined;
  afterEach(async () => server?.stop());

  it('off by default: one listener only, and the start line names no metrics address', async () => {
    server = await startServerProcess({ env: { LOG_LEVEL: 'info' } });
    for (let i = 0; i < 50 && !startedLine(server); i++) await new Promise((r) => setTimeout(r, 100));
    const started = startedLine(server);
    expect(started).toBeDefined();
    expect(started).not.toHaveProperty('metrics');
    expect(listeningPorts(server.child.pid!)).toEqual([Number(new URL(server.issuer).port)]);
    expect((await fetch(`${server.issuer}/metrics`)).status).toBe(404);
  });

  it('SIGTERM: the metrics listener stops at once with the main one, requests in flight finish, exit 0', async () => {
    const metricsPort = await freePort();
    server = await startServerProcess({ env: { AUTHCLI_METRICS_PORT: String(metricsPort) } });
    expect(await listening(metricsPort)).toBe(true);
    // A device authorization whose last body byte is held back: in flight until it is sent.
    const port = Number(new URL(server.issuer).port);
    const body = 'client_id=authcli&scope=openid';
    const socket = connect(port, '127.0.0.1');
    let response = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (response += d));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await new Promise<void>((resolve) =>
      socket.once('connect', () =>
        socket.write(
          `POST /oauth/device/authorization HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.slice(0, -1)}`,
          () => resolve(),
        ),
      ),
    );
    await new Promise((r) => setTimeout(r, 300));
    const child = server.child;
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    // Still running (the request is in flight), but neither listener takes connections any more.
    expect(child.exitCode).toBeNull();
    expect(await listening(metricsPort)).toBe(false);
    expect(await listening(port)).toBe(false);
    socket.end(body.slice(-1));
    await closed;
    expect(response).toMatch(/^HTTP\/1\.1 200 /);
    expect(await exit).toEqual({ code: 0, signal: null });
    expect(server.output()).not.toMatch(/unexpected error|shutdown failed/);
  });

  it('a metrics port in use stops `start` with one line, and no listener keeps the process alive', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const metricsPort = (taken.address() as { port: number }).port;
    try {
      const r = await serverCommand(['start'], {
        PORT: String(await freePort()),
        HOST: '127.0.0.1',
        DATABASE_URL: ':memory:',
        LOG_LEVEL: 'warn',
        AUTHCLI_METRICS_PORT: String(metricsPort),
      });
      expect(r.code).toBe(1);
      const errorLines = r.stderr.split('\n').filter((l) => l && !l.startsWith('authcli-server: warning:'));
      expect(errorLines).toEqual([
        `authcli-server: 127.0.0.1:${metricsPort} is already in use (another authcli-server, or another program): stop it, or choose another port with AUTHCLI_METRICS_PORT`,
      ]);
    } finally {
      taken.close();
    }
  });

  it.each([
    ['abc', 'AUTHCLI_METRICS_PORT must be an integer 0-65535, got "abc"'],
    ['70000', 'AUTHCLI_METRICS_PORT must be an integer 0-65535, got "70000"'],
    ['-1', 'AUTHCLI_METRICS_PORT must be an integer 0-65535, got "-1"'],
    ['18080', "AUTHCLI_METRICS_PORT must differ from the server's port (18080): metrics get a listener of their own"],
  ])('AUTHCLI_METRICS_PORT=%s stops `start` with one line', async (port, message) => {
    const r = await serverCommand(['start'], { PORT: '18080', DATABASE_URL: ':memory:', AUTHCLI_METRICS_PORT: port });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`authcli-server: ${message}\n`);
  });

  it('an empty AUTHCLI_METRICS_HOST stops `start` with one line', async () => {
    const r = await serverCommand(['start'], {
      PORT: '18080',
      DATABASE_URL: ':memory:',
      AUTHCLI_METRICS_PORT: '19464',
      AUTHCLI_METRICS_HOST: ' ',
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('authcli-server: AUTHCLI_METRICS_HOST is empty: give an address to bind, e.g. 127.0.0.1\n');
  });
});

import { connect, createServer, type Server, type Socket } from 'node:net';
import { request as httpRequest } from 'node:http';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig, type ServerConfig } from '../src/config/config.js';
import { BACKCHANNEL_LOGOUT_BUILT_IN, STORE_RETRY_AFTER_SECONDS } from '../src/config/defaults.js';
import { openStore } from '../src/store/open.js';
import { StoreError, type Store } from '../src/store/store.js';
import { isStoreUnavailable } from '../src/store/unavailable.js';
import { Browser, freePort, hidden, type Res } from '@authcli/test-support/http';
import { rawExchange } from '@authcli/test-support/raw-http';
import { postgresTestUrl } from '@authcli/test-support/databases';
import { addUser } from '../src/oauth/accounts.js';
import { bootstrapStore } from '../src/oauth/registration.js';
import { adminToken, dialects, freshStore, startServer, type TestServer, TEST_PASSWORD_HASH } from './helpers.js';
import { testRows } from '../src/testing.js';

/** Opens `n` connections that each send `head` and then nothing, in batches (the listen backlog is finite). */
async function stalledConnections(port: number, n: number, head: (i: number) => string): Promise<Socket[]> {
  const sockets: Socket[] = [];
  for (let i = 0; i < n; i += 200) {
    const batch = await Promise.all(
      Array.from(
        { length: Math.min(200, n - i) },
        (_, k) =>
          new Promise<Socket>((resolve, reject) => {
            const s = connect(port, '127.0.0.1');
            s.on('error', () => undefined);
            s.once('connect', () => {
              s.write(head(i + k));
              resolve(s);
            });
            s.once('close', () => reject(new Error('closed before connecting')));
          }),
      ),
    );
    sockets.push(...batch);
  }
  return sockets;
}

function connectionCount(app: FastifyInstance): Promise<number> {
  return new Promise((resolve, reject) => app.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** One GET on a connection of its own (no keep-alive pool holding a slot): the status, or the socket error. */
function getOnce(port: number, path: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, agent: false, headers: { connection: 'close' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    req.end();
  });
}

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const start = performance.now();
  const value = await work();
  return { value, ms: performance.now() - start };
}

const portOf = (server: { url: string }) => Number(new URL(server.url).port);

const POLL = 'grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code&client_id=authcli&device_code=no-such-code';

function pollToken(url: string) {
  return fetch(`${url}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: POLL });
}

describe('slow and stalled clients are cut by the socket timeouts', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer('sqlite', {
      headersTimeoutMs: 1000,
      requestTimeoutMs: 2000,
      keepAliveTimeoutMs: 2500,
      registration: 'open',
    });
  });
  afterAll(async () => server.close());

  // Every route that takes a body. The timeout is the HTTP server's, before any route runs, so each is cut alike.
  const POST_ROUTES = [
    '/oauth/token',
    '/oauth/device/authorization',
    '/oauth/revoke',
    '/oauth/userinfo',
    '/oauth/par',
    '/signin',
    '/signout',
    '/consent',
    '/device',
    '/device/decision',
    '/dashboard/apps',
    '/dashboard/apps/authcli',
    '/dashboard/apps/authcli/delete',
    '/dashboard/apps/authcli/rotate-secret',
    '/oauth/register',
    'PUT /oauth/register/authcli',
    '/account',
    '/account/password',
    '/account/applications/remove',
  ];

  it(`a body that never arrives is cut at the request timeout, at every route that takes one (${POST_ROUTES.length} at once)`, async () => {
    const outcomes = await Promise.all(
      POST_ROUTES.map((route) => {
        const [method, path] = route.includes(' ') ? route.split(' ') : ['POST', route];
        // Client registration takes JSON only (RFC 7591 §3); another type would be refused before the body is read.
        const type = path!.startsWith('/oauth/register') ? 'application/json' : 'application/x-www-form-urlencoded';
        return rawExchange(
          portOf(server),
          `${method} ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${type}\r\nContent-Length: 100\r\n\r\n{`,
          {
            giveUpMs: 10_000,
          },
        );
      }),
    );
    for (const [i, { response, closedAfterMs }] of outcomes.entries()) {
      expect(response, POST_ROUTES[i]).toMatch(/^HTTP\/1\.1 408 /);
      // Not before the request timeout (so the headers timeout did not do it), at most a checking interval after.
      expect(closedAfterMs, POST_ROUTES[i]).toBeGreaterThan(1900);
      expect(closedAfterMs, POST_ROUTES[i]).toBeLessThan(2000 + 250 + 500);
    }
  });

  it('the admin API: a body that never arrives is cut at the request timeout; without a token it is refused before any body is read', async () => {
    const token = await adminToken(server);
    const head = (auth: string) =>
      `POST /admin/v1/users HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${auth}Content-Length: 100\r\n\r\n{`;
    const [withToken, without] = await Promise.all([
      rawExchange(portOf(server), head(`Authorization: Bearer ${token}\r\n`), { giveUpMs: 10_000 }),
      rawExchange(portOf(server), head(''), { giveUpMs: 10_000 }),
    ]);
    expect(withToken.response).toMatch(/^HTTP\/1\.1 408 /);
    expect(withToken.closedAfterMs).toBeGreaterThan(1900);
    expect(withToken.closedAfterMs).toBeLessThan(2000 + 250 + 500);
    expect(without.response).toMatch(/^HTTP\/1\.1 401 /);
    expect(without.response).toMatch(/content-type: application\/problem\+json/i);
  });

  it('headers that never finish (slowloris) are cut at the headers timeout, however busy the trickle', async () => {
    const head = 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ';
    const { response, closedAfterMs } = await rawExchange(portOf(server), head, { trickleEveryMs: 100, giveUpMs: 10_000 });
    expect(response).toMatch(/^HTTP\/1\.1 408 /);
    expect(closedAfterMs).toBeGreaterThan(900);
    expect(closedAfterMs).toBeLessThan(1000 + 250 + 500);
  });

  it('an idle kept-alive connection outlives the headers timeout and is closed at the keep-alive timeout', async () => {
    const socket = connect(portOf(server), '127.0.0.1');
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (received += d));
    const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(performance.now())));
    await new Promise((r) => socket.once('connect', r));
    const get = 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n';
    socket.write(get);
    await until('the first answer', async () => received.includes('"ok"'));
    // Idle past the headers timeout, and past a check of it: a connection opened now whose headers never finish is
    // cut (408) by then. Idle time between requests is not header time, so this one is still open.
    const probe = await rawExchange(portOf(server), 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ', { giveUpMs: 10_000 });
    expect(probe.response).toMatch(/^HTTP\/1\.1 408 /);
    expect(received).not.toContain('408');
    received = '';
    socket.write(get);
    await until('the second answer', async () => received.includes('"ok"'));
    const answeredAt = performance.now();
    const idleMs = (await closed) - answeredAt;
    expect(received).toMatch(/^HTTP\/1\.1 200 /);
    // Node keeps the socket a second past the advertised keep-alive timeout (HTTP_SERVER_KEEP_ALIVE_TIMEOUT_BUFFER).
    expect(idleMs).toBeGreaterThan(2400);
    expect(idleMs).toBeLessThan(2500 + 1000 + 500);
  });

  it('a page POST over the body cap gets 413, and the server goes on', async () => {
    const res = await fetch(`${server.url}/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `username=${'a'.repeat(server.config.bodyLimit)}`,
    });
    expect(res.status).toBe(413);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });
});

describe('many stalled connections do not starve the server', () => {
  let server: TestServer;
  let sockets: Socket[] = [];
  afterEach(async () => {
    for (const s of sockets) s.destroy();
    sockets = [];
    await server.close();
  });

  it('2,000 stalled connections: /readyz still answers 200 at once, and the server is healthy after', async () => {
    server = await startServer('sqlite');
    const port = portOf(server);
    // Half stop inside their headers, half inside their bodies: both wait on the (default) timeouts.
    sockets = await stalledConnections(port, 2000, (i) =>
      i % 2
        ? 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: '
        : 'POST /oauth/token HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n',
    );
    await until('the server holds them all', async () => (await connectionCount(server.app)) >= 2000);
    const ready = await timed(() => getOnce(port, '/readyz'));
    expect(ready.value).toBe(200);
    expect(ready.ms).toBeLessThan(1000);
    expect((await pollToken(server.url)).status).toBe(400);
    for (const s of sockets) s.destroy();
    await until('they are gone', async () => (await connectionCount(server.app)) < 10);
    expect(await getOnce(port, '/readyz')).toBe(200);
  });

  it('past the connection cap new connections are closed at once; the server serves again when they go', async () => {
    server = await startServer('sqlite', { maxConnections: 50 });
    const port = portOf(server);
    sockets = await stalledConnections(port, 50, () => 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ');
    await until('the server holds them all', async () => (await connectionCount(server.app)) === 50);
    const refused = await timed(() => getOnce(port, '/healthz'));
    expect(refused.value).toBe('ECONNRESET');
    expect(refused.ms).toBeLessThan(500);
    expect(await connectionCount(server.app)).toBe(50);
    for (const s of sockets) s.destroy();
    await until('they are gone', async () => (await connectionCount(server.app)) === 0);
    expect(await getOnce(port, '/healthz')).toBe(200);
  });
});

/**
 * A TCP proxy in front of PostgreSQL that the test can turn into a black hole:
 * `stall()` stops every byte both ways and leaves new connections accepted
 * but unanswered, closing nothing (the network between an instance and its
 * database going silent); `resume()` undoes it. `freezeExisting()` stalls
 * only the connections open now, for good, while new ones work (a path that
 * died, as after a failover).
 */
class BlackHoleProxy {
  private readonly server: Server;
  private readonly pairs = new Set<{ client: Socket; upstream?: Socket; frozen: boolean }>();
  private stalled = false;
  port = 0;
  /** Connections accepted so far. */
  accepted = 0;

  constructor(private readonly target: { host: string; port: number }) {
    this.server = createServer((client) => this.accept(client));
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  private accept(client: Socket): void {
    this.accepted++;
    const pair: { client: Socket; upstream?: Socket; frozen: boolean } = { client, frozen: false };
    this.pairs.add(pair);
    client.on('error', () => undefined);
    client.on('close', () => {
      pair.upstream?.destroy();
      this.pairs.delete(pair);
    });
    client.pause();
    if (!this.stalled) this.forward(pair);
  }

  private forward(pair: { client: Socket; upstream?: Socket }): void {
    const upstream = connect(this.target.port, this.target.host);
    pair.upstream = upstream;
    upstream.on('error', () => undefined);
    upstream.on('close', () => pair.client.destroy());
    upstream.on('data', (d) => pair.client.write(d));
    pair.client.on('data', (d) => upstream.write(d));
    pair.client.resume();
  }

  stall(): void {
    this.stalled = true;
    for (const p of this.pairs) {
      p.client.pause();
      p.upstream?.pause();
    }
  }

  resume(): void {
    this.stalled = false;
    for (const p of this.pairs) {
      if (p.frozen) continue;
      if (!p.upstream) {
        this.forward(p);
        continue;
      }
      p.client.resume();
      p.upstream.resume();
    }
  }

  /** Stalls the connections open now, for good; returns how many there were. */
  freezeExisting(): number {
    for (const p of this.pairs) {
      p.frozen = true;
      p.client.pause();
      p.upstream?.pause();
    }
    return this.pairs.size;
  }

  /** Connections open through the proxy. */
  get open(): number {
    return this.pairs.size;
  }

  /** Cuts every connection (the store's pool notices and forgets them). */
  dropAll(): void {
    for (const p of this.pairs) {
      p.client.destroy();
      p.upstream?.destroy();
    }
  }

  async close(): Promise<void> {
    this.dropAll();
    await new Promise((r) => this.server.close(r));
  }
}

const DB_TIMEOUT_MS = 1000;

interface ProxiedServer {
  url: string;
  app: FastifyInstance;
  store: Store;
  proxy: BlackHoleProxy;
  /** A second store on the same schema, straight to PostgreSQL, for the test's own statements. */
  direct: Store;
  close: () => Promise<void>;
}

/** The real server, over a PostgreSQL store it reaches through a {@link BlackHoleProxy}, with a 1 s database timeout. */
async function startBehindProxy(): Promise<ProxiedServer> {
  const { store: direct, url, cleanup } = await freshStore('postgres');
  const target = new URL(url);
  const proxy = new BlackHoleProxy({ host: target.hostname, port: Number(target.port || 5432) });
  await proxy.listen();
  const proxied = new URL(url);
  proxied.port = String(proxy.port);
  const store = await openStore(proxied.href, { timeoutMs: DB_TIMEOUT_MS });
  const port = await freePort();
  const config: ServerConfig = loadConfig(
    { port, host: '127.0.0.1' },
    {},
    {
      logLevel: 'silent',
      dbTimeoutMs: DB_TIMEOUT_MS,
      registration: 'open',
      // The back-channel logout outbox's poll would take a connection of its own while one is stuck: these tests
      // count the connections the requests use.
      backchannelLogout: { timeoutMs: 5000, ...BACKCHANNEL_LOGOUT_BUILT_IN, pollMs: 3_600_000 },
    },
  );
  await bootstrapStore(store, Date.now());
  const app = await buildApp(config, store);
  await app.listen({ port, host: '127.0.0.1' });
  return {
    url: config.issuer,
    app,
    store,
    proxy,
    direct,
    close: async () => {
      await app.close();
      await proxy.close();
      await store.close();
      await cleanup();
    },
  };
}

async function expectUnavailableAnswer(res: Response): Promise<void> {
  expect(res.status).toBe(503);
  expect(res.headers.get('retry-after')).toBe(String(STORE_RETRY_AFTER_SECONDS));
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(((await res.json()) as { error: string }).error).toBe('temporarily_unavailable');
}

describe.runIf(dialects().includes('postgres'))('a stalled PostgreSQL gives quick 503s and recovers by itself', () => {
  // A server and proxy per test: a test leaves connections dropped or frozen for good in the pool behind it.
  let server: ProxiedServer;
  beforeEach(async () => {
    server = await startBehindProxy();
  });
  afterEach(async () => server.close());

  it('black hole: the token endpoint answers 503 temporarily_unavailable, a page a 503 page, /readyz 503 within a second; all answer again once it lifts', async () => {
    expect((await pollToken(server.url)).status).toBe(400);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    server.proxy.stall();
    try {
      const [token, page, ready] = await Promise.all([
        timed(() => pollToken(server.url)),
        timed(() => fetch(`${server.url}/oauth/authorize?client_id=nobody-${Math.random()}`)),
        timed(() => fetch(`${server.url}/readyz`)),
      ]);
      await expectUnavailableAnswer(token.value);
      expect(token.ms).toBeLessThan(DB_TIMEOUT_MS + 250 + 750);
      expect(page.value.status).toBe(503);
      expect(page.value.headers.get('retry-after')).toBe(String(STORE_RETRY_AFTER_SECONDS));
      expect(page.value.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await page.value.text()).toMatch(/Temporarily unavailable/);
      expect(page.ms).toBeLessThan(DB_TIMEOUT_MS + 250 + 750);
      expect(ready.value.status).toBe(503);
      expect(await ready.value.json()).toEqual({ status: 'unavailable', reason: 'store_timeout' });
      expect(ready.ms).toBeLessThan(1000 + 400);
    } finally {
      server.proxy.resume();
    }
    // No restart: the next requests find the database again.
    expect((await pollToken(server.url)).status).toBe(400);
    expect((await fetch(`${server.url}/oauth/authorize?client_id=nobody`)).status).toBeLessThan(500);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  });

  it('with the database gone, every endpoint answers within the database timeout, never a 500: 503 where it needs the store', async () => {
    // Before the outage: a signed-in browser (session and CSRF cookies, a form token) to reach the pages with, and a
    // token for the admin API.
    await addUser(server.store, { username: 'alice', password: 'correct horse battery' }, Date.now(), TEST_PASSWORD_HASH);
    const admin = { authorization: `Bearer ${await adminToken(server)}` };
    const browser = new Browser(server.url);
    const signin = await browser.get('/signin');
    const csrf = hidden(signin.text, '_csrf');
    expect((await browser.postForm('/signin', { _csrf: csrf, username: 'alice', password: 'correct horse battery' })).status).toBe(303);
    const devicePage = await browser.get('/device');
    const pageCsrf = hidden(devicePage.text, '_csrf');
    const form = (body: Record<string, string>) => new URLSearchParams(body).toString();
    const formHeaders = { 'content-type': 'application/x-www-form-urlencoded' };
    // Needs the store: each must say "temporarily unavailable".
    const needsStore: Record<string, () => Promise<Res>> = {
      'POST /oauth/token': () => browser.request('POST', '/oauth/token', POLL, formHeaders),
      'POST /oauth/device/authorization': () =>
        browser.request('POST', '/oauth/device/authorization', form({ client_id: `c-${Math.random()}` }), formHeaders),
      'POST /oauth/introspect (a client secret)': () =>
        browser.request(
          'POST',
          '/oauth/introspect',
          form({ token: 'x', client_id: `c-${Math.random()}`, client_secret: 's' }),
          formHeaders,
        ),
      'POST /oauth/revoke': () =>
        browser.request('POST', '/oauth/revoke', form({ token: 'x', client_id: `c-${Math.random()}` }), formHeaders),
      'POST /oauth/par': () =>
        browser.request('POST', '/oauth/par', form({ client_id: `c-${Math.random()}`, response_type: 'code' }), formHeaders),
      'GET /oauth/authorize': () => browser.get(`/oauth/authorize?client_id=c-${Math.random()}`),
      'POST /oauth/register': () =>
        browser.request('POST', '/oauth/register', JSON.stringify({ redirect_uris: ['https://app.example/cb'] }), {
          'content-type': 'application/json',
        }),
      'GET /oauth/register/:client_id': () =>
        browser.request('GET', `/oauth/register/c-${Math.random().toString(36).slice(2)}`, undefined, { authorization: 'Bearer x' }),
      'POST /signin': () => browser.postForm('/signin', { _csrf: csrf, username: 'alice', password: 'wrong password' }),
      'GET /device': () => browser.get('/device'),
      'POST /device': () => browser.postForm('/device', { _csrf: pageCsrf, user_code: 'BCDF-GHJK' }),
      'POST /device/decision': () =>
        browser.postForm('/device/decision', { _csrf: pageCsrf, user_code: 'BCDF-GHJK', code_confirmed: 'BCDF-GHJK', decision: 'approve' }),
      'GET /dashboard': () => browser.get('/dashboard'),
      'GET /account': () => browser.get('/account'),
      'POST /account': () => browser.postForm('/account', { _csrf: pageCsrf, given_name: 'Alice' }),
      'POST /account/applications/remove': () =>
        browser.postForm('/account/applications/remove', { _csrf: pageCsrf, client_id: 'authcli' }),
      'GET /developer/playground': () => browser.get('/developer/playground'),
      'GET /admin/v1/users': () => browser.request('GET', '/admin/v1/users', undefined, admin),
      'POST /admin/v1/users': () =>
        browser.request('POST', '/admin/v1/users', JSON.stringify({ username: 'zed', password: 'long enough pw' }), {
          ...admin,
          'content-type': 'application/json',
        }),
      'GET /': () => browser.get('/'),
      'GET /readyz': () => browser.get('/readyz'),
    };
    // Need nothing of it: they answer as usual.
    const storeless: Record<string, () => Promise<Res>> = {
      'GET /healthz': () => browser.get('/healthz'),
      'GET /.well-known/openid-configuration': () => browser.get('/.well-known/openid-configuration'),
      'GET /oauth/jwks': () => browser.get('/oauth/jwks'),
      'GET /admin/v1/openapi.json': () => browser.get('/admin/v1/openapi.json'),
      'GET /oauth/userinfo (a token that is not ours)': () =>
        browser.request('GET', '/oauth/userinfo', undefined, { authorization: 'Bearer not.a.token' }),
    };
    server.proxy.stall();
    try {
      const run = (calls: Record<string, () => Promise<Res>>) =>
        Promise.all(Object.entries(calls).map(async ([name, call]) => ({ name, ...(await timed(call)) })));
      const [down, up] = await Promise.all([run(needsStore), run(storeless)]);
      for (const { name, value, ms } of down) {
        expect(value.status, name).toBe(503);
        // The probe answers its load balancer, not a client that would retry.
        if (name !== 'GET /readyz') expect(value.headers.get('retry-after'), name).toBeTruthy();
        expect(ms, name).toBeLessThan(DB_TIMEOUT_MS + 250 + 1000);
      }
      for (const { name, value, ms } of up) {
        expect(value.status, name).toBeLessThan(500);
        expect(ms, name).toBeLessThan(1000);
      }
    } finally {
      server.proxy.resume();
    }
    expect((await browser.get('/dashboard')).status).toBe(200);
  });

  it('new connections into the black hole (connect and pool acquire) give up at the database timeout, more callers than the pool holds included', async () => {
    // Cut the open connections first (the pool notices and forgets them), so every caller needs a new one.
    server.proxy.dropAll();
    await until('the proxy is empty', async () => server.proxy.open === 0);
    await new Promise((r) => setTimeout(r, 100));
    server.proxy.stall();
    try {
      // The pool holds 10: the first 10 wait on connects that never finish, the rest wait for a free client.
      const answers = await timed(() => Promise.all(Array.from({ length: 14 }, () => pollToken(server.url))));
      for (const res of answers.value) await expectUnavailableAnswer(res);
      expect(answers.ms).toBeLessThan(DB_TIMEOUT_MS + 1000);
      const failure = await server.store.ping().then(
        () => undefined,
        (err: unknown) => err,
      );
      expect((failure as Error).message).toMatch(/timeout exceeded when trying to connect|Connection terminated due to connection timeout/);
      expect(isStoreUnavailable(failure)).toBe(true);
    } finally {
      server.proxy.resume();
    }
    expect((await pollToken(server.url)).status).toBe(400);
  });

  it('a query on an open connection the database stopped answering fails at the query timeout, and that connection is replaced, not reused', async () => {
    expect((await pollToken(server.url)).status).toBe(400);
    // The connections open now go silent for good; new ones work (the old path died, a new one is fine).
    const frozen = server.proxy.freezeExisting();
    expect(frozen).toBeGreaterThan(0);
    const failed = await server.store.ping().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect((failed as Error).message).toBe('Query read timeout');
    expect(isStoreUnavailable(failed)).toBe(true);
    // Each frozen connection costs at most one 503; were an abandoned connection handed out again, every
    // request would queue behind its unanswered query and this would never end in a 400.
    const statuses: number[] = [];
    for (let i = 0; i <= frozen; i++) {
      const { value, ms } = await timed(() => pollToken(server.url));
      statuses.push(value.status);
      expect(ms).toBeLessThan(DB_TIMEOUT_MS + 250 + 750);
      if (value.status === 400) break;
      await expectUnavailableAnswer(value);
    }
    expect(statuses.at(-1)).toBe(400);
  });

  it('a statement stuck behind a lock is cancelled at the statement timeout: 503, and the connection stays in use', async () => {
    // This worker's database, where the server's schema is.
    const holder = new pg.Client({ connectionString: await postgresTestUrl() });
    await holder.connect();
    const schema = await testRows(server.direct).currentSchema();
    try {
      expect((await pollToken(server.url)).status).toBe(400);
      const connectionsBefore = server.proxy.accepted;
      await holder.query('begin');
      await holder.query(`lock table ${schema}.device_authorizations in access exclusive mode`);
      const { value, ms } = await timed(() => pollToken(server.url));
      await expectUnavailableAnswer(value);
      expect(ms).toBeGreaterThan(DB_TIMEOUT_MS - 100);
      expect(ms).toBeLessThan(DB_TIMEOUT_MS + 750);
      const failure = await testRows(server.store)
        .count('device_authorizations')
        .then(
          () => undefined,
          (err: unknown) => err,
        );
      expect((failure as { code?: string }).code).toBe('57014');
      // The server cancelled the statement and the connection answered: it is kept, nothing reconnected.
      expect(server.proxy.accepted).toBe(connectionsBefore);
    } finally {
      await holder.query('rollback');
      await holder.end();
    }
    expect((await pollToken(server.url)).status).toBe(400);
  });
});

describe('an embedded store that another process holds gives a 503, not a 500', () => {
  it('SQLITE_BUSY past busy_timeout at the token endpoint is temporarily_unavailable', async () => {
    const { store, url, cleanup } = await freshStore('sqlite');
    await store.close();
    const server = await startServerOn(url);
    const other = new Database(url);
    try {
      other.exec('begin immediate');
      await expectUnavailableAnswer(await pollToken(server.url));
    } finally {
      other.exec('rollback');
      other.close();
      await server.close();
      await cleanup();
    }
  }, 20_000);
});

/** A server over the SQLite file at `path`, opened as `start` opens it. */
async function startServerOn(path: string): Promise<{ url: string; close: () => Promise<void> }> {
  const store = await openStore(path, { backgroundCheckpoints: true });
  await store.migrate();
  const port = await freePort();
  const config = loadConfig({ port, host: '127.0.0.1' }, {}, { logLevel: 'silent' });
  await bootstrapStore(store, Date.now());
  const app = await buildApp(config, store);
  await app.listen({ port, host: '127.0.0.1' });
  return {
    url: config.issuer,
    close: async () => {
      await app.close();
      await store.close();
    },
  };
}

describe('/readyz checks the schema version', () => {
  for (const dialect of dialects()) {
    it(`${dialect}: 200 when every migration is applied, 503 when the newest is missing or the schema is gone`, async () => {
      const server = await startServer(dialect);
      try {
        expect(await server.store.schemaIsCurrent()).toBe(true);
        const ok = await fetch(`${server.url}/readyz`);
        expect(ok.status).toBe(200);
        expect(await ok.json()).toEqual({ status: 'ready' });

        expect(await testRows(server.store).forgetLatestMigration()).toBeDefined();
        const behind = await fetch(`${server.url}/readyz`);
        expect(behind.status).toBe(503);
        expect(await behind.json()).toEqual({ status: 'unavailable', reason: 'schema_outdated' });

        await testRows(server.store).dropMigrationTable();
        const missing = await fetch(`${server.url}/readyz`);
        expect(missing.status).toBe(503);
        expect(await missing.json()).toEqual({ status: 'unavailable', reason: 'store_error' });
        expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      } finally {
        await server.close();
      }
    });
  }
});

describe('store failures are told apart from bugs in one place', () => {
  it('timeouts, lost connections, SQLSTATEs and SQLite codes that mean "not now" are unavailable', () => {
    const coded = (code: string) => Object.assign(new Error('x'), { code });
    for (const err of [
      new Error('timeout exceeded when trying to connect'),
      new Error('Connection terminated due to connection timeout'),
      new Error('Connection terminated unexpectedly'),
      new Error('Query read timeout'),
      coded('ECONNREFUSED'),
      coded('ECONNRESET'),
      coded('57014'),
      coded('57P01'),
      coded('53300'),
      coded('08006'),
      coded('SQLITE_BUSY'),
      coded('SQLITE_BUSY_SNAPSHOT'),
      coded('SQLITE_IOERR_WRITE'),
      new StoreError('unavailable', 'migration failed'),
    ]) {
      expect(isStoreUnavailable(err), `${err.message} ${(err as { code?: string }).code ?? ''}`).toBe(true);
    }
  });

  it('bugs and wrong input are not: a TypeError stays a 500 whatever its message', () => {
    const coded = (code: string) => Object.assign(new Error('x'), { code });
    for (const err of [
      new TypeError('Query read timeout'),
      new TypeError("Cannot read properties of undefined (reading 'rows')"),
      new RangeError('Connection terminated'),
      new Error('something else'),
      coded('23505'),
      coded('42P01'),
      coded('SQLITE_CONSTRAINT_UNIQUE'),
      coded('SQLITE_ERROR'),
      coded('FST_ERR_CTP_BODY_TOO_LARGE'),
      new StoreError('not_found', 'no user'),
      undefined,
      'Query read timeout',
    ]) {
      expect(isStoreUnavailable(err), String(err)).toBe(false);
    }
  });
});

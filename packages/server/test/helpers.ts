import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { challengeS256, generateNonce, generateState, generateVerifier } from '@authcli/pkce';
import pg from 'pg';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { addUser, bootstrapStore, registerApplication } from '../src/bootstrap.js';
import { loadConfig, type ServerConfig } from '../src/config.js';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';

export type DialectName = 'sqlite' | 'postgres';

/**
 * The stores every suite runs against. PostgreSQL runs when
 * AUTHCLI_TEST_POSTGRES_URL is set; in CI it must be set, so it cannot skip silently.
 */
export function dialects(): DialectName[] {
  if (process.env.AUTHCLI_TEST_POSTGRES_URL) return ['sqlite', 'postgres'];
  if (process.env.CI) throw new Error('CI must set AUTHCLI_TEST_POSTGRES_URL so the PostgreSQL suites run');
  return ['sqlite'];
}

/** A fresh, empty, migrated store: an SQLite file in a temp dir, or a new PostgreSQL schema. */
export async function freshStore(dialect: DialectName): Promise<{ store: Store; url: string; cleanup: () => Promise<void> }> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'authcli-test-'));
    const url = join(dir, 'authcli.db');
    const store = await openStore(url);
    await store.migrate();
    return {
      store,
      url,
      cleanup: async () => {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const base = process.env.AUTHCLI_TEST_POSTGRES_URL!;
  const schema = `t_${Math.random().toString(36).slice(2, 12)}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const url = `${base}${base.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  const store = await openStore(url);
  await store.migrate();
  return {
    store,
    url,
    cleanup: async () => {
      await store.close();
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`drop schema ${schema} cascade`);
      await c.end();
    },
  };
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** A clock tests can move forward. */
export class TestClock {
  constructor(public t = Date.now()) {}
  now = () => this.t;
  advance(ms: number) {
    this.t += ms;
  }
}

export interface TestServer {
  url: string;
  config: ServerConfig;
  store: Store;
  app: FastifyInstance;
  clock: TestClock;
  close: () => Promise<void>;
}

/** The real server, listening on a loopback port, over a fresh store. */
export async function startServer(dialect: DialectName, overrides: Partial<ServerConfig> = {}): Promise<TestServer> {
  const { store, cleanup } = await freshStore(dialect);
  const port = await freePort();
  const clock = new TestClock();
  const config = loadConfig({ port, host: '127.0.0.1' }, {}, { logLevel: 'silent', now: clock.now, ...overrides });
  await bootstrapStore(store, clock.now());
  const app = await buildApp(config, store);
  await app.listen({ port, host: '127.0.0.1' });
  return {
    url: config.issuer,
    config,
    store,
    app,
    clock,
    close: async () => {
      await app.close();
      await cleanup();
    },
  };
}

export const PASSWORD = 'correct horse battery';

export async function seedUser(server: TestServer, username = 'alice', extra: { admin?: boolean; email?: string } = {}) {
  return addUser(server.store, { username, password: PASSWORD, admin: extra.admin ?? false, email: extra.email ?? null }, server.clock.now());
}

export async function seedApp(
  server: TestServer,
  input: Partial<{ name: string; kind: 'public' | 'confidential'; callbackUrls: string[]; scopes: string[]; grantTypes: string[]; idTokenAlg: string }> = {},
) {
  return registerApplication(
    server.store,
    {
      name: input.name ?? 'Test App',
      kind: input.kind ?? 'public',
      callbackUrls: input.callbackUrls ?? ['https://app.example/callback'],
      scopes: input.scopes ?? ['openid', 'profile', 'email', 'offline_access'],
      ...(input.grantTypes && { grantTypes: input.grantTypes }),
      ...(input.idTokenAlg && { idTokenAlg: input.idTokenAlg }),
    },
    server.clock.now(),
  );
}

export interface Res {
  status: number;
  headers: Headers;
  text: string;
  location: string | null;
}

/** A minimal browser over real HTTP: keeps cookies, never follows redirects by itself. */
export class Browser {
  cookies = new Map<string, string>();

  constructor(readonly base: string) {}

  private absorb(res: Response) {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(c) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  private cookieHeader() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async request(method: string, pathOrUrl: string, body?: string, headers: Record<string, string> = {}): Promise<Res> {
    const url = pathOrUrl.startsWith('http') ? pathOrUrl : this.base + pathOrUrl;
    const res = await fetch(url, {
      method,
      redirect: 'manual',
      headers: { ...(this.cookies.size ? { cookie: this.cookieHeader() } : {}), ...headers },
      ...(body !== undefined && { body }),
    });
    this.absorb(res);
    return { status: res.status, headers: res.headers, text: await res.text(), location: res.headers.get('location') };
  }

  get(path: string) {
    return this.request('GET', path);
  }

  postForm(path: string, fields: Record<string, string>) {
    return this.request('POST', path, new URLSearchParams(fields).toString(), {
      'content-type': 'application/x-www-form-urlencoded',
    });
  }
}

/** The value of a hidden input in a rendered page. */
export function hidden(html: string, name: string): string {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (!m) throw new Error(`no hidden field ${name} in page`);
  return m[1]!.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&#39;/g, "'");
}

export interface AuthRequest {
  clientId: string;
  redirectUri: string;
  scope?: string;
  verifier?: string;
  state?: string;
  nonce?: string;
  extra?: Record<string, string>;
}

export async function authorizeUrl(r: AuthRequest): Promise<{ url: string; verifier: string; state: string; nonce: string }> {
  const verifier = r.verifier ?? generateVerifier();
  const state = r.state ?? generateState();
  const nonce = r.nonce ?? generateNonce();
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: r.clientId,
    redirect_uri: r.redirectUri,
    scope: r.scope ?? 'openid profile',
    state,
    nonce,
    code_challenge: await challengeS256(verifier),
    code_challenge_method: 'S256',
    ...r.extra,
  });
  return { url: `/oauth/authorize?${q}`, verifier, state, nonce };
}

/** Signs in through the real sign-in page. */
export async function signIn(browser: Browser, username = 'alice', password = PASSWORD, returnTo = '/'): Promise<Res> {
  const page = await browser.get(`/signin?return_to=${encodeURIComponent(returnTo)}`);
  return browser.postForm('/signin', {
    _csrf: hidden(page.text, '_csrf'),
    return_to: hidden(page.text, 'return_to'),
    username,
    password,
  });
}

/**
 * Drives the code flow like a user: authorize, sign in if asked, approve
 * consent if asked. Returns the callback URL's parameters.
 */
export async function authorize(
  server: TestServer,
  browser: Browser,
  r: AuthRequest,
  decision: 'approve' | 'deny' = 'approve',
): Promise<{ callback: URL; verifier: string; state: string; nonce: string }> {
  const { url, verifier, state, nonce } = await authorizeUrl(r);
  let res = await browser.get(url);
  if (res.status === 303 && res.location?.startsWith('/signin')) {
    res = await browser.get(res.location);
    res = await browser.postForm('/signin', {
      _csrf: hidden(res.text, '_csrf'),
      return_to: hidden(res.text, 'return_to'),
      username: 'alice',
      password: PASSWORD,
    });
    if (res.status !== 303) throw new Error(`sign-in failed: ${res.status}`);
    res = await browser.get(res.location!);
  }
  if (res.status === 200 && res.text.includes('name="decision"')) {
    res = await browser.postForm('/consent', {
      _csrf: hidden(res.text, '_csrf'),
      request: hidden(res.text, 'request'),
      decision,
    });
  }
  if (res.status !== 303 && res.status !== 302) throw new Error(`expected a redirect to the client, got ${res.status}: ${res.text.slice(0, 300)}`);
  return { callback: new URL(res.location!), verifier, state, nonce };
}

/** POSTs a form to the token endpoint over real HTTP. */
export async function tokenRequest(
  server: TestServer,
  fields: Record<string, string> | string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; json: Record<string, any> }> {
  const res = await fetch(`${server.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: typeof fields === 'string' ? fields : new URLSearchParams(fields).toString(),
  });
  const text = await res.text();
  let json: Record<string, any>;
  try {
    json = JSON.parse(text) as Record<string, any>;
  } catch {
    json = { raw: text };
  }
  return { status: res.status, headers: res.headers, json };
}

export function basic(id: string, secret: string): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${enc(id)}:${enc(secret)}`).toString('base64')}`;
}

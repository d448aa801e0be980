import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { challengeS256, generateNonce, generateState, generateVerifier } from '@authcli/pkce';
import type { FastifyInstance } from 'fastify';
import { onTestFinished } from 'vitest';
import { buildApp } from '../src/app.js';
import { randomBytes, randomUUID, scryptSync } from 'node:crypto';
import { bootstrapStore, registerApplication } from '../src/oauth/registration.js';
import { hashPassword } from '../src/util/password.js';
import { KEY_ACTIVATION_DELAY_MS, passwordHashParams } from '../src/config/defaults.js';
import { generateSigningKey, SIGNING_ALGS } from '../src/oauth/keys.js';
import type { SigningKeyRow } from '../src/store/schema.js';
import { loadConfig, type ServerConfig } from '../src/config/config.js';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';
import { Sessions } from '../src/web/session.js';
import type { Metrics } from '../src/util/metrics.js';
import { freshPostgresSchema } from '@authcli/test-support/databases';
import { approveInBrowser, Browser, freePort, hidden, signInFields, type Res } from '@authcli/test-support/http';

export { Browser, hidden, signInFields, type Res };

/** A JSON answer of the server under test, read field by field in assertions. */
// biome-ignore lint/suspicious/noExplicitAny: assertions read nested fields of answers whose shape is what the test checks
type Json = Record<string, any>;

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
  const { url, drop } = await freshPostgresSchema();
  const store = await openStore(url);
  await store.migrate();
  return {
    store,
    url,
    cleanup: async () => {
      await store.close();
      await drop();
    },
  };
}

/** A clock a test can move forward: time stands still until the test advances it. */
export class TestClock {
  constructor(public t: number) {}
  now = () => this.t;
  advance(ms: number) {
    this.t += ms;
  }
}

export interface TestServer {
  url: string;
  config: ServerConfig;
  store: Store;
  /** The store's database URL, for a second instance on the same database. */
  storeUrl: string;
  app: FastifyInstance;
  /**
   * The server's time, read-only: the instant the server started, unless the
   * running test took its own clock (ownClock). Suites share a server, so no
   * test may move a clock another test reads.
   */
  clock: { readonly now: () => number };
  /** Makes the server read `clock`, or its start instant again when undefined; see ownClock. */
  useClock: (clock: TestClock | undefined) => void;
  close: () => Promise<void>;
}

/**
 * A clock of the running test's own, at the server's current instant: the
 * server reads it until the test finishes, then its start instant again. A
 * test that moves time takes one instead of moving a clock its suite shares.
 */
export function ownClock(server: TestServer): TestClock {
  const clock = new TestClock(server.clock.now());
  server.useClock(clock);
  onTestFinished(() => server.useClock(undefined));
  return clock;
}

/**
 * The password-hash cost of test servers (log2 of Argon2id's KiB): the bottom of AUTHCLI_PASSWORD_HASH_COST's
 * bounds, a hash in about a millisecond instead of the production 50 ms. Tests about the cost itself set their own.
 */
export const TEST_HASH_COST = 10;
export const TEST_PASSWORD_HASH = passwordHashParams(TEST_HASH_COST);

/**
 * A password hash as servers before Argon2id wrote it (`scrypt$N$r$p$salt$key`, RFC 7914, r=8, p=1), made here
 * with node:crypto rather than by the server, so the test holds the stored format itself.
 */
export function legacyScryptHash(password: string, N = 1 << 10, keylen = 32): string {
  const salt = randomBytes(16);
  const key = scryptSync(password.normalize('NFC'), salt, keylen, { N, r: 8, p: 1, maxmem: 256 * N * 8 });
  return `scrypt$${N}$8$1$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/**
 * An RS256 and an ES256 signing key, made once per test process: a new RSA 2048 key costs 0.2-0.5 s of CPU,
 * and nearly every test server would make one at start. Servers in one process share them, which no test
 * tells apart (each file's servers run one after another, and tokens are also bound to their issuer).
 */
let processSigningKeys: Promise<SigningKeyRow[]> | undefined;

/** Writes the process's signing keys into a fresh store, already active at `now`, as `KeyRing.init` would have. */
async function seedSigningKeys(store: Store, now: number): Promise<void> {
  processSigningKeys ??= Promise.all(SIGNING_ALGS.map((alg) => generateSigningKey(alg, 0)));
  for (const key of await processSigningKeys) await store.keys.insert({ ...key, created_at: now - KEY_ACTIVATION_DELAY_MS });
}

/**
 * The real server, listening on a loopback port, over a fresh store. Its signing keys are seeded (see
 * seedSigningKeys); with a key-encryption key, or `generateKeys`, it makes its own at start as a new server does.
 * `issuerHost`: the issuer's host instead of 127.0.0.1 (`localhost`: passkeys need a host name); the server
 * still listens on 127.0.0.1. `metrics`: what the server counts into (off otherwise, as in production).
 */
export async function startServer(
  dialect: DialectName,
  overrides: Partial<ServerConfig> = {},
  options: { generateKeys?: boolean; issuerHost?: string; metrics?: Metrics } = {},
): Promise<TestServer> {
  const { store, url: storeUrl, cleanup } = await freshStore(dialect);
  const port = await freePort();
  const started = Date.now();
  let current: TestClock | undefined;
  const clock = { now: () => current?.now() ?? started };
  const config = loadConfig(
    { port, host: '127.0.0.1', issuer: `http://${options.issuerHost ?? '127.0.0.1'}:${port}` },
    {},
    { logLevel: 'silent', now: clock.now, passwordHashCost: TEST_HASH_COST, ...overrides },
  );
  await bootstrapStore(store, clock.now());
  if (!config.keyEncryptionKey && !options.generateKeys) await seedSigningKeys(store, clock.now());
  const app = await buildApp(config, store, { metrics: options.metrics });
  await app.listen({ port, host: '127.0.0.1' });
  return {
    url: config.issuer,
    config,
    store,
    storeUrl,
    app,
    clock,
    useClock: (c) => {
      current = c;
    },
    close: async () => {
      await app.close();
      await cleanup();
    },
  };
}

/** Answers counted by HTTP status, e.g. `{ 401: 10, 429: 50 }`. */
export const tally = (answers: readonly { status: number }[]) =>
  answers.reduce<Record<number, number>>((t, r) => {
    t[r.status] = (t[r.status] ?? 0) + 1;
    return t;
  }, {});

/**
 * A passkey row for `userId`, stored as registration would store it, for the tests that need one to exist
 * (its key is no key: these tests run no ceremony with it; passkeys.test.ts runs real ones).
 */
export function seedPasskey(server: TestServer, userId: string, id: string, name = 'Laptop') {
  return server.store.passkeys.insert(
    {
      id,
      user_id: userId,
      public_key: 'x',
      counter: 0,
      transports: '[]',
      device_type: 'singleDevice',
      backed_up: 0,
      aaguid: '00000000-0000-0000-0000-000000000000',
      name,
      created_at: server.clock.now(),
      last_used_at: null,
      added_from: '127.0.0.1',
    },
    { max: 100, onlyFirst: false },
  );
}

/** Another instance of `server`: its own app and store connection on the same database, on a port of its own. */
export async function secondInstance(server: TestServer): Promise<{ url: string; close: () => Promise<void> }> {
  const store = await openStore(server.storeUrl);
  const app = await buildApp(server.config, store);
  const port = await freePort();
  await app.listen({ port, host: '127.0.0.1' });
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      await app.close();
      await store.close();
    },
  };
}

export const PASSWORD = 'correct horse battery';

/** PASSWORD hashed once per test process and cost (users differ by id, not salt). */
const passwordHashes = new Map<number, Promise<string>>();

export async function seedUser(server: TestServer, username = 'alice', extra: { admin?: boolean; email?: string } = {}) {
  const cost = server.config.passwordHashCost;
  if (!passwordHashes.has(cost)) passwordHashes.set(cost, hashPassword(PASSWORD, passwordHashParams(cost)));
  const passwordHash = passwordHashes.get(cost)!;
  return server.store.users.create({
    id: randomUUID(),
    username,
    password_hash: await passwordHash,
    ...(extra.email && { claims: JSON.stringify({ email: extra.email, email_verified: false }), claims_updated_at: server.clock.now() }),
    is_admin: extra.admin ? 1 : 0,
    disabled_at: null,
    created_at: server.clock.now(),
  });
}

export async function seedApp(
  server: TestServer,
  input: Partial<{
    name: string;
    kind: 'public' | 'confidential';
    callbackUrls: string[];
    scopes: string[];
    grantTypes: string[];
    idTokenAlg: string;
    ownerId: string;
    introspection: string;
  }> = {},
) {
  return registerApplication(
    server.store,
    {
      name: input.name ?? 'Test App',
      kind: input.kind ?? 'public',
      callbackUrls: input.callbackUrls ?? ['https://app.example/callback'],
      // offline_access only with the refresh grant: registration refuses it otherwise (bootstrap.ts).
      scopes: input.scopes ?? [
        'openid',
        'profile',
        'email',
        ...(!input.grantTypes || input.grantTypes.includes('refresh_token') ? ['offline_access'] : []),
      ],
      ...(input.grantTypes && { grantTypes: input.grantTypes }),
      ...(input.idTokenAlg && { idTokenAlg: input.idTokenAlg }),
      ...(input.ownerId && { ownerId: input.ownerId }),
      ...(input.introspection && { introspection: input.introspection }),
    },
    server.clock.now(),
  );
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

/**
 * Signs in through the real sign-in page: `page` is where the sign-in starts
 * (`/signin`, or a `/signin?continue=...` a page redirected to), and the
 * form is posted as rendered, continuation id included.
 */
export async function signIn(browser: Browser, username = 'alice', password = PASSWORD, page = '/signin'): Promise<Res> {
  const form = await browser.get(page);
  return browser.postForm('/signin', signInFields(form.text, username, password));
}

/**
 * A browser signed in as `username` without the sign-in page, for the tests about something else (as
 * node-oidc-provider's tests seed sessions): the session is stored by the server's own Sessions.create, as a
 * password sign-in stores it (authenticated now), and the browser holds its cookie under the server's own name, so
 * the real pages, consent and authorization endpoint read it like any session. It has no trusted-device cookie,
 * which only the password checks read (sign-in, password change): tests about those sign in through the form (signIn).
 * `amr`: how the session was signed in (RFC 8176; a password unless given, e.g. a passkey's `['hwk', 'mfa']`).
 */
export async function signedInBrowser(server: TestServer, username = 'alice', amr?: readonly string[]): Promise<Browser> {
  const user = await server.store.users.findByUsername(username);
  if (!user) throw new Error(`no user ${username} to sign in`);
  const sessions = new Sessions(server.config, server.store);
  const browser = new Browser(server.url);
  browser.cookies.set(sessions.cookieName, await sessions.create(user, amr));
  return browser;
}

/**
 * Drives the code flow like a user: authorize, sign in if asked, approve
 * (or deny) consent if asked. Returns the callback URL's parameters.
 */
export async function authorize(
  server: TestServer,
  browser: Browser,
  r: AuthRequest,
  decision: 'approve' | 'deny' = 'approve',
): Promise<{ callback: URL; verifier: string; state: string; nonce: string }> {
  const { url, verifier, state, nonce } = await authorizeUrl(r);
  const callback = await approveInBrowser(browser, server.url + url, 'alice', PASSWORD, decision);
  return { callback: new URL(callback), verifier, state, nonce };
}

/** POSTs a form to the token endpoint over real HTTP. */
export function tokenRequest(server: TestServer, fields: Record<string, string> | string, headers: Record<string, string> = {}) {
  return postForm(server, '/oauth/token', fields, headers);
}

export function basic(id: string, secret: string): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${enc(id)}:${enc(secret)}`).toString('base64')}`;
}

export const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/** POSTs a form to any OAuth endpoint of the server. */
export async function postForm(
  server: TestServer,
  path: string,
  fields: Record<string, string> | string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; json: Json }> {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: typeof fields === 'string' ? fields : new URLSearchParams(fields).toString(),
  });
  const text = await res.text();
  let json: Json;
  try {
    json = text ? (JSON.parse(text) as Json) : {};
  } catch {
    json = { raw: text };
  }
  return { status: res.status, headers: res.headers, json };
}

/** RFC 8628 §3.1 device authorization request. */
export function deviceAuthorization(server: TestServer, clientId: string, scope = 'openid profile', headers: Record<string, string> = {}) {
  return postForm(server, '/oauth/device/authorization', { client_id: clientId, scope }, headers);
}

/** RFC 8628 §3.4 poll. */
export function poll(server: TestServer, clientId: string, deviceCode: string) {
  return tokenRequest(server, { grant_type: DEVICE_GRANT, device_code: deviceCode, client_id: clientId });
}

/**
 * On the second screen: sign in (if needed), enter the code, then Approve or Deny. Approving ticks the box that
 * says the device shows the code, as a person must (it throws when the page offers no such box). Returns the
 * final page.
 */
export async function decideOnDevicePage(
  browser: Browser,
  userCode: string,
  decision: 'approve' | 'deny',
  username = 'alice',
): Promise<Res> {
  if (!browser.cookies.has('authcli_session')) await signIn(browser, username);
  const entry = await browser.get('/device');
  const confirm = await browser.postForm('/device', { _csrf: hidden(entry.text, '_csrf'), user_code: userCode });
  if (confirm.status !== 200) throw new Error(`code entry failed: ${confirm.status} ${confirm.text.slice(0, 200)}`);
  return browser.postForm('/device/decision', {
    _csrf: hidden(confirm.text, '_csrf'),
    user_code: hidden(confirm.text, 'user_code'),
    ...(decision === 'approve' && { code_confirmed: hidden(confirm.text, 'code_confirmed') }),
    decision,
  });
}

/**
 * An access token for the admin API (/admin/v1) by client credentials, for an application allowed `scope`
 * (`admin:read`, `admin:write`) registered here for it.
 */
export async function adminToken(server: { store: Store; url: string }, scope = 'admin:write'): Promise<string> {
  const { app, clientSecret } = await registerApplication(
    server.store,
    { name: `Admin ${scope}`, kind: 'confidential', callbackUrls: [], scopes: scope.split(' '), grantTypes: ['client_credentials'] },
    Date.now(),
  );
  const res = await fetch(`${server.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(app.clientId, clientSecret!) },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope }).toString(),
  });
  const body = (await res.json()) as { access_token?: string };
  if (!body.access_token) throw new Error(`no admin token: ${JSON.stringify(body)}`);
  return body.access_token;
}

import { randomUUID } from 'node:crypto';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveInBrowser } from '@authcli/test-support/http';
import { type LogoutReceiver, startLogoutReceiver } from '@authcli/test-support/logout-receiver';
import { LIMITS } from '../src/config/defaults.js';
import { isPublicAddress } from '../src/http/public-address.js';
import { postForm as post } from '../src/http/outbound.js';
import { registerApplication, validateApplicationFields } from '../src/oauth/registration.js';
import { supportedGrantTypes } from '../src/oauth/grants/registry.js';
import { InputError } from '../src/util/input-error.js';
import { Metrics } from '../src/util/metrics.js';
import {
  authorizeUrl,
  basic,
  type Browser,
  dialects,
  hidden,
  ownClock,
  PASSWORD,
  seedUser,
  signedInBrowser,
  startServer,
  tokenRequest,
  type TestClock,
  type TestServer,
} from './helpers.js';

/** One sample's value from the text exposition, by its name and labels as prom-client writes them. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('outbound POSTs to self-registered URIs: public addresses only, checked on the address connected to', () => {
  let receiver: LogoutReceiver;
  beforeAll(async () => {
    receiver = await startLogoutReceiver();
  });
  afterAll(async () => receiver.close());

  it('isPublicAddress: global unicast only', () => {
    for (const a of ['8.8.8.8', '2606:4700::1111', '[2606:4700::1111]', '::ffff:8.8.8.8']) expect(isPublicAddress(a), a).toBe(true);
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '255.255.255.255',
      '224.0.0.1',
      '192.0.2.1',
      '::1',
      '[::1]',
      '::',
      'fe80::1',
      'fc00::1',
      'fd12:3456::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      '64:ff9b::a00:1',
      '2002:a00:1::1',
      '2001:db8::1',
      'not an address',
    ]) {
      expect(isPublicAddress(a), a).toBe(false);
    }
  });

  it('a name that resolves to a private address is refused at connect time (DNS rebinding); the same name is reached when allowed', async () => {
    const port = new URL(receiver.url).port;
    const toLoopback = async () => [{ address: '127.0.0.1', family: 4 }];
    const mixed = async () => [
      { address: '8.8.8.8', family: 4 },
      { address: '10.0.0.7', family: 4 },
    ];
    const url = `http://rp.example:${port}/rebound`;
    expect(await post(url, { logout_token: 'x' }, { timeoutMs: 2000, publicOnly: true, resolver: toLoopback })).toMatchObject({
      kind: 'refused',
    });
    expect(await post(url, { logout_token: 'x' }, { timeoutMs: 2000, publicOnly: true, resolver: mixed })).toMatchObject({
      kind: 'refused',
    });
    expect(receiver.tokens('/rebound')).toEqual([]);
    // An operator's URI may be anywhere: the same resolver reaches the receiver.
    expect(await post(url, { logout_token: 'x' }, { timeoutMs: 2000, publicOnly: false, resolver: toLoopback })).toEqual({
      kind: 'answered',
      status: 200,
    });
    expect(receiver.tokens('/rebound')).toEqual(['x']);
    for (const literal of [`https://127.0.0.1:${port}/x`, `https://[::1]:${port}/x`, `https://[::ffff:7f00:1]:${port}/x`]) {
      expect(await post(literal, { logout_token: 'x' }, { timeoutMs: 2000, publicOnly: true }), literal).toMatchObject({ kind: 'refused' });
    }
  });

  it('a receiver that never answers is cut at the timeout', async () => {
    receiver.answer('/silent', 'hang');
    const started = performance.now();
    const outcome = await post(`${receiver.url}/silent`, { logout_token: 'x' }, { timeoutMs: 300, publicOnly: false });
    expect(outcome).toEqual({ kind: 'unreachable', reason: 'no answer within 0.3 s' });
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

describe('application settings: backchannel_logout_uri (§2.2)', () => {
  const base = { name: 'RP', callbackUrls: ['https://rp.example/cb'], scopes: ['openid'] };
  const problem = (uri: string, selfRegistered = false, required?: boolean) => {
    try {
      validateApplicationFields({
        ...base,
        backchannelLogoutUri: uri,
        ...(required !== undefined && { backchannelLogoutSessionRequired: required }),
        selfRegistered,
      });
      return undefined;
    } catch (err) {
      if (!(err instanceof InputError)) throw err;
      return err.message;
    }
  };

  it("an operator's or developer's application: https anywhere, http on loopback; never a fragment, credentials or another scheme", () => {
    for (const ok of [
      'https://rp.example/logout',
      'https://rp.example:8443/bc?x=1',
      'http://127.0.0.1:9000/bcl',
      'http://[::1]/bcl',
      'http://localhost:3000/',
    ]) {
      expect(problem(ok), ok).toBeUndefined();
    }
    expect(problem('http://rp.example/bcl')).toMatch(/https/);
    expect(problem('https://rp.example/bcl#frag')).toMatch(/fragment/);
    expect(problem('https://user:pw@rp.example/bcl')).toMatch(/credentials/);
    expect(problem('com.example.app:/bcl')).toMatch(/https/);
    expect(problem('/relative')).toMatch(/absolute/);
    expect(problem('https://*.rp.example/')).toMatch(/host/);
    expect(problem(`https://rp.example/${'a'.repeat(2100)}`)).toMatch(/at most 2048/);
    // The message never repeats what was given.
    expect(problem('http://evil.example/<script>')).not.toContain('evil');
  });

  it('a self-registered application: https on a public address only', () => {
    expect(problem('https://rp.example/logout', true)).toBeUndefined();
    expect(problem('https://203.0.113.9/logout', true)).toMatch(/public address/);
    expect(problem('https://8.8.8.8/logout', true)).toBeUndefined();
    for (const bad of [
      'http://127.0.0.1/bcl',
      'https://127.0.0.1/bcl',
      'https://localhost/bcl',
      'https://10.0.0.1/',
      'https://169.254.169.254/',
      'https://[::1]/',
      'https://[fd00::1]/',
    ]) {
      expect(problem(bad, true), bad).toBeDefined();
    }
  });

  it('backchannel_logout_session_required needs a URI; no URI is none', () => {
    expect(problem('', false, true)).toMatch(/needs a back-channel logout URI/);
    expect(validateApplicationFields({ ...base, backchannelLogoutUri: '  ' })).toMatchObject({
      backchannelLogoutUri: null,
      backchannelLogoutSessionRequired: false,
    });
  });
});

describe.each(dialects())('back-channel logout receivers that fail, in a running server (%s)', (dialect) => {
  let server: TestServer;
  let receiver: LogoutReceiver;
  let metrics: Metrics;
  const timeoutMs = 1000;

  beforeAll(async () => {
    receiver = await startLogoutReceiver();
    metrics = new Metrics({ version: 'test', grantTypes: supportedGrantTypes() });
    server = await startServer(
      dialect,
      {
        backchannelLogout: {
          timeoutMs,
          retryDelaysMs: [50, 100],
          retryMaxMs: 100,
          // Three attempts at 0, 50 and 150 ms on the test's clock; the next would be past the deadline.
          sessionDeadlineMs: 200,
          accessDeadlineMs: 200,
          concurrency: 4,
          pendingPerClient: 100,
          pollMs: 3_600_000,
        },
        registration: 'open',
        limits: { ...LIMITS, 'registration-ip': { limit: 10_000, windowMs: 3_600_000 } },
      },
      { metrics },
    );
  });
  afterAll(async () => {
    await server.close();
    await receiver.close();
  });

  const counts = async () => {
    const text = (await metrics.exposition()).body;
    const of = (o: string) => sample(text, `authcli_backchannel_logout_total{outcome="${o}"}`);
    return { delivered: of('delivered'), failed: of('failed'), retried: of('retried') };
  };

  /** A new user signed in to the confidential application `clientId` through the code flow, in a fresh browser. */
  async function signedInWith(clientId: string, secret: string): Promise<Browser> {
    const username = `u${randomUUID().slice(0, 8)}`;
    await seedUser(server, username);
    const b = await signedInBrowser(server, username);
    const { url, verifier } = await authorizeUrl({ clientId, redirectUri: 'https://rp.example/cb', scope: 'openid' });
    const callback = new URL(await approveInBrowser(b, server.url + url, username, PASSWORD));
    const res = await tokenRequest(
      server,
      {
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code')!,
        redirect_uri: 'https://rp.example/cb',
        code_verifier: verifier,
      },
      { authorization: basic(clientId, secret) },
    );
    expect(res.status).toBe(200);
    return b;
  }

  /** A confidential application told at `uri`, a user signed in to it in a fresh browser. */
  async function signedInTo(uri: string) {
    const { app, clientSecret } = await registerApplication(
      server.store,
      { name: 'RP', kind: 'confidential', callbackUrls: ['https://rp.example/cb'], scopes: ['openid'], backchannelLogoutUri: uri },
      server.clock.now(),
    );
    return { b: await signedInWith(app.clientId, clientSecret!), app };
  }

  /** Signs out and says how long the page took. */
  async function signOut(b: Browser): Promise<number> {
    const page = await b.get('/signout');
    const started = performance.now();
    const res = await b.postForm('/signout', { _csrf: hidden(page.text, '_csrf') });
    expect(res.status).toBe(200);
    return performance.now() - started;
  }

  it('the counter starts at 0 for every outcome', async () => {
    const text = (await metrics.exposition()).body;
    for (const o of ['delivered', 'failed', 'retried'])
      expect(text).toMatch(new RegExp(`^authcli_backchannel_logout_total\\{outcome="${o}"\\} \\d+$`, 'm'));
  });

  /** Runs the server's outbox on the test's clock: each retry when it is due, until the delivery ends. */
  async function retriesOnTheClock(clock: TestClock) {
    for (const wait of [0, 50, 100]) {
      clock.advance(wait);
      await server.app.backchannelDelivery.settle();
    }
  }

  it('a receiver that hangs does not hold the page: it answers in well under the timeout, and the token is tried three times, then given up', async () => {
    const clock = ownClock(server);
    const path = `/hang/${randomUUID()}`;
    receiver.answer(path, 'hang');
    const { b } = await signedInTo(`${receiver.url}${path}`);
    const before = await counts();
    const took = await signOut(b);
    expect(took).toBeLessThan(timeoutMs / 2);
    await retriesOnTheClock(clock);
    expect((await counts()).failed).toBe(before.failed! + 1);
    expect(receiver.tokens(path)).toHaveLength(3);
    expect((await counts()).retried! - before.retried!).toBe(2);
    // The three attempts carried one logout: one jti, each token signed anew (never expired when posted).
    expect(new Set(receiver.tokens(path).map((t) => decodeJwt(t).jti)).size).toBe(1);
  });

  it('a receiver that answers 500 is tried again, then given up; one that answers 400 is not tried again', async () => {
    const clock = ownClock(server);
    const [five, four] = [`/500/${randomUUID()}`, `/400/${randomUUID()}`];
    receiver.answer(five, 500);
    receiver.answer(four, 400);
    const first = await signedInTo(`${receiver.url}${five}`);
    const second = await signedInTo(`${receiver.url}${four}`);
    const before = await counts();
    expect(await signOut(first.b)).toBeLessThan(timeoutMs / 2);
    expect(await signOut(second.b)).toBeLessThan(timeoutMs / 2);
    await retriesOnTheClock(clock);
    expect((await counts()).failed).toBe(before.failed! + 2);
    expect(receiver.tokens(five)).toHaveLength(3);
    expect(receiver.tokens(four)).toHaveLength(1);
  });

  it('a self-registered application whose URI names a loopback address is never posted to, whatever its registration said', async () => {
    const reg = await fetch(`${server.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: ['https://rp.example/cb'], backchannel_logout_uri: 'https://rp.example/bcl', scope: 'openid' }),
    });
    expect(reg.status).toBe(201);
    const { client_id, client_secret } = (await reg.json()) as { client_id: string; client_secret: string };
    // As if the address had been accepted (an older version, a change in the store): delivery checks it again.
    const path = `/private/${randomUUID()}`;
    await server.store.applications.update(
      client_id,
      { backchannelLogoutUri: `${receiver.url.replace('http:', 'https:')}${path}` },
      server.clock.now(),
    );
    const b = await signedInWith(client_id, client_secret);
    const before = await counts();
    await signOut(b);
    await server.app.backchannelDelivery.settle();
    expect((await counts()).failed).toBe(before.failed! + 1);
    expect((await counts()).retried).toBe(before.retried);
    expect(receiver.received.filter((r) => r.path === path)).toEqual([]);
  });

  it('registration §2.2: backchannel_logout_uri and backchannel_logout_session_required are kept, returned, read back, and cleared by a PUT without them', async () => {
    const send = async (method: string, path: string, body?: unknown, token?: string) => {
      const res = await fetch(`${server.url}${path}`, {
        method,
        headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...(token && { authorization: `Bearer ${token}` }) },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
      return { status: res.status, json: (await res.json()) as Record<string, unknown> };
    };
    const metadata = {
      redirect_uris: ['https://rp.example/cb'],
      backchannel_logout_uri: 'https://rp.example/bcl',
      backchannel_logout_session_required: true,
    };
    const created = await send('POST', '/oauth/register', metadata);
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ backchannel_logout_uri: 'https://rp.example/bcl', backchannel_logout_session_required: true });
    const id = created.json.client_id as string;
    const read = await send('GET', `/oauth/register/${id}`, undefined, created.json.registration_access_token as string);
    expect(read.json).toMatchObject({ backchannel_logout_uri: 'https://rp.example/bcl', backchannel_logout_session_required: true });
    const put = await send(
      'PUT',
      `/oauth/register/${id}`,
      { client_id: id, redirect_uris: ['https://rp.example/cb'] },
      read.json.registration_access_token as string,
    );
    expect(put.status).toBe(200);
    expect(put.json).not.toHaveProperty('backchannel_logout_uri');
    expect(await server.store.applications.get(id)).toMatchObject({ backchannelLogoutUri: null, backchannelLogoutSessionRequired: false });
  });

  it('registration §2.2: a URI a self-registered client may not have is invalid_client_metadata, and nothing is registered', async () => {
    const before = (await server.store.applications.list()).length;
    for (const [uri, required] of [
      ['http://rp.example/bcl', undefined],
      ['https://127.0.0.1/bcl', undefined],
      ['https://localhost/bcl', undefined],
      ['https://10.0.0.1/bcl', undefined],
      ['https://169.254.169.254/latest', undefined],
      ['https://[::1]/bcl', undefined],
      ['https://rp.example/bcl#x', undefined],
      ['not a url', undefined],
      [42, undefined],
      [undefined, true],
      ['https://rp.example/bcl', 'yes'],
    ] as const) {
      const res = await fetch(`${server.url}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          redirect_uris: ['https://rp.example/cb'],
          ...(uri !== undefined && { backchannel_logout_uri: uri }),
          ...(required !== undefined && { backchannel_logout_session_required: required }),
        }),
      });
      const json = (await res.json()) as { error: string; error_description: string };
      expect(res.status, String(uri)).toBe(400);
      expect(json.error).toBe('invalid_client_metadata');
      expect(json.error_description).toMatch(/back-channel|backchannel/);
    }
    expect((await server.store.applications.list()).length).toBe(before);
  });

  it('the dashboard form: a bad URI is shown again with the reason; a good one is saved, shown, and cleared by emptying it', async () => {
    const username = `u${randomUUID().slice(0, 8)}`;
    await seedUser(server, username);
    const b = await signedInBrowser(server, username);
    const submit = async (path: string, uri: string, required: boolean, name = 'Dash RP') => {
      const page = await b.get(path === '/dashboard/apps' ? '/dashboard/apps/new' : path);
      const body = new URLSearchParams({
        _csrf: hidden(page.text, '_csrf'),
        name,
        kind: 'confidential',
        callback_urls: 'https://rp.example/cb',
        id_token_alg: 'RS256',
        backchannel_logout_uri: uri,
        ...(required && { backchannel_logout_session_required: '1' }),
      });
      body.append('scope', 'openid');
      body.append('grant', 'authorization_code');
      return b.request('POST', path, body.toString(), { 'content-type': 'application/x-www-form-urlencoded' });
    };
    const bad = await submit('/dashboard/apps', 'http://rp.example/bcl', false);
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('back-channel logout URI must be https');
    expect(bad.text).toContain('value="http://rp.example/bcl"');
    const created = await submit('/dashboard/apps', 'https://rp.example/bcl', true);
    expect(created.status).toBe(303);
    const clientId = decodeURIComponent(created.location!.split('/')[3]!);
    expect(await server.store.applications.get(clientId)).toMatchObject({
      backchannelLogoutUri: 'https://rp.example/bcl',
      backchannelLogoutSessionRequired: true,
    });
    const shown = await b.get(`/dashboard/apps/${clientId}`);
    expect(shown.text).toContain('value="https://rp.example/bcl"');
    expect(shown.text).toMatch(/name="backchannel_logout_session_required" value="1" checked/);
    expect((await submit(`/dashboard/apps/${clientId}`, '', true)).status).toBe(400);
    expect((await submit(`/dashboard/apps/${clientId}`, '', false)).status).toBe(303);
    expect(await server.store.applications.get(clientId)).toMatchObject({
      backchannelLogoutUri: null,
      backchannelLogoutSessionRequired: false,
    });
  });
});

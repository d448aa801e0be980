import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { sha256Hex } from '../src/util/crypto.js';
import { LIMITS } from '../src/config/defaults.js';
import {
  basic,
  Browser,
  decideOnDevicePage,
  deviceAuthorization,
  dialects,
  hidden,
  PASSWORD,
  poll,
  seedApp,
  seedUser,
  signedInBrowser,
  signIn,
  startServer,
  ownClock,
  secondInstance,
  type TestServer,
} from './helpers.js';

const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';
const USER_CODE = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;

describe.each(dialects())('device authorization grant, RFC 8628 (%s)', (dialect) => {
  let server: TestServer;
  let other: string;
  let conf: { id: string; secret: string };
  let noDevice: string;

  beforeAll(async () => {
    // This suite starts far more device flows from one address than a person would; the limit has tests of its own.
    server = await startServer(dialect, { limits: { ...LIMITS, 'device-authz-ip': { limit: 10_000, windowMs: 60_000 } } });
    await seedUser(server, 'alice', { email: 'alice@example.com' });
    other = (await seedApp(server, { name: 'Other device app', grantTypes: [DEVICE], callbackUrls: [] })).app.clientId;
    const c = await seedApp(server, {
      name: 'Confidential TV',
      kind: 'confidential',
      grantTypes: [DEVICE, 'refresh_token'],
      callbackUrls: [],
    });
    conf = { id: c.app.clientId, secret: c.clientSecret! };
    noDevice = (await seedApp(server, { name: 'Web only' })).app.clientId;
  });
  afterAll(async () => server.close());

  async function start(clientId = 'authcli', scope = 'openid profile email') {
    const res = await deviceAuthorization(server, clientId, scope);
    expect(res.status).toBe(200);
    return res.json as {
      device_code: string;
      user_code: string;
      verification_uri: string;
      verification_uri_complete: string;
      expires_in: number;
      interval: number;
    };
  }

  it('rfc8628 §3.2 device authorization response', async () => {
    const res = await deviceAuthorization(server, 'authcli', 'openid profile');
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.json.device_code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(res.json.user_code).toMatch(USER_CODE);
    expect(res.json.verification_uri).toBe(`${server.url}/device`);
    expect(res.json.verification_uri_complete).toBe(`${server.url}/device?user_code=${res.json.user_code}`);
    expect(res.json.expires_in).toBe(600);
    expect(res.json.interval).toBe(5);
    const stored = await server.store.deviceGrants.findByCodeHash(sha256Hex(res.json.device_code));
    expect(stored).toBeDefined();
    expect(JSON.stringify(stored)).not.toContain(res.json.device_code);
  });

  it('rfc8628 §6.1 user codes are 8 characters of BCDFGHJKLMNPQRSTVWXZ and distinct', async () => {
    const codes = new Set<string>();
    for (let i = 0; i < 30; i++) codes.add((await start('authcli', 'openid')).user_code);
    expect(codes.size).toBe(30);
    for (const c of codes) expect(c).toMatch(USER_CODE);
  });

  it('rfc8414 discovery advertises the device endpoint and grant', async () => {
    const meta = await (await fetch(`${server.url}/.well-known/oauth-authorization-server`)).json();
    expect(meta.device_authorization_endpoint).toBe(`${server.url}/oauth/device/authorization`);
    expect(meta.grant_types_supported).toEqual(expect.arrayContaining([DEVICE, 'refresh_token', 'authorization_code']));
  });

  it('rfc8628 §3.1 client authentication: public by client_id, confidential by HTTP Basic', async () => {
    const ok = await deviceAuthorization(server, conf.id, 'openid', { authorization: basic(conf.id, conf.secret) });
    expect(ok.status).toBe(200);
    const noSecret = await deviceAuthorization(server, conf.id, 'openid');
    expect(noSecret.status).toBe(401);
    expect(noSecret.json.error).toBe('invalid_client');
    const wrong = await deviceAuthorization(server, conf.id, 'openid', { authorization: basic(conf.id, 'nope') });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toMatch(/^Basic/);
    expect((await deviceAuthorization(server, 'no-such-client', 'openid')).json.error).toBe('invalid_client');
  });

  it('rfc8628 §3.1 the application must be allowed the device grant and every scope', async () => {
    expect((await deviceAuthorization(server, noDevice, 'openid')).json.error).toBe('unauthorized_client');
    const app = await seedApp(server, { name: 'Narrow', grantTypes: [DEVICE], scopes: ['openid'], callbackUrls: [] });
    expect((await deviceAuthorization(server, app.app.clientId, 'openid email')).json.error).toBe('invalid_scope');
    // oidc core §3.1.2.1 a scope value the server does not know is ignored; nothing left is invalid_scope.
    expect((await deviceAuthorization(server, app.app.clientId, 'openid admin')).status).toBe(200);
    expect((await deviceAuthorization(server, app.app.clientId, 'admin')).json.error).toBe('invalid_scope');
    const repeated = await fetch(`${server.url}/oauth/device/authorization`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'client_id=authcli&scope=openid&scope=profile',
    });
    expect(repeated.status).toBe(400);
    expect((await repeated.json()).error).toBe('invalid_request');
  });

  it('rfc8628 §3.5 authorization_pending before approval', async () => {
    const d = await start();
    const res = await poll(server, 'authcli', d.device_code);
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('authorization_pending');
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('rfc8628 §3.5 on-time polling never gets slow_down', async () => {
    const clock = ownClock(server);
    const d = await start();
    for (let i = 0; i < 6; i++) {
      expect((await poll(server, 'authcli', d.device_code)).json.error).toBe('authorization_pending');
      clock.advance(5_000);
    }
  });

  it('rfc8628 §3.5 slow_down adds 5 seconds, and a client that adopts the new interval recovers', async () => {
    const clock = ownClock(server);
    const d = await start();
    expect((await poll(server, 'authcli', d.device_code)).json.error).toBe('authorization_pending');
    clock.advance(1_000);
    const early = await poll(server, 'authcli', d.device_code);
    expect(early.json.error).toBe('slow_down');
    expect((await server.store.deviceGrants.findByCodeHash(sha256Hex(d.device_code)))!.interval_s).toBe(10);
    // Waiting the old 5 s is now too soon...
    clock.advance(5_000);
    expect((await poll(server, 'authcli', d.device_code)).json.error).toBe('slow_down');
    expect((await server.store.deviceGrants.findByCodeHash(sha256Hex(d.device_code)))!.interval_s).toBe(15);
    // ...waiting the current interval is on time, every time, and the interval stops growing.
    for (let i = 0; i < 3; i++) {
      clock.advance(15_000);
      expect((await poll(server, 'authcli', d.device_code)).json.error).toBe('authorization_pending');
    }
    expect((await server.store.deviceGrants.findByCodeHash(sha256Hex(d.device_code)))!.interval_s).toBe(15);
  });

  it('rfc8628 §3.5 the interval is per device code', async () => {
    const a = await start();
    const b = await start();
    await poll(server, 'authcli', a.device_code);
    expect((await poll(server, 'authcli', a.device_code)).json.error).toBe('slow_down');
    expect((await poll(server, 'authcli', b.device_code)).json.error).toBe('authorization_pending');
  });

  it('rfc8628 §3.5 approved: tokens once (access, ID token, refresh); a second redemption is invalid_grant', async () => {
    const d = await start();
    // End to end: signed in through the form, whose sign-in the ID token's amr describes.
    const page = await decideOnDevicePage(new Browser(server.url), d.user_code, 'approve');
    expect(page.status).toBe(200);
    expect(page.text).toContain('Device connected');
    const res = await poll(server, 'authcli', d.device_code);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ token_type: 'Bearer', scope: 'openid profile email' });
    expect(res.json.refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const jwks = createRemoteJWKSet(new URL(`${server.url}/oauth/jwks`));
    const id = await jwtVerify(res.json.id_token, jwks, { issuer: server.url, audience: 'authcli' });
    expect(id.payload).toMatchObject({ azp: 'authcli', amr: ['pwd'] });
    expect(id.payload).not.toHaveProperty('email');
    const info = await fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${res.json.access_token}` } });
    expect(await info.json()).toMatchObject({ sub: id.payload.sub, preferred_username: 'alice', email: 'alice@example.com' });
    expect(id.payload.nonce).toBeUndefined();
    await jwtVerify(res.json.access_token, jwks, { issuer: server.url, typ: 'at+jwt', audience: server.url });
    const again = await poll(server, 'authcli', d.device_code);
    expect(again.status).toBe(400);
    expect(again.json.error).toBe('invalid_grant');
  });

  it('rfc8628 §3.5 concurrent redemption of one approved device code: exactly one success', async () => {
    const d = await start();
    await decideOnDevicePage(await signedInBrowser(server), d.user_code, 'approve');
    const results = await Promise.all(Array.from({ length: 8 }, () => poll(server, 'authcli', d.device_code)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.json.error === 'invalid_grant')).toHaveLength(7);
  });

  it('rfc8628 §3.5 denied: access_denied', async () => {
    const d = await start();
    const page = await decideOnDevicePage(await signedInBrowser(server), d.user_code, 'deny');
    expect(page.text).toContain('denied');
    const res = await poll(server, 'authcli', d.device_code);
    expect(res.json.error).toBe('access_denied');
  });

  it('rfc8628 §3.5 after 10 minutes: expired_token, and the code page says so', async () => {
    const d = await start();
    const clock = ownClock(server);
    clock.advance(600_000);
    expect((await poll(server, 'authcli', d.device_code)).json.error).toBe('expired_token');
    const b = await signedInBrowser(server);
    const entry = await b.get('/device');
    const res = await b.postForm('/device', { _csrf: hidden(entry.text, '_csrf'), user_code: d.user_code });
    expect(res.status).toBe(400);
    expect(res.text).toContain('expired');
  });

  it('rfc8628 §3.4 the device code is bound to the client that requested it', async () => {
    const d = await start();
    await decideOnDevicePage(await signedInBrowser(server), d.user_code, 'approve');
    const stolen = await poll(server, other, d.device_code);
    expect(stolen.json.error).toBe('invalid_grant');
    expect((await poll(server, 'authcli', d.device_code)).status).toBe(200);
  });

  it('unknown, garbled and missing device codes', async () => {
    expect((await poll(server, 'authcli', 'nope')).json.error).toBe('invalid_grant');
    expect((await poll(server, 'authcli', 'x'.repeat(5000))).json.error).toBe('invalid_grant');
    const missing = await fetch(`${server.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=${encodeURIComponent(DEVICE)}&client_id=authcli`,
    });
    expect((await missing.json()).error).toBe('invalid_request');
    expect((await poll(server, noDevice, 'nope')).json.error).toBe('unauthorized_client');
  });

  it('rfc8628 §3.3 signing in is required before the code page; the code survives sign-in', async () => {
    const d = await start();
    const b = new Browser(server.url);
    const res = await b.get(`/device?user_code=${d.user_code}`);
    expect(res.status).toBe(303);
    expect(res.location).toMatch(/^\/signin\?continue=[\w-]{43}$/);
    const signedIn = await signIn(b, 'alice', PASSWORD, res.location!);
    expect(signedIn.location).toBe(`/device?user_code=${d.user_code}`);
  });

  it('rfc8628 §3.3.1 a prefilled code (verification_uri_complete) still needs an explicit Approve', async () => {
    const clock = ownClock(server);
    const d = await start();
    const b = await signedInBrowser(server);
    const entry = await b.get(new URL(d.verification_uri_complete).pathname + new URL(d.verification_uri_complete).search);
    expect(entry.status).toBe(200);
    expect(entry.text).toContain(`value="${d.user_code}"`);
    expect((await poll(server, 'authcli', d.device_code)).json.error).toBe('authorization_pending');
    const confirm = await b.postForm('/device', { _csrf: hidden(entry.text, '_csrf'), user_code: d.user_code });
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('authcli');
    expect(confirm.text).toContain('Approve');
    expect(confirm.text).toContain('Deny');
    expect(confirm.text).toContain(d.user_code);
    for (const scope of ['openid', 'profile', 'email']) expect(confirm.text).toContain(`<code>${scope}</code>`);
    clock.advance(5_000);
    expect((await poll(server, 'authcli', d.device_code)).json.error).toBe('authorization_pending');
  });

  it('rfc8628 §6.1 entry is case- and dash-insensitive', async () => {
    const d = await start();
    const b = await signedInBrowser(server);
    const entry = await b.get('/device');
    const typed = ` ${d.user_code.replace('-', '').toLowerCase()} `;
    const confirm = await b.postForm('/device', { _csrf: hidden(entry.text, '_csrf'), user_code: typed });
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain(d.user_code);
  });

  it('a used code gets a clear message and cannot be decided twice', async () => {
    const d = await start();
    const b = await signedInBrowser(server);
    await decideOnDevicePage(b, d.user_code, 'approve');
    const entry = await b.get('/device');
    const res = await b.postForm('/device', { _csrf: hidden(entry.text, '_csrf'), user_code: d.user_code });
    expect(res.status).toBe(400);
    expect(res.text).toContain('already been used');
    const flip = await b.postForm('/device/decision', { _csrf: hidden(entry.text, '_csrf'), user_code: d.user_code, decision: 'deny' });
    expect(flip.status).toBe(400);
    expect((await poll(server, 'authcli', d.device_code)).status).toBe(200);
  });

  it('csrf: a decision without the token is refused', async () => {
    const d = await start();
    const b = await signedInBrowser(server);
    await b.get('/device');
    const res = await b.postForm('/device/decision', { user_code: d.user_code, decision: 'approve' });
    expect(res.status).toBe(403);
    expect((await poll(server, 'authcli', d.device_code)).json.error).toBe('authorization_pending');
  });

  it('the account is re-checked at redemption: a disabled user gets no tokens', async () => {
    await seedUser(server, 'carol');
    const d = await start();
    await decideOnDevicePage(await signedInBrowser(server, 'carol'), d.user_code, 'approve');
    await server.store.users.setDisabled('carol', server.clock.now());
    const res = await poll(server, 'authcli', d.device_code);
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('invalid_grant');
  });
});

describe.each(dialects())('rfc8628 §3.2 the configured device code lifetime and interval (%s)', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer(dialect, { deviceCodeTtlSeconds: 120, devicePollIntervalSeconds: 10 });
  });
  afterAll(async () => server.close());

  it('a code gets them, is polled at that interval, and the poll summary counts only codes slowed past it', async () => {
    const clock = ownClock(server);
    const onTime = (await deviceAuthorization(server, 'authcli', 'openid')).json;
    const early = (await deviceAuthorization(server, 'authcli', 'openid')).json;
    expect(onTime).toMatchObject({ expires_in: 120, interval: 10 });
    expect((await server.store.deviceGrants.findByCodeHash(sha256Hex(onTime.device_code)))!.interval_s).toBe(10);
    for (const d of [onTime, early]) expect((await poll(server, 'authcli', d.device_code)).json.error).toBe('authorization_pending');
    // 6 s after the first poll: on time with the default 5 s, too early with the configured 10 s.
    clock.advance(6_000);
    const slowed = await poll(server, 'authcli', early.device_code);
    expect(slowed.json).toMatchObject({ error: 'slow_down' });
    expect((await server.store.deviceGrants.findByCodeHash(sha256Hex(early.device_code)))!.interval_s).toBe(15);
    clock.advance(4_000);
    expect((await poll(server, 'authcli', onTime.device_code)).json.error).toBe('authorization_pending');
    expect(await server.store.deviceGrants.pollSummary(server.config.devicePollIntervalSeconds)).toEqual({ polled: 2, slowedDown: 1 });
    // Past the configured lifetime, not the default 600 s.
    clock.advance(110_000);
    expect((await poll(server, 'authcli', onTime.device_code)).json.error).toBe('expired_token');
  });
});

describe.each(dialects())('rfc8628 §5.1 brute force on the code page (%s)', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer(dialect);
    await seedUser(server);
  });
  afterAll(async () => server.close());

  it('wrong entries are limited per client IP, in the store, across instances', async () => {
    const good = (await deviceAuthorization(server, 'authcli', 'openid')).json.user_code as string;
    const b = await signedInBrowser(server);
    let page = await b.get('/device');
    for (let i = 0; i < LIMITS['user-code-ip'].limit; i++) {
      const res = await b.postForm('/device', { _csrf: hidden(page.text, '_csrf'), user_code: 'BCDF-GHJK' });
      expect(res.status, `attempt ${i + 1}`).toBe(400);
      page = res;
    }
    const locked = await b.postForm('/device', { _csrf: hidden(page.text, '_csrf'), user_code: good });
    expect(locked.status).toBe(429);
    expect(locked.text).toContain('Too many');

    // A second instance, with a store connection of its own on the same database, enforces the same limit.
    const second = await secondInstance(server);
    try {
      // Signed in on the shared database, in a browser of the second instance.
      const b2 = new Browser(second.url);
      b2.cookies = (await signedInBrowser(server)).cookies;
      const entry = await b2.get('/device');
      const res = await b2.postForm('/device', { _csrf: hidden(entry.text, '_csrf'), user_code: good });
      expect(res.status).toBe(429);
    } finally {
      await second.close();
    }

    // The window passes: the right code works again.
    ownClock(server).advance(10 * 60_000 + 1);
    const fresh = await deviceAuthorization(server, 'authcli', 'openid');
    const entry = await b.get('/device');
    const ok = await b.postForm('/device', { _csrf: hidden(entry.text, '_csrf'), user_code: fresh.json.user_code });
    expect(ok.status).toBe(200);
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS, SCRYPT, type Limits } from '../src/config/defaults.js';
import { hashPassword, needsRehash } from '../src/util/password.js';
import { ipSubject } from '../src/http/client-ip.js';
import { accountCounterKeys, describeCounter, ipCounterKeys } from '../src/oauth/limits.js';
import type { ServerConfig } from '../src/config/config.js';
import { Browser, deviceAuthorization, dialects, hidden, PASSWORD, postForm, seedUser, signIn, startServer, type Res, type TestServer } from './helpers.js';

/**
 * The abuse limits, tried as an attacker would: many requests at once, from
 * one address and from many (a forged X-Forwarded-For where a proxy is
 * trusted), against the real server and store.
 */

const form = { 'content-type': 'application/x-www-form-urlencoded' };

/** A browser that has the sign-in page (its CSRF cookie and token), ready to post. */
async function signInForm(server: TestServer): Promise<{ browser: Browser; csrf: string }> {
  const browser = new Browser(server.url);
  const page = await browser.get('/signin');
  return { browser, csrf: hidden(page.text, '_csrf') };
}

function postSignIn(f: { browser: Browser; csrf: string }, username: string, password: string, forwardedFor?: string): Promise<Res> {
  return f.browser.request('POST', '/signin', new URLSearchParams({ _csrf: f.csrf, username, password }).toString(), {
    ...form,
    ...(forwardedFor && { 'x-forwarded-for': forwardedFor }),
  });
}

const tally = (answers: readonly { status: number }[]) => answers.reduce<Record<number, number>>((t, r) => ({ ...t, [r.status]: (t[r.status] ?? 0) + 1 }), {});

describe.each(dialects())('abuse limits (%s)', (dialect) => {
  let server: TestServer | undefined;
  // Three hashing threads hold 12 hashes in flight, more than any one limit admits: the limit, not the hashers'
  // cap, decides these tests (the cap has a test of its own, with one thread).
  const start = async (overrides: Partial<ServerConfig> = {}) => {
    server = await startServer(dialect, { passwordHashThreads: 3, ...overrides });
    await seedUser(server, 'alice');
    return server;
  };
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('60 parallel wrong passwords for one account from one IP: at most the limit are checked', async () => {
    const s = await start();
    const forms = await Promise.all(Array.from({ length: 60 }, () => signInForm(s)));
    const answers = await Promise.all(forms.map((f, i) => postSignIn(f, 'alice', `wrong ${i}`)));
    const t = tally(answers);
    const limit = LIMITS['signin-account-ip'].limit;
    // 401: checked and wrong; 429: refused before any hash.
    expect(t).toEqual({ 401: limit, 429: 60 - limit });
    const refused = answers.find((a) => a.status === 429)!;
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // The right password is refused too, until the window passes.
    expect((await postSignIn(await signInForm(s), 'alice', PASSWORD)).status).toBe(429);
    s.clock.advance(LIMITS['signin-account-ip'].windowMs);
    expect((await postSignIn(await signInForm(s), 'alice', PASSWORD)).status).toBe(303);
  });

  it('a successful sign-in gives its attempt back: signing in again and again never locks the owner out', async () => {
    const s = await start();
    const limit = LIMITS['signin-account-ip'].limit;
    for (let i = 0; i < limit + 2; i++) expect((await postSignIn(await signInForm(s), 'alice', PASSWORD)).status, `sign-in ${i + 1}`).toBe(303);
    for (let i = 0; i < limit; i++) expect((await postSignIn(await signInForm(s), 'alice', `wrong ${i}`)).status).toBe(401);
    expect((await postSignIn(await signInForm(s), 'alice', `wrong again`)).status).toBe(429);
  });

  it('distributed guessing: an account guessed from many IPs is slowed to one attempt per slot, not locked, and unlocked by the operator', async () => {
    // A small account budget keeps the test short (each checked guess costs a real hash); the rule is the same.
    const accountLimit = 5;
    const s = await start({ trustProxy: 1, limits: { ...LIMITS, 'signin-account': { limit: accountLimit, windowMs: 15 * 60_000 } } });
    // Each guess from its own address: no per-IP limit is ever reached.
    for (let i = 0; i < accountLimit; i++) expect((await postSignIn(await signInForm(s), 'alice', `guess ${i}`, `198.51.100.${i + 1}`)).status).toBe(401);
    // Past the account's budget, parallel guesses from fresh addresses: one is checked, the rest wait for the next slot.
    const forms = await Promise.all(Array.from({ length: 8 }, () => signInForm(s)));
    const slowed = await Promise.all(forms.map((f, i) => postSignIn(f, 'alice', `late guess ${i}`, `203.0.113.${i + 1}`)));
    expect(tally(slowed)).toEqual({ 401: 1, 429: 7 });
    // The owner gets the next slot, from anywhere.
    s.clock.advance(LIMITS['signin-account-slowed'].windowMs);
    expect((await postSignIn(await signInForm(s), 'alice', PASSWORD, '192.0.2.77')).status).toBe(303);
    // Another account is not slowed by alice's.
    await seedUser(s, 'bob');
    expect((await postSignIn(await signInForm(s), 'bob', PASSWORD, '203.0.113.1')).status).toBe(303);
    // `users unlock` clears alice's counters (the command's own code path: the keys it deletes).
    const keys = (await s.store.listRateLimits()).map((r) => r.key);
    const mine = accountCounterKeys(keys, 'ALICE');
    expect(mine.length).toBeGreaterThan(accountLimit);
    expect(mine.every((k) => describeCounter(k)?.username === 'alice')).toBe(true);
    expect(accountCounterKeys(keys, 'bob')).toEqual(accountCounterKeys(keys, 'bob').filter((k) => k.includes('bob')));
    await s.store.deleteRateLimits(mine);
    const again = await Promise.all(Array.from({ length: 3 }, async (_, i) => postSignIn(await signInForm(s), 'alice', `wrong ${i}`, `203.0.113.${100 + i}`)));
    expect(tally(again)).toEqual({ 401: 3 });
  });

  it('a forged X-Forwarded-For does not escape a per-IP limit behind one trusted proxy (hop count 1)', async () => {
    const s = await start({ trustProxy: 1 });
    // The proxy appends the address it saw; everything left of it was written by the client.
    const answers = await Promise.all(
      Array.from({ length: 30 }, async (_, i) => postSignIn(await signInForm(s), 'alice', `wrong ${i}`, `10.${i}.${i}.${i}, 192.0.2.10`)),
    );
    expect(tally(answers)).toEqual({ 401: LIMITS['signin-account-ip'].limit, 429: 30 - LIMITS['signin-account-ip'].limit });
    expect((await postSignIn(await signInForm(s), 'alice', PASSWORD, 'fresh-looking, 192.0.2.10')).status).toBe(429);
    // The real client next to it is a different address and is not limited.
    expect((await postSignIn(await signInForm(s), 'alice', PASSWORD, '10.9.9.9, 192.0.2.11')).status).toBe(303);
  });

  it('without a trusted proxy X-Forwarded-For is ignored: rotating it changes nothing', async () => {
    const s = await start();
    const answers = await Promise.all(
      Array.from({ length: 30 }, async (_, i) => postSignIn(await signInForm(s), 'alice', `wrong ${i}`, `198.51.100.${i}`)),
    );
    expect(tally(answers)).toEqual({ 401: LIMITS['signin-account-ip'].limit, 429: 30 - LIMITS['signin-account-ip'].limit });
    const keys = (await s.store.listRateLimits()).map((r) => r.key);
    expect(keys.every((k) => !k.includes('198.51.100.'))).toBe(true);
    expect(keys).toContain('signin-ip|127.0.0.1');
  });

  it('a proxy list trusts only those addresses: a client naming itself in X-Forwarded-For is not believed', async () => {
    const s = await start({ trustProxy: ['10.0.0.0/8'] });
    const answers = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => postSignIn(await signInForm(s), 'alice', `wrong ${i}`, `198.51.100.${i}`)),
    );
    expect(tally(answers)).toEqual({ 401: LIMITS['signin-account-ip'].limit, 429: 20 - LIMITS['signin-account-ip'].limit });
    expect((await s.store.listRateLimits()).map((r) => r.key)).toContain('signin-ip|127.0.0.1');
  });

  it('the password hashers are bounded: past the cap sign-ins answer 503 with Retry-After at once, and the attempt is given back', async () => {
    const s = await start({ trustProxy: 1, passwordHashThreads: 1 });
    const forms = await Promise.all(Array.from({ length: 24 }, () => signInForm(s)));
    // 24 accounts-worth of guesses from 24 addresses: no limit refuses them, only the hashers' cap.
    const answers = await Promise.all(forms.map((f, i) => postSignIn(f, `user${i}`, 'wrong password', `198.51.100.${i + 1}`)));
    const t = tally(answers);
    expect(t[503]).toBeGreaterThan(0);
    expect((t[401] ?? 0) + t[503]!).toBe(24);
    const busy = answers.find((a) => a.status === 503)!;
    expect(busy.headers.get('retry-after')).toBe('2');
    expect(busy.text).toContain('busy');
    // Given back: the busy addresses were not charged for an attempt that was never checked.
    const charged = (await s.store.listRateLimits()).filter((r) => r.key.startsWith('signin-ip|')).reduce((n, r) => n + r.count, 0);
    expect(charged).toBe(t[401] ?? 0);
  });

  it('a password hashed at an older cost is upgraded to scrypt N=2^17 at the next successful sign-in, and still works', async () => {
    const s = await start();
    const old = await hashPassword(PASSWORD, { N: 1 << 14, r: 8, p: 1, keylen: 32 });
    const alice = (await s.store.findUserByUsername('alice'))!;
    await s.store.setPasswordHash(alice.id, old);
    expect((await postSignIn(await signInForm(s), 'alice', 'wrong password')).status).toBe(401);
    expect((await s.store.findUserById(alice.id))!.password_hash).toBe(old);
    expect((await postSignIn(await signInForm(s), 'alice', PASSWORD)).status).toBe(303);
    const upgraded = (await s.store.findUserById(alice.id))!.password_hash;
    expect(upgraded.split('$').slice(0, 4)).toEqual(['scrypt', String(SCRYPT.N), '8', '1']);
    expect(needsRehash(upgraded)).toBe(false);
    expect((await postSignIn(await signInForm(s), 'alice', PASSWORD)).status).toBe(303);
  });

  it('rfc8628 §5.1 parallel user-code guesses at /device/decision share the /device budget: at most the limit are looked up', async () => {
    const s = await start();
    const victim = await deviceAuthorization(s, 'authcli', 'openid');
    const b = new Browser(s.url);
    await signIn(b);
    const page = await b.get('/device');
    const csrf = hidden(page.text, '_csrf');
    const guess = (i: number) =>
      b.request('POST', '/device/decision', new URLSearchParams({ _csrf: csrf, user_code: `BCDF-${'GHJKLMNP'.slice(i % 4, (i % 4) + 4)}`, decision: 'approve' }).toString(), form);
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => guess(i)));
    const t = tally(answers);
    expect(t[400]).toBeLessThanOrEqual(LIMITS['user-code-ip'].limit);
    expect(t[429]).toBeGreaterThanOrEqual(40 - LIMITS['user-code-ip'].limit);
    // Locked out here means locked out at /device too, and a correct code is refused as well: no approval slips through.
    const entry = await b.request('POST', '/device', new URLSearchParams({ _csrf: csrf, user_code: victim.json.user_code }).toString(), form);
    expect(entry.status).toBe(429);
    const decision = await b.request('POST', '/device/decision', new URLSearchParams({ _csrf: csrf, user_code: victim.json.user_code, decision: 'approve' }).toString(), form);
    expect(decision.status).toBe(429);
    expect((await s.store.findDeviceByUserCode(victim.json.user_code.replace('-', '')))!.status).toBe('pending');
  });

  it('rfc8628 §5.1 user-code guesses are limited per account across IPs', async () => {
    const s = await start({ trustProxy: 1 });
    const b = new Browser(s.url);
    await signIn(b);
    const csrf = hidden((await b.get('/device')).text, '_csrf');
    const answers = await Promise.all(
      Array.from({ length: 45 }, (_, i) =>
        b.request('POST', '/device', new URLSearchParams({ _csrf: csrf, user_code: 'BCDF-GHJK' }).toString(), { ...form, 'x-forwarded-for': `198.51.100.${i + 1}` }),
      ),
    );
    const t = tally(answers);
    expect(t[400]).toBe(LIMITS['user-code-account'].limit);
    expect(t[429]).toBe(45 - LIMITS['user-code-account'].limit);
  });

  it('device authorizations are limited per IP and per application; every refused request made no row', async () => {
    const limits: Limits = { ...LIMITS, 'device-authz-ip': { limit: 12, windowMs: 600_000 }, 'device-authz-client': { limit: 30, windowMs: 60_000 } };
    const s = await start({ trustProxy: 1, limits });
    const from = (ip: string) => deviceAuthorization(s, 'authcli', 'openid', { 'x-forwarded-for': ip });
    const oneIp = await Promise.all(Array.from({ length: 40 }, () => from('192.0.2.1')));
    expect(tally(oneIp)).toEqual({ 200: 12, 429: 28 });
    const refused = oneIp.find((r) => r.status === 429)!;
    expect(refused.json.error).toBe('temporarily_unavailable');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    const manyIps = await Promise.all(Array.from({ length: 60 }, (_, i) => from(`198.51.100.${i + 1}`)));
    expect(manyIps.filter((r) => r.status === 200)).toHaveLength(30 - 12);
    const rows = await s.store.db.selectFrom('device_authorizations').select((eb) => eb.fn.countAll<string | number>().as('n')).executeTakeFirstOrThrow();
    expect(Number(rows.n)).toBe(30);
  });

  it('an IPv6 client is counted by its /64: rotating addresses inside it does not escape', async () => {
    const s = await start({ trustProxy: 1 });
    const answers = await Promise.all(
      Array.from({ length: 25 }, async (_, i) => postSignIn(await signInForm(s), 'alice', `wrong ${i}`, `2001:db8:1:2:${(i + 1).toString(16)}::1`)),
    );
    expect(tally(answers)).toEqual({ 401: LIMITS['signin-account-ip'].limit, 429: 25 - LIMITS['signin-account-ip'].limit });
    expect((await s.store.listRateLimits()).map((r) => r.key)).toContain('signin-ip|2001:db8:1:2::/64');
  });
});

describe('client IP subjects and counter keys', () => {
  it('IPv4, IPv4-mapped IPv6 and IPv6 /64', () => {
    expect(ipSubject('192.0.2.1')).toBe('192.0.2.1');
    expect(ipSubject('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(ipSubject('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(ipSubject('2001:0db8:0001:0002:0000:0000:0000:0001')).toBe('2001:db8:1:2::/64');
    expect(ipSubject('not an ip')).toBeUndefined();
  });

  it('operator commands find an account or an address in the counters, and nothing else', () => {
    const keys = [
      'signin-ip|192.0.2.1',
      'signin-account-ip|alice|192.0.2.1',
      'signin-account|alice',
      'signin-account-slowed|alice',
      'signin-account|alice2',
      'signin-account-ip|alice2|192.0.2.1',
      'user-code-ip|192.0.2.1',
      'user-code-ip|192.0.2.10',
      'device-authz-ip|authcli|192.0.2.1',
      'something-else|alice',
    ];
    expect(accountCounterKeys(keys, 'Alice')).toEqual(['signin-account-ip|alice|192.0.2.1', 'signin-account|alice', 'signin-account-slowed|alice']);
    expect(ipCounterKeys(keys, '::ffff:192.0.2.1')).toEqual([
      'signin-ip|192.0.2.1',
      'signin-account-ip|alice|192.0.2.1',
      'signin-account-ip|alice2|192.0.2.1',
      'user-code-ip|192.0.2.1',
    ]);
    expect(describeCounter('something-else|alice')).toBeUndefined();
  });
});

describe.each(dialects())('the store counter (%s)', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer(dialect);
  });
  afterAll(async () => server.close());

  it('200 parallel consumes of one key get 200 distinct counts, across two connections of the pool', async () => {
    const now = server.clock.now();
    const counts = await Promise.all(Array.from({ length: 200 }, () => server.store.consumeRateLimit('test|race', 60_000, now)));
    expect(new Set(counts.map((c) => c.count)).size).toBe(200);
    expect(Math.max(...counts.map((c) => c.count))).toBe(200);
    await server.store.releaseRateLimit('test|race', 60_000, now);
    expect((await server.store.consumeRateLimit('test|race', 60_000, now)).count).toBe(200);
    // A new window starts over.
    expect((await server.store.consumeRateLimit('test|race', 60_000, now + 60_000)).count).toBe(1);
    // Giving back never goes below zero, and never touches a window that has ended.
    await server.store.releaseRateLimit('test|race', 60_000, now + 200_000);
    expect((await server.store.consumeRateLimit('test|race', 60_000, now + 60_001)).count).toBe(2);
  });
});

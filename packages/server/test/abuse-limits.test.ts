import ipaddr from 'ipaddr.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS, PASSWORD_HASHES_PER_CLIENT, passwordHashParams, type Limits } from '../src/config/defaults.js';
import { hashPassword, needsRehash } from '../src/util/password.js';
import { ipSubject } from '../src/http/client-ip.js';
import { accountCounterKeys, describeCounter, ipCounterKeys } from '../src/oauth/limits.js';
import type { ServerConfig } from '../src/config/config.js';
import {
  Browser,
  deviceAuthorization,
  dialects,
  hidden,
  legacyScryptHash,
  PASSWORD,
  seedUser,
  signedInBrowser,
  startServer,
  tally,
  type Res,
  ownClock,
  type TestServer,
} from './helpers.js';
import { testRows } from '../src/testing.js';
import { openStore } from '../src/store/open.js';

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

/**
 * The cost of the tests about the hashers' caps: a hash must last long enough (32 MiB, tens of milliseconds)
 * for attempts sent together to find the places taken, and no longer (the production cost's 0.3 s a hash on
 * one nice-19 thread took 20 s on a loaded machine).
 */
const CAP_TEST_COST = 15;
/** The queue test's burst of sign-ins, each from an address of its own. */
const BURST = 120;

describe.each(dialects())('abuse limits (%s)', (dialect) => {
  let server: TestServer | undefined;
  // Three hashing threads (thousands of places at the tests' cost), 12 of which one client may take: more than
  // any one limit admits, so the limit, not the hashing queue, decides these tests (the queue has tests of its own).
  const start = async (overrides: Partial<ServerConfig> = {}) => {
    server = await startServer(dialect, { passwordHashThreads: 3, passwordHashesPerClient: 12, ...overrides });
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
    ownClock(s).advance(LIMITS['signin-account-ip'].windowMs);
    expect((await postSignIn(await signInForm(s), 'alice', PASSWORD)).status).toBe(303);
  });

  it('a successful sign-in gives its attempt back: signing in again and again never locks the owner out', async () => {
    const s = await start();
    const limit = LIMITS['signin-account-ip'].limit;
    for (let i = 0; i < limit + 2; i++)
      expect((await postSignIn(await signInForm(s), 'alice', PASSWORD)).status, `sign-in ${i + 1}`).toBe(303);
    for (let i = 0; i < limit; i++) expect((await postSignIn(await signInForm(s), 'alice', `wrong ${i}`)).status).toBe(401);
    expect((await postSignIn(await signInForm(s), 'alice', `wrong again`)).status).toBe(429);
  });

  it('distributed guessing: an account guessed from many IPs is slowed for unknown browsers, never for its owner, and unlocked by the operator', async () => {
    // A small account budget keeps the test short (each checked guess costs a real hash); the rule is the same.
    const accountLimit = 5;
    const s = await start({ trustProxy: 1, limits: { ...LIMITS, 'signin-account': { limit: accountLimit, windowMs: 15 * 60_000 } } });
    // The owner signed in on this browser before the attack: it holds a device cookie.
    const owner = await signInForm(s);
    expect((await postSignIn(owner, 'alice', PASSWORD, '192.0.2.77')).status).toBe(303);
    expect([...owner.browser.cookies.keys()]).toContain('authcli_device');
    // Each guess from its own address: no per-IP limit is ever reached.
    for (let i = 0; i < accountLimit; i++)
      expect((await postSignIn(await signInForm(s), 'alice', `guess ${i}`, `198.51.100.${i + 1}`)).status).toBe(401);
    // Past the account's budget, parallel guesses from fresh addresses: one takes the minute's slot, the rest wait.
    const forms = await Promise.all(Array.from({ length: 8 }, () => signInForm(s)));
    const slowed = await Promise.all(forms.map((f, i) => postSignIn(f, 'alice', `late guess ${i}`, `203.0.113.${i + 1}`)));
    expect(tally(slowed)).toEqual({ 401: 1, 429: 7 });
    // While the attacker holds the slot, a new browser is slowed too, even with the right password...
    expect((await postSignIn(await signInForm(s), 'alice', PASSWORD, '192.0.2.78')).status).toBe(429);
    // ...but the owner's browser is not: it is counted by its device cookie, not by the account.
    const page = await owner.browser.get('/signin');
    expect((await postSignIn({ browser: owner.browser, csrf: hidden(page.text, '_csrf') }, 'alice', PASSWORD, '192.0.2.77')).status).toBe(
      303,
    );
    // A forged or foreign device cookie is worth nothing.
    const forger = await signInForm(s);
    forger.browser.cookies.set(
      'authcli_device',
      owner.browser.cookies.get('authcli_device')!.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')),
    );
    expect((await postSignIn(forger, 'alice', PASSWORD, '192.0.2.79')).status).toBe(429);
    await seedUser(s, 'bob');
    const bobsBrowser = await signInForm(s);
    expect((await postSignIn(bobsBrowser, 'bob', PASSWORD, '203.0.113.50')).status).toBe(303);
    const again = await bobsBrowser.browser.get('/signin');
    expect(
      (await postSignIn({ browser: bobsBrowser.browser, csrf: hidden(again.text, '_csrf') }, 'alice', PASSWORD, '203.0.113.50')).status,
    ).toBe(429);
    // An unknown browser gets the next slot a minute later.
    ownClock(s).advance(LIMITS['signin-account-slowed'].windowMs);
    expect((await postSignIn(await signInForm(s), 'alice', PASSWORD, '192.0.2.80')).status).toBe(303);
    // `users unlock` clears alice's counters (the command's own code path: the keys it deletes), not bob's.
    const keys = (await s.store.rateLimits.list()).map((r) => r.key);
    const mine = accountCounterKeys(keys, 'ALICE');
    expect(mine).toEqual(expect.arrayContaining(['signin-account|alice', 'signin-account-slowed|alice']));
    expect(mine.every((k) => describeCounter(k)?.username === 'alice')).toBe(true);
    await s.store.rateLimits.delete(mine);
    const fresh = await Promise.all(
      Array.from({ length: 3 }, async (_, i) => postSignIn(await signInForm(s), 'alice', `wrong ${i}`, `203.0.113.${100 + i}`)),
    );
    expect(tally(fresh)).toEqual({ 401: 3 });
  });

  it('a device cookie has a budget of its own: wrong passwords through it are limited too', async () => {
    const s = await start({ trustProxy: 1 });
    const owner = await signInForm(s);
    expect((await postSignIn(owner, 'alice', PASSWORD)).status).toBe(303);
    const csrf = hidden((await owner.browser.get('/signin')).text, '_csrf');
    // From as many addresses, so that only the cookie's own budget can refuse them.
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => postSignIn({ browser: owner.browser, csrf }, 'alice', `wrong ${i}`, `198.51.100.${i + 1}`)),
    );
    expect(tally(answers)).toEqual({ 401: LIMITS['signin-device'].limit, 429: 20 - LIMITS['signin-device'].limit });
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
    const keys = (await s.store.rateLimits.list()).map((r) => r.key);
    expect(keys.every((k) => !k.includes('198.51.100.'))).toBe(true);
    expect(keys).toContain('signin-ip|127.0.0.1');
  });

  it('a proxy list trusts only those addresses: a client naming itself in X-Forwarded-For is not believed', async () => {
    const s = await start({ trustProxy: ['10.0.0.0/8'] });
    const answers = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => postSignIn(await signInForm(s), 'alice', `wrong ${i}`, `198.51.100.${i}`)),
    );
    expect(tally(answers)).toEqual({ 401: LIMITS['signin-account-ip'].limit, 429: 20 - LIMITS['signin-account-ip'].limit });
    expect((await s.store.rateLimits.list()).map((r) => r.key)).toContain('signin-ip|127.0.0.1');
  });

  it('a proxy list believes the entry its proxy appended: each client behind it is counted on its own', async () => {
    // The test's connections come from 127.0.0.1: here that is the trusted proxy.
    const s = await start({ trustProxy: ['127.0.0.1/32', '::1'] });
    const answers = await Promise.all(
      Array.from({ length: 12 }, async (_, i) =>
        postSignIn(await signInForm(s), 'alice', `wrong ${i}`, `203.0.113.250, 198.51.100.${i + 1}`),
      ),
    );
    // 12 from one address would be 10 checked and 2 refused.
    expect(tally(answers)).toEqual({ 401: 12 });
    const keys = (await s.store.rateLimits.list()).map((r) => r.key);
    expect(keys).toContain('signin-ip|198.51.100.12');
    expect(keys.some((k) => k.includes('127.0.0.1') || k.includes('203.0.113.250'))).toBe(false);
  });

  it('an address a proxy wrote with a port is counted without it, and a value that is no address falls back to the socket', async () => {
    const s = await start({ trustProxy: 1 });
    const answers = await Promise.all(
      Array.from({ length: 15 }, async (_, i) => postSignIn(await signInForm(s), 'alice', `wrong ${i}`, `203.0.113.7:${40000 + i}`)),
    );
    expect(tally(answers)).toEqual({ 401: LIMITS['signin-account-ip'].limit, 429: 15 - LIMITS['signin-account-ip'].limit });
    expect((await postSignIn(await signInForm(s), 'bob', 'wrong', 'unknown')).status).toBe(401);
    const keys = (await s.store.rateLimits.list()).map((r) => r.key);
    expect(keys).toEqual(expect.arrayContaining(['signin-ip|203.0.113.7', 'signin-ip|127.0.0.1']));
  });

  it('the password-hash queue is bounded by its deadline: past what the threads can start within it sign-ins answer 503 with Retry-After at once, and the attempt is given back', async () => {
    // One thread and a 1 s deadline: about 1 + 1000/75 places at this cost (fewer once hashes are measured slower).
    const s = await start({ trustProxy: 1, passwordHashThreads: 1, passwordHashCost: CAP_TEST_COST, passwordHashQueueDeadlineMs: 1000 });
    // 120 accounts-worth of guesses from 120 addresses: no limit refuses them, only the queue's bound. More than a
    // second's worth of hashes however fast this machine hashes at this cost (Argon2id, 32 MiB: 40 fitted, once).
    const forms = await Promise.all(Array.from({ length: BURST }, () => signInForm(s)));
    const answers = await Promise.all(forms.map((f, i) => postSignIn(f, `user${i}`, 'wrong password', `198.51.100.${i + 1}`)));
    const t = tally(answers);
    // How many are hashed depends on how fast this machine hashes now (a loaded CI machine may start only the
    // first within the second); the count of places itself is tested with an injected clock (password-queue.test.ts).
    expect(t[401]).toBeGreaterThanOrEqual(1);
    expect(t[503]).toBeGreaterThan(0);
    expect(t[401]! + t[503]!).toBe(BURST);
    const busy = answers.find((a) => a.status === 503)!;
    // Never longer than the deadline: by then the queue ahead of a newcomer has been served.
    expect(busy.headers.get('retry-after')).toBe('1');
    expect(busy.text).toContain('The server is busy. Try again in 1 second.');
    // Given back: the busy addresses were not charged for an attempt that was never checked.
    const charged = (await s.store.rateLimits.list()).filter((r) => r.key.startsWith('signin-ip|')).reduce((n, r) => n + r.count, 0);
    expect(charged).toBe(t[401]);
  });

  it('50 people signing in at the same moment, each from their own address with the right password, are all signed in: the hashes wait their turn', async () => {
    // One thread, so 49 of the hashes wait; a deadline of a minute, so that a loaded test machine (where a
    // nice-19 hash can take many times its 0.1 s) still serves them all: the deadline has tests of its own.
    const s = await start({ trustProxy: 1, passwordHashThreads: 1, passwordHashCost: CAP_TEST_COST, passwordHashQueueDeadlineMs: 60_000 });
    for (let i = 0; i < 50; i++) await seedUser(s, `person${i}`);
    const forms = await Promise.all(Array.from({ length: 50 }, () => signInForm(s)));
    const answers = await Promise.all(forms.map((f, i) => postSignIn(f, `person${i}`, PASSWORD, `198.51.100.${i + 1}`)));
    expect(tally(answers)).toEqual({ 303: 50 });
    expect(forms.every((f) => f.browser.cookies.has('authcli_device'))).toBe(true);
    // Nothing was charged: each successful sign-in gave its attempt back.
    expect((await s.store.rateLimits.list()).reduce((n, r) => n + r.count, 0)).toBe(0);
  });

  it('a browser where the person signed in before is served ahead of a queue of strangers', async () => {
    const s = await start({ trustProxy: 1, passwordHashThreads: 1, passwordHashCost: CAP_TEST_COST, passwordHashQueueDeadlineMs: 60_000 });
    const owner = await signInForm(s);
    expect((await postSignIn(owner, 'alice', PASSWORD, '192.0.2.77')).status).toBe(303);
    const again = { browser: owner.browser, csrf: hidden((await owner.browser.get('/signin')).text, '_csrf') };
    const forms = await Promise.all(Array.from({ length: 24 }, () => signInForm(s)));
    let answered = 0;
    const strangers = forms.map((f, i) =>
      postSignIn(f, `stranger${i}`, 'wrong password', `198.51.100.${i + 1}`).then((r) => {
        answered++;
        return r;
      }),
    );
    // Once the first stranger is answered the others wait in the queue; the owner comes after them all.
    await Promise.race(strangers);
    const ownersTurn = await postSignIn(again, 'alice', PASSWORD, '192.0.2.77');
    const strangersBefore = answered;
    expect(ownersTurn.status).toBe(303);
    // In arrival order the owner would be answered last; first in line, at most the hash running and the
    // strangers already past the queue are answered before.
    expect(strangersBefore).toBeLessThan(12);
    expect(tally(await Promise.all(strangers))).toEqual({ 401: 24 });
  });
  it('a password hashed at an older cost is upgraded to the configured cost at the next successful sign-in, and still works', async () => {
    const s = await start({ passwordHashCost: 12 });
    const old = await hashPassword(PASSWORD, passwordHashParams(11));
    const alice = (await s.store.users.findByUsername('alice'))!;
    await s.store.users.setPasswordHash(alice.id, old);
    expect((await postSignIn(await signInForm(s), 'alice', 'wrong password')).status).toBe(401);
    expect((await s.store.users.findById(alice.id))!.password_hash).toBe(old);
    expect((await postSignIn(await signInForm(s), 'alice', PASSWORD)).status).toBe(303);
    const upgraded = (await s.store.users.findById(alice.id))!.password_hash;
    expect(upgraded.split('$').slice(0, 4)).toEqual(['', 'argon2id', 'v=19', `m=${2 ** 12},t=3,p=1`]);
    expect(needsRehash(upgraded, passwordHashParams(12))).toBe(false);
    expect((await postSignIn(await signInForm(s), 'alice', PASSWORD)).status).toBe(303);
  });

  it('a password hashed with scrypt before Argon2id signs in, and is stored as Argon2id from then on', async () => {
    const s = await start();
    const old = legacyScryptHash(PASSWORD);
    const alice = (await s.store.users.findByUsername('alice'))!;
    await s.store.users.setPasswordHash(alice.id, old);
    expect((await postSignIn(await signInForm(s), 'alice', 'wrong password')).status).toBe(401);
    expect((await s.store.users.findById(alice.id))!.password_hash).toBe(old);
    expect((await postSignIn(await signInForm(s), 'alice', PASSWORD)).status).toBe(303);
    const upgraded = (await s.store.users.findById(alice.id))!.password_hash;
    expect(upgraded).toMatch(/^\$argon2id\$v=19\$m=1024,t=3,p=1\$/);
    expect((await postSignIn(await signInForm(s), 'alice', PASSWORD)).status).toBe(303);
  });

  it('rfc8628 §5.1 parallel user-code guesses at /device/decision share the /device budget: at most the limit are looked up', async () => {
    const s = await start();
    const victim = await deviceAuthorization(s, 'authcli', 'openid');
    const b = await signedInBrowser(s);
    const page = await b.get('/device');
    const csrf = hidden(page.text, '_csrf');
    // Each approval confirms its code (the box a person ticks), so it is looked up as a guess.
    const guess = (i: number) => {
      const code = `BCDF-${'GHJKLMNP'.slice(i % 4, (i % 4) + 4)}`;
      return b.request(
        'POST',
        '/device/decision',
        new URLSearchParams({ _csrf: csrf, user_code: code, code_confirmed: code, decision: 'approve' }).toString(),
        form,
      );
    };
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => guess(i)));
    const t = tally(answers);
    expect(t[400]).toBeLessThanOrEqual(LIMITS['user-code-ip'].limit);
    expect(t[429]).toBeGreaterThanOrEqual(40 - LIMITS['user-code-ip'].limit);
    // Locked out here means locked out at /device too, and a correct code is refused as well: no approval slips through.
    const entry = await b.request(
      'POST',
      '/device',
      new URLSearchParams({ _csrf: csrf, user_code: victim.json.user_code }).toString(),
      form,
    );
    expect(entry.status).toBe(429);
    const decision = await b.request(
      'POST',
      '/device/decision',
      new URLSearchParams({
        _csrf: csrf,
        user_code: victim.json.user_code,
        code_confirmed: victim.json.user_code,
        decision: 'approve',
      }).toString(),
      form,
    );
    expect(decision.status).toBe(429);
    expect((await s.store.deviceGrants.findByUserCode(victim.json.user_code.replace('-', '')))!.status).toBe('pending');
  });

  it('rfc8628 §5.1 user-code guesses are limited per account across IPs', async () => {
    const s = await start({ trustProxy: 1 });
    const b = await signedInBrowser(s);
    const csrf = hidden((await b.get('/device')).text, '_csrf');
    const answers = await Promise.all(
      Array.from({ length: 45 }, (_, i) =>
        b.request('POST', '/device', new URLSearchParams({ _csrf: csrf, user_code: 'BCDF-GHJK' }).toString(), {
          ...form,
          'x-forwarded-for': `198.51.100.${i + 1}`,
        }),
      ),
    );
    const t = tally(answers);
    expect(t[400]).toBe(LIMITS['user-code-account'].limit);
    expect(t[429]).toBe(45 - LIMITS['user-code-account'].limit);
  });

  it('device authorizations are limited per IP and per application; every refused request made no row', async () => {
    const limits: Limits = {
      ...LIMITS,
      'device-authz-ip': { limit: 12, windowMs: 600_000 },
      'device-authz-client': { limit: 30, windowMs: 60_000 },
    };
    const s = await start({ trustProxy: 1, limits });
    const from = (ip: string) => deviceAuthorization(s, 'authcli', 'openid', { 'x-forwarded-for': ip });
    const oneIp = await Promise.all(Array.from({ length: 40 }, () => from('192.0.2.1')));
    expect(tally(oneIp)).toEqual({ 200: 12, 429: 28 });
    const refused = oneIp.find((r) => r.status === 429)!;
    expect(refused.json.error).toBe('temporarily_unavailable');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    const manyIps = await Promise.all(Array.from({ length: 60 }, (_, i) => from(`198.51.100.${i + 1}`)));
    expect(manyIps.filter((r) => r.status === 200)).toHaveLength(30 - 12);
    expect(await testRows(s.store).count('device_authorizations')).toBe(30);
  });

  it('signed-out visits store at most the limit of continuations per address; past it sign-in still works, without one', async () => {
    const s = await start({ limits: { ...LIMITS, 'continuation-ip': { limit: 20, windowMs: 600_000 } } });
    const visits = await Promise.all(Array.from({ length: 30 }, () => new Browser(s.url).get('/dashboard')));
    const locations = visits.map((v) => v.location ?? '');
    expect(locations.filter((l) => /^\/signin\?continue=[A-Za-z0-9_-]{43}$/.test(l))).toHaveLength(20);
    expect(locations.filter((l) => l === '/signin')).toHaveLength(10);
    expect(await testRows(s.store).count('continuations')).toBe(20);
    // The visitor past the limit signs in all the same, and lands on the home page.
    const b = new Browser(s.url);
    const page = await b.get('/signin');
    const done = await b.postForm('/signin', { _csrf: hidden(page.text, '_csrf'), username: 'alice', password: PASSWORD });
    expect(done.status).toBe(303);
    expect(done.location).toBe('/');
  });

  it('an IPv6 client is counted by its /56: rotating addresses and /64s inside it does not escape', async () => {
    const s = await start({ trustProxy: 1 });
    const answers = await Promise.all(
      Array.from({ length: 25 }, async (_, i) =>
        postSignIn(await signInForm(s), 'alice', `wrong ${i}`, `2001:db8:1:${(0x200 + i).toString(16)}:${i + 1}::1`),
      ),
    );
    expect(tally(answers)).toEqual({ 401: LIMITS['signin-account-ip'].limit, 429: 25 - LIMITS['signin-account-ip'].limit });
    expect((await s.store.rateLimits.list()).map((r) => r.key)).toContain('signin-ip|2001:db8:1:200::/56');
  });

  it('one client cannot take every password-hashing place: past its own share it gets 503 at once, others still get theirs', async () => {
    // One thread and a minute's deadline: hundreds of places, of which one address may hold 8.
    const share = PASSWORD_HASHES_PER_CLIENT;
    const s = await start({
      trustProxy: 1,
      passwordHashThreads: 1,
      passwordHashesPerClient: share,
      passwordHashCost: CAP_TEST_COST,
      passwordHashQueueDeadlineMs: 60_000,
    });
    const forms = await Promise.all(Array.from({ length: 21 }, () => signInForm(s)));
    const [mine, other] = await Promise.all([
      Promise.all(forms.slice(0, 20).map((f, i) => postSignIn(f, `user${i}`, 'wrong password', '198.51.100.1'))),
      postSignIn(forms[20]!, 'someone', 'wrong password', '198.51.100.2'),
    ]);
    const t = tally(mine);
    // Its share, and the few that found a place its first hashes had given back while the others arrived.
    expect(t[401]).toBeGreaterThanOrEqual(share);
    expect(t[503]).toBeGreaterThanOrEqual(20 - share - 4);
    expect(t[401]! + t[503]!).toBe(20);
    expect(Number(mine.find((a) => a.status === 503)!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(other.status).toBe(401);
  });

  it('without a trusted proxy a forged X-Forwarded-For gets no share of the hashing places of its own', async () => {
    const share = PASSWORD_HASHES_PER_CLIENT;
    const s = await start({
      passwordHashThreads: 1,
      passwordHashesPerClient: share,
      passwordHashCost: CAP_TEST_COST,
      passwordHashQueueDeadlineMs: 60_000,
    });
    const forms = await Promise.all(Array.from({ length: 20 }, () => signInForm(s)));
    // Each names another address; every one of them is the socket's, 127.0.0.1.
    const answers = await Promise.all(forms.map((f, i) => postSignIn(f, `user${i}`, 'wrong password', `198.51.100.${i + 1}`)));
    const t = tally(answers);
    expect(t[401]).toBeGreaterThanOrEqual(share);
    expect(t[503]).toBeGreaterThanOrEqual(20 - share - 4);
    expect(t[401]! + t[503]!).toBe(20);
    const keys = (await s.store.rateLimits.list()).map((r) => r.key);
    expect(keys.filter((k) => k.startsWith('signin-ip|'))).toEqual(['signin-ip|127.0.0.1']);
  });
});

describe('client IP subjects and counter keys', () => {
  it('IPv4 (bare, mapped, with a port) and IPv6 /56', () => {
    expect(ipSubject('192.0.2.1')).toBe('192.0.2.1');
    expect(ipSubject('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(ipSubject('192.0.2.1:8443')).toBe('192.0.2.1');
    expect(ipSubject('[2001:db8::1]:443')).toBe('2001:db8::/56');
    expect(ipSubject('2001:db8:1:2aa:aaaa::1')).toBe('2001:db8:1:200::/56');
    expect(ipSubject('2001:0db8:0001:02ff:0000:0000:0000:0001')).toBe('2001:db8:1:200::/56');
    expect(ipSubject('2001:db8:1:200::/56')).toBe('2001:db8:1:200::/56');
    for (const bad of ['not an ip', '', 'unknown', '1.2.3.4.5', '[::1', '192.0.2.1:', '256.1.1.1'])
      expect(ipSubject(bad), bad).toBeUndefined();
    // Dotted quads are answered without parsing; every other spelling of the same address is parsed to the same subject.
    for (const same of ['0.0.0.0', '255.255.255.255', '10.0.0.1', '199.249.250.251']) expect(ipSubject(same)).toBe(same);
    expect(ipSubject(' 10.0.0.1 ')).toBe('10.0.0.1');
    expect(ipSubject('0xa.0.0.1')).toBe('10.0.0.1');
    expect(ipSubject('10.0.0.01')).toBe(ipaddr.parse('10.0.0.01').toString());
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
      'registration-ip|192.0.2.1',
      'client-auth-ip|192.0.2.1',
      'something-else|alice',
    ];
    expect(accountCounterKeys(keys, 'Alice')).toEqual([
      'signin-account-ip|alice|192.0.2.1',
      'signin-account|alice',
      'signin-account-slowed|alice',
    ]);
    expect(ipCounterKeys(keys, '::ffff:192.0.2.1')).toEqual([
      'signin-ip|192.0.2.1',
      'signin-account-ip|alice|192.0.2.1',
      'signin-account-ip|alice2|192.0.2.1',
      'user-code-ip|192.0.2.1',
      'registration-ip|192.0.2.1',
      'client-auth-ip|192.0.2.1',
    ]);
    expect(describeCounter('registration-ip|192.0.2.1')).toMatchObject({ kind: 'registration-ip', ip: '192.0.2.1' });
    expect(describeCounter('something-else|alice')).toBeUndefined();
  });
});

describe.each(dialects())('the store counter (%s)', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer(dialect);
  });
  afterAll(async () => server.close());

  it('peek reads the open window and counts nothing: no row for a key never counted, 0 once the window ended', async () => {
    const now = server.clock.now();
    expect(await server.store.rateLimits.peek('test|peek', 60_000, now)).toEqual({ count: 0, windowStart: now });
    expect((await server.store.rateLimits.list()).some((r) => r.key === 'test|peek')).toBe(false);
    for (let i = 0; i < 3; i++) await server.store.rateLimits.consume('test|peek', 60_000, now);
    const peeks = await Promise.all(Array.from({ length: 50 }, () => server.store.rateLimits.peek('test|peek', 60_000, now + 59_999)));
    expect(peeks.every((p) => p.count === 3 && p.windowStart === now)).toBe(true);
    expect(await server.store.rateLimits.peek('test|peek', 60_000, now + 60_000)).toEqual({ count: 0, windowStart: now + 60_000 });
    expect((await server.store.rateLimits.consume('test|peek', 60_000, now + 1)).count).toBe(4);
  });

  it('200 parallel consumes of one key get 200 distinct counts, from two store connections on one database', async () => {
    const now = server.clock.now();
    // Half of them through a store of its own on the same database, as another instance's.
    const other = await openStore(server.storeUrl);
    const counts = await Promise.all(
      Array.from({ length: 200 }, (_, i) => (i % 2 ? other : server.store).rateLimits.consume('test|race', 60_000, now)),
    ).finally(() => other.close());
    expect(new Set(counts.map((c) => c.count)).size).toBe(200);
    expect(Math.max(...counts.map((c) => c.count))).toBe(200);
    const windowStart = counts[0]!.windowStart;
    expect(counts.every((c) => c.windowStart === windowStart)).toBe(true);
    await server.store.rateLimits.release('test|race', windowStart);
    expect((await server.store.rateLimits.consume('test|race', 60_000, now)).count).toBe(200);
    // A new window starts over.
    const next = await server.store.rateLimits.consume('test|race', 60_000, now + 60_000);
    expect(next).toEqual({ count: 1, windowStart: now + 60_000 });
    // A give-back for the window that ended does not lower the new one.
    await server.store.rateLimits.release('test|race', windowStart);
    expect((await server.store.rateLimits.consume('test|race', 60_000, now + 60_001)).count).toBe(2);
    // Giving back never goes below zero.
    await server.store.rateLimits.release('test|race', next.windowStart);
    await server.store.rateLimits.release('test|race', next.windowStart);
    await server.store.rateLimits.release('test|race', next.windowStart);
    expect((await server.store.rateLimits.consume('test|race', 60_000, now + 60_002)).count).toBe(1);
  });
});

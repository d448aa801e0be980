import { afterEach, describe, expect, it } from 'vitest';
import { CLIENT_AUTH_FAILURES_REFRESH_MS, LIMITS } from '../src/config/defaults.js';
import type { ServerConfig } from '../src/config/config.js';
import { AbuseLimits } from '../src/oauth/limits.js';
import { basic, dialects, ownClock, postForm, secondInstance, seedApp, startServer, tally, type TestServer } from './helpers.js';

/**
 * Failed client authentication (`client-auth-ip`, oauth/limits.ts): wrong client secrets sent as an attacker
 * would, many at once, from one address and from forged ones, at every endpoint that authenticates clients.
 */

const LIMIT = LIMITS['client-auth-ip'].limit;

describe.each(dialects())('failed client authentication is limited per client IP (%s)', (dialect) => {
  let server: TestServer | undefined;
  const start = async (overrides: Partial<ServerConfig> = {}) => {
    server = await startServer(dialect, overrides);
    const conf = await seedApp(server, { name: 'Backend', kind: 'confidential', grantTypes: ['authorization_code', 'refresh_token'] });
    const pub = await seedApp(server, { name: 'Public' });
    return { s: server, conf: { id: conf.app.clientId, secret: conf.clientSecret! }, pub: pub.app.clientId };
  };
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  const introspect = (s: TestServer, id: string, secret: string, headers: Record<string, string> = {}) =>
    postForm(s, '/oauth/introspect', { token: 'not-a-token' }, { authorization: basic(id, secret), ...headers });
  const counters = async (s: TestServer) => Object.fromEntries((await s.store.rateLimits.list()).map((r) => [r.key, r.count] as const));

  it(`${LIMIT + 50} parallel wrong secrets from one IP: exactly the limit are answered invalid_client, the rest 429; then the right secret is refused too`, async () => {
    const { s, conf } = await start();
    const answers = await Promise.all(Array.from({ length: LIMIT + 50 }, (_, i) => introspect(s, conf.id, `wrong-${i}`)));
    expect(tally(answers)).toEqual({ 401: LIMIT, 429: 50 });
    expect(answers.filter((a) => a.status === 401).every((a) => a.json.error === 'invalid_client')).toBe(true);
    const refused = answers.find((a) => a.status === 429)!;
    expect(refused.json.error).toBe('temporarily_unavailable');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(LIMITS['client-auth-ip'].windowMs / 1000);
    // Past the limit the answer no longer says whether a secret was right: else guessing would go on.
    expect((await introspect(s, conf.id, conf.secret)).status).toBe(429);
    // One counter, of this address; the failures refused before they were compared are not counted again.
    const counted = await counters(s);
    expect(Object.keys(counted)).toEqual(['client-auth-ip|127.0.0.1']);
    expect(counted['client-auth-ip|127.0.0.1']).toBeGreaterThanOrEqual(LIMIT);
  });

  it('a secret that authenticates is never counted: 300 parallel right secrets all pass, and pass just under the limit', async () => {
    const { s, conf } = await start();
    const ok = await Promise.all(Array.from({ length: 300 }, () => introspect(s, conf.id, conf.secret)));
    expect(tally(ok)).toEqual({ 200: 300 });
    expect(await counters(s)).toEqual({});
    // One failure short of the limit, a busy backend's burst still gets through whole.
    await Promise.all(Array.from({ length: LIMIT - 1 }, (_, i) => introspect(s, conf.id, `wrong-${i}`)));
    expect(tally(await Promise.all(Array.from({ length: 50 }, () => introspect(s, conf.id, conf.secret))))).toEqual({ 200: 50 });
    expect((await introspect(s, conf.id, 'wrong')).status).toBe(401);
    expect((await introspect(s, conf.id, conf.secret)).status).toBe(429);
  });

  it('across instances: failures past the budget at one instance are refused at another within CLIENT_AUTH_FAILURES_REFRESH_MS, and its guesses are counted in the one budget', async () => {
    const { s, conf } = await start();
    const clock = ownClock(s);
    const other = await secondInstance(s);
    try {
      const there = (secret: string) =>
        fetch(`${other.url}/oauth/introspect`, {
          method: 'POST',
          headers: { authorization: basic(conf.id, secret), 'content-type': 'application/x-www-form-urlencoded' },
          body: 'token=x',
        });
      // The other instance has read the (empty) list of failing addresses: it answers from it.
      expect((await there(conf.secret)).status).toBe(200);
      const here = await Promise.all(Array.from({ length: LIMIT }, (_, i) => introspect(s, conf.id, `wrong-${i}`)));
      expect(tally(here)).toEqual({ 401: LIMIT });
      // Within the refresh interval the other instance has not read the list again; a guess there is still counted
      // by the store and refused, so no guess past the budget is ever answered as a plain failure.
      expect((await there('wrong-again')).status).toBe(429);
      // Once its list is older than the interval, it reads it again: the right secret is refused too.
      clock.advance(CLIENT_AUTH_FAILURES_REFRESH_MS);
      expect((await there(conf.secret)).status).toBe(429);
    } finally {
      await other.close();
    }
  });

  it('an address with no failure known reads no counter: 200 right secrets cost the limit one read of the failing addresses, not 200', async () => {
    const { s, conf } = await start();
    let peeks = 0;
    let listings = 0;
    const rateLimits = s.store.rateLimits;
    const peek = rateLimits.peek.bind(rateLimits);
    const openKeys = rateLimits.openKeys.bind(rateLimits);
    rateLimits.peek = (...args) => {
      peeks++;
      return peek(...args);
    };
    rateLimits.openKeys = (...args) => {
      listings++;
      return openKeys(...args);
    };
    try {
      expect(tally(await Promise.all(Array.from({ length: 200 }, () => introspect(s, conf.id, conf.secret))))).toEqual({ 200: 200 });
      expect([peeks, listings]).toEqual([0, 1]);
      // A failure makes the address known at once: its next request reads its counter.
      expect((await introspect(s, conf.id, 'wrong')).status).toBe(401);
      expect((await introspect(s, conf.id, conf.secret)).status).toBe(200);
      expect(peeks).toBe(1);
    } finally {
      rateLimits.peek = peek;
      rateLimits.openKeys = openKeys;
    }
  });

  it('the gate of an address with no failure known is answered at once, not as a promise, while the list of failing addresses is fresh', async () => {
    const { s } = await start();
    let now = Date.now();
    const limits = new AbuseLimits(s.store, () => now);
    const isPromise = (v: unknown) => v instanceof Promise;
    // The first request reads the list; those after it, within CLIENT_AUTH_FAILURES_REFRESH_MS, do not wait.
    const first = limits.clientSecret('192.0.2.1');
    expect(isPromise(first)).toBe(true);
    expect(await first).toMatchObject({ admitted: true });
    const gate = limits.clientSecret('192.0.2.1');
    expect(isPromise(gate)).toBe(false);
    if (isPromise(gate) || !gate.admitted) throw new Error('expected an admitted gate');
    // A failure makes its address known at once: that address's gate reads its counter, another's still does not.
    expect(await gate.failed()).toMatchObject({ admitted: true });
    const known = limits.clientSecret('192.0.2.1');
    expect(isPromise(known)).toBe(true);
    expect(await known).toMatchObject({ admitted: true });
    expect(isPromise(limits.clientSecret('192.0.2.2'))).toBe(false);
    expect(await s.store.rateLimits.peek('client-auth-ip|192.0.2.1', LIMITS['client-auth-ip'].windowMs, now)).toMatchObject({ count: 1 });
    // The list grows stale: the next request waits for it to be read again.
    now += CLIENT_AUTH_FAILURES_REFRESH_MS;
    const stale = limits.clientSecret('192.0.2.2');
    expect(isPromise(stale)).toBe(true);
    expect(await stale).toMatchObject({ admitted: true });
  });

  it('a failed read of the failing addresses fails the requests waiting for it, and the next request reads again', async () => {
    const { s } = await start();
    const limits = new AbuseLimits(s.store, () => Date.now());
    const rateLimits = s.store.rateLimits;
    const openKeys = rateLimits.openKeys.bind(rateLimits);
    let reads = 0;
    rateLimits.openKeys = (...args) => (++reads === 1 ? Promise.reject(new Error('the store is gone')) : openKeys(...args));
    try {
      const waiting = [limits.clientSecret('192.0.2.1'), limits.clientSecret('192.0.2.2')];
      for (const w of waiting) await expect(w).rejects.toThrow('the store is gone');
      expect(reads).toBe(1);
      expect(await limits.clientSecret('192.0.2.1')).toMatchObject({ admitted: true });
      expect(reads).toBe(2);
    } finally {
      rateLimits.openKeys = openKeys;
    }
  });

  it('every endpoint that authenticates clients counts into the one budget; only a presented secret counts', async () => {
    const { s, conf, pub } = await start();
    const wrong = { authorization: basic(conf.id, 'wrong') };
    const answers = await Promise.all([
      postForm(s, '/oauth/token', { grant_type: 'authorization_code', code: 'x', redirect_uri: 'https://app.example/callback' }, wrong),
      postForm(s, '/oauth/token', { grant_type: 'refresh_token', refresh_token: 'x', client_id: conf.id, client_secret: 'wrong' }),
      postForm(s, '/oauth/introspect', { token: 'x' }, wrong),
      postForm(s, '/oauth/revoke', { token: 'x' }, wrong),
      postForm(s, '/oauth/par', { response_type: 'code' }, wrong),
      postForm(s, '/oauth/device/authorization', { scope: 'openid' }, wrong),
      // A secret for a client that does not exist, and one sent by a public client.
      postForm(s, '/oauth/revoke', { token: 'x' }, { authorization: basic('no-such-client', 'guess') }),
      postForm(s, '/oauth/revoke', { token: 'x', client_id: pub, client_secret: 'guess' }),
    ]);
    expect(answers.map((a) => [a.status, a.json.error])).toEqual(Array.from({ length: 8 }, () => [401, 'invalid_client']));
    // Naming a client without a secret is not a guess: a public client's id, an unknown id, a confidential one
    // without its secret, and HTTP Basic with an empty password (oidc-agent's way of sending a public client's id).
    const named = await Promise.all([
      postForm(s, '/oauth/revoke', { token: 'x', client_id: pub }),
      postForm(s, '/oauth/revoke', { token: 'x', client_id: 'no-such-client' }),
      postForm(s, '/oauth/revoke', { token: 'x', client_id: conf.id }),
      postForm(s, '/oauth/revoke', { token: 'x' }, { authorization: basic(pub, '') }),
      postForm(s, '/oauth/revoke', { token: 'x' }, { authorization: basic(conf.id, '') }),
    ]);
    expect(named.map((a) => a.status)).toEqual([200, 401, 401, 200, 401]);
    expect(await counters(s)).toEqual({ 'client-auth-ip|127.0.0.1': 8 });
  });

  it('the window ends: the right secret works again, and the budget is whole', async () => {
    const { s, conf } = await start({ limits: { ...LIMITS, 'client-auth-ip': { limit: 5, windowMs: 15 * 60_000 } } });
    const clock = ownClock(s);
    expect(tally(await Promise.all(Array.from({ length: 20 }, (_, i) => introspect(s, conf.id, `wrong-${i}`))))).toEqual({
      401: 5,
      429: 15,
    });
    clock.advance(15 * 60_000 - 1_000);
    const late = await introspect(s, conf.id, conf.secret);
    expect(late.status).toBe(429);
    expect(Number(late.headers.get('retry-after'))).toBe(1);
    clock.advance(1_000);
    expect((await introspect(s, conf.id, conf.secret)).status).toBe(200);
    expect(tally(await Promise.all(Array.from({ length: 8 }, (_, i) => introspect(s, conf.id, `again-${i}`))))).toEqual({ 401: 5, 429: 3 });
  });

  it('without a trusted proxy a rotating X-Forwarded-For changes nothing', async () => {
    const { s, conf } = await start();
    const answers = await Promise.all(
      Array.from({ length: LIMIT + 20 }, (_, i) => introspect(s, conf.id, `wrong-${i}`, { 'x-forwarded-for': `198.51.100.${i % 250}` })),
    );
    expect(tally(answers)).toEqual({ 401: LIMIT, 429: 20 });
    expect(Object.keys(await counters(s))).toEqual(['client-auth-ip|127.0.0.1']);
  });

  it('behind one trusted proxy a client that writes its own X-Forwarded-For entries is still counted by the address the proxy saw', async () => {
    const { s, conf } = await start({ trustProxy: 1 });
    const answers = await Promise.all(
      Array.from({ length: LIMIT + 20 }, (_, i) =>
        introspect(s, conf.id, `wrong-${i}`, { 'x-forwarded-for': `10.${i % 250}.0.1, 192.0.2.10` }),
      ),
    );
    expect(tally(answers)).toEqual({ 401: LIMIT, 429: 20 });
    expect((await introspect(s, conf.id, conf.secret, { 'x-forwarded-for': 'fresh-looking, 192.0.2.10' })).status).toBe(429);
    // The backend next to it, behind the same proxy, is another address and is not held back.
    expect((await introspect(s, conf.id, conf.secret, { 'x-forwarded-for': '192.0.2.11' })).status).toBe(200);
    expect(Object.keys(await counters(s))).toEqual(['client-auth-ip|192.0.2.10']);
  });
});

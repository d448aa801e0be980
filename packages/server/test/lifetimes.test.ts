// An application's own lifetimes: the rules (oauth/lifetimes.ts), how long retired signing keys stay published
// when an application's access tokens outlive the server's, and the store reading them back on both dialects.
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.js';
import { KEY_ACTIVATION_DELAY_MS } from '../src/config/defaults.js';
import { checkLifetimes, formatDuration, parseDuration, spokenDuration } from '../src/oauth/lifetimes.js';
import { rotateKeys, serverKeyRing } from '../src/oauth/keys.js';
import { registerApplication } from '../src/oauth/registration.js';
import { newGrant } from '../src/oauth/refresh.js';
import type { Store } from '../src/store/store.js';
import { dialects, freshStore } from './helpers.js';

const SERVER = { accessTokenTtlSeconds: 900, grantTtlSeconds: 30 * 86_400 };
const FLAGS = { access: '--access-token-ttl', refresh: '--refresh-token-ttl' };

describe('lifetimes: durations and the rules', () => {
  it('parses seconds and s, m, h, d; anything else is no duration', () => {
    expect([parseDuration('900'), parseDuration('90s'), parseDuration('15m'), parseDuration(' 12h '), parseDuration('30d')]).toEqual([
      900, 90, 900, 43_200, 2_592_000,
    ]);
    for (const bad of ['', '1.5h', '-5m', '10w', 'm', '1 hour', '123456789']) expect(parseDuration(bad), bad).toBeUndefined();
    expect([formatDuration(900), formatDuration(86_400), formatDuration(90), formatDuration(7_776_000)]).toEqual([
      '15m',
      '1d',
      '90s',
      '90d',
    ]);
    // As the account page says it: rounded up, never shorter than it is.
    expect([900, 3600, 5400, 86_400, 1, 45].map(spokenDuration)).toEqual([
      '15 minutes',
      '1 hour',
      '2 hours',
      '1 day',
      '1 second',
      '45 seconds',
    ]);
  });

  it('checks bounds, and that a sign-in outlives its access tokens, naming where each lifetime comes from', () => {
    expect(checkLifetimes({ accessTokenTtl: 300, refreshTokenTtl: 7200 }, SERVER, FLAGS)).toEqual({
      accessTokenTtl: 300,
      refreshTokenTtl: 7200,
    });
    expect(checkLifetimes({ accessTokenTtl: null, refreshTokenTtl: null }, SERVER, FLAGS)).toEqual({
      accessTokenTtl: null,
      refreshTokenTtl: null,
    });
    expect(() => checkLifetimes({ accessTokenTtl: 0, refreshTokenTtl: null }, SERVER, FLAGS)).toThrow(
      '--access-token-ttl must be from 1s to 1d',
    );
    expect(() => checkLifetimes({ accessTokenTtl: 1.5, refreshTokenTtl: null }, SERVER, FLAGS)).toThrow('--access-token-ttl must be');
    expect(() => checkLifetimes({ accessTokenTtl: null, refreshTokenTtl: 91 * 86_400 }, SERVER, FLAGS)).toThrow(
      '--refresh-token-ttl must be',
    );
    expect(() => checkLifetimes({ accessTokenTtl: 7200, refreshTokenTtl: 3600 }, SERVER, FLAGS)).toThrow(
      'the sign-in lifetime (--refresh-token-ttl, 1h) must be at least the access token lifetime (--access-token-ttl, 2h)',
    );
    // Inherited: the server's setting is named, not a flag the operator did not give.
    expect(() => checkLifetimes({ accessTokenTtl: 86_400, refreshTokenTtl: null }, { ...SERVER, grantTtlSeconds: 3600 }, FLAGS)).toThrow(
      "the sign-in lifetime (the server's AUTHCLI_REFRESH_TOKEN_TTL, 1h) must be at least the access token lifetime (--access-token-ttl, 1d)",
    );
    expect(() =>
      checkLifetimes({ accessTokenTtl: null, refreshTokenTtl: 3600 }, { ...SERVER, accessTokenTtlSeconds: 7200 }, FLAGS),
    ).toThrow("(--refresh-token-ttl, 1h) must be at least the access token lifetime (the server's AUTHCLI_ACCESS_TOKEN_TTL, 2h)");
  });
});

for (const dialect of dialects()) {
  describe(`an application's access token lifetime and the store (${dialect})`, () => {
    let own: { store: Store; cleanup: () => Promise<void> } | undefined;
    afterEach(async () => {
      await own?.cleanup();
      own = undefined;
    });

    it('keeps an application’s lifetimes (a number, or null for the server’s) and answers the longest', async () => {
      own = await freshStore(dialect);
      const { store } = own;
      expect(await store.applications.longestAccessTokenTtl()).toBeNull();
      const base = { kind: 'public', callbackUrls: ['http://127.0.0.1/cb'], scopes: ['openid'] };
      const { app } = await registerApplication(store, { ...base, name: 'Long', accessTokenTtl: 7200, refreshTokenTtl: 86_400 }, 1);
      await registerApplication(store, { ...base, name: 'Server' }, 1);
      expect(await store.applications.get(app.clientId)).toMatchObject({ accessTokenTtl: 7200, refreshTokenTtl: 86_400 });
      expect(await store.applications.longestAccessTokenTtl()).toBe(7200);
      const updated = await store.applications.update(app.clientId, { accessTokenTtl: null }, 2);
      expect(updated).toMatchObject({ accessTokenTtl: null, refreshTokenTtl: 86_400 });
      // A change of something else keeps them.
      expect(await store.applications.update(app.clientId, { name: 'Renamed' }, 3)).toMatchObject({ refreshTokenTtl: 86_400 });
      expect(await store.applications.longestAccessTokenTtl()).toBeNull();
    });

    it('a sign-in without a refresh token counts as live while its access token lives: the application’s own lifetime, else the server’s', async () => {
      own = await freshStore(dialect);
      const { store } = own;
      const now = 1_000_000_000_000;
      const config = loadConfig({}, {}, { now: () => now });
      const user = await store.users.create({
        id: 'u-live',
        username: 'live',
        password_hash: 'x',
        claims: '{}',
        claims_updated_at: null,
        is_admin: 0,
        disabled_at: null,
        created_at: 1,
      });
      const base = { kind: 'public', callbackUrls: ['http://127.0.0.1/cb'], scopes: ['openid'] };
      const long = (await registerApplication(store, { ...base, name: 'Long', accessTokenTtl: 7200 }, 1)).app;
      const server = (await registerApplication(store, { ...base, name: 'Server' }, 1)).app;
      // Each signed in an hour ago, without a refresh token.
      for (const app of [long, server]) {
        const hourAgo = now - 3_600_000;
        await store.grants.insert(
          newGrant(config, { clientId: app.clientId, userId: user.id, scope: 'openid', authTime: hourAgo, ttlSeconds: null }, hourAgo),
        );
      }
      const live = await store.grants.liveByClient(user.id, now, config.accessTokenTtlSeconds * 1000);
      expect(live.map((l) => l.clientId)).toEqual([long.clientId]);
    });

    it('a retired signing key stays published as long as the longest access token an application has may live', async () => {
      own = await freshStore(dialect);
      const { store } = own;
      let now = 1_000_000_000_000;
      const config = loadConfig({}, {}, { now: () => now });
      const published = async () => {
        const ring = serverKeyRing(store, config);
        await ring.init();
        return (await ring.jwks()).keys.map((k) => k.kid);
      };
      const first = await published();
      await rotateKeys(store, now, undefined);
      // Past the server's 15 minutes (and the activation delay): the old keys go.
      now += 900_000 + KEY_ACTIVATION_DELAY_MS + 1000;
      const withoutApps = await published();
      expect(withoutApps.some((kid) => first.includes(kid))).toBe(false);

      // With an application whose tokens live 2 hours, a rotation keeps the old keys for 2 hours.
      const base = { kind: 'public', callbackUrls: ['http://127.0.0.1/cb'], scopes: ['openid'] };
      await registerApplication(store, { ...base, name: 'Long', accessTokenTtl: 7200 }, now);
      await rotateKeys(store, now, undefined);
      now += 900_000 + KEY_ACTIVATION_DELAY_MS + 1000;
      expect((await published()).filter((kid) => withoutApps.includes(kid))).toHaveLength(2);
      now += 7_200_000;
      expect((await published()).filter((kid) => withoutApps.includes(kid))).toHaveLength(0);
    });
  });
}

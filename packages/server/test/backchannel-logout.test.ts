import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { approveInBrowser } from '@authcli/test-support/http';
import { type LogoutReceiver, startLogoutReceiver } from '@authcli/test-support/logout-receiver';
import { registerApplication } from '../src/oauth/registration.js';
import { tellApplications } from '../src/operator/backchannel.js';
import { backchannelParties, FAST, REDIRECT } from './backchannel-parties.js';
import { sha256Hex } from '../src/util/crypto.js';
import {
  authorizeUrl,
  basic,
  decideOnDevicePage,
  DEVICE_GRANT,
  deviceAuthorization,
  dialects,
  hidden,
  PASSWORD,
  poll,
  seedApp,
  signedInBrowser,
  signIn,
  startServer,
  tokenRequest,
  type TestServer,
} from './helpers.js';

/**
 * OpenID Connect Back-Channel Logout 1.0 against the real server over loopback, on SQLite and PostgreSQL: the
 * session ID in ID tokens, the logout token, and who is told when a session ends or a user is disabled.
 */
describe.each(dialects())('back-channel logout (%s)', (dialect) => {
  let server: TestServer;
  let receiver: LogoutReceiver;

  beforeAll(async () => {
    receiver = await startLogoutReceiver();
    server = await startServer(dialect, { backchannelLogout: FAST });
  });
  afterAll(async () => {
    await server.close();
    await receiver.close();
  });

  const { newUser, webApp, nativeApp, signInTo, refresh, signOut, verifyLogoutToken, settled } = backchannelParties(() => ({
    server,
    receiver,
  }));

  it('discovery §2.1 advertises back-channel logout with sessions, and sid among the claims', async () => {
    const doc = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(doc.backchannel_logout_supported).toBe(true);
    expect(doc.backchannel_logout_session_supported).toBe(true);
    expect(doc.claims_supported).toContain('sid');
  });

  it('§2.1 sid: one per browser session, the same in every application it signs in to and in refreshed ID tokens, never the cookie or its hash', async () => {
    const user = await newUser();
    const [a, c] = [await webApp(), await webApp({ alg: 'ES256' })];
    const b1 = await signedInBrowser(server, user);
    const t1 = await signInTo(b1, a);
    const sid = decodeJwt(t1.id_token).sid as string;
    expect(sid).toMatch(/^[\w-]{22}$/);
    expect(decodeJwt((await signInTo(b1, c)).id_token).sid).toBe(sid);
    const cookie = b1.cookies.get('authcli_session')!;
    for (const secret of [cookie, sha256Hex(cookie)]) expect(secret).not.toContain(sid);
    const refreshed = await refresh(a, t1.refresh_token!);
    expect(refreshed.status).toBe(200);
    expect(decodeJwt(refreshed.json.id_token as string).sid).toBe(sid);
    const b2 = await signedInBrowser(server, user);
    const other = decodeJwt((await signInTo(b2, a)).id_token).sid;
    expect(other).toMatch(/^[\w-]{22}$/);
    expect(other).not.toBe(sid);
  });

  it('§2.1 a device flow sign-in belongs to no browser session of the device: its ID token has no sid, and signing out of the approving browser leaves it', async () => {
    const user = await newUser();
    const { app } = await seedApp(server, { name: 'Device RP', grantTypes: [DEVICE_GRANT, 'refresh_token'], callbackUrls: [] });
    const b = await signedInBrowser(server, user);
    const start = await deviceAuthorization(server, app.clientId, 'openid offline_access');
    expect((await decideOnDevicePage(b, start.json.user_code as string, 'approve', user)).status).toBe(200);
    const tokens = await poll(server, app.clientId, start.json.device_code as string);
    expect(tokens.status).toBe(200);
    expect(decodeJwt(tokens.json.id_token as string)).not.toHaveProperty('sid');
    await signOut(b);
    const again = await tokenRequest(server, {
      grant_type: 'refresh_token',
      refresh_token: tokens.json.refresh_token,
      client_id: app.clientId,
    });
    expect(again.status).toBe(200);
  });

  it('§2.4, §2.5 signing out posts a logout token to every application the session signed in to, and to no other', async () => {
    const user = await newUser();
    const es = await webApp({ alg: 'ES256' });
    const rs = await webApp({ alg: 'RS256' });
    const elsewhere = await webApp();
    const b = await signedInBrowser(server, user);
    const idToken = decodeJwt((await signInTo(b, es)).id_token);
    await signInTo(b, rs);
    await signInTo(b, await webApp({ backchannel: false }));
    await signInTo(await signedInBrowser(server, user), elsewhere);
    await signOut(b);

    for (const [client, alg] of [
      [es, 'ES256'],
      [rs, 'RS256'],
    ] as const) {
      const [got] = await receiver.waitFor(client.path, 1);
      expect(got!.method).toBe('POST');
      expect(got!.contentType).toBe('application/x-www-form-urlencoded');
      expect(Object.keys(got!.fields)).toEqual(['logout_token']);
      const token = got!.fields.logout_token!;
      // Signed like the application's ID tokens.
      expect(decodeProtectedHeader(token)).toMatchObject({ alg, typ: 'logout+jwt' });
      const claims = await verifyLogoutToken(token, client);
      expect(claims).toMatchObject({ sub: idToken.sub, sid: idToken.sid, aud: client.id });
    }
    expect(await settled(es.path)).toHaveLength(1);
    expect(await settled(elsewhere.path)).toEqual([]);
    // Every logout token is a token of its own.
    const jtis = [...receiver.tokens(es.path), ...receiver.tokens(rs.path)].map((t) => decodeJwt(t).jti);
    expect(new Set(jtis).size).toBe(2);
  });

  it('rp-initiated logout with id_token_hint tells every application of the session, the one logging out included', async () => {
    const user = await newUser();
    const [a, c] = [await webApp(), await webApp()];
    const b = await signedInBrowser(server, user);
    const { id_token } = await signInTo(b, a);
    await signInTo(b, c);
    const res = await b.get(`/oauth/logout?${new URLSearchParams({ id_token_hint: id_token })}`);
    expect(res.status).toBe(200);
    expect(res.text).toContain('signed out');
    const sid = decodeJwt(id_token).sid;
    for (const client of [a, c]) {
      const [got] = await receiver.waitFor(client.path, 1);
      expect((await verifyLogoutToken(got!.fields.logout_token!, client)).sid).toBe(sid);
    }
  });

  it('rp-initiated logout confirmed on its page (no hint) tells the applications of the session', async () => {
    const user = await newUser();
    const a = await webApp();
    const b = await signedInBrowser(server, user);
    const sid = decodeJwt((await signInTo(b, a)).id_token).sid;
    const page = await b.get(`/oauth/logout?client_id=${a.id}`);
    expect(page.status).toBe(200);
    expect(await settled(a.path)).toEqual([]);
    const confirmed = await b.postForm('/oauth/logout/confirm', { _csrf: hidden(page.text, '_csrf'), client_id: a.id });
    expect(confirmed.status).toBe(200);
    const [got] = await receiver.waitFor(a.path, 1);
    expect((await verifyLogoutToken(got!.fields.logout_token!, a)).sid).toBe(sid);
  });

  it('signing in again as the same person keeps the session ID; signing in as someone else ends the session and tells its applications', async () => {
    const [first, second] = [await newUser(), await newUser()];
    const a = await webApp();
    const b = await signedInBrowser(server, first);
    const idToken = decodeJwt((await signInTo(b, a)).id_token);
    expect((await signIn(b, first)).status).toBe(303);
    expect(decodeJwt((await signInTo(b, a)).id_token).sid).toBe(idToken.sid);
    expect(await settled(a.path)).toEqual([]);
    expect((await signIn(b, second)).status).toBe(303);
    const [got] = await receiver.waitFor(a.path, 1);
    expect(await verifyLogoutToken(got!.fields.logout_token!, a)).toMatchObject({ sub: idToken.sub, sid: idToken.sid });
    expect(decodeJwt((await signInTo(b, a)).id_token).sid).not.toBe(idToken.sid);
  });

  it('§2.7 signing out revokes the refresh tokens the session got without offline_access; those with it, and other sessions, are kept', async () => {
    const user = await newUser();
    const native = await nativeApp();
    const web = await webApp();
    const b = await signedInBrowser(server, user);
    const online = await signInTo(b, native, 'openid');
    const offline = await signInTo(b, web, 'openid offline_access');
    const otherSession = await signInTo(await signedInBrowser(server, user), native, 'openid');
    expect(online.refresh_token).toBeTypeOf('string');
    await signOut(b);
    const ended = await refresh(native, online.refresh_token!);
    expect(ended.status).toBe(400);
    expect(ended.json.error).toBe('invalid_grant');
    expect((await refresh(web, offline.refresh_token!)).status).toBe(200);
    expect((await refresh(native, otherSession.refresh_token!)).status).toBe(200);
    // The native application was told as well.
    expect(await receiver.waitFor(native.path, 1)).toHaveLength(1);
  });

  it('a code issued in a session that then ended cannot be redeemed', async () => {
    const user = await newUser();
    const a = await webApp();
    const b = await signedInBrowser(server, user);
    const { url, verifier } = await authorizeUrl({ clientId: a.id, redirectUri: REDIRECT, scope: 'openid' });
    const callback = new URL(await approveInBrowser(b, server.url + url, user, PASSWORD));
    await signOut(b);
    const res = await tokenRequest(
      server,
      { grant_type: 'authorization_code', code: callback.searchParams.get('code')!, redirect_uri: REDIRECT, code_verifier: verifier },
      { authorization: basic(a.id, a.secret!) },
    );
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('invalid_grant');
    // The application had the code: it is told as well.
    expect(await receiver.waitFor(a.path, 1)).toHaveLength(1);
  });

  it('operator disable tells every application with a live grant of the user: by sub, or once per session when it requires sid', async () => {
    const user = await newUser();
    const plain = await webApp();
    const perSession = await webApp({ sessionRequired: true });
    const untouched = await webApp();
    const [b1, b2] = [await signedInBrowser(server, user), await signedInBrowser(server, user)];
    const sids = new Set<unknown>();
    for (const b of [b1, b2]) {
      await signInTo(b, plain);
      sids.add(decodeJwt((await signInTo(b, perSession)).id_token).sid);
    }
    const userId = (await server.store.users.findByUsername(user))!.id;
    await server.store.users.setDisabled(user, server.clock.now());
    const failures: unknown[] = [];
    const holders = await server.store.grants.holders(userId, server.clock.now());
    const told = await tellApplications(server.store, server.config, { warn: (f) => failures.push(f) }, (bc) =>
      bc.accessEnded(userId, holders),
    );
    expect(told).toEqual({ delivered: 3, retrying: 0, failed: 0 });
    expect(failures).toEqual([]);
    const [byUser] = receiver.tokens(plain.path);
    const claims = await verifyLogoutToken(byUser!, plain);
    expect(claims.sub).toBe(userId);
    expect(claims).not.toHaveProperty('sid');
    const named = await Promise.all(receiver.tokens(perSession.path).map((t) => verifyLogoutToken(t, perSession)));
    expect(new Set(named.map((c) => c.sid))).toEqual(sids);
    expect(receiver.tokens(untouched.path)).toEqual([]);
    expect(receiver.tokens(plain.path)).toHaveLength(1);
  });

  it('many sessions signing out at once: each is told once, with its own sid, never more than the concurrency at a time', async () => {
    const own = await startLogoutReceiver();
    try {
      const path = '/bcl/parallel';
      own.answer(path, { delayMs: 30 });
      const { app, clientSecret } = await registerApplication(
        server.store,
        {
          name: 'Busy RP',
          kind: 'confidential',
          callbackUrls: [REDIRECT],
          scopes: ['openid'],
          backchannelLogoutUri: `${own.url}${path}`,
        },
        server.clock.now(),
      );
      const client = { id: app.clientId, secret: clientSecret!, path };
      const browsers = await Promise.all(Array.from({ length: 24 }, async () => signedInBrowser(server, await newUser())));
      const sids = await Promise.all(browsers.map(async (b) => decodeJwt((await signInTo(b, client, 'openid')).id_token).sid));
      const times = await Promise.all(browsers.map((b) => signOut(b)));
      const got = await own.waitFor(path, 24);
      const claims = await Promise.all(got.map((r) => verifyLogoutToken(r.fields.logout_token!, client)));
      expect(new Set(claims.map((c) => c.sid))).toEqual(new Set(sids));
      expect(own.maxOpen).toBeLessThanOrEqual(FAST.concurrency);
      expect(Math.max(...times)).toBeLessThan(FAST.timeoutMs);
      expect(await new Promise((r) => setTimeout(() => r(own.received.length), 150))).toBe(24);
    } finally {
      await own.close();
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { type LogoutReceiver, startLogoutReceiver } from '@authcli/test-support/logout-receiver';
import { resetUserPassword } from '../src/oauth/accounts.js';
import { BackchannelDelivery } from '../src/oauth/backchannel-delivery.js';
import { BackchannelLogout } from '../src/oauth/backchannel-logout.js';
import type { KeyRing } from '../src/oauth/keys.js';
import { NO_METRICS } from '../src/util/metrics.js';
import { tellApplications } from '../src/operator/backchannel.js';
import { backchannelParties, FAST } from './backchannel-parties.js';
import { dialects, hidden, ownClock, PASSWORD, signedInBrowser, startServer, TEST_PASSWORD_HASH, type TestServer } from './helpers.js';

/**
 * Back-channel logout (OpenID Connect Back-Channel Logout 1.0 §2.5, §2.7) for the sessions and sign-ins that end
 * other than by signing out: a password changed on the account page (the other browser sessions end; with "sign
 * out of applications", every application's access), an application's access removed there, and an operator's
 * `users reset-password` and `users reset-passkeys`, on SQLite and PostgreSQL.
 */
describe.each(dialects())('back-channel logout when sign-ins end without a sign-out (%s)', (dialect) => {
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

  const { newUser, webApp, nativeApp, signInTo, refresh, verifyLogoutToken, settled } = backchannelParties(() => ({ server, receiver }));

  /** Changes the password on the account page of `b`, whose session stays; `signOutApps` is the form's box. */
  async function changePassword(b: Awaited<ReturnType<typeof signedInBrowser>>, signOutApps: boolean) {
    const csrf = hidden((await b.get('/account')).text, '_csrf');
    const next = `a new password ${Math.random()}`;
    const res = await b.postForm('/account/password', {
      _csrf: csrf,
      current_password: PASSWORD,
      new_password: next,
      new_password_again: next,
      ...(signOutApps && { sign_out_apps: 'on' }),
    });
    expect(res.status).toBe(303);
  }

  it("a password change tells the applications of the other browser sessions, which end, naming each; this browser's are kept", async () => {
    const user = await newUser();
    const web = await webApp({ sessionRequired: true });
    const native = await nativeApp();
    const here = await signedInBrowser(server, user);
    const [elsewhere, third] = [await signedInBrowser(server, user), await signedInBrowser(server, user)];
    const kept = await signInTo(here, web);
    const ended = [decodeJwt((await signInTo(elsewhere, web)).id_token).sid, decodeJwt((await signInTo(third, web)).id_token).sid];
    const online = await signInTo(elsewhere, native, 'openid');
    await changePassword(here, false);

    const got = await receiver.waitFor(web.path, 2);
    const named = await Promise.all(got.map((r) => verifyLogoutToken(r.fields.logout_token!, web)));
    expect(new Set(named.map((c) => c.sid))).toEqual(new Set(ended));
    expect(named.map((c) => c.sid)).not.toContain(decodeJwt(kept.id_token).sid);
    expect(await receiver.waitFor(native.path, 1)).toHaveLength(1);
    // §2.7: the ended session's refresh token without offline_access ends with it; this session's is kept.
    expect((await refresh(native, online.refresh_token!)).status).toBe(400);
    expect((await refresh(web, kept.refresh_token!)).status).toBe(200);
    expect(await settled(web.path)).toHaveLength(2);
  });

  it("a password change that signs every application out tells each application holding a sign-in, this browser's too", async () => {
    const user = await newUser();
    const [a, c, unused] = [await webApp(), await webApp({ sessionRequired: true }), await webApp()];
    const here = await signedInBrowser(server, user);
    const sub = decodeJwt((await signInTo(here, a)).id_token).sub;
    const sid = decodeJwt((await signInTo(here, c)).id_token).sid;
    await changePassword(here, true);

    const [byUser] = await receiver.waitFor(a.path, 1);
    const claims = await verifyLogoutToken(byUser!.fields.logout_token!, a);
    expect(claims.sub).toBe(sub);
    expect(claims).not.toHaveProperty('sid');
    const [bySession] = await receiver.waitFor(c.path, 1);
    expect((await verifyLogoutToken(bySession!.fields.logout_token!, c)).sid).toBe(sid);
    expect(await settled(unused.path)).toEqual([]);
    expect(receiver.tokens(a.path)).toHaveLength(1);
  });

  it("removing one application's access on the account page tells that application alone", async () => {
    const user = await newUser();
    const [removed, other] = [await webApp(), await webApp()];
    const b = await signedInBrowser(server, user);
    const sub = decodeJwt((await signInTo(b, removed)).id_token).sub;
    const kept = await signInTo(b, other);
    const csrf = hidden((await b.get('/account')).text, '_csrf');
    expect((await b.postForm('/account/applications/remove', { _csrf: csrf, client_id: removed.id })).status).toBe(303);

    const [got] = await receiver.waitFor(removed.path, 1);
    expect((await verifyLogoutToken(got!.fields.logout_token!, removed)).sub).toBe(sub);
    expect(await settled(other.path)).toEqual([]);
    expect((await refresh(other, kept.refresh_token!)).status).toBe(200);
    // Nothing left to remove: nobody is told twice.
    expect((await b.postForm('/account/applications/remove', { _csrf: csrf, client_id: removed.id })).status).toBe(303);
    expect(await settled(removed.path)).toHaveLength(1);
  });

  it('an operator password reset tells the applications of the sessions it ended; with --revoke-tokens, every application', async () => {
    const user = await newUser();
    const [web, offline] = [await webApp({ sessionRequired: true }), await webApp()];
    const b = await signedInBrowser(server, user);
    const sid = decodeJwt((await signInTo(b, web)).id_token).sid;
    // A second browser session of the user, with a sign-in to another application: the reset ends it too.
    const later = await signedInBrowser(server, user);
    await signInTo(later, offline);
    const failures: unknown[] = [];
    const log = { warn: (f: unknown) => failures.push(f) };

    // As `users reset-password` does (operator/users.ts): the reset, then the applications told.
    const reset = await resetUserPassword(server.store, user, 'the operator chose this one', { params: TEST_PASSWORD_HASH });
    expect(reset.sessionsEnded).toHaveLength(2);
    expect(reset.sessionsEnded).toContain(sid);
    const told = await tellApplications(server.store, server.config, log, (bc) => bc.sessionsEnded(reset.userId, reset.sessionsEnded));
    expect(told).toEqual({ delivered: 2, retrying: 0, failed: 0 });
    expect((await verifyLogoutToken(receiver.tokens(web.path)[0]!, web)).sid).toBe(sid);
    expect(receiver.tokens(offline.path)).toHaveLength(1);

    const again = await signedInBrowser(server, user);
    await signInTo(again, web);
    const revoked = await resetUserPassword(server.store, user, 'and then this one', {
      params: TEST_PASSWORD_HASH,
      revokeTokens: true,
      now: server.clock.now(),
    });
    // The grants with offline_access outlived the first reset: web's of the first session and of this one.
    expect(new Set(revoked.holders.map((h) => h.clientId))).toEqual(new Set([web.id, offline.id]));
    const all = await tellApplications(server.store, server.config, log, (bc) => bc.accessEnded(revoked.userId, revoked.holders));
    // web requires sid: once per session its grants came from; offline by sub.
    expect(all).toEqual({ delivered: 3, retrying: 0, failed: 0 });
    expect(receiver.tokens(web.path)).toHaveLength(3);
    expect(receiver.tokens(offline.path)).toHaveLength(2);
    expect(failures).toEqual([]);
  });

  it('an operator passkey reset tells the applications of the passkey sessions it ended, and no others', async () => {
    const user = await newUser();
    const web = await webApp({ sessionRequired: true });
    const withPasskey = await signedInBrowser(server, user, ['hwk', 'user']);
    const withPassword = await signedInBrowser(server, user);
    const sid = decodeJwt((await signInTo(withPasskey, web)).id_token).sid;
    await signInTo(withPassword, web);
    const userId = (await server.store.users.findByUsername(user))!.id;

    const { sessions } = await server.store.passkeys.deleteAll(userId);
    expect(sessions).toEqual([sid]);
    const told = await tellApplications(server.store, server.config, { warn: () => undefined }, (bc) => bc.sessionsEnded(userId, sessions));
    expect(told).toEqual({ delivered: 1, retrying: 0, failed: 0 });
    expect((await verifyLogoutToken(receiver.tokens(web.path)[0]!, web)).sid).toBe(sid);
    expect(await settled(web.path)).toHaveLength(1);
  });
  it('a logout token that cannot be made: thrown to the operator (who says it, exit 1); the logout stays in the outbox and the server delivers it', async () => {
    const user = await newUser();
    const web = await webApp();
    const b = await signedInBrowser(server, user);
    const sid = decodeJwt((await signInTo(b, web)).id_token).sid as string;
    const userId = (await server.store.users.findByUsername(user))!.id;
    const warnings: unknown[] = [];
    const log = { warn: (fields: unknown) => warnings.push(fields) };
    // The server's keys stand in for one this process cannot open: signing fails.
    const keys = { signJwt: () => Promise.reject(new Error('no signing key this process can open')) } as unknown as KeyRing;
    const ctx = { config: server.config, store: server.store, keys };
    // As an operator's command: it queues, then tries its own rows.
    const delivery = new BackchannelDelivery(ctx, NO_METRICS, log, undefined, false);
    const failing = new BackchannelLogout(ctx, delivery, log);
    // Queued all the same: nothing is signed until it is posted.
    const ids = await failing.sessionsEnded(userId, [sid]);
    expect(ids).toHaveLength(1);
    await expect(delivery.deliverNow(ids)).rejects.toThrow('no signing key this process can open');
    // The server, whose keys open, takes the row once the operator's claim runs out, and delivers it.
    const clock = ownClock(server);
    clock.advance(server.config.backchannelLogout.timeoutMs + 30_000);
    await server.app.backchannelDelivery.settle();
    expect((await verifyLogoutToken(receiver.tokens(web.path)[0]!, web)).sid).toBe(sid);
    expect(await settled(web.path)).toHaveLength(1);
  });
});

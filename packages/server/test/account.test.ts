import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLAIM_TEXT_MAX, LIMITS } from '../src/config/defaults.js';
import { resetUserPassword } from '../src/oauth/accounts.js';
import { claimsOf } from '../src/store/store.js';
import {
  authorize,
  authorizeUrl,
  Browser,
  DEVICE_GRANT,
  decideOnDevicePage,
  deviceAuthorization,
  ownClock,
  poll,
  dialects,
  hidden,
  PASSWORD,
  seedApp,
  seedUser,
  signedInBrowser,
  signIn,
  startServer,
  tokenRequest,
  type TestServer,
  TEST_PASSWORD_HASH,
} from './helpers.js';

/** The value of the form field `name` as the page renders it. */
function fieldValue(html: string, name: string): string {
  const m = new RegExp(`<input[^>]* name="${name}"[^>]* value="([^"]*)"`).exec(html);
  if (!m) throw new Error(`no field ${name} in page`);
  return m[1]!
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>');
}

describe.each(dialects())('/account (%s)', (dialect) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startServer(dialect);
  });
  afterAll(async () => server?.close());

  /**
   * A user of this test's own, signed in in a browser of its own: by a seeded session, or through the form for the
   * password changes, whose check counts against the sign-in limits as the device cookie of that sign-in says.
   */
  async function signedIn(username: string, how: 'seeded' | 'form' = 'seeded') {
    await seedUser(server, username);
    const b = how === 'form' ? new Browser(server.url) : await signedInBrowser(server, username);
    if (how === 'form') expect((await signIn(b, username)).status).toBe(303);
    const csrf = hidden((await b.get('/account')).text, '_csrf');
    const user = async () => (await server.store.users.findByUsername(username))!;
    return { b, csrf, user };
  }

  it('signed out: the sign-in page, which continues back to /account', async () => {
    await seedUser(server, 'walter');
    const b = new Browser(server.url);
    const res = await b.get('/account');
    expect(res.status).toBe(303);
    expect(res.location).toMatch(/^\/signin\?continue=/);
    expect((await signIn(b, 'walter', PASSWORD, res.location!)).location).toBe('/account');
    const page = await b.get('/account');
    expect(page.status).toBe(200);
    expect(page.text).toContain('<a href="/account">Account</a>');
    expect(page.headers.get('cache-control')).toBe('no-store');
  });

  it('saves the profile claims (post-redirect-get with a one-time notice); an empty field removes its claim', async () => {
    const { b, csrf, user } = await signedIn('petra');
    const saved = await b.postForm('/account', {
      _csrf: csrf,
      given_name: ' Petra ',
      locale: 'de-de',
      zoneinfo: 'Europe/Berlin',
      nickname: 'pk',
    });
    expect(saved.status).toBe(303);
    expect(saved.location).toBe('/account');
    expect(claimsOf(await user())).toEqual({ given_name: 'Petra', locale: 'de-DE', zoneinfo: 'Europe/Berlin', nickname: 'pk' });
    const page = await b.get('/account');
    expect(page.text).toContain('Saved');
    expect(fieldValue(page.text, 'given_name')).toBe('Petra');
    expect((await b.get('/account')).text).not.toContain('Saved');
    await b.postForm('/account', { _csrf: csrf, given_name: 'Petra', locale: 'de-DE', zoneinfo: 'Europe/Berlin', nickname: '' });
    expect(claimsOf(await user())).toEqual({ given_name: 'Petra', locale: 'de-DE', zoneinfo: 'Europe/Berlin' });
  });

  it('refused values come back inline, as typed, and nothing is saved: bad formats, control characters, NUL, overlong', async () => {
    const { b, csrf, user } = await signedIn('quentin');
    const before = await user();
    const res = await b.postForm('/account', {
      _csrf: csrf,
      given_name: 'Quentin',
      birthdate: '1990-02-30',
      nickname: 'a\u0007b',
      family_name: 'x'.repeat(CLAIM_TEXT_MAX + 1),
      website: 'javascript:alert(1)',
    });
    expect(res.status).toBe(400);
    expect(res.text).toContain('Check the 4 fields marked below.');
    expect(res.text).toMatch(/id="birthdate-error" class="field-error">birthdate must be YYYY-MM-DD/);
    expect(res.text).toMatch(/id="nickname-error" class="field-error">nickname must not contain control characters/);
    expect(res.text).toMatch(new RegExp(`id="family_name-error" class="field-error">family_name is longer than ${CLAIM_TEXT_MAX}`));
    expect(res.text).toMatch(/id="website-error" class="field-error">website must be an absolute http or https URL/);
    expect(fieldValue(res.text, 'given_name')).toBe('Quentin');
    expect(fieldValue(res.text, 'birthdate')).toBe('1990-02-30');
    expect(await user()).toEqual(before);
    // NUL is refused by the form parser before the page sees it.
    const nul = await b.request('POST', '/account', `_csrf=${encodeURIComponent(csrf)}&given_name=a%00b`, {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(nul.status).toBe(400);
    expect(await user()).toEqual(before);
  });

  it('only the profile claims: other fields (sub, preferred_username, email, unknown names) change nothing', async () => {
    const { b, csrf, user } = await signedIn('rosa');
    const before = await user();
    const res = await b.postForm('/account', {
      _csrf: csrf,
      given_name: 'Rosa',
      sub: 'someone-else',
      preferred_username: 'admin',
      email: 'rosa@example.com',
      email_verified: 'true',
      shoe_size: '38',
    });
    expect(res.status).toBe(303);
    const after = await user();
    expect([after.id, after.username]).toEqual([before.id, before.username]);
    expect(claimsOf(after)).toEqual({ given_name: 'Rosa' });
  });

  it('CSRF: a form without the token, or with another browser’s, is refused with 403 and changes nothing', async () => {
    const { b, user } = await signedIn('sven');
    const other = await signedIn('tilda');
    expect((await b.postForm('/account', { given_name: 'Mallory' })).status).toBe(403);
    expect((await b.postForm('/account', { _csrf: other.csrf, given_name: 'Mallory' })).status).toBe(403);
    expect(
      (
        await b.postForm('/account/password', {
          current_password: PASSWORD,
          new_password: 'x'.repeat(12),
          new_password_again: 'x'.repeat(12),
        })
      ).status,
    ).toBe(403);
    expect(claimsOf(await user())).toEqual({});
  });

  it('password change: the current password checked, the rules of users add, other sessions ended, this one kept', async () => {
    const { b, csrf } = await signedIn('ursula', 'form');
    const elsewhere = new Browser(server.url);
    expect((await signIn(elsewhere, 'ursula')).status).toBe(303);
    const change = (fields: Record<string, string>) => b.postForm('/account/password', { _csrf: csrf, ...fields });
    const next = 'a new password for ursula';
    const wrong = await change({ current_password: 'not it at all', new_password: next, new_password_again: next });
    expect(wrong.status).toBe(403);
    expect(wrong.text).toContain('The current password is wrong.');
    const short = await change({ current_password: PASSWORD, new_password: 'short', new_password_again: 'short' });
    expect([short.status, short.text.includes('at least 8 characters')]).toEqual([400, true]);
    const differ = await change({ current_password: PASSWORD, new_password: next, new_password_again: `${next}!` });
    expect([differ.status, differ.text.includes('differ')]).toEqual([400, true]);
    const ok = await change({ current_password: PASSWORD, new_password: next, new_password_again: next });
    expect([ok.status, ok.location]).toEqual([303, '/account']);
    expect((await b.get('/account')).text).toContain('Password changed');
    expect((await elsewhere.get('/account')).status).toBe(303);
    expect((await signIn(new Browser(server.url), 'ursula', PASSWORD)).status).toBe(401);
    expect((await signIn(new Browser(server.url), 'ursula', next)).status).toBe(303);
  });

  it('wrong current passwords count against the sign-in limits of the account: past them, 429 without a check', async () => {
    const { b, csrf, user } = await signedIn('viktor', 'form');
    const before = (await user()).password_hash;
    const limit = LIMITS['signin-account-ip'].limit;
    const next = 'a new password for viktor';
    for (let i = 0; i < limit; i++) {
      const r = await b.postForm('/account/password', {
        _csrf: csrf,
        current_password: `wrong ${i}`,
        new_password: next,
        new_password_again: next,
      });
      expect(r.status).toBe(403);
    }
    const limited = await b.postForm('/account/password', {
      _csrf: csrf,
      current_password: PASSWORD,
      new_password: next,
      new_password_again: next,
    });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBeTruthy();
    // The right password was not even checked: nothing changed, and sign-in from here is held back by the same counters.
    expect((await user()).password_hash).toBe(before);
    expect((await signIn(new Browser(server.url), 'viktor', PASSWORD)).status).toBe(429);
  });

  describe('applications with access to the account', () => {
    const redirectUri = 'https://app.example/callback';

    /** The token request that redeems `code` (from {@link authorize}) for `clientId`. */
    const redeem = (clientId: string, code: { callback: URL; verifier: string }) =>
      tokenRequest(server, {
        grant_type: 'authorization_code',
        code: code.callback.searchParams.get('code')!,
        redirect_uri: redirectUri,
        client_id: clientId,
        code_verifier: code.verifier,
      });

    /** A sign-in of the browser's user to `clientId` (consent approved when asked): its tokens. */
    async function signInTo(b: Browser, clientId: string, scope = 'openid profile offline_access') {
      const res = await redeem(clientId, await authorize(server, b, { clientId, redirectUri, scope }));
      expect(res.status).toBe(200);
      return res.json as { access_token: string; refresh_token: string };
    }
    const refresh = async (clientId: string, t: { refresh_token: string }) =>
      (await tokenRequest(server, { grant_type: 'refresh_token', client_id: clientId, refresh_token: t.refresh_token })).status;
    const userinfo = async (t: { access_token: string }) =>
      (await fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${t.access_token}` } })).status;

    it('are listed; removing one ends its tokens (refresh and access) and its consent at once, the others keep theirs', async () => {
      const { b, csrf } = await signedIn('vera');
      const notes = (await seedApp(server, { name: 'Notes', callbackUrls: [redirectUri] })).app.clientId;
      const calendar = (await seedApp(server, { name: 'Calendar', callbackUrls: [redirectUri] })).app.clientId;
      expect((await b.get('/account')).text).toContain('No application has access to your account.');
      const [n1, n2] = [await signInTo(b, notes), await signInTo(b, notes)];
      const c1 = await signInTo(b, calendar);

      const page = (await b.get('/account')).text;
      expect(page).toMatch(
        /<strong>Calendar<\/strong>[\s\S]*One active sign-in; tokens last issued on \d{4}-\d\d-\d\d \(UTC\)\.[\s\S]*<strong>Notes<\/strong>[\s\S]*2 active sign-ins;/,
      );
      expect(page).toContain('<code>offline_access</code>');
      expect(await userinfo(n1)).toBe(200);

      const removed = await b.postForm('/account/applications/remove', { _csrf: csrf, client_id: notes });
      expect([removed.status, removed.location]).toEqual([303, '/account']);
      const after = (await b.get('/account')).text;
      expect(after).toContain('Removed the access of Notes (2 application sign-ins ended)');
      expect(after).not.toContain('<strong>Notes</strong>');
      expect(after).toContain('<strong>Calendar</strong>');
      expect([await refresh(notes, n1), await refresh(notes, n2), await userinfo(n1), await userinfo(n2)]).toEqual([400, 400, 401, 401]);
      expect([await refresh(calendar, c1), await userinfo(c1)]).toEqual([200, 200]);
      // The consent went with it: the next sign-in to Notes asks again.
      const { url } = await authorizeUrl({ clientId: notes, redirectUri, scope: 'openid profile offline_access' });
      const ask = await b.get(url);
      expect([ask.status, ask.text.includes('name="decision"')]).toEqual([200, true]);
      // Again, or an application that never had access, or none: nothing to end, said plainly.
      for (const client_id of [notes, 'no-such-client', '']) {
        expect((await b.postForm('/account/applications/remove', { _csrf: csrf, client_id })).status).toBe(303);
        expect((await b.get('/account')).text).toContain('That application had no access to your account');
      }
    });

    it("removal is the user's own: without the CSRF token, or with another user's session, nothing is ended; parallel removals end each sign-in once", async () => {
      const { b, csrf, user } = await signedIn('wanda');
      const other = await signedIn('xena');
      const app = (await seedApp(server, { name: 'Tasks', callbackUrls: [redirectUri] })).app.clientId;
      const tokens = [];
      for (let i = 0; i < 4; i++) tokens.push(await signInTo(b, app));
      expect((await b.postForm('/account/applications/remove', { client_id: app })).status).toBe(403);
      expect((await b.postForm('/account/applications/remove', { _csrf: other.csrf, client_id: app })).status).toBe(403);
      // Another user removing "their" access to the same application ends nothing of wanda's.
      expect((await other.b.postForm('/account/applications/remove', { _csrf: other.csrf, client_id: app })).status).toBe(303);
      expect(await userinfo(tokens[0]!)).toBe(200);
      const uid = (await user()).id;
      expect(
        (await server.store.grants.liveByClient(uid, server.clock.now(), server.config.accessTokenTtlSeconds * 1000)).map((g) => g.grants),
      ).toEqual([4]);

      const answers = await Promise.all(
        Array.from({ length: 10 }, () => b.postForm('/account/applications/remove', { _csrf: csrf, client_id: app })),
      );
      expect(answers.map((a) => a.status)).toEqual(Array(10).fill(303));
      expect(await server.store.grants.liveByClient(uid, server.clock.now(), server.config.accessTokenTtlSeconds * 1000)).toEqual([]);
      expect(await Promise.all(tokens.map((t) => refresh(app, t)))).toEqual([400, 400, 400, 400]);
    });

    it("password change ends every application's access when asked (the form's default), and only then", async () => {
      const { b, csrf } = await signedIn('yusuf', 'form');
      const app = (await seedApp(server, { name: 'Mail', callbackUrls: [redirectUri] })).app.clientId;
      const kept = await signInTo(b, app);
      const first = 'first new password for yusuf';
      // The form sends sign_out_apps=on unless the box is cleared; a form without it keeps the applications.
      expect((await b.get('/account')).text).toMatch(/<input type="checkbox" name="sign_out_apps" value="on" checked/);
      const keep = await b.postForm('/account/password', {
        _csrf: csrf,
        current_password: PASSWORD,
        new_password: first,
        new_password_again: first,
      });
      expect(keep.status).toBe(303);
      expect((await b.get('/account')).text).toContain('Password changed');
      expect([await refresh(app, kept), await userinfo(kept)]).toEqual([200, 200]);

      const ended = [await signInTo(b, app), await signInTo(b, app)];
      const second = 'second new password for yusuf';
      const change = await b.postForm('/account/password', {
        _csrf: csrf,
        current_password: first,
        new_password: second,
        new_password_again: second,
        sign_out_apps: 'on',
      });
      expect(change.status).toBe(303);
      expect((await b.get('/account')).text).toContain('Password changed; 3 application sign-ins ended');
      for (const t of ended) expect([await refresh(app, t), await userinfo(t)]).toEqual([400, 401]);
      // This browser stays signed in, and a new sign-in to the application works.
      expect(await userinfo(await signInTo(b, app))).toBe(200);
    });

    it("an operator password reset (users reset-password) ends the applications' access only with --revoke-tokens", async () => {
      const { b } = await signedIn('zora');
      const app = (await seedApp(server, { name: 'Drive', callbackUrls: [redirectUri] })).app.clientId;
      const before = await signInTo(b, app);
      const kept = await resetUserPassword(server.store, 'zora', 'operator chosen password 1', { params: TEST_PASSWORD_HASH });
      expect([kept.sessionsEnded.length, kept.grantsRevoked]).toEqual([1, 0]);
      expect([await refresh(app, before), await userinfo(before)]).toEqual([200, 200]);

      const browser = new Browser(server.url);
      expect((await signIn(browser, 'zora', 'operator chosen password 1')).status).toBe(303);
      const tokens = [await signInTo(browser, app), await signInTo(browser, app)];
      const revoked = await resetUserPassword(server.store, 'zora', 'operator chosen password 2', {
        params: TEST_PASSWORD_HASH,
        revokeTokens: true,
        now: server.clock.now(),
      });
      expect([revoked.sessionsEnded.length, revoked.grantsRevoked]).toEqual([1, 3]);
      for (const t of tokens) expect([await refresh(app, t), await userinfo(t)]).toEqual([400, 401]);
    });

    it('a code or a device code the user approved before the removal cannot become tokens after it', async () => {
      const { b, csrf } = await signedIn('abel');
      const app = (
        await seedApp(server, {
          name: 'Racer',
          callbackUrls: [redirectUri],
          grantTypes: ['authorization_code', 'refresh_token', DEVICE_GRANT],
        })
      ).app.clientId;
      await signInTo(b, app);
      // Approved, not yet redeemed: a code in flight, and a device code whose device has not polled since.
      const pending = await authorize(server, b, { clientId: app, redirectUri, scope: 'openid profile offline_access' });
      const device = await deviceAuthorization(server, app, 'openid profile offline_access');
      expect((await decideOnDevicePage(b, String(device.json.user_code), 'approve')).status).toBe(200);

      expect((await b.postForm('/account/applications/remove', { _csrf: csrf, client_id: app })).status).toBe(303);
      const exchanged = await redeem(app, pending);
      expect([exchanged.status, exchanged.json.error]).toEqual([400, 'invalid_grant']);
      const polled = await poll(server, app, String(device.json.device_code));
      expect([polled.status, polled.json.error]).toEqual([400, 'access_denied']);
    });

    it('a sign-in without a refresh token counts only while its access token lives; the page keeps the box as it was sent', async () => {
      const { b, csrf } = await signedIn('bruno');
      const app = (await seedApp(server, { name: 'Viewer', callbackUrls: [redirectUri] })).app.clientId;
      const tokens = await signInTo(b, app, 'openid profile');
      expect(tokens.refresh_token).toBeUndefined();
      expect((await b.get('/account')).text).toContain('One active sign-in;');
      const clock = ownClock(server);
      clock.advance(server.config.accessTokenTtlSeconds * 1000 + 1000);
      const later = (await b.get('/account')).text;
      expect(later).toMatch(/<strong>Viewer<\/strong>[\s\S]*Approved on \d{4}-\d\d-\d\d \(UTC\); not signed in\./);

      // A refused change comes back with the box as the user left it: cleared stays cleared.
      const refused = await b.postForm('/account/password', {
        _csrf: csrf,
        current_password: 'not the password',
        new_password: 'another password 1',
        new_password_again: 'another password 1',
      });
      expect(refused.status).toBe(403);
      expect(refused.text).toMatch(/<input type="checkbox" name="sign_out_apps" value="on"\s*\/?>/);
      expect((await b.get('/account')).text).toMatch(/<input type="checkbox" name="sign_out_apps" value="on" checked/);
    });
  });
});

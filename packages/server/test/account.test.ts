import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLAIM_TEXT_MAX, LIMITS } from '../src/config/defaults.js';
import { claimsOf } from '../src/store/store.js';
import { Browser, dialects, hidden, PASSWORD, seedUser, signIn, startServer, type TestServer } from './helpers.js';

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

  /** A user of this test's own, signed in in a browser of its own. */
  async function signedIn(username: string) {
    await seedUser(server, username);
    const b = new Browser(server.url);
    expect((await signIn(b, username)).status).toBe(303);
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
    const { b, csrf } = await signedIn('ursula');
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
    const { b, csrf, user } = await signedIn('viktor');
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
});

import { afterEach, describe, expect, it } from 'vitest';
import { CREDENTIAL_CHANGE_REAUTH_MS, LIMITS, PASSKEYS_PER_USER_MAX, WEBAUTHN_CHALLENGE_TTL_MS } from '../src/config/defaults.js';
import type { ServerConfig } from '../src/config/config.js';
import { acrOf, amrOf, PASSWORD_ACR } from '../src/oauth/acr.js';
import { Sessions } from '../src/web/session.js';
import { relyingParty } from '../src/web/webauthn.js';
import {
  Browser,
  DEVICE_GRANT,
  deviceAuthorization,
  dialects,
  hidden,
  ownClock,
  secondInstance,
  seedApp,
  seedPasskey,
  seedUser,
  startServer,
  tally,
  type TestServer,
} from './helpers.js';
import { type Ceremony, SoftAuthenticator } from './soft-authenticator.js';

/**
 * Passkeys at the server, answered by a software authenticator as an attacker would: replayed, in parallel,
 * from a phishing origin, for another RP ID, without user verification, after the challenge expired, from
 * another browser. The browser side (Chromium's virtual authenticator) is test/passkeys.e2e.test.ts.
 */

describe('the relying party of an issuer', () => {
  it('a host name on https, or localhost on http; never an IP address, which browsers refuse as an RP ID', () => {
    expect(relyingParty('https://id.example.com')).toEqual({ id: 'id.example.com', origin: 'https://id.example.com' });
    expect(relyingParty('https://id.example.com:8443/tenant')).toEqual({ id: 'id.example.com', origin: 'https://id.example.com:8443' });
    expect(relyingParty('http://localhost:8080')).toEqual({ id: 'localhost', origin: 'http://localhost:8080' });
    expect(relyingParty('http://auth.localhost:8080')).toEqual({ id: 'auth.localhost', origin: 'http://auth.localhost:8080' });
    expect(relyingParty('http://127.0.0.1:8080')).toEqual({
      unavailable:
        'Passkeys need this server to be reached by a domain name, and its address is 127.0.0.1:8080. Start it with --issuer http://localhost:8080 to use them here.',
    });
    expect(relyingParty('http://[::1]:9000')).toMatchObject({ unavailable: expect.stringContaining('--issuer http://localhost:9000') });
    expect(relyingParty('https://192.0.2.7')).toEqual({
      unavailable: 'Passkeys need this server to be reached by a domain name, and its address is 192.0.2.7.',
    });
    expect(relyingParty('http://id.example.com')).toMatchObject({ unavailable: expect.stringContaining('need this server on https') });
  });

  it('rfc8176 the methods of a sign-in give its class: a passkey phr, a password (or a session from before passkeys) the password class', () => {
    expect(acrOf(amrOf('hwk mfa'))).toBe('phr');
    expect(acrOf(amrOf('swk mfa'))).toBe('phr');
    expect(amrOf(null)).toEqual(['pwd']);
    expect(acrOf(amrOf(null))).toBe(PASSWORD_ACR);
    expect(acrOf(amrOf('pwd'))).toBe(PASSWORD_ACR);
  });
});

describe('an issuer that cannot have passkeys (an IP address)', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('offers no passkey on the sign-in page, says why on /account, and its passkey endpoints answer 409', async () => {
    server = await startServer('sqlite');
    await seedUser(server, 'alice');
    const b = new Browser(server.url);
    const signin = await b.get('/signin');
    expect(signin.text).not.toContain('passkey');
    expect(signin.text).toContain('autocomplete="username"');
    const options = await b.postForm('/signin/passkey/options', { _csrf: hidden(signin.text, '_csrf') });
    expect(options.status).toBe(409);
    expect(JSON.parse(options.text).error).toContain('--issuer http://localhost:');
    const sessions = new Sessions(server.config, server.store);
    b.cookies.set(sessions.cookieName, await sessions.create((await server.store.users.findByUsername('alice'))!));
    const account = await b.get('/account');
    expect(account.text).toContain('Passkeys need this server to be reached by a domain name');
    expect(account.text).not.toContain('/assets/passkey.js');
  });
});

describe.each(dialects())('passkey ceremonies answered by a software authenticator (%s)', (dialect) => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  const start = async (overrides: Partial<ServerConfig> = {}) => {
    server = await startServer(dialect, overrides, { issuerHost: 'localhost' });
    const s = server;
    const origin = s.config.issuer;
    // Requests go to the issuer's host (http://localhost:<port>): a page asked for on 127.0.0.1 is sent there.
    const base = origin;
    const user = await seedUser(s, 'alice');
    const sessions = new Sessions(s.config, s.store);
    /** A browser with its CSRF token; signed in as alice when asked (a seeded session). */
    /** `true`: a password sign-in; 'passkey': a passkey sign-in (an account with a passkey changes passkeys only so). */
    const browser = async (signedIn: boolean | 'passkey' = false) => {
      const b = new Browser(base);
      if (signedIn) b.cookies.set(sessions.cookieName, await sessions.create(user, signedIn === 'passkey' ? ['hwk', 'mfa'] : undefined));
      const csrf = hidden((await b.get('/signin')).text, '_csrf');
      const post = async (path: string, fields: Record<string, string> = {}, headers: Record<string, string> = {}) => {
        const res = await b.request('POST', path, new URLSearchParams({ _csrf: csrf, ...fields }).toString(), {
          'content-type': 'application/x-www-form-urlencoded',
          ...headers,
        });
        let json: Record<string, unknown> = {};
        try {
          json = JSON.parse(res.text) as Record<string, unknown>;
        } catch {
          /* a page, not JSON */
        }
        return { ...res, json };
      };
      return { b, post };
    };
    /**
     * Registers a passkey of `authenticator` for alice through the endpoints; the answer. Signed in as the rule asks
     * (oauth/credential-change.ts): with a password for the first passkey, with a passkey after.
     */
    const register = async (authenticator: SoftAuthenticator, c: Ceremony = {}, name = 'Laptop') => {
      const { post } = await browser((await s.store.passkeys.listByUser(user.id)).length > 0 ? 'passkey' : true);
      const options = await post('/account/passkeys/options');
      expect(options.status, options.text).toBe(200);
      return post('/account/passkeys', { name, response: JSON.stringify(authenticator.register(options.json as never, c)) });
    };
    /** Options, then the authenticator's answer, in one browser: the sign-in's answer. */
    const signIn = async (authenticator: SoftAuthenticator, c: Ceremony = {}) => {
      const tab = await browser();
      const options = await tab.post('/signin/passkey/options');
      expect(options.status, options.text).toBe(200);
      return {
        tab,
        answer: await tab.post('/signin/passkey', { response: JSON.stringify(authenticator.authenticate(options.json as never, c)) }),
      };
    };
    const signedIn = async (b: Browser) => (await b.get('/account')).status === 200;
    return { s, origin, user, browser, register, signIn, signedIn };
  };

  it('registration: user verification required, a resident key, the passkeys already held excluded; the passkey stored with its counter and backup state', async () => {
    const { s, origin, user, browser, register } = await start();
    const first = new SoftAuthenticator('localhost', origin);
    expect((await register(first)).json).toEqual({ added: 'Laptop' });
    const { post } = await browser('passkey');
    const options = (await post('/account/passkeys/options')).json as {
      rp: { id: string };
      user: { id: string; name: string };
      authenticatorSelection: Record<string, string>;
      excludeCredentials: { id: string }[];
      attestation: string;
    };
    expect(options.rp.id).toBe('localhost');
    expect(Buffer.from(options.user.id, 'base64url').toString()).toBe(user.id);
    expect(options.authenticatorSelection).toMatchObject({ residentKey: 'required', userVerification: 'required' });
    expect(options.excludeCredentials.map((c) => c.id)).toEqual([first.credentialId.toString('base64url')]);
    expect(options.attestation).toBe('none');
    expect(await register(new SoftAuthenticator('localhost', origin, true), {}, 'Phone')).toMatchObject({ status: 200 });
    const stored = await s.store.passkeys.listByUser(user.id);
    expect(stored.map((p) => [p.name, p.backed_up, p.device_type, Number(p.counter)]).sort()).toEqual([
      ['Laptop', 0, 'singleDevice', 0],
      ['Phone', 1, 'multiDevice', 0],
    ]);
    // The same credential again is refused, as is one with a name no page should show.
    expect((await register(first)).json.error).toMatch(/registered already/);
    expect((await register(new SoftAuthenticator('localhost', origin), {}, 'bad\u202ename')).status).toBe(400);
  });

  it('a registration answer without user verification, from a phishing origin, for another RP ID, or from another browser is refused and stores nothing', async () => {
    const { s, origin, user, browser, register } = await start();
    const refusals = await Promise.all([
      register(new SoftAuthenticator('localhost', origin), { uv: false }),
      register(new SoftAuthenticator('localhost', origin), { origin: 'http://localhost.evil.example' }),
      register(new SoftAuthenticator('localhost', origin), { rpId: 'evil.example' }),
    ]);
    expect(refusals.map((r) => r.status)).toEqual([400, 400, 400]);
    expect(refusals[0]!.json.error).toMatch(/verif/i);
    // Options asked by one browser, answered from another: the challenge is bound to the first.
    const asker = await browser(true);
    const options = await asker.post('/account/passkeys/options');
    const other = await browser(true);
    const answer = new SoftAuthenticator('localhost', origin).register(options.json as never);
    expect((await other.post('/account/passkeys', { response: JSON.stringify(answer) })).status).toBe(400);
    expect(await s.store.passkeys.listByUser(user.id)).toEqual([]);
    // Garbage: not JSON, not a credential, too large, missing.
    for (const response of ['{', '[]', '{"id":1}', 'x'.repeat(13_000), '']) {
      const r = await asker.post('/account/passkeys', { response });
      expect(r.status, response.slice(0, 10)).toBe(400);
      expect(typeof r.json.error).toBe('string');
    }
    // Past the body limit: refused before it is read.
    expect((await asker.post('/account/passkeys', { response: 'x'.repeat(20_000) })).status).toBe(413);
    // Without the CSRF token, or signed out.
    const noCsrf = await asker.b.request('POST', '/account/passkeys/options', '', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(noCsrf.status).toBe(403);
    expect((await (await browser()).post('/account/passkeys/options')).status).toBe(401);
  });

  it('sign-in: the ID of the session is the passkey, the account needs no password, and 20 parallel replays of one answer sign in once', async () => {
    const { s, origin, register, browser, signedIn } = await start();
    const authenticator = new SoftAuthenticator('localhost', origin);
    await register(authenticator);
    const tab = await browser();
    const options = await tab.post('/signin/passkey/options');
    const answer = JSON.stringify(authenticator.authenticate(options.json as never));
    const replays = await Promise.all(Array.from({ length: 20 }, () => tab.post('/signin/passkey', { response: answer })));
    expect(tally(replays)).toEqual({ 200: 1, 400: 19 });
    expect(replays.find((r) => r.status === 200)!.json).toEqual({ location: '/' });
    expect(await signedIn(tab.b)).toBe(true);
    const session = await s.store.sessions.find(
      (await import('../src/util/crypto.js')).sha256Hex(tab.b.cookies.get(new Sessions(s.config, s.store).cookieName)!),
      s.clock.now(),
    );
    expect(session?.session.amr).toBe('hwk mfa');
    const [stored] = await s.store.passkeys.listByUser(session!.user.id);
    expect(stored!.counter).toBe(1);
    expect(stored!.last_used_at).toBe(s.clock.now());
    // A signature counter that did not move forward is a cloned authenticator (WebAuthn §6.1.1): refused.
    authenticator.counter = 0;
    const clone = await browser();
    const cloneOptions = await clone.post('/signin/passkey/options');
    const cloned = await clone.post('/signin/passkey', {
      response: JSON.stringify(authenticator.authenticate(cloneOptions.json as never)),
    });
    expect(cloned.status).toBe(400);
    expect(String(cloned.json.error)).toMatch(/counter/i);
    expect(await signedIn(clone.b)).toBe(false);
  });

  it('a sign-in answer without user verification, from a phishing origin, for another RP ID, past its challenge, or of a disabled account makes no session', async () => {
    const { s, origin, register, signIn, signedIn, browser } = await start();
    const authenticator = new SoftAuthenticator('localhost', origin);
    await register(authenticator);
    for (const [c, error] of [
      [{ uv: false }, /verif/i],
      [{ origin: 'https://login.evil.example' }, /origin/i],
      [{ rpId: 'evil.example' }, /RP ID/i],
    ] as const) {
      const { tab, answer } = await signIn(authenticator, c);
      expect(answer.status).toBe(400);
      expect(String(answer.json.error)).toMatch(error);
      expect(await signedIn(tab.b)).toBe(false);
    }
    // Past the challenge's lifetime.
    const clock = ownClock(s);
    const tab = await browser();
    const options = await tab.post('/signin/passkey/options');
    clock.advance(WEBAUTHN_CHALLENGE_TTL_MS);
    const late = await tab.post('/signin/passkey', { response: JSON.stringify(authenticator.authenticate(options.json as never)) });
    expect(late.status).toBe(400);
    clock.advance(-WEBAUTHN_CHALLENGE_TTL_MS);
    // A disabled account reads as an unknown passkey.
    await s.store.users.setDisabled('alice', s.clock.now());
    const disabled = await signIn(authenticator);
    expect(disabled.answer.json.error).toMatch(/not registered here/);
    await s.store.users.setDisabled('alice', null);
    const ok = await signIn(authenticator);
    expect(ok.answer.status).toBe(200);
  });

  it("a synced passkey signs in as swk; a removed one, or another account's removal of it, is told apart from nothing", async () => {
    const { s, origin, user, register, signIn, browser } = await start();
    const synced = new SoftAuthenticator('localhost', origin, true);
    await register(synced, {}, 'Phone');
    const { tab } = await signIn(synced);
    const hash = (await import('../src/util/crypto.js')).sha256Hex(tab.b.cookies.get(new Sessions(s.config, s.store).cookieName)!);
    expect((await s.store.sessions.find(hash, s.clock.now()))?.session.amr).toBe('swk mfa');
    // Someone else (bob) removing alice's passkey by its id removes nothing.
    const bob = await seedUser(s, 'bob');
    const [phone] = await s.store.passkeys.listByUser(user.id);
    expect(await s.store.passkeys.delete(bob.id, phone!.id)).toBeUndefined();
    const { post } = await browser('passkey');
    const removed = await post('/account/passkeys/remove', { id: phone!.id });
    expect(removed.status).toBe(303);
    expect(await s.store.passkeys.listByUser(user.id)).toEqual([]);
    expect((await signIn(synced)).answer.json.error).toMatch(/not registered here/);
  });

  it('a ceremony begun at one instance is finished at another of the same database, once', async () => {
    const { s, origin, register, browser, signedIn } = await start();
    const authenticator = new SoftAuthenticator('localhost', origin);
    await register(authenticator);
    const second = await secondInstance(s);
    try {
      const tab = await browser();
      const options = await tab.post('/signin/passkey/options');
      const answer = JSON.stringify(authenticator.authenticate(options.json as never));
      const csrf = hidden((await tab.b.get('/signin')).text, '_csrf');
      const at = (base: string) =>
        tab.b.request('POST', `${base}/signin/passkey`, new URLSearchParams({ _csrf: csrf, response: answer }).toString(), {
          'content-type': 'application/x-www-form-urlencoded',
        });
      const [there, here] = await Promise.all([at(second.url), at(tab.b.base)]);
      expect([there.status, here.status].sort()).toEqual([200, 400]);
      expect(await signedIn(tab.b)).toBe(true);
    } finally {
      await second.close();
    }
  });

  it('a password alone, however fresh, never adds a passkey to an account that has one nor removes one; a passkey sign-in does both', async () => {
    const { s, origin, user, browser, register } = await start();
    const owner = new SoftAuthenticator('localhost', origin);
    expect((await register(owner, {}, 'Owner key')).status).toBe(200);
    const [ownerKey] = await s.store.passkeys.listByUser(user.id);
    // The attacker has the password: a session signed in with it this very moment.
    const attacker = await browser(true);
    const options = await attacker.post('/account/passkeys/options');
    expect(options.status).toBe(403);
    expect(String(options.json.error)).toMatch(/sign-in with one of your passkeys/);
    // Where to sign in again: the step-up page, which asks for a passkey and resumes the account page.
    const location = String(options.json.location);
    expect(location).toMatch(/^\/signin\?continue=[A-Za-z0-9_-]{43}$/);
    const stepUp = await attacker.b.get(location);
    expect(stepUp.text).toContain('Changing how you sign in');
    expect(stepUp.text).toContain('a sign-in with a passkey');
    expect(stepUp.text).not.toContain('name="password"');
    // Options fetched while signed in with the passkey, answered after the session became a password one (the
    // same browser): checked again at the answer.
    const tab = await browser('passkey');
    const granted = await tab.post('/account/passkeys/options');
    expect(granted.status).toBe(200);
    tab.b.cookies.set(new Sessions(s.config, s.store).cookieName, attacker.b.cookies.get(new Sessions(s.config, s.store).cookieName)!);
    const intruder = new SoftAuthenticator('localhost', origin);
    const late = await tab.post('/account/passkeys', {
      name: 'Mine now',
      response: JSON.stringify(intruder.register(granted.json as never)),
    });
    expect(late.status).toBe(403);
    // Removing the owner's passkey: sent to sign in with a passkey, nothing removed.
    const removal = await attacker.post('/account/passkeys/remove', { id: ownerKey!.id });
    expect(removal.status).toBe(303);
    expect(removal.location).toMatch(/^\/signin\?continue=/);
    expect((await s.store.passkeys.listByUser(user.id)).map((p) => p.name)).toEqual(['Owner key']);
    // The owner, signed in with the passkey, adds one and removes one.
    expect((await register(new SoftAuthenticator('localhost', origin, true), {}, 'Phone')).status).toBe(200);
    const owned = await browser('passkey');
    expect((await owned.post('/account/passkeys/remove', { id: ownerKey!.id })).location).toBe('/account');
    expect((await s.store.passkeys.listByUser(user.id)).map((p) => p.name)).toEqual(['Phone']);
  });

  it('adding or removing a passkey from a sign-in older than the window asks to sign in again first; the new sign-in resumes the account page', async () => {
    const { s, origin, user, browser, register } = await start();
    const clock = ownClock(s);
    // No passkey yet: a password sign-in may add the first one, but only a recent one.
    const stale = await browser(true);
    clock.advance(CREDENTIAL_CHANGE_REAUTH_MS + 1);
    const refused = await stale.post('/account/passkeys/options');
    expect(refused.status).toBe(403);
    expect(String(refused.json.error)).toMatch(/recent sign-in: sign in again/);
    const again = await stale.b.get(String(refused.json.location));
    expect(again.text).toContain('needs a recent sign-in: sign in again');
    expect(again.text).toContain('name="password"');
    const authenticator = new SoftAuthenticator('localhost', origin);
    expect((await register(authenticator)).status).toBe(200);
    // With a passkey: a passkey sign-in past the window is refused too, and signing in with it again resumes /account.
    const old = await browser('passkey');
    clock.advance(CREDENTIAL_CHANGE_REAUTH_MS + 1);
    const oldOptions = await old.post('/account/passkeys/options');
    expect(oldOptions.status).toBe(403);
    const [key] = await s.store.passkeys.listByUser(user.id);
    const removal = await old.post('/account/passkeys/remove', { id: key!.id });
    expect(removal.location).toMatch(/^\/signin\?continue=/);
    expect(await s.store.passkeys.listByUser(user.id)).toHaveLength(1);
    const page = await old.b.get(removal.location!);
    expect(page.text).toContain('needs a recent sign-in with one of your passkeys');
    const continueId = String(removal.location).split('continue=')[1]!;
    const passkeyOptions = await old.post('/signin/passkey/options');
    const answer = await old.post('/signin/passkey', {
      continue: continueId,
      response: JSON.stringify(authenticator.authenticate(passkeyOptions.json as never)),
    });
    expect(answer.json).toEqual({ location: '/account' });
    expect((await old.post('/account/passkeys/remove', { id: key!.id })).location).toBe('/account');
    expect(await s.store.passkeys.listByUser(user.id)).toEqual([]);
    // The window's edge: exactly CREDENTIAL_CHANGE_REAUTH_MS old still counts as recent.
    const edge = await browser(true);
    clock.advance(CREDENTIAL_CHANGE_REAUTH_MS);
    expect((await edge.post('/account/passkeys/options')).status).toBe(200);
  });

  it('20 parallel registrations from one password session add one first passkey, never more', async () => {
    const { s, origin, user, browser } = await start();
    const tab = await browser(true);
    const ceremonies = [];
    for (let i = 0; i < 20; i++) ceremonies.push((await tab.post('/account/passkeys/options')).json);
    const answers = await Promise.all(
      ceremonies.map((options, i) =>
        tab.post('/account/passkeys', {
          name: `Key ${i}`,
          response: JSON.stringify(new SoftAuthenticator('localhost', origin).register(options as never)),
        }),
      ),
    );
    expect(tally(answers)).toEqual({ 200: 1, 403: 19 });
    expect(await s.store.passkeys.listByUser(user.id)).toHaveLength(1);
  });

  it('the account page shows where each passkey was added from, and its history every passkey added or removed', async () => {
    const { s, origin, user, browser, register } = await start();
    const clock = ownClock(s);
    await register(new SoftAuthenticator('localhost', origin), {}, 'Laptop');
    clock.advance(1000);
    await register(new SoftAuthenticator('localhost', origin), {}, 'Phone');
    clock.advance(1000);
    const tab = await browser('passkey');
    const phone = (await s.store.passkeys.listByUser(user.id)).find((p) => p.name === 'Phone')!;
    expect(phone.added_from).toBe('127.0.0.1');
    await tab.post('/account/passkeys/remove', { id: phone.id });
    const page = (await tab.b.get('/account')).text;
    expect(page).toMatch(/Added \d{4}-\d\d-\d\d \d\d:\d\d \(UTC\) from 127\.0\.0\.1;/);
    expect(page).toContain('Added the passkey &quot;Laptop&quot;');
    expect(page).toContain('Added the passkey &quot;Phone&quot;');
    expect(page).toContain('Removed the passkey &quot;Phone&quot;');
    expect((await s.store.signInEvents.recent(user.id, s.clock.now())).map((e) => [e.kind, e.detail, e.client_ip])).toEqual([
      ['passkey-removed', 'Phone', '127.0.0.1'],
      ['passkey-added', 'Phone', '127.0.0.1'],
      ['passkey-added', 'Laptop', '127.0.0.1'],
    ]);
  });

  it('a passkey added without a name is named after the browser and system that added it, and the day', async () => {
    const { s, origin, user, browser } = await start();
    const clock = ownClock(s);
    clock.t = Date.UTC(2026, 10, 29, 23, 59);
    const add = async (signedIn: true | 'passkey', fields: Record<string, string>, userAgent: string) => {
      const tab = await browser(signedIn);
      const options = await tab.post('/account/passkeys/options');
      const response = JSON.stringify(new SoftAuthenticator('localhost', origin).register(options.json as never));
      return tab.post('/account/passkeys', { ...fields, response }, { 'user-agent': userAgent });
    };
    const firefox = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0';
    expect((await add(true, { name: '  ' }, firefox)).json).toEqual({ added: 'Firefox on Windows, 29 Nov 2026' });
    clock.advance(60_000);
    // No browser this server knows of, and no name field at all: the day alone tells it apart.
    expect((await add('passkey', {}, 'curl/8.11.1')).json).toEqual({ added: 'Passkey, 30 Nov 2026' });
    // A name given is kept as given.
    clock.advance(60_000);
    expect((await add('passkey', { name: 'Work laptop' }, firefox)).json).toEqual({ added: 'Work laptop' });
    expect((await s.store.passkeys.listByUser(user.id)).map((p) => p.name)).toEqual([
      'Firefox on Windows, 29 Nov 2026',
      'Passkey, 30 Nov 2026',
      'Work laptop',
    ]);
  });

  it('a device code sent to a passkey step-up after Continue goes on to its confirmation page after it: once, in that browser only', async () => {
    const { s, origin, browser, register } = await start();
    const authenticator = new SoftAuthenticator('localhost', origin);
    await register(authenticator);
    const strict = (await seedApp(s, { name: 'Strict App', grantTypes: [DEVICE_GRANT], scopes: ['openid'] })).app.clientId;
    await s.store.applications.update(strict, { requireAcr: 'phr' }, s.clock.now());
    const { user_code } = (await deviceAuthorization(s, strict, 'openid')).json as { user_code: string };
    // Signed in with the password: Continue with the code leads to the step-up.
    const tab = await browser(true);
    const typed = await tab.post('/device', { user_code });
    expect(typed.status).toBe(303);
    const continueId = new URL(typed.location!, origin).searchParams.get('continue')!;
    const options = await tab.post('/signin/passkey/options');
    const signedIn = await tab.post('/signin/passkey', {
      continue: continueId,
      response: JSON.stringify(authenticator.authenticate(options.json as never)),
    });
    const location = String(signedIn.json.location);
    expect(location).toMatch(new RegExp(`^/device\\?user_code=${user_code}&confirm=[A-Za-z0-9_-]{43}$`));
    // The confirmation page at once, the code not asked for again.
    const confirmation = await tab.b.get(location);
    expect(confirmation.status).toBe(200);
    expect(confirmation.text).toContain('Sign in to <span>Strict App</span> on your device?');
    expect(hidden(confirmation.text, 'user_code')).toBe(user_code);
    // The id is used up, and no other browser (nor a made-up id) skips the code page: each gets it, filled in.
    const entryPage = '<h1>Connect a device</h1>';
    expect((await tab.b.get(location)).text).toContain(entryPage);
    // Another browser with a step-up of its own, so a continuation cookie of its own.
    const other = await browser(true);
    expect((await other.post('/device', { user_code })).status).toBe(303);
    expect((await other.b.get(location)).text).toContain(entryPage);
    expect((await other.b.get(`/device?user_code=${user_code}&confirm=${'A'.repeat(43)}`)).text).toContain(entryPage);
  });

  it(`an account holds at most ${PASSKEYS_PER_USER_MAX} passkeys`, async () => {
    const { s, origin, user, browser, register } = await start();
    for (let i = 0; i < PASSKEYS_PER_USER_MAX; i++) {
      await seedPasskey(s, user.id, `seeded-${i}`, `Key ${i}`);
    }
    const { post } = await browser('passkey');
    const options = await post('/account/passkeys/options');
    expect(options.status).toBe(400);
    expect(options.json.error).toMatch(/remove one to add another/);
    await s.store.passkeys.delete(user.id, 'seeded-0');
    expect((await register(new SoftAuthenticator('localhost', origin))).status).toBe(200);
    expect(await s.store.passkeys.listByUser(user.id)).toHaveLength(PASSKEYS_PER_USER_MAX);
  });

  it('ceremonies are limited per client IP: parallel options past the limit get 429, and a forged X-Forwarded-For does not escape it', async () => {
    const limit = 10;
    const { s, browser } = await start({ limits: { ...LIMITS, 'webauthn-ip': { limit, windowMs: 10 * 60_000 } } });
    const tab = await browser();
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => tab.post('/signin/passkey/options', {}, { 'x-forwarded-for': `198.51.100.${i}` })),
    );
    expect(tally(answers)).toEqual({ 200: limit, 429: 30 - limit });
    expect(Number(answers.find((a) => a.status === 429)!.headers.get('retry-after'))).toBeGreaterThan(0);
    const challenges = await s.store.rateLimits.list();
    expect(challenges.map((r) => r.key)).toEqual(['webauthn-ip|127.0.0.1']);
  });
});

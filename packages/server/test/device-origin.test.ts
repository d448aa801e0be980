import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEVICE_APPROVAL_WINDOW_SECONDS, LIMITS } from '../src/config/defaults.js';
import {
  authorizeUrl,
  Browser,
  deviceAuthorization,
  dialects,
  hidden,
  ownClock,
  PASSWORD,
  poll,
  seedApp,
  seedUser,
  signedInBrowser,
  signIn,
  startServer,
  tally,
  type Res,
  type TestServer,
} from './helpers.js';

const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const WINDOW_MS = DEVICE_APPROVAL_WINDOW_SECONDS * 1000;

/** The code page, then the confirmation page for `userCode`, from `from` (an X-Forwarded-For value) when given. */
async function confirmPage(b: Browser, userCode: string, from?: string): Promise<Res> {
  const entry = await b.get('/device');
  return b.request('POST', '/device', new URLSearchParams({ _csrf: hidden(entry.text, '_csrf'), user_code: userCode }).toString(), {
    ...FORM,
    ...(from && { 'x-forwarded-for': from }),
  });
}

/** Posts a decision as the confirmation page's form would, with `fields` added (or overriding). */
function decide(b: Browser, confirm: Res, fields: Record<string, string>, from?: string): Promise<Res> {
  const body = new URLSearchParams({ _csrf: hidden(confirm.text, '_csrf'), user_code: hidden(confirm.text, 'user_code'), ...fields });
  return b.request('POST', '/device/decision', body.toString(), { ...FORM, ...(from && { 'x-forwarded-for': from }) });
}

/** The text of a page without its markup, spaces collapsed: what a person reads. */
const words = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#39;/g, "'")
    .replace(/\s+/g, ' ')
    .replace(/ ([,.;:)])/g, '$1')
    .replace(/\( /g, '(');

describe.each(dialects())('device sign-ins against phishing, RFC 8628 §5.4 (%s)', (dialect) => {
  let server: TestServer;

  beforeAll(async () => {
    // No trusted proxy: every X-Forwarded-For below is forged, and the socket's address is the client's. The suite
    // starts and decides more device sign-ins from one address than a person would; the limits have tests of their own.
    const many = { limit: 10_000, windowMs: 60_000 };
    server = await startServer(dialect, {
      limits: { ...LIMITS, 'device-authz-ip': many, 'user-code-ip': many, 'user-code-account': many },
    });
    await seedUser(server, 'alice');
  });
  afterAll(async () => server.close());

  const start = async (clientId = 'authcli', headers: Record<string, string> = {}) => {
    const res = await deviceAuthorization(server, clientId, 'openid profile', headers);
    expect(res.status).toBe(200);
    return res.json as { device_code: string; user_code: string; verification_uri_complete: string };
  };

  it("the page shows the device's address (the socket's: a forged X-Forwarded-For is not believed) and how long ago it asked", async () => {
    const clock = ownClock(server);
    const d = await start('authcli', { 'x-forwarded-for': '203.0.113.66' });
    const b = await signedInBrowser(server);
    const fresh = words((await confirmPage(b, d.user_code, '198.51.100.77')).text);
    expect(fresh).toContain('The device asked for this code just now, from the address 127.0.0.1, the same address as this browser.');
    expect(fresh).not.toContain('203.0.113.66');
    expect(fresh).not.toContain('198.51.100.77');
    expect(fresh).toContain('Approve only a sign-in you started yourself, a moment ago, on a device in front of you.');
    clock.advance(60_000);
    expect(words((await confirmPage(b, d.user_code)).text)).toContain('asked for this code a minute ago, from the address 127.0.0.1');
    clock.advance(3 * 60_000);
    expect(words((await confirmPage(b, d.user_code)).text)).toContain('asked for this code 4 minutes ago');
  });

  it('the heading names the application with "to", and an application whose name is its client id is named once', async () => {
    const d = await start();
    const page = await confirmPage(await signedInBrowser(server), d.user_code);
    expect(page.status).toBe(200);
    expect(words(page.text)).toContain('Sign in to authcli on your device?');
    expect(page.text).not.toContain('authcli (authcli)');
    expect(words(page.text)).not.toMatch(/authcli\s*\(\s*authcli\s*\)/);
    // Another application: its name, then its client id.
    const other = await seedApp(server, { name: 'Living-room TV', grantTypes: [DEVICE], callbackUrls: [] });
    const tv = await confirmPage(await signedInBrowser(server), (await start(other.app.clientId)).user_code);
    expect(words(tv.text)).toContain('Sign in to Living-room TV on your device?');
    expect(words(tv.text)).toContain(`Living-room TV (${other.app.clientId}) asks for access to your account`);
    // The consent page names applications the same way.
    const { url } = await authorizeUrl({ clientId: 'authcli', redirectUri: 'http://127.0.0.1/callback' });
    const consent = await (await signedInBrowser(server)).get(url);
    expect(consent.status).toBe(200);
    expect(words(consent.text)).toContain('authcli asks for access to your account');
    expect(words(consent.text)).not.toMatch(/authcli\s*\(\s*authcli\s*\)/);
  });

  it('a prefilled code (verification_uri_complete) is not approved without the box that says the device shows it', async () => {
    const d = await start();
    const b = await signedInBrowser(server);
    const link = new URL(d.verification_uri_complete);
    const entry = await b.get(link.pathname + link.search);
    expect(words(entry.text)).toContain('The link you opened filled in this code. Continue only if the same code is on the screen');
    // A code typed by hand gets the usual line instead.
    expect(words((await b.get('/device')).text)).toContain('Enter the code shown on your device.');
    const confirm = await confirmPage(b, d.user_code);
    expect(confirm.text).toMatch(new RegExp(`<input type="checkbox" name="code_confirmed" value="${d.user_code}" required`));
    expect(words(confirm.text)).toContain(`My device shows ${d.user_code}, and I started this sign-in`);
    // Deny needs no box: the browser lets it through without it.
    expect(confirm.text).toMatch(/value="deny" class="secondary" formnovalidate/);

    const without = await decide(b, confirm, { decision: 'approve' });
    expect(without.status).toBe(400);
    expect(words(without.text)).toContain('Nothing was approved');
    const other = await start();
    const wrong = await decide(b, confirm, { decision: 'approve', code_confirmed: other.user_code });
    expect(wrong.status).toBe(400);
    expect((await poll(server, 'authcli', d.device_code)).json.error).toBe('authorization_pending');
    expect(
      await server.store.signInEvents.recent((await server.store.users.findByUsername('alice'))!.id, server.clock.now()),
    ).not.toContainEqual(expect.objectContaining({ kind: 'device-approved', at: server.clock.now() }));

    const ok = await decide(b, confirm, { decision: 'approve', code_confirmed: d.user_code.toLowerCase().replace('-', '') });
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('Device connected');
    expect((await poll(server, 'authcli', d.device_code)).status).toBe(200);
  });

  it('of many parallel approvals of one code exactly one wins, and one approval is recorded', async () => {
    const clock = ownClock(server);
    clock.advance(1);
    const d = await start();
    const b = await signedInBrowser(server);
    const confirm = await confirmPage(b, d.user_code);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => decide(b, confirm, { decision: 'approve', code_confirmed: d.user_code })),
    );
    expect(tally(answers)).toEqual({ 200: 1, 400: 7 });
    expect(answers.filter((a) => a.text.includes('already been used'))).toHaveLength(7);
    expect((await poll(server, 'authcli', d.device_code)).status).toBe(200);
    const alice = (await server.store.users.findByUsername('alice'))!;
    const mine = (await server.store.signInEvents.recent(alice.id, server.clock.now())).filter(
      (e) => e.at === clock.now() && e.kind === 'device-approved',
    );
    expect(mine).toHaveLength(1);
  });

  it(`past the approval window (${DEVICE_APPROVAL_WINDOW_SECONDS} s) only Deny: the page asks to start again, and no approval gets through, not even many at once`, async () => {
    const clock = ownClock(server);
    const edge = await start();
    const d = await start();
    const b = await signedInBrowser(server);
    // Just inside the window: approvable.
    clock.advance(WINDOW_MS - 1);
    const inside = await confirmPage(b, edge.user_code);
    expect(inside.text).toContain('value="approve"');
    expect((await decide(b, inside, { decision: 'approve', code_confirmed: edge.user_code })).status).toBe(200);

    clock.advance(1);
    const page = await confirmPage(b, d.user_code);
    expect(page.status).toBe(200);
    expect(words(page.text)).toContain(
      'This sign-in was started too long ago to approve. If you started it, start it again on your device',
    );
    expect(words(page.text)).toContain('asked for this code 5 minutes ago');
    expect(page.text).not.toContain('value="approve"');
    expect(page.text).not.toContain('name="code_confirmed"');
    expect(page.text).toContain('value="deny"');

    // The decision endpoint refuses it too, however many come at once, and each is a right code: no guess is spent.
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => decide(b, page, { decision: 'approve', code_confirmed: d.user_code })),
    );
    expect(tally(answers)).toEqual({ 400: 8 });
    for (const a of answers) expect(words(a.text)).toContain('started too long ago to approve');
    expect((await poll(server, 'authcli', d.device_code)).json.error).toBe('authorization_pending');
    expect(await server.store.deviceGrants.findByUserCode(d.user_code.replace('-', ''))).toMatchObject({
      status: 'pending',
      user_id: null,
    });
    expect((await confirmPage(b, d.user_code)).status).toBe(200);

    // Denying stays possible.
    const denied = await decide(b, page, { decision: 'deny' });
    expect(denied.status).toBe(200);
    expect(denied.text).toContain('You denied the request');
    clock.advance(5_000);
    expect((await poll(server, 'authcli', d.device_code)).json.error).toBe('access_denied');
  });

  it('the sign-in page reached from /device says why the person signs in', async () => {
    const d = await start();
    const b = new Browser(server.url);
    const asked = await b.get(`/device?user_code=${d.user_code}`);
    expect(asked.status).toBe(303);
    const page = await b.get(asked.location!);
    expect(words(page.text)).toContain('Sign in to approve a device sign-in');
    expect(words((await new Browser(server.url).get('/signin')).text)).not.toContain('device');
    // Refused once, the page still says so.
    const refused = await b.postForm('/signin', {
      _csrf: hidden(page.text, '_csrf'),
      continue: hidden(page.text, 'continue'),
      username: 'alice',
      password: 'wrong password',
    });
    expect(refused.status).toBe(401);
    expect(words(refused.text)).toContain('Sign in to approve a device sign-in');
  });
});

describe.each(dialects())('device decisions and sign-ins in the account page, behind a trusted proxy (%s)', (dialect) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startServer(dialect, { trustProxy: 1 });
    await seedUser(server, 'alice');
    await seedUser(server, 'bob');
  });
  afterAll(async () => server.close());

  it("the page shows the device's address as the trusted proxy gives it, and the browser's beside it", async () => {
    const d = (await deviceAuthorization(server, 'authcli', 'openid', { 'x-forwarded-for': '203.0.113.9' })).json;
    const page = words((await confirmPage(await signedInBrowser(server), d.user_code, '198.51.100.2')).text);
    expect(page).toContain('from the address 203.0.113.9. This browser is at 198.51.100.2.');
    // The leftmost entries are the client's own: only the one the proxy appended counts.
    const spoofed = (await deviceAuthorization(server, 'authcli', 'openid', { 'x-forwarded-for': '10.0.0.1, 203.0.113.10' })).json;
    expect(words((await confirmPage(await signedInBrowser(server), spoofed.user_code, '198.51.100.2')).text)).toContain(
      'from the address 203.0.113.10.',
    );
  });

  it('approvals and denials are recorded with both addresses, and shown in Recent sign-ins with password sign-ins', async () => {
    const clock = ownClock(server);
    const b = new Browser(server.url);
    // A password sign-in through the form (from the proxy's client 198.51.100.3).
    const form = await b.get('/signin');
    const signedIn = await b.request(
      'POST',
      '/signin',
      new URLSearchParams({ _csrf: hidden(form.text, '_csrf'), username: 'alice', password: PASSWORD }).toString(),
      { ...FORM, 'x-forwarded-for': '198.51.100.3' },
    );
    expect(signedIn.status).toBe(303);
    clock.advance(60_000);
    const tv = await seedApp(server, { name: 'Kitchen TV', grantTypes: [DEVICE], callbackUrls: [] });
    const approved = (await deviceAuthorization(server, tv.app.clientId, 'openid', { 'x-forwarded-for': '203.0.113.20' })).json;
    const denied = (await deviceAuthorization(server, 'authcli', 'openid', { 'x-forwarded-for': '203.0.113.21' })).json;
    const c1 = await confirmPage(b, approved.user_code, '198.51.100.4');
    expect((await decide(b, c1, { decision: 'approve', code_confirmed: approved.user_code }, '198.51.100.4')).status).toBe(200);
    clock.advance(60_000);
    const c2 = await confirmPage(b, denied.user_code, '198.51.100.5');
    expect((await decide(b, c2, { decision: 'deny' }, '198.51.100.5')).status).toBe(200);
    clock.advance(2 * 60_000);

    const account = await b.get('/account');
    expect(account.status).toBe(200);
    const text = words(account.text);
    expect(text).toContain('Recent sign-ins');
    const denial = text.indexOf('Denied a device sign-in to authcli');
    const approval = text.indexOf(`Approved a device sign-in to Kitchen TV (${tv.app.clientId})`);
    const password = text.indexOf('Signed in with your password');
    // Newest first.
    expect(denial).toBeGreaterThan(-1);
    expect(approval).toBeGreaterThan(denial);
    expect(password).toBeGreaterThan(approval);
    expect(text).toContain('(2 minutes ago). The device was at 203.0.113.21; you denied it from 198.51.100.5.');
    expect(text).toContain('(3 minutes ago). The device was at 203.0.113.20; you approved it from 198.51.100.4.');
    expect(text).toContain('(4 minutes ago). From 198.51.100.3.');
    expect(text).not.toContain('authcli (authcli)');
    expect(text).toMatch(/\d{4}-\d\d-\d\d \d\d:\d\d UTC/);

    // Another user sees none of them (one of this test's own: the others' tests sign bob in, in any order).
    await seedUser(server, 'dana');
    const dana = words((await (await signedInBrowser(server, 'dana')).get('/account')).text);
    expect(dana).toContain('No sign-ins recorded.');
    expect(dana).not.toContain('203.0.113.2');
  });

  it('a sign-in through the form is recorded; a refused one is not', async () => {
    const b = new Browser(server.url);
    const bob = (await server.store.users.findByUsername('bob'))!;
    const before = (await server.store.signInEvents.recent(bob.id, server.clock.now())).length;
    expect((await signIn(b, 'bob', 'wrong password')).status).toBe(401);
    expect(await server.store.signInEvents.recent(bob.id, server.clock.now())).toHaveLength(before);
    expect((await signIn(b, 'bob')).status).toBe(303);
    expect(await server.store.signInEvents.recent(bob.id, server.clock.now())).toMatchObject([
      { kind: 'password', client_ip: '127.0.0.1', device_ip: null },
    ]);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../src/config/defaults.js';
import {
  authorize,
  Browser,
  dialects,
  hidden,
  PASSWORD,
  seedApp,
  seedUser,
  signedInBrowser,
  startServer,
  tally,
  tokenRequest,
  type TestServer,
} from './helpers.js';

const form = { 'content-type': 'application/x-www-form-urlencoded' };

/**
 * The security events of the audit trail (docs/audit.md) as they happen on the real server: sign-ins and their
 * failures, a limit reached (once, however many requests pass it at once, and at the address the server sees,
 * not one a client claims), a refresh token used twice, and a person's own changes on the account page.
 */
describe.each(dialects())('audit trail: security events (%s)', (dialect) => {
  let server: TestServer;
  const ACCOUNT_LIMIT = 5;
  beforeAll(async () => {
    server = await startServer(dialect, {
      passwordHashThreads: 2,
      passwordHashesPerClient: 64,
      limits: { ...LIMITS, 'signin-account-ip': { limit: ACCOUNT_LIMIT, windowMs: 15 * 60_000 } },
    });
  });
  afterAll(async () => server.close());

  async function signInAttempt(username: string, password: string, forwardedFor?: string) {
    const browser = new Browser(server.url);
    const page = await browser.get('/signin');
    return browser.request('POST', '/signin', new URLSearchParams({ _csrf: hidden(page.text, '_csrf'), username, password }).toString(), {
      ...form,
      ...(forwardedFor && { 'x-forwarded-for': forwardedFor }),
    });
  }

  it('a sign-in and a failed one are recorded; a name typed for no account is not', async () => {
    const dora = await seedUser(server, 'dora');
    expect((await signInAttempt('dora', PASSWORD)).status).toBe(303);
    expect((await signInAttempt('dora', 'not the password')).status).toBe(401);
    expect((await signInAttempt('hunter2-typed-as-a-name', 'x')).status).toBe(401);
    const about = await server.store.audit.list({ target: dora.id, order: 'asc' });
    expect(about.map((r) => [r.action, r.actor_type, r.address, JSON.parse(r.detail)])).toEqual([
      ['signin.password', 'user', '127.0.0.1', {}],
      ['signin.failed', 'anonymous', '127.0.0.1', { reason: 'wrong password' }],
    ]);
    const unknown = (await server.store.audit.list({ type: 'signin.failed', order: 'desc', limit: 1 }))[0]!;
    expect(unknown).toMatchObject({ target: null, detail: '{"reason":"unknown username"}' });
    expect(JSON.stringify(await server.store.audit.list({ limit: 500 }))).not.toContain('hunter2');
  });

  it('30 wrong passwords at once past a limit: one limit.reached row, at the address the server sees (a forged X-Forwarded-For is not it)', async () => {
    const erin = await seedUser(server, 'erin');
    const answers = await Promise.all(Array.from({ length: 30 }, () => signInAttempt('erin', 'wrong guess', '203.0.113.99')));
    expect(tally(answers)[429]).toBeGreaterThanOrEqual(30 - ACCOUNT_LIMIT);
    const reached = await server.store.audit.list({ type: 'limit.reached', target: erin.id, limit: 500 });
    expect(reached).toHaveLength(1);
    expect(reached[0]).toMatchObject({ actor_type: 'anonymous', address: '127.0.0.1', target: erin.id, target_name: 'erin' });
    expect(JSON.parse(reached[0]!.detail)).toEqual({ counter: 'signin-account-ip', limit: `${ACCOUNT_LIMIT} per 900 s` });
    expect(JSON.stringify(reached)).not.toContain('203.0.113.99');
    const failed = await server.store.audit.list({
      type: 'signin.failed',
      target: (await server.store.users.findByUsername('erin'))!.id,
      limit: 500,
    });
    expect(failed).toHaveLength(ACCOUNT_LIMIT);
  });

  it('a refresh token used twice: the sign-in is revoked and token.reuse_detected recorded with it', async () => {
    const fay = await seedUser(server, 'fay');
    const { app } = await seedApp(server, { name: 'Reused' });
    const { callback, verifier } = await authorize(server, await signedInBrowser(server, 'fay'), {
      clientId: app.clientId,
      redirectUri: 'https://app.example/callback',
      scope: 'openid offline_access',
    });
    const first = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code')!,
      redirect_uri: 'https://app.example/callback',
      client_id: app.clientId,
      code_verifier: verifier,
    });
    const refresh = { grant_type: 'refresh_token', refresh_token: first.json.refresh_token as string, client_id: app.clientId };
    expect((await tokenRequest(server, refresh)).status).toBe(200);
    const replayed = await tokenRequest(server, refresh);
    expect(replayed.json.error).toBe('invalid_grant');
    const rows = await server.store.audit.list({ type: 'token', target: fay.id });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ action: 'token.reuse_detected', actor_type: 'client', actor: app.clientId, actor_name: 'Reused' });
    expect(JSON.parse(rows[0]!.detail)).toMatchObject({ client_id: app.clientId });
  });

  it("a person's own changes on the account page: profile, password, an application's access", async () => {
    const gus = await seedUser(server, 'gus');
    const { app } = await seedApp(server, { name: 'Granted' });
    const browser = await signedInBrowser(server, 'gus');
    await authorize(server, browser, { clientId: app.clientId, redirectUri: 'https://app.example/callback', scope: 'openid' });
    const csrf = async () => hidden((await browser.get('/account')).text, '_csrf');
    expect((await browser.postForm('/account', { _csrf: await csrf(), name: 'Gus G' })).status).toBeLessThan(400);
    expect(
      (
        await browser.postForm('/account/password', {
          _csrf: await csrf(),
          current_password: PASSWORD,
          new_password: 'a brand new passphrase',
          new_password_again: 'a brand new passphrase',
        })
      ).status,
    ).toBeLessThan(400);
    expect((await browser.postForm('/account/applications/remove', { _csrf: await csrf(), client_id: app.clientId })).status).toBeLessThan(
      400,
    );
    const rows = await server.store.audit.list({ target: gus.id, order: 'asc' });
    const mine = rows.filter((r) => r.action !== 'signin.password');
    expect(mine.map((r) => [r.action, r.actor_type, r.actor, JSON.parse(r.detail)])).toEqual([
      ['user.updated', 'user', gus.id, { name: { from: null, to: 'Gus G' } }],
      ['user.password_changed', 'user', gus.id, { sessions_ended: 0, applications_signed_out: 0 }],
      ['access.removed', 'user', gus.id, { client_id: app.clientId, sign_ins_ended: 0 }],
    ]);
    expect(JSON.stringify(rows)).not.toContain('brand new passphrase');
    expect(await server.store.audit.verify()).toMatchObject({ ok: true });
  });
});

describe.each(dialects())('audit trail: a client registering itself (%s)', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer(dialect, { registration: 'open' });
  });
  afterAll(async () => server.close());

  it('RFC 7591/7592: registration, update and deletion are audited with the client as actor; the admin scopes are refused', async () => {
    const register = (body: unknown) =>
      fetch(`${server.url}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const refused = await register({ redirect_uris: ['https://rp.example/cb'], scope: 'openid admin:write' });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toBe('invalid_client_metadata');
    const made = (await (await register({ redirect_uris: ['https://rp.example/cb'], client_name: 'Self RP' })).json()) as Record<
      string,
      string
    >;
    const manage = { authorization: `Bearer ${made.registration_access_token}`, 'content-type': 'application/json' };
    const put = await fetch(made.registration_client_uri!, {
      method: 'PUT',
      headers: manage,
      body: JSON.stringify({ client_id: made.client_id, redirect_uris: ['https://rp.example/other'], client_name: 'Self RP' }),
    });
    expect(put.status).toBe(200);
    const next = ((await put.json()) as Record<string, string>).registration_access_token;
    expect((await fetch(made.registration_client_uri!, { method: 'DELETE', headers: { authorization: `Bearer ${next}` } })).status).toBe(
      204,
    );
    const rows = await server.store.audit.list({ target: made.client_id, order: 'asc' });
    expect(rows.map((r) => [r.action, r.actor_type, r.actor, r.address])).toEqual([
      ['app.created', 'client', made.client_id, '127.0.0.1'],
      ['app.updated', 'client', made.client_id, null],
      ['app.deleted', 'client', made.client_id, null],
    ]);
    expect(JSON.parse(rows[1]!.detail)).toEqual({ redirect_uris: { from: ['https://rp.example/cb'], to: ['https://rp.example/other'] } });
    expect(JSON.stringify(rows)).not.toContain(made.client_secret ?? 'no secret');
    expect(JSON.stringify(rows)).not.toContain(made.registration_access_token);
  });
});

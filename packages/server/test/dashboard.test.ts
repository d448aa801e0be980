import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../src/util/crypto.js';
import {
  basic,
  Browser,
  decideOnDevicePage,
  deviceAuthorization,
  dialects,
  hidden,
  PASSWORD,
  seedUser,
  signedInBrowser,
  signIn,
  startServer,
  type Res,
  type TestServer,
} from './helpers.js';

const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';

describe.each(dialects())('dashboard: applications (%s)', (dialect) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startServer(dialect);
    await seedUser(server, 'alice');
    await seedUser(server, 'bob');
    await seedUser(server, 'root', { admin: true });
  });
  afterAll(async () => server.close());

  /** A browser of its own, signed in as `username` by a seeded session. */
  const as = (username: string): Promise<Browser> => signedInBrowser(server, username);

  /** Submits the registration form the way a browser does: checkbox groups repeat their name. */
  async function register(
    b: Browser,
    fields: { name: string; kind?: string; callbacks?: string; scopes?: string[]; grants?: string[] },
  ): Promise<Res> {
    const page = await b.get('/dashboard/apps/new');
    const body = new URLSearchParams({
      _csrf: hidden(page.text, '_csrf'),
      name: fields.name,
      kind: fields.kind ?? 'public',
      callback_urls: fields.callbacks ?? 'https://app.example/cb',
      id_token_alg: 'RS256',
    });
    for (const s of fields.scopes ?? ['openid', 'profile']) body.append('scope', s);
    for (const g of fields.grants ?? ['authorization_code', 'refresh_token']) body.append('grant', g);
    return b.request('POST', '/dashboard/apps', body.toString(), { 'content-type': 'application/x-www-form-urlencoded' });
  }

  const clientIdOf = (location: string) => decodeURIComponent(location.split('/')[3]!);

  /** Follows a 303 to the secret page and reads the secret shown there. */
  async function secretPage(b: Browser, res: Res): Promise<{ page: Res; secret: string; clientId: string }> {
    expect(res.status).toBe(303);
    expect(res.location).toMatch(/^\/dashboard\/apps\/[^/]+\/secret$/);
    const page = await b.get(res.location!);
    expect(page.status).toBe(200);
    return { page, secret: /id="client_secret"[^>]*value="([^"]+)"/.exec(page.text)![1]!, clientId: clientIdOf(res.location!) };
  }

  it("an application's page shows its history: who changed what, when and from where, from the audit trail", async () => {
    const alice = await as('alice');
    const { clientId } = await secretPage(alice, await register(alice, { name: 'History app', kind: 'confidential' }));
    const page = await alice.get(`/dashboard/apps/${clientId}`);
    const body = new URLSearchParams({
      _csrf: hidden(page.text, '_csrf'),
      name: 'History app',
      callback_urls: 'https://app.example/other',
      id_token_alg: 'RS256',
    });
    for (const scope of ['openid', 'profile']) body.append('scope', scope);
    for (const grant of ['authorization_code', 'refresh_token']) body.append('grant', grant);
    const saved = await alice.request('POST', `/dashboard/apps/${clientId}`, body.toString(), {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(saved.status).toBe(303);
    const confirm = await alice.get(`/dashboard/apps/${clientId}/rotate-secret`);
    expect((await alice.postForm(`/dashboard/apps/${clientId}/rotate-secret`, { _csrf: hidden(confirm.text, '_csrf') })).status).toBe(303);
    const rows = await server.store.audit.list({ target: clientId, order: 'asc' });
    expect(rows.map((r) => [r.action, r.actor_type, r.actor_name, r.address])).toEqual([
      ['app.created', 'user', 'alice', '127.0.0.1'],
      ['app.updated', 'user', 'alice', '127.0.0.1'],
      ['app.secret_rotated', 'user', 'alice', '127.0.0.1'],
    ]);
    const shown = (await alice.get(`/dashboard/apps/${clientId}`)).text;
    const history = shown.slice(shown.indexOf('id="history"'));
    expect(history).toMatch(/Made a new client secret<\/strong> by alice, just now \(\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\)/);
    expect(history).toContain('redirect_uris: https://app.example/cb → https://app.example/other');
    // Addresses are for administrators: the developer sees none, an administrator each change's.
    expect(history).not.toContain('127.0.0.1');
    const seenByRoot = (await (await as('root')).get(`/dashboard/apps/${clientId}`)).text;
    expect(seenByRoot.slice(seenByRoot.indexOf('id="history"'))).toMatch(
      /Made a new client secret<\/strong> by alice, [^<]* from 127\.0\.0\.1/,
    );
    expect(history.indexOf('Made a new client secret')).toBeLessThan(history.indexOf('Registered'));
    // Only those who may manage it see it: another developer gets the same 404 as for any application not theirs.
    expect((await (await as('bob')).get(`/dashboard/apps/${clientId}`)).status).toBe(404);
  });

  it('signed-out visitors are sent to sign in', async () => {
    const b = new Browser(server.url);
    const res = await b.get('/dashboard');
    expect(res.status).toBe(303);
    expect(res.location).toMatch(/^\/signin\?continue=[\w-]{43}$/);
    // The sign-in comes back to the dashboard.
    expect((await signIn(b, 'alice', PASSWORD, res.location!)).location).toBe('/dashboard');
  });

  it('register a public application: listed, editable, no secret', async () => {
    const b = await as('alice');
    const res = await register(b, {
      name: 'My CLI',
      callbacks: 'http://127.0.0.1/callback\nhttps://app.example/cb',
      grants: ['authorization_code', DEVICE],
    });
    expect(res.status).toBe(303);
    const clientId = decodeURIComponent(res.location!.split('/').pop()!);
    const app = await server.store.applications.get(clientId);
    expect(app).toMatchObject({
      name: 'My CLI',
      kind: 'public',
      secretHash: null,
      callbackUrls: ['http://127.0.0.1/callback', 'https://app.example/cb'],
      grantTypes: ['authorization_code', DEVICE],
    });
    const list = await b.get('/dashboard');
    expect(list.text).toContain('My CLI');
    expect(list.text).toContain(clientId);
    const edit = await b.get(res.location!);
    expect(edit.text).toContain('http://127.0.0.1/callback');
    expect(edit.text).not.toContain('Rotate secret');
  });

  it("the form offers each API's scopes under its name; an application registered with one is allowed it", async () => {
    await server.store.resources.create(
      { id: 'https://dash-api.example', name: 'Dash API', scopes: [{ name: 'dash:use', description: 'Use the dash API' }] },
      server.clock.now(),
    );
    const b = await as('alice');
    const form = await b.get('/dashboard/apps/new');
    expect(form.text).toMatch(/Scopes of Dash API[\s\S]*value="dash:use"[\s\S]*Use the dash API/);
    const res = await register(b, { name: 'Dash user', scopes: ['openid', 'dash:use'] });
    expect(res.status).toBe(303);
    expect((await server.store.applications.get(clientIdOf(res.location!)))?.scopes).toEqual(['openid', 'dash:use']);
    const unknown = await register(b, { name: 'Bad scopes', scopes: ['openid', 'nobody:knows'] });
    expect(unknown.status).toBe(400);
    expect(unknown.text).toContain('unknown scope nobody:knows');
    await server.store.resources.remove('https://dash-api.example', server.clock.now());
  });

  it('client credentials (tokens no person approved): only an administrator allows them, and only to a confidential application', async () => {
    const grants = ['client_credentials'];
    const refused = await register(await as('alice'), { name: 'Bot', kind: 'confidential', callbacks: '', scopes: ['openid'], grants });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('only an administrator can let an application get tokens of its own');
    const root = await as('root');
    const publicBot = await register(root, { name: 'Public bot', kind: 'public', callbacks: '', scopes: ['openid'], grants });
    expect(publicBot.status).toBe(400);
    expect(publicBot.text).toContain('confidential applications only');
    const allowed = await register(root, { name: 'Bot', kind: 'confidential', callbacks: '', scopes: ['openid'], grants });
    const { clientId } = await secretPage(root, allowed);
    expect((await server.store.applications.get(clientId))?.grantTypes).toEqual(['client_credentials']);
  });

  it('a developer cannot widen what an application with client credentials (allowed by an administrator) gets', async () => {
    const alice = await as('alice');
    const { clientId } = await secretPage(alice, await register(alice, { name: 'Alice bot', kind: 'confidential', scopes: ['openid'] }));
    // An administrator allowed it client credentials (as `apps update --grant client_credentials` would).
    await server.store.applications.update(clientId, { grantTypes: ['authorization_code', 'client_credentials'] }, server.clock.now());
    const page = await alice.get(`/dashboard/apps/${clientId}`);
    const body = new URLSearchParams({
      _csrf: hidden(page.text, '_csrf'),
      name: 'Alice bot',
      callback_urls: 'https://app.example/cb',
      id_token_alg: 'RS256',
    });
    for (const scope of ['openid', 'profile']) body.append('scope', scope);
    for (const grant of ['authorization_code', 'client_credentials']) body.append('grant', grant);
    const widened = await alice.request('POST', `/dashboard/apps/${clientId}`, body.toString(), {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(widened.status).toBe(400);
    expect(widened.text).toContain('only an administrator can add a scope (profile)');
    expect((await server.store.applications.get(clientId))?.scopes).toEqual(['openid']);
  });

  it('a confidential secret is shown once, on a no-store page, and only its hash is kept', async () => {
    const b = await as('alice');
    const res = await register(b, { name: 'Backend', kind: 'confidential', grants: ['authorization_code', DEVICE] });
    expect(res.text).toBe('');
    const { page, secret, clientId } = await secretPage(b, res);
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(res.location).not.toContain(secret);
    expect(secret).toMatch(/^[\w-]{43}$/);
    expect((await server.store.applications.get(clientId))!.secretHash).toBe(sha256Hex(secret));
    const again = await b.get(`/dashboard/apps/${clientId}`);
    expect(again.text).not.toContain(secret);
    expect((await b.get('/dashboard')).text).not.toContain(secret);
    // The secret works for client authentication.
    expect((await deviceAuthorization(server, clientId, 'openid', { authorization: basic(clientId, secret) })).status).toBe(200);
  });

  it('rotate secret: a new one shown once; the old one stops working at once', async () => {
    const b = await as('alice');
    const created = await register(b, { name: 'Rotating', kind: 'confidential', grants: ['authorization_code', DEVICE] });
    const { secret: old, clientId } = await secretPage(b, created);
    const page = await b.get(`/dashboard/apps/${clientId}`);
    const rotated = await b.postForm(`/dashboard/apps/${clientId}/rotate-secret`, { _csrf: hidden(page.text, '_csrf') });
    const { page: shown, secret: fresh } = await secretPage(b, rotated);
    expect(shown.headers.get('cache-control')).toBe('no-store');
    expect(shown.text).toContain('New client secret');
    expect(fresh).not.toBe(old);
    expect((await deviceAuthorization(server, clientId, 'openid', { authorization: basic(clientId, old) })).status).toBe(401);
    expect((await deviceAuthorization(server, clientId, 'openid', { authorization: basic(clientId, fresh) })).status).toBe(200);
  });

  it('callback URLs are validated: absolute, no fragment, https or loopback http', async () => {
    const b = await as('alice');
    for (const bad of ['http://app.example/cb', 'https://app.example/cb#frag', '/relative', 'javascript:alert(1)']) {
      const res = await register(b, { name: 'Bad', callbacks: bad });
      expect(res.status, bad).toBe(400);
      expect(res.text).toContain('role="alert"');
      expect(res.text).toContain('value="Bad"');
    }
    const noScope = await register(b, { name: 'No scope', scopes: [] });
    expect(noScope.status).toBe(400);
    const unknownScope = await register(b, { name: 'Odd scope', scopes: ['openid', 'admin'] });
    expect(unknownScope.status).toBe(400);
  });

  it('edit: changes are saved and validated', async () => {
    const b = await as('alice');
    const res = await register(b, { name: 'Editable' });
    const path = res.location!;
    const page = await b.get(path);
    const body = new URLSearchParams({
      _csrf: hidden(page.text, '_csrf'),
      name: 'Edited',
      callback_urls: 'https://new.example/cb',
      id_token_alg: 'ES256',
    });
    body.append('scope', 'openid');
    body.append('grant', 'authorization_code');
    const saved = await b.request('POST', path, body.toString(), { 'content-type': 'application/x-www-form-urlencoded' });
    expect(saved.status).toBe(303);
    expect(saved.location).toBe(path);
    expect((await b.get(path)).text).toContain('Application saved');
    expect((await b.get(path)).text).not.toContain('Application saved');
    const clientId = decodeURIComponent(path.split('/').pop()!);
    expect(await server.store.applications.get(clientId)).toMatchObject({
      name: 'Edited',
      callbackUrls: ['https://new.example/cb'],
      scopes: ['openid'],
      idTokenAlg: 'ES256',
      kind: 'public',
    });
    body.set('callback_urls', 'http://evil.example/cb');
    const refused = await b.request('POST', path, body.toString(), { 'content-type': 'application/x-www-form-urlencoded' });
    expect(refused.status).toBe(400);
    expect((await server.store.applications.get(clientId))!.callbackUrls).toEqual(['https://new.example/cb']);
  });

  it('settings: require DPoP / PAR and introspection; only an administrator lets an application see every token', async () => {
    const b = await as('alice');
    const path = (await register(b, { name: 'Settings', kind: 'confidential' })).location!.replace(/\/secret$/, '');
    const clientId = decodeURIComponent(path.split('/').pop()!);
    expect(await server.store.applications.get(clientId)).toMatchObject({
      introspection: 'own',
      requireDpop: false,
      requirePushedAuthorizationRequests: false,
    });
    const form = async (browser: Browser, extra: Record<string, string>) => {
      const page = await browser.get(path);
      const body = new URLSearchParams({
        _csrf: hidden(page.text, '_csrf'),
        name: 'Settings',
        callback_urls: 'https://app.example/cb',
        id_token_alg: 'RS256',
        ...extra,
      });
      body.append('scope', 'openid');
      body.append('grant', 'authorization_code');
      return { page, save: () => browser.request('POST', path, body.toString(), { 'content-type': 'application/x-www-form-urlencoded' }) };
    };
    // A developer sees own and owner, not all.
    const mine = await form(b, { introspection: 'owner', require_dpop: '1', require_par: '1' });
    expect(mine.page.text).toContain('value="owner"');
    expect(mine.page.text).not.toContain('value="all"');
    expect((await mine.save()).status).toBe(303);
    expect(await server.store.applications.get(clientId)).toMatchObject({
      introspection: 'owner',
      requireDpop: true,
      requirePushedAuthorizationRequests: true,
    });
    expect((await b.get(path)).text).toMatch(/name="require_dpop" value="1" checked/);
    // A forged `all` from a developer is refused and changes nothing.
    const forged = await (await form(b, { introspection: 'all' })).save();
    expect(forged.status).toBe(400);
    expect(forged.text).toContain('only an administrator');
    expect((await server.store.applications.get(clientId))!.introspection).toBe('owner');
    // An administrator may; unticked boxes turn the requirements off.
    const root = await as('root');
    expect((await (await form(root, { introspection: 'all' })).save()).status).toBe(303);
    expect(await server.store.applications.get(clientId)).toMatchObject({
      introspection: 'all',
      requireDpop: false,
      requirePushedAuthorizationRequests: false,
    });
    // The developer then sees the administrator's choice, cannot pick it, and saving keeps it (a disabled radio is not sent).
    const after = await form(b, { require_dpop: '1' });
    expect(after.page.text).toMatch(/value="all" checked="" disabled=""|value="all" checked disabled/);
    expect((await after.save()).status).toBe(303);
    expect(await server.store.applications.get(clientId)).toMatchObject({ introspection: 'all', requireDpop: true });
  });

  it('csrf: a form POST without the token changes nothing', async () => {
    const b = await as('alice');
    const res = await b.postForm('/dashboard/apps', {
      name: 'Forged',
      kind: 'public',
      callback_urls: 'https://a.example/cb',
      scope: 'openid',
      grant: 'authorization_code',
    });
    expect(res.status).toBe(403);
    expect((await server.store.applications.list()).map((a) => a.name)).not.toContain('Forged');
  });

  it("a user cannot see or change another user's application; an administrator can", async () => {
    const alice = await as('alice');
    const created = await register(alice, { name: 'Alice private' });
    const path = created.location!;
    const clientId = decodeURIComponent(path.split('/').pop()!);
    const bob = await as('bob');
    expect((await bob.get('/dashboard')).text).not.toContain('Alice private');
    expect((await bob.get(path)).status).toBe(404);
    const bobPage = await bob.get('/dashboard');
    const csrf = hidden(bobPage.text, '_csrf');
    expect(
      (
        await bob.postForm(path, {
          _csrf: csrf,
          name: 'Hijacked',
          callback_urls: 'https://evil.example/cb',
          scope: 'openid',
          grant: 'authorization_code',
        })
      ).status,
    ).toBe(404);
    expect((await bob.postForm(`${path}/delete`, { _csrf: csrf })).status).toBe(404);
    expect((await bob.postForm(`${path}/rotate-secret`, { _csrf: csrf })).status).toBe(404);
    expect((await server.store.applications.get(clientId))!.name).toBe('Alice private');
    expect((await bob.get(`/developer/playground/apps/${clientId}`)).status).toBe(404);
    expect((await bob.get('/developer/playground')).text).not.toContain('Alice private');
    expect((await alice.get(`/developer/playground/apps/${clientId}`)).status).toBe(200);
    expect((await new Browser(server.url).get(`/developer/playground/apps/${clientId}`)).status).toBe(401);
    const root = await as('root');
    const all = await root.get('/dashboard');
    expect(all.text).toContain('Alice private');
    expect(all.text).toContain('authcli');
    expect((await root.get(path)).status).toBe(200);
  });

  it('delete removes the application and its sign-ins', async () => {
    const b = await as('alice');
    const created = await register(b, { name: 'Short-lived', grants: [DEVICE], callbacks: '' });
    const path = created.location!;
    const clientId = decodeURIComponent(path.split('/').pop()!);
    expect((await deviceAuthorization(server, clientId, 'openid')).status).toBe(200);
    const page = await b.get(path);
    const res = await b.postForm(`${path}/delete`, { _csrf: hidden(page.text, '_csrf') });
    expect(res.status).toBe(303);
    expect(res.location).toBe('/dashboard');
    expect((await b.get('/dashboard')).text).toContain('Application “Short-lived” deleted');
    expect(await server.store.applications.get(clientId)).toBeUndefined();
    expect((await deviceAuthorization(server, clientId, 'openid')).json.error).toBe('invalid_client');
  });

  it('post-redirect-get: every dashboard form answers 303 to a GET page; a reload of that page repeats nothing', async () => {
    const b = await as('alice');
    const before = (await server.store.applications.list()).length;
    const created = await register(b, { name: 'Reloaded', kind: 'confidential' });
    const { secret, clientId } = await secretPage(b, created);
    // Reloading the page the redirect led to: no second application, and the secret is not shown again.
    const reload = await b.get(created.location!);
    expect(reload.status).toBe(303);
    expect(reload.location).toBe(`/dashboard/apps/${clientId}`);
    expect(reload.text).not.toContain(secret);
    expect((await server.store.applications.list()).length).toBe(before + 1);
    const hash = (await server.store.applications.get(clientId))!.secretHash;
    expect(hash).toBe(sha256Hex(secret));

    const page = await b.get(`/dashboard/apps/${clientId}`);
    expect(page.text).not.toContain(secret);
    const rotated = await b.postForm(`/dashboard/apps/${clientId}/rotate-secret`, { _csrf: hidden(page.text, '_csrf') });
    const { secret: fresh } = await secretPage(b, rotated);
    const rotatedHash = (await server.store.applications.get(clientId))!.secretHash;
    expect(rotatedHash).toBe(sha256Hex(fresh));
    // A reload after a rotation rotates nothing: the stored hash changed exactly once.
    expect((await b.get(rotated.location!)).status).toBe(303);
    expect((await server.store.applications.get(clientId))!.secretHash).toBe(rotatedHash);
  });

  it('flash: a secret is bound to the session that made it, and taken by the first page that shows it', async () => {
    const alice = await as('alice');
    const created = await register(alice, { name: 'Flash-bound', kind: 'confidential' });
    const clientId = clientIdOf(created.location!);
    // Another session of the same user (another browser) finds no secret to show.
    const other = await as('alice');
    const elsewhere = await other.get(created.location!);
    expect(elsewhere.status).toBe(303);
    expect(elsewhere.location).toBe(`/dashboard/apps/${clientId}`);
    // An administrator who may manage the application does not see it either.
    expect((await (await as('root')).get(created.location!)).status).toBe(303);
    // The session that registered it still gets it, once.
    const { secret } = await secretPage(alice, created);
    expect((await server.store.applications.get(clientId))!.secretHash).toBe(sha256Hex(secret));
    expect((await alice.get(created.location!)).status).toBe(303);
    // A signed-out visitor is sent to sign in, never shown the page.
    const anonymous = await new Browser(server.url).get(created.location!);
    expect(anonymous.status).toBe(303);
    expect(anonymous.location).toMatch(/^\/signin\?continue=/);
  });

  it('flash: the "saved" notice is shown once', async () => {
    const b = await as('alice');
    const created = await register(b, { name: 'Noticed' });
    expect(created.status).toBe(303);
    const first = await b.get(created.location!);
    expect(first.text).toContain('Application registered');
    expect(first.text).toContain('role="status"');
    expect((await b.get(created.location!)).text).not.toContain('Application registered');
  });

  it('rotate and delete are confirmed first: the GET page acts on nothing, only its CSRF form does', async () => {
    const b = await as('alice');
    const { clientId, secret } = await secretPage(b, await register(b, { name: 'Confirmed', kind: 'confidential' }));
    const path = `/dashboard/apps/${clientId}`;
    const app = await b.get(path);
    // The application page links to the confirmations; it holds no form that rotates or deletes.
    expect(app.text).toContain(`href="${path}/rotate-secret"`);
    expect(app.text).toContain(`href="${path}/delete"`);
    expect(app.text).not.toContain(`action="${path}/rotate-secret"`);
    expect(app.text).not.toContain(`action="${path}/delete"`);
    const rotate = await b.get(`${path}/rotate-secret`);
    expect(rotate.status).toBe(200);
    expect(rotate.text).toContain('Rotate the secret of Confirmed?');
    expect(rotate.text).toContain(`action="${path}/rotate-secret"`);
    const del = await b.get(`${path}/delete`);
    expect(del.text).toContain('Delete Confirmed?');
    expect(del.text).toContain(`action="${path}/delete"`);
    // Looking at the confirmations changed nothing.
    expect((await server.store.applications.get(clientId))!.secretHash).toBe(sha256Hex(secret));
    // The confirmation's own form is CSRF-protected.
    expect((await b.postForm(`${path}/delete`, {})).status).toBe(403);
    expect((await b.postForm(`${path}/delete`, { _csrf: hidden(del.text, '_csrf') })).status).toBe(303);
    expect(await server.store.applications.get(clientId)).toBeUndefined();
    // Confirmations of someone else's application, or of a public one's secret, are not offered.
    expect((await (await as('bob')).get(`${path}/delete`)).status).toBe(404);
    const pub = clientIdOf((await register(b, { name: 'No secret' })).location!);
    expect((await b.get(`/dashboard/apps/${pub}/rotate-secret`)).location).toBe(`/dashboard/apps/${pub}`);
  });

  it('copy buttons: a same-origin script (script-src self), hidden until it runs', async () => {
    const b = await as('alice');
    const created = await register(b, { name: 'Copyable', kind: 'confidential' });
    const { page } = await secretPage(b, created);
    expect(page.text).toContain('<script type="module" src="/assets/copy.js">');
    expect(page.text).toMatch(/<button type="button" class="secondary" data-copy="client_secret" aria-label="Copy secret" hidden/);
    expect(page.text).toContain('data-copy="client_id"');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const script = await b.get('/assets/copy.js');
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(script.text).toContain('data-copy');
  });
});

describe.each(dialects())('pages: 404, favicon, header (%s)', (dialect) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startServer(dialect);
    await seedUser(server, 'carol');
  });
  afterAll(async () => server.close());

  it('an unknown page address answers an HTML 404 in the house style, with the page security headers', async () => {
    const res = await new Browser(server.url).get('/no/such/page');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(res.text).toContain('<h1>Page not found</h1>');
    expect(res.text).toContain('href="/assets/style.css"');
    // Signed out: no developer menu.
    expect(res.text).not.toContain('href="/developer/playground"');
  });

  it('the protocol endpoints keep JSON 404s: an RFC 9457 problem that repeats nothing of the request', async () => {
    for (const path of ['/oauth/zq7probe', '/.well-known/zq7probe']) {
      const res = await new Browser(server.url).get(path);
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type'), path).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(res.text), path).toMatchObject({ status: 404, title: 'Not Found' });
      expect(res.text, path).not.toContain('zq7probe');
    }
  });

  it('favicon: an SVG under a versioned URL, cached for a year; /favicon.ico points to it', async () => {
    const b = new Browser(server.url);
    const home = await b.get('/');
    const href = /<link rel="icon" type="image\/svg\+xml" href="([^"]+)"/.exec(home.text)![1]!;
    expect(href).toMatch(/^\/assets\/favicon-[\w-]{12}\.svg$/);
    const icon = await b.get(href);
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    expect(icon.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(icon.text).toContain('<svg');
    const ico = await b.get('/favicon.ico');
    expect(ico.status).toBe(301);
    expect(ico.location).toBe(href);
    // An old version's URL leads to the current one rather than serving it under a stale name.
    expect((await b.get('/assets/favicon-AAAAAAAAAAAA.svg')).location).toBe(href);
  });

  it('the developer menu shows only to a signed-in user, and not on end-user pages (device, consent)', async () => {
    const anonymous = await new Browser(server.url).get('/');
    expect(anonymous.text).not.toContain('href="/dashboard"');
    const b = await signedInBrowser(server, 'carol');
    const home = await b.get('/');
    expect(home.text).toContain('<a href="/dashboard">Dashboard</a>');
    expect(home.text).toContain('<a href="/developer/playground">Playground</a>');
    const device = await b.get('/device');
    expect(device.status).toBe(200);
    expect(device.text).toContain('Sign out');
    expect(device.text).not.toContain('href="/developer/playground"');
    // Nor on the page that ends a device sign-in.
    const started = await deviceAuthorization(server, 'authcli', 'openid');
    const done = await decideOnDevicePage(b, started.json.user_code, 'approve', 'carol');
    expect(done.text).toContain('Device connected');
    expect(done.text).not.toContain('href="/dashboard"');
  });
});

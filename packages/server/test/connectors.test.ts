import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { federatedUser, type UpstreamIdentity } from '../src/connectors/accounts.js';
import { admit, oidcAuthorizationUrl, oidcCallback, UpstreamMetadata } from '../src/connectors/oidc.js';
import { connectorOf, rowOf } from '../src/connectors/registry.js';
import { LIMITS } from '../src/config/defaults.js';
import { amrOf } from '../src/oauth/acr.js';
import { Sessions } from '../src/web/session.js';
import { Browser, dialects, hidden, ownClock, seedPasskey, seedUser, startServer, type TestServer } from './helpers.js';
import { testRows } from '../src/testing.js';

/**
 * Connectors at the store: provisioning linked to (connector, subject) and never by email, parallel first
 * sign-ins making one user, the single-use round-trip state under parallel answers, removal, the secret at
 * rest; and what an OpenID Connect upstream's claims let in. The flows themselves run against real upstreams
 * in test/connectors-*.e2e.test.ts.
 */
describe.each(dialects())('connectors in the store (%s)', (dialect) => {
  let server: TestServer;
  const identity = (subject: string, claims: UpstreamIdentity['claims'] = {}): UpstreamIdentity => ({
    subject,
    claims,
    amr: [],
    acr: 'urn:authcli:acr:federated',
  });

  beforeAll(async () => {
    server = await startServer(dialect);
    const now = server.clock.now();
    for (const id of ['corp', 'other']) {
      await server.store.connectors.create(
        rowOf(
          {
            id,
            type: 'oidc',
            name: id,
            secret: 's',
            settings: { issuer: 'https://login.example', clientId: 'c', scopes: ['openid'], allowedEmailDomains: [] },
          },
          now,
          undefined,
        ),
      );
    }
  });
  afterAll(async () => server.close());

  it('20 parallel first sign-ins of one upstream account make one user; the next sign-in finds it', async () => {
    const now = server.clock.now();
    const users = await Promise.all(
      Array.from({ length: 20 }, () => federatedUser(server.store, 'corp', identity('sub-par', { preferred_username: 'par' }), now)),
    );
    expect(new Set(users.map((u) => u!.id)).size).toBe(1);
    expect((await server.store.users.list()).filter((u) => u.username.startsWith('par'))).toHaveLength(1);
    expect((await federatedUser(server.store, 'corp', identity('sub-par'), now))!.id).toBe(users[0]!.id);
  });

  it('never linked by email or username: a local account with the same email and name is not the one signed in to', async () => {
    const local = await seedUser(server, 'ann', { email: 'ann@corp.example' });
    const fed = await federatedUser(
      server.store,
      'corp',
      identity('sub-ann', { preferred_username: 'ann', email: 'ann@corp.example', email_verified: true }),
      server.clock.now(),
    );
    expect(fed!.id).not.toBe(local.id);
    expect(fed!.username).toBe('ann-2');
    expect(fed!.password_hash).toBe('!federated');
    // The same subject at another connector is another person.
    const other = await federatedUser(server.store, 'other', identity('sub-ann', { preferred_username: 'ann' }), server.clock.now());
    expect(other!.id).not.toBe(fed!.id);
    // A disabled user is not signed in.
    await server.store.users.setDisabled('ann-2', server.clock.now());
    expect(await federatedUser(server.store, 'corp', identity('sub-ann'), server.clock.now())).toBeUndefined();
  });

  it("a round trip's state is used once: of 20 parallel answers one gets it; another browser and a late one get nothing", async () => {
    const now = server.clock.now();
    const state = (hash: string, expiresAt = now + 60_000) => ({
      state_hash: hash,
      connector_id: 'corp',
      browser_hash: 'browser-1',
      code_verifier: 'v',
      nonce: 'n',
      continue_id: null,
      link_user_id: null,
      expires_at: expiresAt,
    });
    await server.store.connectors.addState(state('s-par'));
    const taken = await Promise.all(Array.from({ length: 20 }, () => server.store.connectors.takeState('s-par', 'browser-1', now)));
    expect(taken.filter(Boolean)).toHaveLength(1);
    await server.store.connectors.addState(state('s-other'));
    expect(await server.store.connectors.takeState('s-other', 'browser-2', now)).toBeUndefined();
    await server.store.connectors.addState(state('s-late', now + 10));
    expect(await server.store.connectors.takeState('s-late', 'browser-1', now + 10)).toBeUndefined();
  });

  it('removing a connector removes its links and leaves its users', async () => {
    const now = server.clock.now();
    await server.store.connectors.create(
      rowOf({ id: 'gone', type: 'github', name: 'Gone', secret: 's', settings: { clientId: 'c', orgs: [] } }, now, undefined),
    );
    const user = await federatedUser(server.store, 'gone', identity('sub-gone', { preferred_username: 'gone-user' }), now);
    expect(await server.store.connectors.delete('gone')).toBe(true);
    expect(await server.store.connectors.linksOf(user!.id)).toEqual([]);
    expect(await server.store.users.findById(user!.id)).toBeDefined();
    expect(await server.store.connectors.delete('gone')).toBe(false);
  });
});

describe('connector settings and claims', () => {
  it('a federated sign-in whose upstream reported no methods claims none (not a password)', () => {
    expect(amrOf('')).toEqual([]);
    expect(amrOf(null)).toEqual(['pwd']);
  });

  it('the secret is stored encrypted with the key-encryption key, bound to its connector', () => {
    const kek = randomBytes(32);
    const c = {
      id: 'corp',
      type: 'oidc' as const,
      name: 'Corp',
      secret: 'client secret',
      settings: { issuer: 'https://l.example', clientId: 'c', scopes: ['openid'], allowedEmailDomains: [] },
    };
    const row = rowOf(c, 1, kek);
    expect(row.secret).not.toContain('client secret');
    expect(connectorOf(row, kek).secret).toBe('client secret');
    expect(() => connectorOf(row, randomBytes(32))).toThrow();
    expect(() => connectorOf({ ...row, id: 'other' }, kek)).toThrow();
    expect(() => connectorOf(row, undefined)).toThrow(/AUTHCLI_KEY_ENCRYPTION_KEY/);
    expect(rowOf(c, 1, undefined).secret).toBe('client secret');
    expect(() => rowOf({ ...c, id: 'Bad Id' }, 1, undefined)).toThrow(/connector id/);
    expect(() => rowOf({ ...c, name: 'a\u202eb' }, 1, undefined)).toThrow(/control characters/);
    expect(() => rowOf({ ...c, secret: '' }, 1, undefined)).toThrow(/client secret is empty/);
  });

  it('an OIDC upstream: the allowed domain needs a verified email; phr is carried only when asserted and the connector trusts it; only RFC 8176 amr values', () => {
    const s = { issuer: 'https://l.example', clientId: 'c', scopes: ['openid'], allowedEmailDomains: ['corp.example'] };
    const token = (extra: Record<string, unknown>) => ({ iss: 'https://l.example', sub: 'u1', aud: 'c', iat: 1, exp: 2, ...extra });
    expect(admit(s, token({ email: 'a@corp.example', email_verified: true }))).toMatchObject({ kind: 'ok' });
    expect(admit(s, token({ email: 'a@corp.example', email_verified: false }))).toMatchObject({ kind: 'refused' });
    expect(admit(s, token({ email: 'a@evil.example', email_verified: true }))).toMatchObject({ kind: 'refused' });
    expect(admit(s, token({ email: 'a@sub.corp.example', email_verified: true }))).toMatchObject({ kind: 'refused' });
    expect(admit(s, token({}))).toMatchObject({ kind: 'refused' });
    const open = { ...s, allowedEmailDomains: [] };
    // Off by default: the upstream's phr is not this server's to vouch for; the sign-in is of the federated class.
    expect(admit(open, token({ acr: 'phr', amr: ['hwk', 'mfa', 'made-up'] }))).toMatchObject({
      kind: 'ok',
      identity: { subject: 'u1', acr: 'urn:authcli:acr:federated', amr: ['hwk', 'mfa'] },
    });
    expect(admit({ ...open, trustUpstreamAcr: true }, token({ acr: 'phr', amr: ['hwk', 'mfa', 'made-up'] }))).toMatchObject({
      kind: 'ok',
      identity: { subject: 'u1', acr: 'phr', amr: ['hwk', 'mfa'] },
    });
    expect(admit(open, token({ acr: 'urn:example:gold', amr: 'pwd' }))).toMatchObject({
      identity: { acr: 'urn:authcli:acr:federated', amr: [] },
    });
  });

  it("rfc9207 an answer whose iss is not the upstream's, or that lacks it where the upstream promises it, is refused before any code exchange", async () => {
    const issuer = 'https://login.example';
    const requests: string[] = [];
    const transport = (async (input: string | URL | Request) => {
      const url = String(input instanceof Request ? input.url : input);
      requests.push(url);
      if (url === `${issuer}/.well-known/openid-configuration`) {
        return Response.json({
          issuer,
          authorization_endpoint: `${issuer}/authorize`,
          token_endpoint: `${issuer}/token`,
          jwks_uri: `${issuer}/jwks`,
          authorization_response_iss_parameter_supported: true,
        });
      }
      return new Response('unexpected', { status: 500 });
    }) as typeof fetch;
    const s = { issuer, clientId: 'c', scopes: ['openid'], allowedEmailDomains: [] };
    const p = (query: string) => ({
      callbackUrl: new URL(`https://rp.example/connectors/corp/callback?${query}`),
      redirectUri: 'https://rp.example/connectors/corp/callback',
      state: 'st',
      codeVerifier: 'v'.repeat(43),
      nonce: 'n',
    });
    for (const query of [
      'code=x&state=st&iss=https%3A%2F%2Fevil.example',
      'code=x&state=st',
      'code=x&state=other&iss=https%3A%2F%2Flogin.example',
    ]) {
      const outcome = await oidcCallback(s, 'secret', p(query), { timeoutMs: 1000, fetch: transport });
      expect(outcome.kind, query).not.toBe('ok');
    }
    expect(requests.every((u) => u.endsWith('/.well-known/openid-configuration'))).toBe(true);
  });

  it('loopback is one definition: an upstream at http://127.0.0.2 is reached and signs in; one at a non-loopback http URL is never asked', async () => {
    const key = await generateKeyPair('ES256', { extractable: true });
    const upstream = createServer(async (req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const json = (body: unknown) => res.setHeader('content-type', 'application/json').end(JSON.stringify(body));
      if (path === '/.well-known/openid-configuration') {
        return json({
          issuer,
          authorization_endpoint: `${issuer}/authorize`,
          token_endpoint: `${issuer}/token`,
          jwks_uri: `${issuer}/jwks`,
          id_token_signing_alg_values_supported: ['ES256'],
        });
      }
      if (path === '/jwks') return json({ keys: [{ ...(await exportJWK(key.publicKey)), kid: 'k', alg: 'ES256' }] });
      const now = Math.floor(Date.now() / 1000);
      const idToken = await new SignJWT({ sub: 'loopback-user', nonce: 'n' })
        .setProtectedHeader({ alg: 'ES256', kid: 'k' })
        .setIssuer(issuer)
        .setAudience('c')
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .sign(key.privateKey);
      return json({ access_token: 'at', token_type: 'Bearer', id_token: idToken });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.2', resolve));
    const issuer = `http://127.0.0.2:${(upstream.address() as AddressInfo).port}`;
    try {
      const s = { issuer, clientId: 'c', scopes: ['openid'], allowedEmailDomains: [] };
      const round = { redirectUri: 'https://rp.example/cb', state: 'st', codeVerifier: 'v'.repeat(43), nonce: 'n' };
      const start = await oidcAuthorizationUrl(s, round, { timeoutMs: 2000 });
      expect(String(start)).toMatch(new RegExp(`^${issuer}/authorize\\?`));
      const done = await oidcCallback(
        s,
        'secret',
        { ...round, callbackUrl: new URL('https://rp.example/cb?code=x&state=st') },
        { timeoutMs: 2000 },
      );
      expect(done, JSON.stringify(done)).toMatchObject({ kind: 'ok', identity: { subject: 'loopback-user' } });
    } finally {
      upstream.close();
    }
    // Plain http anywhere else: refused before any request leaves (the transport is never called).
    const asked: string[] = [];
    const transport = (async (input: string | URL | Request) => {
      asked.push(String(input));
      return new Response('{}');
    }) as typeof fetch;
    for (const elsewhere of ['http://login.example', 'http://192.0.2.7', 'http://127.0.0.1.nip.io']) {
      const s = { issuer: elsewhere, clientId: 'c', scopes: ['openid'], allowedEmailDomains: [] };
      const round = { redirectUri: 'https://rp.example/cb', state: 'st', codeVerifier: 'v'.repeat(43), nonce: 'n' };
      expect(await oidcAuthorizationUrl(s, round, { timeoutMs: 2000, fetch: transport }), elsewhere).toMatchObject({ kind: 'unavailable' });
    }
    expect(asked).toEqual([]);
  });

  it("an upstream's keys are fetched once for many sign-ins, and again at once when an ID token names a new key", async () => {
    const issuer = 'https://keys.example';
    const asked: string[] = [];
    const keys = [await generateKeyPair('ES256', { extractable: true }), await generateKeyPair('ES256', { extractable: true })];
    let signer = 0;
    let published = 1;
    const transport = (async (input: string | URL | Request) => {
      const url = new URL(String(input instanceof Request ? input.url : input));
      asked.push(url.pathname);
      if (url.pathname === '/.well-known/openid-configuration') {
        return Response.json({
          issuer,
          authorization_endpoint: `${issuer}/authorize`,
          token_endpoint: `${issuer}/token`,
          jwks_uri: `${issuer}/jwks`,
          id_token_signing_alg_values_supported: ['ES256'],
        });
      }
      if (url.pathname === '/jwks') {
        const jwks = await Promise.all(
          keys.slice(0, published).map(async (k, i) => ({ ...(await exportJWK(k.publicKey)), kid: `k${i}`, alg: 'ES256' })),
        );
        return Response.json({ keys: jwks });
      }
      const now = Math.floor(Date.now() / 1000);
      const idToken = await new SignJWT({ sub: 'upstream-user', nonce: 'n' })
        .setProtectedHeader({ alg: 'ES256', kid: `k${signer}` })
        .setIssuer(issuer)
        .setAudience('c')
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .sign(keys[signer]!.privateKey);
      return Response.json({ access_token: 'at', token_type: 'Bearer', id_token: idToken });
    }) as typeof fetch;
    const metadata = new UpstreamMetadata(() => Date.now());
    const s = { issuer, clientId: 'c', scopes: ['openid'], allowedEmailDomains: [] };
    const round = { redirectUri: 'https://rp.example/cb', state: 'st', codeVerifier: 'v'.repeat(43), nonce: 'n' };
    const o = { timeoutMs: 1000, fetch: transport, metadata };
    const signIn = async () => {
      expect(await oidcAuthorizationUrl(s, round, o)).toBeInstanceOf(URL);
      return oidcCallback(s, 'secret', { ...round, callbackUrl: new URL('https://rp.example/cb?code=x&state=st') }, o);
    };
    for (let i = 0; i < 4; i++) expect(await signIn()).toMatchObject({ kind: 'ok', identity: { subject: 'upstream-user' } });
    expect(asked.filter((p) => p === '/jwks')).toHaveLength(1);
    // The upstream rotates to a new key: the first ID token it signs is checked against keys fetched anew.
    [signer, published] = [1, 2];
    expect(await signIn()).toMatchObject({ kind: 'ok' });
    expect(asked.filter((p) => p === '/jwks')).toHaveLength(2);
  });

  it('an upstream discovery is asked at each round trip start and kept for callbacks (CONNECTOR_DISCOVERY_TTL_MS); an unchanged document stays the same object', async () => {
    const issuer = 'https://sso.example';
    const asked: string[] = [];
    let up = true;
    let tokenEndpoint = `${issuer}/token`;
    const transport = (async (input: string | URL | Request) => {
      const url = String(input instanceof Request ? input.url : input);
      asked.push(new URL(url).pathname);
      if (!up) return new Response('down', { status: 503 });
      if (url.endsWith('/.well-known/openid-configuration')) {
        return Response.json({ issuer, authorization_endpoint: `${issuer}/authorize`, token_endpoint: tokenEndpoint });
      }
      return Response.json({ error: 'invalid_grant' }, { status: 400 });
    }) as typeof fetch;
    let now = 1_000_000;
    const metadata = new UpstreamMetadata(() => now, 60_000);
    const s = { issuer, clientId: 'c', scopes: ['openid'], allowedEmailDomains: [] };
    const round = { redirectUri: 'https://rp.example/cb', state: 'st', codeVerifier: 'v'.repeat(43), nonce: 'n' };
    const o = { timeoutMs: 1000, fetch: transport, metadata };
    const start = () => oidcAuthorizationUrl(s, round, o);
    const callback = () => oidcCallback(s, 'secret', { ...round, callbackUrl: new URL('https://rp.example/cb?code=x&state=st') }, o);
    const discoveries = () => asked.filter((p) => p === '/.well-known/openid-configuration').length;

    expect(await start()).toBeInstanceOf(URL);
    expect(discoveries()).toBe(1);
    // The callbacks use the kept document: only the code exchange goes to the upstream.
    for (let i = 0; i < 5; i++) expect(await callback()).toMatchObject({ kind: 'refused' });
    expect(discoveries()).toBe(1);
    expect(asked.filter((p) => p === '/token')).toHaveLength(5);
    // Each start asks again (an upstream that is down is said at once), but keeps the same object when nothing
    // changed, and with it the keys oauth4webapi holds for it.
    const first = await metadata.get(s, () => Promise.reject(new Error('not asked')));
    await start();
    expect(discoveries()).toBe(2);
    expect(await metadata.get(s, () => Promise.reject(new Error('not asked')))).toBe(first);
    tokenEndpoint = `${issuer}/token2`;
    await start();
    const changed = await metadata.get(s, () => Promise.reject(new Error('not asked')));
    expect(changed).not.toBe(first);
    expect(changed.token_endpoint).toBe(`${issuer}/token2`);
    // Down: the start says so on our page; the document is asked for again once the kept one is too old.
    up = false;
    expect(await start()).toMatchObject({ kind: 'unavailable' });
    now += 60_000;
    expect(await callback()).toMatchObject({ kind: 'unavailable' });
    up = true;
    const before = discoveries();
    expect(await callback()).toMatchObject({ kind: 'refused' });
    expect(discoveries()).toBe(before + 1);
  });
});

describe('the connector routes', () => {
  let server: TestServer;
  beforeAll(async () => {
    // An https issuer, as in production: the round trip's cookie carries the __Host- prefix.
    server = await startServer('sqlite', { issuer: 'https://id.example' });
    await server.store.connectors.create(
      rowOf(
        { id: 'gh', type: 'github', name: 'GitHub', secret: 's', settings: { clientId: 'c', orgs: [] } },
        server.clock.now(),
        undefined,
      ),
    );
    await seedUser(server, 'alice');
  });
  afterAll(async () => server.close());
  const local = () => `http://127.0.0.1:${server.config.port}`;

  it('the round trip goes to the upstream with a __Host- cookie of path / (a browser refuses any other path for it), reused by a second tab', async () => {
    const first = await fetch(`${local()}/connectors/gh/start`, { redirect: 'manual' });
    expect(first.status).toBe(303);
    expect(first.headers.get('location')).toMatch(/^https:\/\/github\.com\/login\/oauth\/authorize\?/);
    const cookie = first.headers.getSetCookie().find((c) => c.startsWith('__Host-authcli_upstream='))!;
    expect(cookie).toMatch(/; Path=\/;/);
    expect(cookie).toMatch(/; Secure/);
    expect(cookie).toMatch(/; HttpOnly/);
    const value = cookie.split(';')[0]!;
    const second = await fetch(`${local()}/connectors/gh/start`, { redirect: 'manual', headers: { cookie: value } });
    expect(
      second.headers
        .getSetCookie()
        .find((c) => c.startsWith('__Host-authcli_upstream='))!
        .split(';')[0],
    ).toBe(value);
  });

  it('round trips started by one address are limited (each is a row and a request upstream): past it, 429', async () => {
    // A server of its own: the budget it uses up is this test's alone.
    const limited = await startServer('sqlite', { limits: { ...LIMITS, 'continuation-ip': { limit: 5, windowMs: 10 * 60_000 } } });
    try {
      await limited.store.connectors.create(
        rowOf(
          { id: 'gh', type: 'github', name: 'GitHub', secret: 's', settings: { clientId: 'c', orgs: [] } },
          limited.clock.now(),
          undefined,
        ),
      );
      const answers = await Promise.all(
        Array.from({ length: 12 }, () =>
          fetch(`${limited.url}/connectors/gh/start`, {
            redirect: 'manual',
            headers: { 'x-forwarded-for': `198.51.100.${Math.floor(Math.random() * 250)}` },
          }),
        ),
      );
      // Without a trusted proxy the forged X-Forwarded-For changes nothing: one address, five round trips.
      expect(answers.filter((a) => a.status === 303)).toHaveLength(5);
      expect(answers.filter((a) => a.status === 429)).toHaveLength(7);
    } finally {
      await limited.close();
    }
  });

  it('linking and unlinking need a sign-in at most 10 minutes old: an older session is sent to sign in again', async () => {
    // The issuer is https://id.example; the browser talks to the listening address, with a seeded session.
    const sessions = new Sessions(server.config, server.store);
    const b = new Browser(local());
    b.cookies.set(sessions.cookieName, await sessions.create((await server.store.users.findByUsername('alice'))!));
    const csrf = hidden((await b.get('/account')).text, '_csrf');
    ownClock(server).advance(11 * 60_000);
    for (const path of ['/connectors/gh/link', '/connectors/gh/unlink']) {
      const res = await b.postForm(path, { _csrf: csrf });
      expect(res.status, path).toBe(303);
      expect(new URL(res.location!, local()).pathname, path).toBe('/signin');
    }
    expect(await server.store.connectors.linksOf((await server.store.users.findByUsername('alice'))!.id)).toEqual([]);
  });

  it('an account with a passkey links or unlinks an upstream account only after a passkey sign-in: a fresh password session is sent to step up', async () => {
    const carol = await seedUser(server, 'carol');
    await seedPasskey(server, carol.id, 'carol-key');
    await server.store.connectors.link('gh', 'carol-at-github', carol.id, server.clock.now());
    const sessions = new Sessions(server.config, server.store);
    const as = async (amr?: readonly string[]) => {
      const b = new Browser(local());
      b.cookies.set(sessions.cookieName, await sessions.create(carol, amr));
      return { b, csrf: hidden((await b.get('/account')).text, '_csrf') };
    };
    const password = await as();
    for (const path of ['/connectors/gh/link', '/connectors/gh/unlink']) {
      const res = await password.b.postForm(path, { _csrf: password.csrf });
      expect(new URL(res.location!, local()).pathname, path).toBe('/signin');
      expect((await password.b.get(res.location!)).text, path).toContain('a sign-in with a passkey');
    }
    expect(await server.store.connectors.linksOf(carol.id)).toHaveLength(1);
    const passkey = await as(['hwk', 'mfa']);
    const link = await passkey.b.postForm('/connectors/gh/link', { _csrf: passkey.csrf });
    expect(new URL(link.location!).host).not.toBe(new URL(local()).host);
    expect((await passkey.b.postForm('/connectors/gh/unlink', { _csrf: passkey.csrf })).location).toBe('/account#connectors');
    expect(await server.store.connectors.linksOf(carol.id)).toEqual([]);
    expect((await server.store.signInEvents.recent(carol.id, server.clock.now())).map((e) => [e.kind, e.detail])).toEqual([
      ['connector-unlinked', 'gh'],
    ]);
  });

  it('a browser signed in already is not switched to another account by a link: it confirms on a page of ours first', async () => {
    const sessions = new Sessions(server.config, server.store);
    const b = new Browser(local());
    b.cookies.set(sessions.cookieName, await sessions.create((await server.store.users.findByUsername('alice'))!));
    const states = () => testRows(server.store).count('connector_states');
    const before = await states();
    const page = await b.get('/connectors/gh/start');
    expect(page.status).toBe(200);
    expect(page.text).toContain('You are signed in here as <strong>alice</strong>');
    expect(await states()).toBe(before);
    const go = await b.postForm('/connectors/gh/start', { _csrf: hidden(page.text, '_csrf') });
    expect(go.status).toBe(303);
    expect(go.location).toMatch(/^https:\/\/github\.com\/login\/oauth\/authorize\?/);
    // Without the form's token, nothing starts.
    expect((await b.postForm('/connectors/gh/start', {})).status).toBe(403);
  });

  it('a connector whose secret this server cannot decrypt is a 503 page, not a 500', async () => {
    await server.store.connectors.create({
      ...rowOf(
        { id: 'locked', type: 'github', name: 'Locked', secret: 's', settings: { clientId: 'c', orgs: [] } },
        server.clock.now(),
        randomBytes(32),
      ),
    });
    const res = await fetch(`${local()}/connectors/locked/start`, { redirect: 'manual' });
    expect(res.status).toBe(503);
    expect(await res.text()).toContain('Locked cannot be used right now');
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { PASSWORD_ACR } from '../src/oauth/acr.js';
import { Sessions } from '../src/web/session.js';
import {
  authorizeUrl,
  Browser,
  DEVICE_GRANT,
  deviceAuthorization,
  dialects,
  hidden,
  ownClock,
  poll,
  postForm,
  seedApp,
  seedPasskey,
  seedUser,
  signedInBrowser,
  startServer,
  type TestServer,
  tokenRequest,
} from './helpers.js';

/**
 * Step-up by `acr` (OIDC Core §3.1.2.1 `acr_values`, §5.5.1.1 an essential `acr` claim, and an application's
 * `--require-acr phr`): a password session is asked for its passkey and never given a code or a device
 * approval without it. Sessions are seeded (a passkey one with RFC 8176 `["hwk", "mfa"]`); the passkey
 * ceremony itself is tested in passkeys.test.ts and, in Chromium, test/passkeys.e2e.test.ts.
 */
describe.each(dialects())('step-up to a passkey sign-in (%s)', (dialect) => {
  let server: TestServer;
  const redirectUri = 'https://app.example/callback';
  let open: string;
  let strict: string;
  let aliceId: string;
  const PASSKEY = ['hwk', 'mfa'];

  beforeAll(async () => {
    server = await startServer(dialect);
    aliceId = (await seedUser(server, 'alice')).id;
    await seedUser(server, 'nopasskey');
    // alice has a passkey (its details do not matter here: no ceremony is run).
    await seedPasskey(server, aliceId, 'alice-key');
    const grantTypes = ['authorization_code', 'refresh_token', DEVICE_GRANT];
    open = (await seedApp(server, { name: 'Open App', callbackUrls: [redirectUri], grantTypes })).app.clientId;
    strict = (await seedApp(server, { name: 'Strict App', callbackUrls: [redirectUri], grantTypes })).app.clientId;
    await server.store.applications.update(strict, { requireAcr: 'phr' }, server.clock.now());
    // Consent given before, so a session that meets the class goes straight to a code.
    for (const user of [aliceId, (await server.store.users.findByUsername('nopasskey'))!.id]) {
      for (const app of [open, strict]) await server.store.consents.add(user, app, ['openid'], server.clock.now());
    }
  });
  afterAll(async () => server.close());

  /** One authorization request in `browser`: where the server sends it, and the code's tokens if it gave one. */
  async function attempt(browser: Browser, clientId: string, extra: Record<string, string> = {}) {
    const { url, verifier } = await authorizeUrl({ clientId, redirectUri, scope: 'openid', extra });
    const res = await browser.get(url);
    expect(res.status).toBe(303);
    const location = new URL(res.location!, server.url);
    if (location.origin !== new URL(redirectUri).origin) return { location };
    const code = location.searchParams.get('code');
    if (!code) return { location };
    const tokens = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      code_verifier: verifier,
      client_id: clientId,
    });
    expect(tokens.status).toBe(200);
    return { location, idToken: decodeJwt((tokens.json as { id_token: string }).id_token) };
  }
  /** The step-up page a redirect to sign-in leads to, as text. */
  async function stepUpPage(browser: Browser, location: URL) {
    expect(location.pathname).toBe('/signin');
    const page = await browser.get(location.pathname + location.search);
    expect(page.status).toBe(200);
    return page.text;
  }

  it('acr_values=phr: a password session of a person with a passkey is stepped up, never given a code; a passkey session gets acr phr', async () => {
    const password = await signedInBrowser(server, 'alice');
    const first = await attempt(password, open, { acr_values: 'phr' });
    expect(first.idToken).toBeUndefined();
    const text = await stepUpPage(password, first.location);
    expect(text).toContain('<h1>Sign in with a passkey</h1>');
    expect(text).toContain('a sign-in with a passkey');
    expect(text).not.toContain('name="password"');
    const passkey = await attempt(await signedInBrowser(server, 'alice', PASSKEY), open, { acr_values: 'phr' });
    expect(passkey.idToken).toMatchObject({ acr: 'phr', amr: PASSKEY });
    // A list the password class is in is met by the password (acr_values is a preference among them).
    const either = await attempt(password, open, { acr_values: `phr ${PASSWORD_ACR}` });
    expect(either.idToken).toMatchObject({ acr: PASSWORD_ACR, amr: ['pwd'] });
  });

  it('acr_values=phr is a preference: a person without a passkey signs in with the password as before', async () => {
    const r = await attempt(await signedInBrowser(server, 'nopasskey'), open, { acr_values: 'phr' });
    expect(r.idToken).toMatchObject({ acr: PASSWORD_ACR, amr: ['pwd'] });
  });

  it('an essential acr claim is not a preference: even without a passkey the password session is stepped up; the token names a listed class', async () => {
    const essential = (values: string[]) => ({ claims: JSON.stringify({ id_token: { acr: { essential: true, values } } }) });
    const nopasskey = await signedInBrowser(server, 'nopasskey');
    const r = await attempt(nopasskey, open, essential(['phr']));
    expect(r.idToken).toBeUndefined();
    expect(await stepUpPage(nopasskey, r.location)).toContain('Add one on your account page');
    // Listed with the password class, the password will do.
    expect((await attempt(await signedInBrowser(server, 'nopasskey'), open, essential(['phr', PASSWORD_ACR]))).idToken).toMatchObject({
      acr: PASSWORD_ACR,
    });
    // A passkey session asked for the password class only gets that class named: it meets it (§5.5.1.1).
    expect((await attempt(await signedInBrowser(server, 'alice', PASSKEY), open, essential([PASSWORD_ACR]))).idToken).toMatchObject({
      acr: PASSWORD_ACR,
      amr: PASSKEY,
    });
    // Only classes this server does not know: refused as before.
    const unknown = await attempt(await signedInBrowser(server, 'alice', PASSKEY), open, essential(['urn:example:loa4']));
    expect(unknown.location.searchParams.get('error')).toBe('access_denied');
  });

  it('an application that requires phr: the code flow steps a password session up, prompt=none gets login_required, and the consent form cannot skip it', async () => {
    const password = await signedInBrowser(server, 'alice');
    const r = await attempt(password, strict);
    expect(r.idToken).toBeUndefined();
    expect(await stepUpPage(password, r.location)).toContain('Strict App');
    // max_age past: a passkey session signs in again, and the sign-in page asks for the passkey again.
    const earlier = await signedInBrowser(server, 'alice', PASSKEY);
    ownClock(server).advance(2_000);
    const stale = await attempt(earlier, strict, { max_age: '1' });
    expect(stale.idToken).toBeUndefined();
    expect(await stepUpPage(earlier, stale.location)).toContain('a sign-in with a passkey');
    const none = await attempt(password, strict, { prompt: 'none' });
    expect(none.location.searchParams.get('error')).toBe('login_required');
    expect((await attempt(await signedInBrowser(server, 'alice', PASSKEY), strict)).idToken).toMatchObject({ acr: 'phr' });
    // Not signed in: the sign-in page says a passkey is asked for.
    const { url } = await authorizeUrl({ clientId: strict, redirectUri, scope: 'openid' });
    const b = new Browser(server.url);
    const signIn = await b.get((await b.get(url)).location!);
    expect(signIn.text).toContain('a sign-in with a passkey');
    // The consent form posted by a password session (a page it could fetch itself) issues no code.
    const consentFor = await signedInBrowser(server, 'alice', PASSKEY);
    const { url: consentUrl } = await authorizeUrl({ clientId: strict, redirectUri, scope: 'openid profile' });
    const consentPage = await consentFor.get(consentUrl);
    expect(consentPage.status).toBe(200);
    const forged = await password.postForm('/consent', {
      _csrf: hidden((await password.get('/account')).text, '_csrf'),
      request: hidden(consentPage.text, 'request'),
      decision: 'approve',
    });
    expect(forged.status).toBe(400);
    expect(forged.text).toContain('asks for a sign-in with a passkey first');
  });

  it('an application that requires phr through PAR: the pushed request steps a password session up too', async () => {
    const { verifier, ...rest } = await authorizeUrl({ clientId: strict, redirectUri, scope: 'openid' });
    const params = Object.fromEntries(new URL(rest.url, server.url).searchParams);
    const pushed = await postForm(server, '/oauth/par', params);
    expect(pushed.status).toBe(201);
    const requestUri = (pushed.json as { request_uri: string }).request_uri;
    const password = await signedInBrowser(server, 'alice');
    const res = await password.get(`/oauth/authorize?${new URLSearchParams({ client_id: strict, request_uri: requestUri })}`);
    expect(new URL(res.location!, server.url).pathname).toBe('/signin');
    const passkey = await signedInBrowser(server, 'alice', PASSKEY);
    const ok = await passkey.get(`/oauth/authorize?${new URLSearchParams({ client_id: strict, request_uri: requestUri })}`);
    const code = new URL(ok.location!).searchParams.get('code')!;
    const tokens = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      code_verifier: verifier,
      client_id: strict,
    });
    expect(decodeJwt((tokens.json as { id_token: string }).id_token)).toMatchObject({ acr: 'phr' });
  });

  it('an application that requires phr through the device flow: a password session cannot approve (page or direct POST), a passkey one can, and the device gets acr phr', async () => {
    const d = (await deviceAuthorization(server, strict, 'openid')).json as { user_code: string; device_code: string };
    const password = await signedInBrowser(server, 'alice');
    const entry = await password.get('/device');
    const typed = await password.postForm('/device', { _csrf: hidden(entry.text, '_csrf'), user_code: d.user_code });
    expect(typed.status).toBe(303);
    const stepUp = await password.get(typed.location!);
    expect(stepUp.text).toContain('Approving this device sign-in');
    const direct = await password.postForm('/device/decision', {
      _csrf: hidden(entry.text, '_csrf'),
      user_code: d.user_code,
      code_confirmed: d.user_code,
      decision: 'approve',
    });
    expect(direct.status).toBe(303);
    expect(new URL(direct.location!, server.url).pathname).toBe('/signin');
    expect((await poll(server, strict, d.device_code)).json).toMatchObject({ error: 'authorization_pending' });
    // With a passkey session the same code is approved, and the device's ID token says so.
    const passkey = await signedInBrowser(server, 'alice', PASSKEY);
    const passkeyEntry = await passkey.get('/device');
    const confirm = await passkey.postForm('/device', { _csrf: hidden(passkeyEntry.text, '_csrf'), user_code: d.user_code });
    expect(confirm.status).toBe(200);
    const approved = await passkey.postForm('/device/decision', {
      _csrf: hidden(confirm.text, '_csrf'),
      user_code: hidden(confirm.text, 'user_code'),
      code_confirmed: hidden(confirm.text, 'code_confirmed'),
      decision: 'approve',
    });
    expect(approved.status).toBe(200);
    // The next poll a whole interval after the first one.
    ownClock(server).advance(10_000);
    const tokens = await poll(server, strict, d.device_code);
    expect(tokens.status, JSON.stringify(tokens.json)).toBe(200);
    expect(decodeJwt((tokens.json as { id_token: string }).id_token)).toMatchObject({ acr: 'phr', amr: PASSKEY });
  });
  it('a federated sign-in meets no phr requirement, whatever its upstream reported, unless its connector trusts the upstream (--trust-upstream-acr)', async () => {
    const alice = (await server.store.users.findByUsername('alice'))!;
    const sessions = new Sessions(server.config, server.store);
    const browserWith = async (acr: string) => {
      const b = new Browser(server.url);
      // What connectors/oidc.ts `admit` stores: the upstream's amr (a passkey there), and the class it decided.
      b.cookies.set(sessions.cookieName, await sessions.create(alice, ['hwk', 'mfa'], acr));
      return b;
    };
    // Not trusted (the default): the federated class, below phr: the strict application asks for a passkey here.
    const federated = await browserWith('urn:authcli:acr:federated');
    const untrusted = await attempt(federated, strict);
    expect(untrusted.idToken).toBeUndefined();
    expect(await stepUpPage(federated, untrusted.location)).toContain('a sign-in with a passkey');
    // Trusted: the upstream's phr is carried, and meets the requirement.
    const trusted = await attempt(await browserWith('phr'), strict);
    expect(trusted.idToken).toMatchObject({ acr: 'phr' });
  });
});

describe('where an application is made to require a passkey sign-in', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer('sqlite', { registration: 'open' });
    await seedUser(server, 'alice');
  });
  afterAll(async () => server.close());

  it('the dashboard: the "Require a sign-in with a passkey" box, kept when the form is shown again', async () => {
    const b = await signedInBrowser(server, 'alice');
    const page = await b.get('/dashboard/apps/new');
    expect(page.text).toContain('name="require_acr" value="phr"');
    const body = new URLSearchParams({
      _csrf: hidden(page.text, '_csrf'),
      name: 'Passkeys only',
      kind: 'public',
      callback_urls: 'https://app.example/cb',
      id_token_alg: 'RS256',
      scope: 'openid',
      grant: 'authorization_code',
      require_acr: 'phr',
    });
    const res = await b.request('POST', '/dashboard/apps', body.toString(), { 'content-type': 'application/x-www-form-urlencoded' });
    expect(res.status).toBe(303);
    const clientId = decodeURIComponent(res.location!.split('/')[3]!);
    expect((await server.store.applications.get(clientId))?.requireAcr).toBe('phr');
    expect((await b.get(`/dashboard/apps/${clientId}`)).text).toMatch(/name="require_acr" value="phr" checked/);
  });

  it('dynamic registration: default_acr_values ["phr"] holds the client to it and is sent back; classes this server does not know are refused', async () => {
    const register = (metadata: Record<string, unknown>) =>
      fetch(`${server.url}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ redirect_uris: ['https://rp.example/cb'], token_endpoint_auth_method: 'none', ...metadata }),
      }).then(async (r) => ({ status: r.status, json: (await r.json()) as Record<string, unknown> }));
    const held = await register({ default_acr_values: ['phr'] });
    expect(held.status).toBe(201);
    expect(held.json.default_acr_values).toEqual(['phr']);
    expect((await server.store.applications.get(held.json.client_id as string))?.requireAcr).toBe('phr');
    const either = await register({ default_acr_values: ['phr', PASSWORD_ACR] });
    expect(either.json).not.toHaveProperty('default_acr_values');
    expect((await server.store.applications.get(either.json.client_id as string))?.requireAcr).toBeNull();
    const unknown = await register({ default_acr_values: ['urn:example:loa4'] });
    expect(unknown).toMatchObject({ status: 400, json: { error: 'invalid_client_metadata' } });
    expect((await register({ default_acr_values: 'phr' })).status).toBe(400);
  });
});

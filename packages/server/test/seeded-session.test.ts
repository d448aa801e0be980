import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { randomToken, sha256Hex } from '../src/util/crypto.js';
import {
  authorize,
  Browser,
  dialects,
  hidden,
  ownClock,
  seedApp,
  seedUser,
  signedInBrowser,
  signIn,
  startServer,
  tokenRequest,
  type TestServer,
} from './helpers.js';
import { testRows } from '../src/testing.js';

/**
 * signedInBrowser, which most suites use instead of the sign-in form, is a sign-in as the server itself makes one:
 * the same row, a cookie the real session code accepts, and nothing a forged cookie could pass for.
 */
describe.each(dialects())('a seeded session (%s)', (dialect) => {
  let server: TestServer;
  let clientId: string;
  const redirectUri = 'https://app.example/callback';

  beforeAll(async () => {
    server = await startServer(dialect);
    await seedUser(server, 'alice');
    clientId = (await seedApp(server, { callbackUrls: [redirectUri] })).app.clientId;
  });
  afterAll(async () => server.close());

  const sessionRow = async (b: Browser) =>
    (await testRows(server.store).select('sessions', { id_hash: sha256Hex(b.cookies.get('authcli_session')!) }))[0];

  /** Whether /account is shown to `b` (a signed-out browser is sent to sign in). */
  async function signedInAs(b: Browser): Promise<string | undefined> {
    const page = await b.get('/account');
    if (page.status === 303) {
      expect(page.location).toMatch(/^\/signin\?continue=/);
      return undefined;
    }
    expect(page.status).toBe(200);
    return /Signed in as <strong>([^<]+)<\/strong>/.exec(page.text)?.[1];
  }

  it('is the row a password sign-in writes, under the cookie name the sign-in sets', async () => {
    ownClock(server);
    const form = new Browser(server.url);
    expect((await signIn(form)).status).toBe(303);
    const seeded = await signedInBrowser(server);
    expect([...seeded.cookies.keys()]).toEqual(['authcli_session']);
    expect(seeded.cookies.get('authcli_session')).toMatch(/^[\w-]{43}$/);
    const [real, ours] = [await sessionRow(form), await sessionRow(seeded)];
    expect(real).toBeDefined();
    // Each session has a session ID of its own (random, as the id is), in the same form.
    expect(ours!.sid).toMatch(/^[\w-]{22}$/);
    expect(real!.sid).toMatch(/^[\w-]{22}$/);
    expect({ ...ours, id_hash: real!.id_hash, sid: real!.sid }).toEqual(real);
    expect(ours!.expires_at - ours!.auth_time).toBe(server.config.sessionTtlSeconds * 1000);
  });

  it('pages, consent and the authorization endpoint see the user; the ID token has its auth_time and amr; sign-out ends it', async () => {
    const clock = ownClock(server);
    const b = await signedInBrowser(server);
    const authTime = clock.now();
    expect(await signedInAs(b)).toBe('alice');
    clock.advance(5_000);
    const { callback, verifier } = await authorize(server, b, { clientId, redirectUri, scope: 'openid' });
    const tokens = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code')!,
      redirect_uri: redirectUri,
      client_id: clientId,
      code_verifier: verifier,
    });
    expect(tokens.status).toBe(200);
    expect(decodeJwt(tokens.json.id_token)).toMatchObject({ auth_time: Math.floor(authTime / 1000), amr: ['pwd'] });
    const page = await b.get('/signout');
    expect((await b.postForm('/signout', { _csrf: hidden(page.text, '_csrf') })).status).toBe(200);
    expect(b.cookies.has('authcli_session')).toBe(false);
    expect(await signedInAs(b)).toBeUndefined();
  });

  it('a forged cookie is refused: a random value, the stored hash itself, a session past its lifetime, a disabled user', async () => {
    const random = new Browser(server.url);
    random.cookies.set('authcli_session', randomToken(32));
    expect(await signedInAs(random)).toBeUndefined();

    const seeded = await signedInBrowser(server);
    const byHash = new Browser(server.url);
    byHash.cookies.set('authcli_session', sha256Hex(seeded.cookies.get('authcli_session')!));
    expect(await signedInAs(byHash)).toBeUndefined();
    expect(await signedInAs(seeded)).toBe('alice');

    const clock = ownClock(server);
    clock.advance(server.config.sessionTtlSeconds * 1000);
    expect(await signedInAs(seeded)).toBeUndefined();

    await seedUser(server, 'dave');
    const disabled = await signedInBrowser(server, 'dave');
    expect(await signedInAs(disabled)).toBe('dave');
    await server.store.users.setDisabled('dave', server.clock.now());
    expect(await signedInAs(disabled)).toBeUndefined();
  });
});

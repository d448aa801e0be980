import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { Browser as Chromium, BrowserContext, CDPSession, Page } from 'playwright-core';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeJwt } from 'jose';
import { openStore } from '@authcli/server';
import { challengeS256, generateVerifier } from '@authcli/pkce';
import { launchChromium, screenshotPath } from '@authcli/test-support/chromium';
import { addApp, addUsers } from '@authcli/test-support/seed';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const PASSWORD = 'passkey person 1';

/**
 * Passkeys in a real Chromium with a virtual authenticator (CDP WebAuthn domain: a platform authenticator
 * with user verification, as a laptop's fingerprint reader is): added on /account, listed, used to sign in
 * without a password, refused without user verification, removed, and reset by the operator. The server runs
 * as a process at http://localhost:<port>: a browser takes no IP address as a passkey's RP ID.
 */
describe('passkeys in a real Chromium with a virtual authenticator', () => {
  let server: ServerProcess;
  /** The server's issuer, http://localhost:<port>: a browser takes no IP address as a passkey's RP ID. */
  let issuer: string;
  let chromium: Chromium;
  let clientId: string;
  /** The application's callback: a loopback listener of the test (a route cannot catch the redirect after consent). */
  let callbackServer: Server;
  let CALLBACK: string;
  const USERS = ['pat', 'quinn', 'robin', 'sam', 'toni', 'uma', 'vic', 'wes', 'xia'];
  let strictId: string;

  const passkeysOf = async (username: string) => {
    const store = await openStore(server.env.DATABASE_URL!);
    try {
      const user = await store.users.findByUsername(username);
      return user ? await store.passkeys.listByUser(user.id) : [];
    } finally {
      await store.close();
    }
  };

  /**
   * A browser tab of its own with a virtual authenticator of its own (a platform authenticator with user
   * verification, as a laptop's fingerprint reader is), so each test holds only its own person's passkeys.
   * The virtual authenticator answers a conditional (autofill) request at once, as if the person had picked
   * the passkey in the username field's suggestions: the tab offers autofill only when asked to.
   */
  async function tab(opts: { autofill?: boolean } = {}) {
    const context: BrowserContext = await chromium.newContext({ viewport: { width: 1280, height: 900 } });
    const page: Page = await context.newPage();
    if (!opts.autofill) {
      await page.addInitScript(() => {
        PublicKeyCredential.isConditionalMediationAvailable = async () => false;
      });
    }
    const cdp: CDPSession = await context.newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    const addAuthenticator = async () =>
      (
        (await cdp.send('WebAuthn.addVirtualAuthenticator', {
          options: {
            protocol: 'ctap2',
            transport: 'internal',
            hasResidentKey: true,
            hasUserVerification: true,
            isUserVerified: true,
            automaticPresenceSimulation: true,
          },
        })) as { authenticatorId: string }
      ).authenticatorId;
    let authenticatorId = await addAuthenticator();
    const t = {
      page,
      /** Another device: the authenticator is replaced by a new one, holding no passkey (the old one's are excluded). */
      async newDevice() {
        await cdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId });
        authenticatorId = await addAuthenticator();
      },
      credentials: async () =>
        ((await cdp.send('WebAuthn.getCredentials', { authenticatorId })) as { credentials: unknown[] }).credentials.length,
      userVerified: (isUserVerified: boolean) => cdp.send('WebAuthn.setUserVerified', { authenticatorId, isUserVerified }),
      async signInWithPassword(username: string) {
        await page.goto(`${issuer}/signin`);
        await page.getByLabel('Username').fill(username);
        await page.getByLabel('Password').fill(PASSWORD);
        await page.getByRole('button', { name: 'Sign in', exact: true }).click();
        await page.waitForURL(`${issuer}/`);
      },
      async addPasskey(name: string) {
        await page.goto(`${issuer}/account`);
        await page.getByLabel('Name for a new passkey').fill(name);
        await page.getByRole('button', { name: 'Add a passkey' }).click();
        // The notice, and the same words in the account's history below it.
        await page.getByText(`Added the passkey "${name}"`).first().waitFor();
      },
      async signOut() {
        await page.goto(`${issuer}/account`);
        await page.getByRole('button', { name: 'Sign out' }).click();
        await page.getByRole('heading', { name: 'Signed out' }).waitFor();
      },
      /** The passkey sign-in's error, once the page shows one. */
      async signInError(): Promise<string> {
        const error = page.locator('#passkey-signin-error');
        await error.waitFor({ state: 'visible', timeout: 15_000 });
        return (await error.textContent()) ?? '';
      },
      async signedIn(): Promise<boolean> {
        await page.goto(`${issuer}/account`);
        return new URL(page.url()).pathname === '/account';
      },
    };
    onTestFinished(() => context.close());
    return t;
  }

  beforeAll(async () => {
    callbackServer = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => callbackServer.listen(0, '127.0.0.1', r));
    CALLBACK = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}/cb`;
    server = await startServerProcess({ env: { AUTHCLI_ISSUER: 'http://localhost:{port}' } });
    issuer = server.issuer.replace('127.0.0.1', 'localhost');
    await addUsers(
      server.env,
      USERS.map((username) => ({ username, password: PASSWORD })),
    );
    clientId = (await addApp(server.env, { name: 'Relying App', kind: 'public', callbackUrls: [CALLBACK], scopes: ['openid'] })).client_id;
    strictId = (await addApp(server.env, { name: 'Strict App', kind: 'public', callbackUrls: [CALLBACK], scopes: ['openid'] })).client_id;
    chromium = await launchChromium();
  });
  afterAll(async () => {
    callbackServer?.close();
    await chromium?.close();
    await server?.stop();
  });

  it('a passkey is added on /account and listed there and by the operator', async () => {
    const t = await tab();
    await t.signInWithPassword('pat');
    await t.addPasskey('Test laptop');
    await expect(t.page.locator('#passkeys ~ ul li strong').allTextContents()).resolves.toEqual(['Test laptop']);
    await t.page.screenshot({ path: screenshotPath('account-passkeys'), fullPage: true });
    const [stored] = await passkeysOf('pat');
    expect(stored).toMatchObject({ name: 'Test laptop', backed_up: 0, last_used_at: null });
    expect(await t.credentials()).toBe(1);
    const listed = await serverCommand(['users', 'passkeys', 'pat', '--json'], server.env);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject([{ name: 'Test laptop', id: stored!.id, synced: false, last_used: null }]);
  });

  it('a passkey added without a name is named after the browser, its system and the day, on /account and for the operator', async () => {
    const t = await tab();
    await t.signInWithPassword('wes');
    await t.page.goto(`${issuer}/account`);
    await t.page.getByText('Left empty, it is named after this browser, its system and the date.').waitFor();
    await t.page.getByRole('button', { name: 'Add a passkey' }).click();
    await t.page
      .getByText(/^Added the passkey "/)
      .first()
      .waitFor();
    const [stored] = await passkeysOf('wes');
    // Chromium (headless) on this Linux machine, on the day the server stored it (UTC).
    const day = new Date(Number(stored!.created_at));
    const month = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'][day.getUTCMonth()];
    const name = `Chrome on Linux, ${day.getUTCDate()} ${month} ${day.getUTCFullYear()}`;
    expect(stored!.name).toBe(name);
    await expect(t.page.locator('#passkeys ~ ul li strong').allTextContents()).resolves.toEqual([name]);
    const listed = await serverCommand(['users', 'passkeys', 'wes'], server.env);
    expect(listed.stdout).toContain(`${name}  no`);
  });

  it('sign in with the passkey and no password: the application gets an ID token with acr phr and amr mfa', async () => {
    const t = await tab();
    await t.signInWithPassword('quinn');
    await t.addPasskey('Laptop');
    await t.signOut();
    const verifier = generateVerifier();
    const authorize = `${issuer}/oauth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: CALLBACK,
      scope: 'openid',
      state: 'st',
      nonce: 'n'.repeat(22),
      code_challenge: await challengeS256(verifier),
      code_challenge_method: 'S256',
    })}`;
    await t.page.goto(authorize);
    await t.page.getByRole('button', { name: 'Sign in with a passkey' }).waitFor();
    await t.page.screenshot({ path: screenshotPath('signin-passkey') });
    await t.page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await t.page.getByRole('button', { name: 'Approve' }).click();
    await t.page.waitForURL((url) => url.href.startsWith(CALLBACK));
    const code = new URL(t.page.url()).searchParams.get('code')!;
    const res = await fetch(`http://127.0.0.1:${new URL(issuer).port}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: CALLBACK,
        client_id: clientId,
        code_verifier: verifier,
      }),
    });
    expect(res.status).toBe(200);
    const idToken = decodeJwt(((await res.json()) as { id_token: string }).id_token);
    expect(idToken.acr).toBe('phr');
    expect(idToken.amr).toEqual(['hwk', 'mfa']);
    const [used] = await passkeysOf('quinn');
    expect(used!.last_used_at).not.toBeNull();
  });

  it('the username field offers the passkey (autofill): picking it signs in, with no button pressed', async () => {
    const t = await tab({ autofill: true });
    // Adding it: the sign-in with the password happens before any passkey exists, so autofill has none to offer.
    await t.signInWithPassword('robin');
    await t.addPasskey('Laptop');
    await t.signOut();
    await expect(t.page.evaluate(() => PublicKeyCredential.isConditionalMediationAvailable())).resolves.toBe(true);
    const optionsAsked = t.page.waitForResponse((r) => r.url().endsWith('/signin/passkey/options'));
    // The page as served: read over plain HTTP, since the browser may leave it (the passkey picked) before its body is read.
    const served = await fetch(`${issuer}/signin`);
    expect(await served.text()).toContain('autocomplete="username webauthn"');
    await t.page.goto(`${issuer}/signin`);
    const username = t.page.getByLabel('Username');
    // The virtual authenticator picks the passkey as soon as the browser offers it; a person would put the
    // cursor in the field first, which is done here too when the page is still there.
    expect((await optionsAsked).status()).toBe(200);
    if (new URL(t.page.url()).pathname === '/signin') await username.focus({ timeout: 1000 }).catch(() => undefined);
    await t.page.waitForURL(`${issuer}/`);
    expect(await t.signedIn()).toBe(true);
  });

  it('without user verification the passkey sign-in is refused and no session is made', async () => {
    const t = await tab();
    await t.signInWithPassword('sam');
    await t.addPasskey('Laptop');
    await t.signOut();
    await t.userVerified(false);
    await t.page.goto(`${issuer}/signin`);
    await t.page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    expect(await t.signInError()).toMatch(/verif|cancelled/i);
    expect(await t.signedIn()).toBe(false);
    const [unused] = await passkeysOf('sam');
    expect(unused!.last_used_at).toBeNull();
  });

  it("a removed passkey no longer signs in, and the page says so; the operator resets a lost device's, ending its sessions", async () => {
    const t = await tab();
    await t.signInWithPassword('toni');
    await t.addPasskey('Old laptop');
    // Signed in with the password: removing a passkey asks for a passkey sign-in first, then resumes the page.
    await t.page.getByRole('button', { name: 'Remove the passkey Old laptop' }).click();
    await t.page.getByRole('heading', { name: 'Sign in with a passkey' }).waitFor();
    await t.page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await t.page.waitForURL(`${issuer}/account`);
    await t.page.getByRole('button', { name: 'Remove the passkey Old laptop' }).click();
    await t.page.getByText('Removed the passkey').first().waitFor();
    expect(await passkeysOf('toni')).toEqual([]);
    await t.signOut();
    // The authenticator still holds it; the server no longer knows it.
    expect(await t.credentials()).toBe(1);
    await t.page.goto(`${issuer}/signin`);
    await t.page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    expect(await t.signInError()).toContain('not registered here');
    expect(await t.signedIn()).toBe(false);

    // A new one, used to sign in; then the device is lost and the operator resets the account's passkeys.
    const phone = await tab();
    await phone.signInWithPassword('toni');
    await phone.addPasskey('Phone');
    await phone.signOut();
    await phone.page.goto(`${issuer}/signin`);
    await phone.page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await phone.page.waitForURL(`${issuer}/`);
    // Without a terminal, only --yes removes them.
    const unasked = await serverCommand(['users', 'reset-passkeys', 'toni'], server.env);
    expect(unasked.code).toBe(1);
    expect(unasked.stderr).toContain('not removed: no terminal to ask whether to remove the');
    const reset = await serverCommand(['users', 'reset-passkeys', 'toni', '--yes'], server.env);
    expect(reset).toMatchObject({ code: 0 });
    expect(reset.stdout).toContain('removed 1 passkey of toni; ended 1 browser session signed in with one');
    expect(await passkeysOf('toni')).toEqual([]);
    expect(await phone.signedIn()).toBe(false);
    await phone.signInWithPassword('toni');
    const none = await serverCommand(['users', 'passkeys', 'toni'], server.env);
    expect(none.stdout.trim()).toBe('toni has no passkey');
    const unknown = await serverCommand(['users', 'reset-passkeys', 'nobody'], server.env);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr.trim()).toBe('authcli-server: no user nobody');
  });

  it("a password alone, typed fresh, can neither add a passkey to an account that has one nor remove the owner's, so it never reaches acr phr; the owner with a passkey can", async () => {
    const owner = await tab();
    await owner.signInWithPassword('vic');
    await owner.addPasskey('Owner laptop');
    // Someone with vic's password, in a browser of their own with an authenticator of their own.
    const attacker = await tab();
    await attacker.signInWithPassword('vic');
    await attacker.page.goto(`${issuer}/account`);
    await attacker.page.getByLabel('Name for a new passkey').fill('Mine now');
    await attacker.page.getByRole('button', { name: 'Add a passkey' }).click();
    // Sent to a passkey sign-in, which their authenticator cannot give: no passkey of theirs is registered.
    await attacker.page.getByRole('heading', { name: 'Sign in with a passkey' }).waitFor();
    expect(new URL(attacker.page.url()).pathname).toBe('/signin');
    expect(await attacker.page.locator('main').textContent()).toContain('Changing how you sign in needs a sign-in with a passkey');
    expect(await attacker.credentials()).toBe(0);
    await attacker.page.goto(`${issuer}/account`);
    await attacker.page.getByRole('button', { name: 'Remove the passkey Owner laptop' }).click();
    await attacker.page.getByRole('heading', { name: 'Sign in with a passkey' }).waitFor();
    expect((await passkeysOf('vic')).map((p) => p.name)).toEqual(['Owner laptop']);
    // An application that requires phr still asks the attacker's session for a passkey.
    const strict = (await addApp(server.env, { name: 'Strict Too', kind: 'public', callbackUrls: [CALLBACK], scopes: ['openid'] }))
      .client_id;
    expect((await serverCommand(['apps', 'update', strict, '--require-acr', 'phr'], server.env)).code).toBe(0);
    await attacker.page.goto(
      `${issuer}/oauth/authorize?${new URLSearchParams({
        response_type: 'code',
        client_id: strict,
        redirect_uri: CALLBACK,
        scope: 'openid',
        state: 'st',
        code_challenge: await challengeS256(generateVerifier()),
        code_challenge_method: 'S256',
      })}`,
    );
    await attacker.page.getByRole('heading', { name: 'Sign in with a passkey' }).waitFor();
    expect(attacker.page.url().startsWith(CALLBACK)).toBe(false);
    // The owner, signed in with the password too, steps up with the passkey and then adds one (of another device:
    // an authenticator holds one passkey per account) and removes the first.
    await owner.page.goto(`${issuer}/account`);
    await owner.page.getByLabel('Name for a new passkey').fill('Phone');
    await owner.page.getByRole('button', { name: 'Add a passkey' }).click();
    await owner.page.getByRole('heading', { name: 'Sign in with a passkey' }).waitFor();
    await owner.page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await owner.page.waitForURL(`${issuer}/account`);
    await owner.newDevice();
    await owner.addPasskey('Phone');
    await owner.page.getByRole('button', { name: 'Remove the passkey Owner laptop' }).click();
    await owner.page.getByText('Removed the passkey "Owner laptop"').first().waitFor();
    expect((await passkeysOf('vic')).map((p) => p.name)).toEqual(['Phone']);
    // The history shows each addition and removal, and from where.
    await expect(owner.page.getByText('Added the passkey "Phone"').count()).resolves.toBeGreaterThan(0);
    await expect(owner.page.getByText(/Added .* \(UTC\) from 127\.0\.0\.1;/).count()).resolves.toBe(1);
  });

  it('a device code opened by its link, for an application that requires phr: Continue, the passkey step-up, and then its confirmation page at once; Approve, and the device gets acr phr', async () => {
    const device = (
      await addApp(server.env, {
        name: 'Strict Device',
        kind: 'public',
        scopes: ['openid'],
        grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'],
        requireAcr: 'phr',
      })
    ).client_id;
    const token = `http://127.0.0.1:${new URL(issuer).port}/oauth`;
    const asked = (await (
      await fetch(`${token}/device/authorization`, { method: 'POST', body: new URLSearchParams({ client_id: device, scope: 'openid' }) })
    ).json()) as { device_code: string; user_code: string; verification_uri_complete: string };
    const t = await tab();
    await t.signInWithPassword('xia');
    await t.addPasskey('Laptop');
    // The link the device shows: the code filled in, Continue pressed; the application needs the passkey first.
    await t.page.goto(asked.verification_uri_complete);
    await expect(t.page.getByLabel('Code').inputValue()).resolves.toBe(asked.user_code);
    await t.page.getByRole('button', { name: 'Continue' }).click();
    await t.page.getByText('Approving this device sign-in needs a sign-in with a passkey').waitFor();
    await t.page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    // Not the code page again waiting for another Continue: the confirmation, with the code to check on the device.
    await t.page.getByRole('heading', { name: 'Sign in to Strict Device on your device?' }).waitFor();
    expect(new URL(t.page.url()).pathname).toBe('/device');
    await t.page.getByLabel(`My device shows ${asked.user_code}, and I started this sign-in`).check();
    await t.page.getByRole('button', { name: 'Approve' }).click();
    await t.page.getByRole('heading', { name: 'Device connected' }).waitFor();
    const res = await fetch(`${token}/token`, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
        device_code: asked.device_code,
        client_id: device,
      }),
    });
    expect(res.status).toBe(200);
    expect(decodeJwt(((await res.json()) as { id_token: string }).id_token)).toMatchObject({ acr: 'phr', amr: ['hwk', 'mfa'] });
  });

  it('an application the operator makes require phr: a password session is stepped up to the passkey, then the code says acr phr', async () => {
    const update = await serverCommand(['apps', 'update', strictId, '--require-acr', 'phr', '--json'], server.env);
    expect(update.code).toBe(0);
    expect(JSON.parse(update.stdout)).toMatchObject({ client_id: strictId, require_acr: 'phr' });
    const bogus = await serverCommand(['apps', 'update', strictId, '--require-acr', 'loa4'], server.env);
    expect(bogus.code).not.toBe(0);
    expect(bogus.stderr.trim()).toBe('authcli-server: require-acr must be phr (a passkey sign-in) or none');

    const t = await tab();
    await t.signInWithPassword('uma');
    await t.addPasskey('Laptop');
    const verifier = generateVerifier();
    await t.page.goto(
      `${issuer}/oauth/authorize?${new URLSearchParams({
        response_type: 'code',
        client_id: strictId,
        redirect_uri: CALLBACK,
        scope: 'openid',
        state: 'st',
        code_challenge: await challengeS256(verifier),
        code_challenge_method: 'S256',
      })}`,
    );
    await t.page.getByRole('heading', { name: 'Sign in with a passkey' }).waitFor();
    await t.page.screenshot({ path: screenshotPath('step-up'), fullPage: true });
    await t.page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await t.page.getByRole('button', { name: 'Approve' }).click();
    await t.page.waitForURL((url) => url.href.startsWith(CALLBACK));
    const code = new URL(t.page.url()).searchParams.get('code')!;
    const res = await fetch(`${server.issuer}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: CALLBACK,
        client_id: strictId,
        code_verifier: verifier,
      }),
    });
    expect(res.status).toBe(200);
    expect(decodeJwt(((await res.json()) as { id_token: string }).id_token)).toMatchObject({ acr: 'phr', amr: ['hwk', 'mfa'] });
  });
});

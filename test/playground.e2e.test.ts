import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calculateJwkThumbprint, decodeJwt, type JWK } from 'jose';
import type { Browser as Chromium, BrowserContext, Page } from 'playwright-core';
import { launchChromium, screenshotPath } from '@authcli/test-support/chromium';
import { addUsers } from '@authcli/test-support/seed';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const PASSWORD = 'playground pass 1';

describe('Developer > OAuth playground in a real Chromium', () => {
  let server: ServerProcess;
  let chromium: Chromium;
  let context: BrowserContext;
  /** The application the playground tests run as, its consent already given (see beforeAll). */
  let clientId: string;

  /** Registers a public application with the playground callback (and offline_access) in the dashboard. */
  async function registerPlaygroundApp(name: string, opts: { requireDpop?: boolean } = {}): Promise<string> {
    const page = await context.newPage();
    await page.goto(`${server.issuer}/dashboard/apps/new`);
    await page.getByLabel('Name').fill(name);
    await page.getByLabel('Callback URLs').fill(`${server.issuer}/developer/playground`);
    await page.getByRole('checkbox', { name: 'offline_access' }).check();
    if (opts.requireDpop) await page.getByRole('checkbox', { name: /^Require DPoP/ }).check();
    await page.getByRole('button', { name: 'Register' }).click();
    await page.getByText('Client ID').waitFor();
    const id = (await page.locator('p code').first().textContent())!;
    await page.close();
    expect(id).toMatch(/^[\w-]{22}$/);
    return id;
  }

  /** Opens the playground with `app` chosen (each test names its own: several may be registered, in any order). */
  async function openPlayground(page: Page, app = clientId): Promise<void> {
    await page.goto(`${server.issuer}/developer/playground`);
    // The first application's scopes load with the page; choosing another empties them until its own have loaded.
    await page.locator('#scopes input').first().waitFor();
    await page.locator('#client_id').selectOption(app);
    await page.locator('#scopes input').first().waitFor();
  }

  beforeAll(async () => {
    server = await startServerProcess();
    await addUsers(server.env, [{ username: 'dev', password: PASSWORD }]);
    chromium = await launchChromium();
    context = await chromium.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${server.issuer}/dashboard`);
    await page.getByLabel('Username').fill('dev');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Applications' }).waitFor();
    await page.close();
    // The application most tests run as, approved once here: their authorization requests then answer with the
    // callback at once, whichever test runs first.
    clientId = await registerPlaygroundApp('Playground app');
    const approve = await context.newPage();
    await openPlayground(approve);
    await approve.getByRole('button', { name: 'Start' }).click();
    await approve.getByRole('button', { name: 'Approve' }).click();
    await approve.locator('#playground[data-done]').waitFor();
    await approve.close();
  });
  afterAll(async () => {
    await chromium?.close();
    await server?.stop();
  });

  /** Watches a page for token requests, which the blocking rules say must not be sent. */
  function tokenRequests(page: Page): string[] {
    const seen: string[] = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/oauth/token')) seen.push(r.method());
    });
    return seen;
  }

  /**
   * Runs Start (consent is already remembered, so the server answers the
   * authorization request with the callback redirect at once) and returns the
   * callback URL instead of following it.
   */
  async function callbackUrl(page: Page, opts: { dpop?: boolean } = {}): Promise<string> {
    let captured = '';
    await page.route('**/oauth/authorize?*', async (route) => {
      const res = await route.fetch({ maxRedirects: 0 });
      captured = res.headers().location ?? '';
      await route.abort();
    });
    await openPlayground(page);
    if (opts.dpop) await page.getByRole('checkbox', { name: /^DPoP:/ }).check();
    await page.getByRole('button', { name: 'Start' }).click();
    await expect.poll(() => captured).toContain('code=');
    await page.unroute('**/oauth/authorize?*');
    return captured;
  }

  it('register a public application with the playground callback in the dashboard', async () => {
    const registered = await registerPlaygroundApp('Registered app');
    const page = await context.newPage();
    await page.goto(`${server.issuer}/dashboard`);
    await expect.poll(() => page.getByRole('link', { name: 'Playground', exact: true }).count()).toBe(1);
    await page.screenshot({ path: screenshotPath('dashboard'), fullPage: true });
    await page.goto(`${server.issuer}/developer/playground`);
    expect(await page.locator(`#client_id option[value="${registered}"]`).count()).toBe(1);
    await page.close();
  });

  it('end to end: sign in, approve, tokens shown, signature and nonce checks passed, refresh and userinfo', async () => {
    // An application of its own, not yet approved: the consent page is shown whatever ran before.
    const app = await registerPlaygroundApp('End to end app');
    const page = await context.newPage();
    await openPlayground(page, app);
    await page.getByRole('button', { name: 'Start' }).click();
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.locator('#playground[data-done]').waitFor();
    await page.locator('[data-check="nonce matches the request"]').waitFor();
    expect(await page.getByLabel('Token response').textContent()).toMatch(/^HTTP 200/);
    expect(await page.locator('[data-check="signature verified against the JWKS"]').getAttribute('class')).toContain('ok');
    expect(await page.locator('[data-check="nonce matches the request"]').getAttribute('class')).toContain('ok');
    expect(await page.locator('[data-check="iss equals the issuer (RFC 9207)"]').getAttribute('class')).toContain('ok');
    expect(await page.getByLabel('curl').textContent()).toContain('curl -sS -X POST');
    expect(await page.getByLabel('Authorization request URL').textContent()).toMatch(/code_challenge_method=S256/);
    expect(page.url()).toBe(`${server.issuer}/developer/playground`);
    await page.getByRole('button', { name: 'Call userinfo' }).click();
    await expect.poll(async () => (await page.getByLabel('Userinfo response').textContent()) ?? '').toContain('HTTP 200');
    await page.getByRole('button', { name: 'Refresh tokens' }).first().click();
    await expect.poll(() => page.getByLabel('Token response').count()).toBe(2);
    await page.screenshot({ path: screenshotPath('playground-result'), fullPage: true });
    // Nothing of the request stays behind: sessionStorage entry used up, localStorage never touched.
    expect(await page.evaluate(() => [sessionStorage.length, localStorage.length])).toEqual([0, 0]);
    await page.close();
  });

  /** The DPoP key pairs the playground keeps in IndexedDB across the redirect (see web/playground/dpop.ts). */
  function storedDpopKeys(page: Page): Promise<number> {
    return page.evaluate(
      () =>
        new Promise<number>((resolve, reject) => {
          const open = indexedDB.open('authcli-playground', 1);
          open.onupgradeneeded = () => open.result.createObjectStore('dpop-keys', { keyPath: 'state' });
          open.onerror = () => reject(open.error);
          open.onsuccess = () => {
            const count = open.result.transaction('dpop-keys').objectStore('dpop-keys').count();
            count.onsuccess = () => {
              resolve(count.result);
              open.result.close();
            };
          };
        }),
    );
  }

  const text = async (page: Page, label: string) => (await page.getByLabel(label, { exact: true }).last().textContent()) ?? '';
  const parsed = async (page: Page, label: string) => JSON.parse(await text(page, label)) as Record<string, unknown>;
  const checkClass = (page: Page, label: string) => page.locator(`[data-check="${label}"]`).last().getAttribute('class');

  it('rfc9449 DPoP toggle: proofs with the nonce, cnf.jkt equal to the key thumbprint, replays and the Bearer downgrade refused', async () => {
    // An application of its own, not yet approved: the consent page is shown whatever ran before.
    const app = await registerPlaygroundApp('DPoP app');
    const page = await context.newPage();
    const cspViolations: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
    });
    await openPlayground(page, app);
    await page.getByRole('checkbox', { name: /^DPoP:/ }).check();
    await page.getByRole('button', { name: 'Start' }).click();
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.locator('#playground[data-done]').waitFor();

    // The authorization request named the key (RFC 9449 §10); the key came back from IndexedDB for the callback.
    const request = await parsed(page, 'Authorization request parameters');
    const jkt = await text(page, 'DPoP key thumbprint');
    expect(jkt).toMatch(/^[\w-]{43}$/);
    expect(request.dpop_jkt).toBe(jkt);
    expect(await checkClass(page, 'DPoP key of the request kept in this browser')).toContain('ok');

    // The server asked for its nonce first (§8); the second proof carried it and was accepted.
    expect(await text(page, 'Nonce challenge')).toMatch(/^HTTP 400[\s\S]*dpop-nonce: [\s\S]*"error":"use_dpop_nonce"/);
    expect(await text(page, 'Token response')).toMatch(/^HTTP 200/);
    const header = await parsed(page, 'DPoP proof header');
    expect(header).toMatchObject({ typ: 'dpop+jwt', alg: 'ES256', jwk: { kty: 'EC', crv: 'P-256' } });
    expect(header.jwk).not.toHaveProperty('d');
    expect(await calculateJwkThumbprint(header.jwk as JWK, 'sha256')).toBe(jkt);
    const proof = await parsed(page, 'DPoP proof payload');
    expect(proof).toMatchObject({ htm: 'POST', htu: `${server.issuer}/oauth/token` });
    expect(proof.jti).toEqual(expect.any(String));
    expect(proof.nonce).toEqual(expect.any(String));
    expect(Math.abs((proof.iat as number) - Date.now() / 1000)).toBeLessThan(60);

    // The binding: token_type DPoP, cnf.jkt the thumbprint shown, and the access token itself says so.
    expect(await text(page, 'token_type')).toBe('DPoP');
    expect(await parsed(page, 'Access token cnf')).toEqual({ jkt });
    const tokens = JSON.parse((await text(page, 'Token response')).split('\n\n').slice(1).join('\n\n')) as Record<string, string>;
    expect(tokens.token_type).toBe('DPoP');
    expect(decodeJwt(tokens.access_token!).cnf).toEqual({ jkt });
    for (const label of ['token_type is DPoP', 'cnf.jkt equals the key thumbprint', 'private key is non-extractable']) {
      expect(await checkClass(page, label)).toContain('ok');
    }
    expect(await page.locator('[data-check="private key is non-extractable"]').textContent()).toContain('exportKey: InvalidAccessError');

    // Userinfo with the DPoP scheme and a proof naming the token (ath).
    await page.getByRole('button', { name: 'Call userinfo' }).click();
    await expect.poll(() => text(page, 'Userinfo response')).toMatch(/^HTTP 200/);
    expect(await text(page, 'Userinfo request')).toMatch(/authorization: DPoP …/);
    const userinfoProof = await parsed(page, 'DPoP proof payload');
    expect(userinfoProof).toMatchObject({ htm: 'GET', htu: `${server.issuer}/oauth/userinfo`, ath: expect.any(String) });

    // The very same userinfo request again: the proof's jti was used (§11.1), with the DPoP challenge.
    await page.getByRole('button', { name: 'Replay this userinfo request' }).click();
    await expect.poll(() => page.getByLabel('Userinfo replay response', { exact: true }).count()).toBe(1);
    const userinfoReplay = await text(page, 'Userinfo replay response');
    expect(userinfoReplay).toMatch(/^HTTP 401/);
    expect(userinfoReplay).toMatch(/www-authenticate: DPoP algs="[^"]*", error="invalid_dpop_proof", error_description="[^"]*already used/);
    expect(await checkClass(page, 'replayed userinfo request refused')).toContain('ok');

    // The very same token request again.
    await page.getByRole('button', { name: 'Replay the token request' }).click();
    await expect.poll(() => page.getByLabel('Token replay response', { exact: true }).count()).toBe(1);
    const tokenReplay = await text(page, 'Token replay response');
    expect(tokenReplay).toMatch(/^HTTP 400/);
    expect(tokenReplay).toContain('"error":"invalid_dpop_proof"');
    expect(tokenReplay).toContain('already used');
    expect(await checkClass(page, 'replayed token request refused')).toContain('ok');

    // The bound access token without its key, as a Bearer token.
    await page.getByRole('button', { name: 'Send the token as Bearer' }).click();
    await expect.poll(() => page.getByLabel('Bearer downgrade response', { exact: true }).count()).toBe(1);
    const downgrade = await text(page, 'Bearer downgrade response');
    expect(downgrade).toMatch(/^HTTP 401/);
    expect(downgrade).toMatch(/www-authenticate: DPoP algs="[^"]*", error="invalid_token"/);
    expect(await checkClass(page, 'Bearer downgrade refused')).toContain('ok');

    // A refresh with a proof by the same key: a new DPoP-bound token.
    await page.getByRole('button', { name: 'Refresh tokens' }).first().click();
    await expect.poll(() => page.getByLabel('Token response', { exact: true }).count()).toBe(2);
    expect(await text(page, 'Token response')).toMatch(/^HTTP 200[\s\S]*"token_type":"DPoP"/);
    await page.screenshot({ path: screenshotPath('playground-dpop'), fullPage: true });

    // Nothing of the request stays behind, the key pair included.
    expect(await page.evaluate(() => [sessionStorage.length, localStorage.length])).toEqual([0, 0]);
    expect(await storedDpopKeys(page)).toBe(0);
    expect(cspViolations).toEqual([]);
    await page.close();
  });

  it('rfc9449 the DPoP key waits in IndexedDB non-extractable, and the callback uses it up', async () => {
    const page = await context.newPage();
    const url = await callbackUrl(page, { dpop: true });
    await page.goto(`${server.issuer}/developer/playground`);
    // Before the callback: the key pair the request named, its private half unreadable even to the page.
    const atRest = await page.evaluate(async () => {
      const saved = JSON.parse(sessionStorage.getItem(sessionStorage.key(0)!)!) as { url: string; dpop_jkt: string };
      const record = await new Promise<{ privateKey: CryptoKey; jkt: string }>((resolve, reject) => {
        const open = indexedDB.open('authcli-playground', 1);
        open.onerror = () => reject(open.error);
        open.onsuccess = () => {
          const all = open.result.transaction('dpop-keys').objectStore('dpop-keys').getAll();
          all.onsuccess = () => resolve(all.result[0]);
        };
      });
      const exported = await crypto.subtle.exportKey('jwk', record.privateKey).then(
        () => 'exported',
        (err: Error) => err.name,
      );
      return {
        requested: new URL(saved.url).searchParams.get('dpop_jkt'),
        saved: saved.dpop_jkt,
        jkt: record.jkt,
        extractable: record.privateKey.extractable,
        usages: record.privateKey.usages,
        algorithm: record.privateKey.algorithm,
        exported,
      };
    });
    expect(atRest).toEqual({
      requested: atRest.jkt,
      saved: atRest.jkt,
      jkt: expect.stringMatching(/^[\w-]{43}$/),
      extractable: false,
      usages: ['sign'],
      algorithm: { name: 'ECDSA', namedCurve: 'P-256' },
      exported: 'InvalidAccessError',
    });
    await page.goto(url);
    await page.locator('#playground[data-done]').waitFor();
    expect(await text(page, 'token_type')).toBe('DPoP');
    expect(await parsed(page, 'Access token cnf')).toEqual({ jkt: atRest.jkt });
    expect(await storedDpopKeys(page)).toBe(0);
    await page.close();
  });

  it('rfc9449 a DPoP callback whose key pair is gone is blocked and sends no token request', async () => {
    const page = await context.newPage();
    const url = await callbackUrl(page, { dpop: true });
    await page.goto(`${server.issuer}/developer/playground`);
    await page.evaluate(
      () =>
        new Promise((resolve, reject) => {
          const open = indexedDB.open('authcli-playground', 1);
          open.onerror = () => reject(open.error);
          open.onsuccess = () => {
            const tx = open.result.transaction('dpop-keys', 'readwrite');
            tx.objectStore('dpop-keys').clear();
            tx.oncomplete = resolve;
          };
        }),
    );
    const sent = tokenRequests(page);
    await page.goto(url);
    await page.locator('#playground[data-done]').waitFor();
    expect(await checkClass(page, 'DPoP key of the request kept in this browser')).toContain('fail');
    expect(await page.locator('#blocked').textContent()).toMatch(/DPoP key pair of this request is not in this browser/);
    expect(sent).toEqual([]);
    await page.close();
  });

  it('rfc9449 the DPoP box is ticked for an application that requires DPoP, and its flow completes bound', async () => {
    const app = await registerPlaygroundApp('Requires DPoP app', { requireDpop: true });
    const page = await context.newPage();
    // The first application (the oldest, registered in beforeAll) does not require DPoP: the box is off by default.
    await openPlayground(page);
    expect(await page.getByRole('checkbox', { name: /^DPoP:/ }).isChecked()).toBe(false);
    await page.locator('#client_id').selectOption(app);
    await expect.poll(() => page.getByRole('checkbox', { name: /^DPoP:/ }).isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Start' }).click();
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.locator('#playground[data-done]').waitFor();
    expect(await text(page, 'token_type')).toBe('DPoP');
    expect(await checkClass(page, 'cnf.jkt equals the key thumbprint')).toContain('ok');
    await page.close();
  });

  it('rfc9126 PAR: ticked for an application that requires it; pushed with the DPoP proof, the browser carries only client_id and request_uri, and the flow completes bound', async () => {
    const app = await registerPlaygroundApp('Requires PAR app');
    const updated = await serverCommand(['apps', 'update', app, '--require-par'], server.env);
    expect(updated.code, updated.stderr).toBe(0);
    // The change was made by another process: the server sees it within its application cache time (1 s).
    const view = `${server.issuer}/developer/playground/apps/${app}`;
    await expect
      .poll(
        async () =>
          ((await (await context.request.get(view, { headers: { accept: 'application/json' } })).json()) as { require_par: boolean })
            .require_par,
        { timeout: 5_000 },
      )
      .toBe(true);
    const page = await context.newPage();
    const par = () => page.getByRole('checkbox', { name: /^PAR:/ });
    await openPlayground(page);
    expect(await par().isChecked()).toBe(false);
    await page.locator('#client_id').selectOption(app);
    await expect.poll(() => par().isChecked()).toBe(true);
    await page.getByRole('checkbox', { name: /^DPoP:/ }).check();
    const pushes: { dpop: boolean }[] = [];
    const authorizations: URL[] = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/oauth/par')) pushes.push({ dpop: r.headers().dpop !== undefined });
      if (r.url().includes('/oauth/authorize?')) authorizations.push(new URL(r.url()));
    });
    await page.getByRole('button', { name: 'Start' }).click();
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.locator('#playground[data-done]').waitFor();

    // One push (two with the nonce round trip), each with a proof; the front channel carries nothing else.
    expect(pushes.length).toBeGreaterThanOrEqual(1);
    expect(pushes.every((p) => p.dpop)).toBe(true);
    expect([...authorizations[0]!.searchParams.keys()].sort()).toEqual(['client_id', 'request_uri']);
    expect(authorizations[0]!.searchParams.get('request_uri')).toMatch(/^urn:ietf:params:oauth:request_uri:/);
    expect(await parsed(page, 'Pushed parameters')).toMatchObject({ client_id: app, response_type: 'code', code_challenge_method: 'S256' });
    expect(await text(page, 'token_type')).toBe('DPoP');
    expect(await checkClass(page, 'cnf.jkt equals the key thumbprint')).toContain('ok');

    // The box cleared: the server refuses the plain request of an application that requires PAR.
    await openPlayground(page, app);
    await expect.poll(() => par().isChecked()).toBe(true);
    await par().uncheck();
    await page.getByRole('button', { name: 'Start' }).click();
    await page.locator('#auth-error').waitFor();
    expect(await page.locator('#auth-error').textContent()).toMatch(/^invalid_request: /);
    await page.close();
  });

  it('rfc9449 a browser that cannot keep the DPoP key pair sends no authorization request', async () => {
    const page = await context.newPage();
    await page.addInitScript(() => Object.defineProperty(window, 'indexedDB', { value: undefined }));
    const authorize: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/oauth/authorize')) authorize.push(r.url());
    });
    await openPlayground(page);
    await page.getByRole('checkbox', { name: /^DPoP:/ }).check();
    await page.getByRole('button', { name: 'Start' }).click();
    await page.getByRole('heading', { name: 'DPoP unavailable' }).waitFor();
    expect(authorize).toEqual([]);
    expect(page.url()).toBe(`${server.issuer}/developer/playground`);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.close();
  });

  it('a callback opened in a fresh tab (no saved request) is blocked and sends no token request', async () => {
    const first = await context.newPage();
    const url = await callbackUrl(first);
    await first.close();
    const fresh = await context.newPage();
    const sent = tokenRequests(fresh);
    await fresh.goto(url);
    await fresh.locator('#playground[data-done]').waitFor();
    expect(await fresh.locator('#blocked').textContent()).toMatch(/No saved request/);
    expect(sent).toEqual([]);
    await fresh.close();
  });

  it('rfc9207 a tampered iss is blocked and sends no token request', async () => {
    const page = await context.newPage();
    const url = new URL(await callbackUrl(page));
    url.searchParams.set('iss', 'https://evil.example');
    const sent = tokenRequests(page);
    await page.goto(url.href);
    await page.locator('#playground[data-done]').waitFor();
    expect(await page.locator('#blocked').textContent()).toMatch(/not the issuer/);
    expect(sent).toEqual([]);
    // One use: the saved request is gone even though it was blocked.
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.close();
  });

  it('a saved request older than 10 minutes is not used', async () => {
    const page = await context.newPage();
    const url = await callbackUrl(page);
    const sent = tokenRequests(page);
    await page.goto(`${server.issuer}/developer/playground`);
    await page.evaluate(() => {
      for (let i = 0; i < sessionStorage.length; i++) {
        const key = sessionStorage.key(i)!;
        const saved = JSON.parse(sessionStorage.getItem(key)!);
        saved.created_at -= 10 * 60_000 + 1000;
        sessionStorage.setItem(key, JSON.stringify(saved));
      }
    });
    await page.goto(url);
    await page.locator('#playground[data-done]').waitFor();
    expect(await page.locator('#blocked').textContent()).toMatch(/No saved request/);
    expect(sent).toEqual([]);
    await page.close();
  });

  it('a missing iss is blocked too', async () => {
    const page = await context.newPage();
    const url = new URL(await callbackUrl(page));
    url.searchParams.delete('iss');
    const sent = tokenRequests(page);
    await page.goto(url.href);
    await page.locator('#playground[data-done]').waitFor();
    expect(await page.locator('#blocked').textContent()).toMatch(/no iss/);
    expect(sent).toEqual([]);
    await page.close();
  });

  it('an error callback (Deny) is shown as such', async () => {
    const page = await context.newPage();
    await openPlayground(page);
    await page.locator('#extra').fill('prompt=consent');
    await page.getByRole('button', { name: 'Start' }).click();
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.locator('#playground[data-done]').waitFor();
    expect(await page.locator('#auth-error').textContent()).toContain('access_denied');
    await page.close();
  });

  it('csrf: a dashboard form with a forged token is refused', async () => {
    const page = await context.newPage();
    await page.goto(`${server.issuer}/dashboard/apps/new`);
    await page.getByLabel('Name').fill('Forged in the browser');
    await page.getByLabel('Callback URLs').fill('https://forged.example/cb');
    await page.evaluate(() => {
      (document.querySelector('form[action="/dashboard/apps"] input[name=_csrf]') as HTMLInputElement).value = 'forged';
    });
    await page.getByRole('button', { name: 'Register' }).click();
    await page.getByRole('heading', { name: 'Form expired' }).waitFor();
    await page.goto(`${server.issuer}/dashboard`);
    expect(await page.content()).not.toContain('Forged in the browser');
    await page.close();
  });

  it("another user's application is not reachable, in the dashboard or the playground", async () => {
    await addUsers(server.env, [{ username: 'eve', password: PASSWORD }]);
    const eve = await chromium.newContext();
    const page = await eve.newPage();
    try {
      await page.goto(`${server.issuer}/signin`);
      await page.getByLabel('Username').fill('eve');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.goto(`${server.issuer}/dashboard`);
      expect(await page.content()).not.toContain('Playground app');
      const direct = await page.goto(`${server.issuer}/dashboard/apps/${clientId}`);
      expect(direct!.status()).toBe(404);
      const json = await page.goto(`${server.issuer}/developer/playground/apps/${clientId}`);
      expect(json!.status()).toBe(404);
      await page.goto(`${server.issuer}/developer/playground`);
      expect(await page.content()).not.toContain(clientId);
    } finally {
      await eve.close();
    }
  });

  it('a confidential secret is shown once, then never', async () => {
    const page = await context.newPage();
    await page.goto(`${server.issuer}/dashboard/apps/new`);
    await page.getByLabel('Name').fill('Server app');
    await page.getByLabel(/Confidential/).check();
    await page.getByLabel('Callback URLs').fill('https://server.example/cb');
    await page.getByRole('button', { name: 'Register' }).click();
    const secret = await page.getByLabel('Client secret').inputValue();
    expect(secret).toMatch(/^[\w-]{43}$/);
    await page.getByRole('link', { name: 'Done' }).click();
    expect(await page.content()).not.toContain(secret);
    // The secret page was a no-store POST answer: going back does not bring it out of a cache.
    const back = await page.goBack().then(
      () => page.content(),
      (err: Error) => err.message,
    );
    expect(back).not.toContain(secret);
    await page.close();
    const playground = await context.newPage();
    await playground.goto(`${server.issuer}/developer/playground`);
    expect(await playground.getByText('the playground acts as a public client').count()).toBe(1);
    expect(await playground.content()).not.toContain(secret);
    await playground.close();
  });
});

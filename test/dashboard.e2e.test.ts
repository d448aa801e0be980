import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser as Chromium, BrowserContext, Page } from 'playwright-core';
import { openStore } from '@authcli/server';
import { launchChromium, screenshotPath } from '@authcli/test-support/chromium';
import { addUsers } from '@authcli/test-support/seed';
import { startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const PASSWORD = 'dashboard pass 1';

/**
 * The dashboard in a real Chromium, reloading after every action: each form
 * answers 303 to a page that only reads (post-redirect-get), so a reload
 * registers, rotates or deletes nothing, and a secret is shown once.
 */
describe('dashboard in a real Chromium: post-redirect-get, confirmations, 404, phone header', () => {
  let server: ServerProcess;
  let chromium: Chromium;
  let context: BrowserContext;

  /** What the server stored, read through a store of its own (a fresh one each time: no application cache). */
  async function stored(clientId?: string) {
    const store = await openStore(server.env.DATABASE_URL!);
    try {
      return { apps: await store.applications.list(), app: clientId === undefined ? undefined : await store.applications.get(clientId) };
    } finally {
      await store.close();
    }
  }

  async function signIn(page: Page): Promise<void> {
    await page.goto(`${server.issuer}/dashboard`);
    await page.getByLabel('Username').fill('dev');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Applications' }).waitFor();
  }

  beforeAll(async () => {
    server = await startServerProcess();
    await addUsers(server.env, [{ username: 'dev', password: PASSWORD }]);
    chromium = await launchChromium();
    context = await chromium.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await context.newPage();
    await signIn(page);
    await page.close();
  });
  afterAll(async () => {
    await chromium?.close();
    await server?.stop();
  });

  it('create, reload, rotate with confirmation, reload, delete with confirmation', async () => {
    const page = await context.newPage();
    await page.addInitScript(() => {
      const copied: string[] = [];
      (window as unknown as { copied: string[] }).copied = copied;
      Object.defineProperty(navigator, 'clipboard', { value: { writeText: async (text: string) => void copied.push(text) } });
    });
    const scriptErrors: string[] = [];
    page.on('pageerror', (e) => scriptErrors.push(e.message));
    page.on('console', (m) => m.type() === 'error' && scriptErrors.push(m.text()));
    const before = (await stored()).apps.length;

    // Create: the POST answers 303 to the secret page.
    await page.goto(`${server.issuer}/dashboard/apps/new`);
    await page.getByLabel('Name').fill('Reload-proof');
    await page.getByLabel(/Confidential/).check();
    await page.getByLabel('Callback URLs').fill('https://server.example/cb');
    await page.getByRole('button', { name: 'Register' }).click();
    await page.getByRole('heading', { name: 'Application registered' }).waitFor();
    expect(page.url()).toMatch(/\/dashboard\/apps\/[\w-]{22}\/secret$/);
    const clientId = page.url().split('/').at(-2)!;
    const secret = await page.getByLabel('Client secret').inputValue();
    expect(secret).toMatch(/^[\w-]{43}$/);
    expect(page.url()).not.toContain(secret);

    // Copy buttons: the same-origin script shows them and they copy.
    // (Headless Chromium has no system clipboard here: what the page writes is recorded instead.)
    const copied = () => page.evaluate(() => (window as unknown as { copied: string[] }).copied);
    await page.getByRole('button', { name: 'Copy secret' }).click();
    await expect.poll(copied, { timeout: 5_000 }).toEqual([secret]);
    await expect.poll(() => page.getByRole('button', { name: 'Copy secret' }).textContent(), { timeout: 5_000 }).toBe('Copied');
    await page.getByRole('button', { name: 'Copy client ID' }).click();
    await expect.poll(copied, { timeout: 5_000 }).toEqual([secret, clientId]);
    const createdHash = (await stored(clientId)).app!.secretHash;

    // Reload the secret page: no second application, and the secret is not shown again.
    await page.reload();
    await page.getByRole('heading', { name: 'Reload-proof' }).waitFor();
    expect(page.url()).toBe(`${server.issuer}/dashboard/apps/${clientId}`);
    expect(await page.content()).not.toContain(secret);
    expect((await stored()).apps.length).toBe(before + 1);
    expect((await stored(clientId)).app!.secretHash).toBe(createdHash);

    // Rotate: a link to a confirmation; cancelling rotates nothing.
    await page.getByRole('link', { name: 'Rotate secret…' }).click();
    await page.getByRole('heading', { name: 'Rotate the secret of Reload-proof?' }).waitFor();
    await page.getByRole('link', { name: 'Cancel' }).click();
    await page.getByRole('heading', { name: 'Reload-proof' }).waitFor();
    expect((await stored(clientId)).app!.secretHash).toBe(createdHash);
    await page.getByRole('link', { name: 'Rotate secret…' }).click();
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('heading', { name: 'New client secret' }).waitFor();
    const fresh = await page.getByLabel('Client secret').inputValue();
    expect(fresh).not.toBe(secret);
    const rotatedHash = (await stored(clientId)).app!.secretHash;
    expect(rotatedHash).not.toBe(createdHash);

    // Reload after the rotation: no second rotation, the stored hash changed exactly once.
    await page.reload();
    await page.getByRole('heading', { name: 'Reload-proof' }).waitFor();
    expect(await page.content()).not.toContain(fresh);
    expect((await stored(clientId)).app!.secretHash).toBe(rotatedHash);

    // Edit: a saved notice, once.
    await page.getByLabel('Name').fill('Reload-proof 2');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Application saved').waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'Reload-proof 2' }).waitFor();
    expect(await page.getByText('Application saved').count()).toBe(0);
    expect((await stored(clientId)).app!.secretHash).toBe(rotatedHash);

    // Delete with confirmation, then reload the list it leads to.
    await page.getByRole('link', { name: 'Delete application…' }).click();
    await page.getByRole('heading', { name: 'Delete Reload-proof 2?' }).waitFor();
    await page.screenshot({ path: screenshotPath('dashboard-confirm-delete'), fullPage: true });
    await page.getByRole('button', { name: 'Delete application' }).click();
    await page.getByText('Application “Reload-proof 2” deleted').waitFor();
    expect(page.url()).toBe(`${server.issuer}/dashboard`);
    await page.reload();
    await page.getByRole('heading', { name: 'Applications' }).waitFor();
    expect(await page.getByText('deleted').count()).toBe(0);
    expect((await stored(clientId)).app).toBeUndefined();
    expect((await stored()).apps.length).toBe(before);
    // No CSP violation or script error on any page.
    expect(scriptErrors).toEqual([]);
    await page.close();
  });

  it('an unknown address shows the HTML 404 page; the favicon loads', async () => {
    const page = await context.newPage();
    const res = await page.goto(`${server.issuer}/no/such/page`);
    expect(res!.status()).toBe(404);
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    const icon = await page.locator('link[rel=icon]').getAttribute('href');
    const iconRes = await page.request.get(`${server.issuer}${icon}`);
    expect(iconRes.status()).toBe(200);
    expect(iconRes.headers()['content-type']).toBe('image/svg+xml');
    // The brand mark in the header is the favicon, rendered.
    expect(await page.locator('header.top .brand img').evaluate((img: HTMLImageElement) => img.naturalWidth)).toBeGreaterThan(0);
    await page.screenshot({ path: screenshotPath('not-found'), fullPage: true });
    await page.close();
  });

  it('a 360 px wide phone: the header fits on one line and nothing scrolls sideways', async () => {
    // A long username is the worst case for the header.
    await addUsers(server.env, [{ username: 'a.rather.long.username@example.org', password: PASSWORD }]);
    const phone = await chromium.newContext({
      viewport: { width: 360, height: 740 },
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
    });
    try {
      const page = await phone.newPage();
      await page.goto(`${server.issuer}/signin`);
      await page.getByLabel('Username').fill('a.rather.long.username@example.org');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.goto(`${server.issuer}/dashboard/apps/new`);
      await page.getByLabel('Name').fill('Phone app with a long name');
      // Usable in the playground, with a long second callback URL the playground lists beside the scopes.
      await page
        .getByLabel('Callback URLs')
        .fill(`${server.issuer}/developer/playground\nhttps://a-rather-long-callback-host.phone.example/oauth2/callback/with/a/long/path`);
      await page.getByRole('button', { name: 'Register' }).click();
      await page.getByText('Application registered').waitFor();
      for (const path of ['/dashboard', '/dashboard/apps/new', '/', '/no/such/page']) {
        await page.goto(`${server.issuer}${path}`);
        expect(await page.evaluate(() => document.documentElement.scrollWidth), path).toBeLessThanOrEqual(360);
        const header = await page.locator('header.top').boundingBox();
        // One line: the header is no taller than a row of its links and the sign-out button.
        expect(header!.height, path).toBeLessThan(60);
        for (const link of ['Dashboard', 'Playground']) {
          const box = await page.locator('header.top nav').getByRole('link', { name: link, exact: true }).boundingBox();
          expect(box!.x + box!.width, `${path} ${link}`).toBeLessThanOrEqual(360);
        }
        const signOut = await page.locator('header.top').getByRole('button', { name: 'Sign out' }).boundingBox();
        expect(signOut!.x + signOut!.width, path).toBeLessThanOrEqual(360);
      }
      // Nothing is wider than the phone, inside a scrolling box either: the application list and the
      // playground (its callback URL, the list of applications it cannot use yet) wrap instead.
      for (const path of ['/dashboard', '/developer/playground']) {
        await page.goto(`${server.issuer}${path}`);
        if (path === '/developer/playground') await page.getByText('Registered callback URLs').waitFor();
        const wide = await page.evaluate(() =>
          [...document.querySelectorAll('body *')]
            // What is there for screen readers only (clipped to nothing) is not on the page.
            .filter((el) => {
              for (let a: Element | null = el; a; a = a.parentElement) if (getComputedStyle(a).clipPath !== 'none') return false;
              return true;
            })
            .filter((el) => el.getBoundingClientRect().right > 360.5 || el.scrollWidth > el.clientWidth + 1)
            .filter((el) => getComputedStyle(el).display !== 'inline' || el.getBoundingClientRect().right > 360.5)
            .map(
              (el) =>
                `${el.tagName.toLowerCase()}${el.className ? `.${el.className}` : ''}: ${Math.round(el.getBoundingClientRect().right)}`,
            ),
        );
        expect(wide, path).toEqual([]);
      }
      await page.goto(`${server.issuer}/dashboard`);
      await page.screenshot({ path: screenshotPath('dashboard-360px'), fullPage: true });
    } finally {
      await phone.close();
    }
  });
});

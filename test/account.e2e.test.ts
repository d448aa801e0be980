import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser as Chromium, Page } from 'playwright-core';
import { launchChromium, screenshotPath } from '@authcli/test-support/chromium';
import { addUsers } from '@authcli/test-support/seed';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const PASSWORD = 'account page pass 1';
const NEW_PASSWORD = 'account page pass 2';

/** /account in a real Chromium: the profile form, post-redirect-get, inline errors, the password change, a phone. */
describe('/account in a real Chromium', () => {
  let server: ServerProcess;
  let chromium: Chromium;

  beforeAll(async () => {
    server = await startServerProcess();
    await addUsers(
      server.env,
      ['marie', 'niels'].map((username) => ({ username, password: PASSWORD })),
    );
    chromium = await launchChromium();
  });
  afterAll(async () => {
    await chromium?.close();
    await server?.stop();
  });

  /** Opens /account signed out: the sign-in page, which comes back to /account. */
  async function signInAt(page: Page, username: string, password: string): Promise<void> {
    await page.goto(`${server.issuer}/account`);
    await page.getByLabel('Username').fill(username);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  const claims = async (username: string) =>
    JSON.parse((await serverCommand(['users', 'update', username, '--unset', 'middle_name', '--json'], server.env)).stdout) as Record<
      string,
      unknown
    >;

  it('edit given_name and locale, save, reload: the values stay and nothing is sent again; a bad birthdate is shown inline', async () => {
    const context = await chromium.newContext({ viewport: { width: 1000, height: 900 } });
    try {
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      // The refused form's 400 is reported as a failed load; anything else is a script or CSP error.
      page.on('console', (m) => m.type() === 'error' && !m.text().includes('status of 400') && errors.push(m.text()));
      let posts = 0;
      page.on('request', (r) => r.method() === 'POST' && r.url().endsWith('/account') && posts++);
      await signInAt(page, 'marie', PASSWORD);
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      expect(page.url()).toBe(`${server.issuer}/account`);
      await page.getByLabel('Given name').fill('Marie');
      await page.getByLabel('Language').fill('fr-fr');
      await page.getByRole('button', { name: 'Save profile' }).click();
      await page.getByText('Saved').waitFor();
      expect(posts).toBe(1);
      await page.reload();
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      expect(posts).toBe(1);
      expect(await page.getByText('Saved').count()).toBe(0);
      expect(await page.getByLabel('Given name').inputValue()).toBe('Marie');
      expect(await page.getByLabel('Language').inputValue()).toBe('fr-FR');
      expect(await claims('marie')).toMatchObject({ given_name: 'Marie', locale: 'fr-FR' });

      await page.getByLabel('Family name').fill('Curie');
      await page.getByLabel('Birthdate').fill('1867-11-31');
      await page.getByRole('button', { name: 'Save profile' }).click();
      await page.getByText('Check the field marked below.').waitFor();
      await expect.poll(() => page.getByLabel('Birthdate').getAttribute('aria-invalid')).toBe('true');
      expect(await page.locator('#birthdate-error').textContent()).toMatch(/^birthdate must be YYYY-MM-DD/);
      expect(await page.getByLabel('Family name').inputValue()).toBe('Curie');
      expect(await page.getByLabel('Birthdate').inputValue()).toBe('1867-11-31');
      expect(await claims('marie')).not.toHaveProperty('family_name');
      await page.screenshot({ path: screenshotPath('account-error'), fullPage: true });
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('change password: a wrong current password is refused; then the old password no longer signs in and the new one does', async () => {
    const context = await chromium.newContext();
    const other = await chromium.newContext();
    try {
      const page = await context.newPage();
      await signInAt(page, 'niels', PASSWORD);
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      const elsewhere = await other.newPage();
      await signInAt(elsewhere, 'niels', PASSWORD);
      await elsewhere.getByRole('heading', { name: 'Account' }).waitFor();

      await page.getByLabel('Current password').fill('not my password');
      await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
      await page.getByLabel('New password, again').fill(NEW_PASSWORD);
      await page.getByRole('button', { name: 'Change password' }).click();
      await page.getByText('The current password is wrong.').waitFor();

      await page.getByLabel('Current password').fill(PASSWORD);
      await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
      await page.getByLabel('New password, again').fill(NEW_PASSWORD);
      await page.getByRole('button', { name: 'Change password' }).click();
      await page.getByText('Password changed').waitFor();
      // This browser stays signed in; the other one was signed out.
      await page.reload();
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      await elsewhere.reload();
      await elsewhere.getByRole('button', { name: 'Sign in' }).waitFor();

      const fresh = await chromium.newContext();
      try {
        const p = await fresh.newPage();
        await signInAt(p, 'niels', PASSWORD);
        await p.getByText('Invalid username or password.').waitFor();
        await p.getByLabel('Password').fill(NEW_PASSWORD);
        await p.getByRole('button', { name: 'Sign in' }).click();
        await p.getByRole('heading', { name: 'Account' }).waitFor();
      } finally {
        await fresh.close();
      }
    } finally {
      await context.close();
      await other.close();
    }
  });

  it('a 360 px wide phone: the header with its Account link fits on one line and nothing scrolls sideways', async () => {
    const phone = await chromium.newContext({
      viewport: { width: 360, height: 740 },
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
    });
    try {
      const page = await phone.newPage();
      await signInAt(page, 'marie', PASSWORD);
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
      expect((await page.locator('header.top').boundingBox())!.height).toBeLessThan(60);
      for (const link of ['Dashboard', 'Playground', 'Account']) {
        const box = await page.locator('header.top nav').getByRole('link', { name: link, exact: true }).boundingBox();
        expect(box!.x + box!.width, link).toBeLessThanOrEqual(360);
      }
      const signOut = await page.locator('header.top').getByRole('button', { name: 'Sign out' }).boundingBox();
      expect(signOut!.x + signOut!.width).toBeLessThanOrEqual(360);
      await page.screenshot({ path: screenshotPath('account-360px'), fullPage: true });
    } finally {
      await phone.close();
    }
  });
});

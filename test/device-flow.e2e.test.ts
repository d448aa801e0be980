import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as client from 'openid-client';
import type { Browser } from 'playwright-core';
import { launchChromium, screenshotPath } from '@authcli/test-support/chromium';
import { addUsers } from '@authcli/test-support/seed';
import { startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const PASSWORD = 'device e2e pass';

describe('device flow: a device polls while a person approves in a real Chromium', () => {
  let server: ServerProcess;
  let browser: Browser;

  beforeAll(async () => {
    // The device polls every second (the default is 5 s): it gets its answer soon after the person's decision.
    server = await startServerProcess({ env: { AUTHCLI_DEVICE_POLL_INTERVAL: '1' } });
    await addUsers(server.env, [{ username: 'dana', password: PASSWORD, name: 'Dana Device' }]);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  async function deviceConfig() {
    // openid-client (not written here) plays the device: the built-in public `authcli` application.
    return client.discovery(new URL(server.issuer), 'authcli', undefined, client.None(), { execute: [client.allowInsecureRequests] });
  }

  it('rfc8628 end to end: codes, sign-in at the verification URI, Approve, the polling device gets tokens', async () => {
    const config = await deviceConfig();
    const codes = await client.initiateDeviceAuthorization(config, { scope: 'openid profile offline_access' });
    expect(codes.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    const polling = client.pollDeviceAuthorizationGrant(config, codes);

    const page = await browser.newPage();
    try {
      await page.goto(codes.verification_uri_complete!);
      // The sign-in page says why: "Sign in" / "to approve a device sign-in".
      await page.getByText('to approve a device sign-in').waitFor();
      await page.getByLabel('Username').fill('dana');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      // Prefilled from verification_uri_complete, yet nothing happens without the person's Continue and Approve.
      await expect.poll(() => page.getByLabel('Code').inputValue()).toBe(codes.user_code);
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.getByRole('button', { name: 'Approve' }).waitFor();
      await page.getByRole('heading', { name: 'Sign in to authcli on your device?' }).waitFor();
      const confirm = await page.content();
      expect(confirm).toContain(codes.user_code);
      expect(confirm).toContain('offline_access');
      expect(confirm).not.toContain('authcli (authcli)');
      const text = await page.locator('main').innerText();
      expect(text).toMatch(/The device asked for this code just now, from the address 127\.0\.0\.1, the same address as this browser\./);
      expect(text).toContain('Approve only a sign-in you started yourself, a moment ago, on a device in front of you.');
      await page.screenshot({ path: screenshotPath('device-confirm'), fullPage: true });
      // Prefilled, the code is still not approved until the person says their device shows it: the browser
      // keeps the form (a required box) and nothing reaches the device.
      await page.getByRole('button', { name: 'Approve' }).click();
      expect(await page.getByRole('checkbox').evaluate((box: HTMLInputElement) => box.validity.valueMissing)).toBe(true);
      expect(new URL(page.url()).pathname).toBe('/device');
      await page.getByLabel(`My device shows ${codes.user_code}, and I started this sign-in`).check();
      await page.getByRole('button', { name: 'Approve' }).click();
      await page.getByText('Your device is signed in').waitFor();
    } finally {
      await page.close();
    }

    const tokens = await polling;
    expect(tokens.access_token).toBeTruthy();
    expect(tokens.refresh_token).toBeTruthy();
    expect(tokens.claims()?.preferred_username).toBeUndefined();
    const info = await client.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub);
    expect(info.name).toBe('Dana Device');
    expect(info.preferred_username).toBe('dana');
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    await client.tokenRevocation(config, refreshed.refresh_token!);
    await expect(client.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('rfc8628 §3.5 a denial in the browser reaches the device as access_denied', async () => {
    const config = await deviceConfig();
    const codes = await client.initiateDeviceAuthorization(config, { scope: 'openid' });
    // Awaited at the end, watched from the start: the device may hear of the denial before the browser is closed.
    const denied = expect(client.pollDeviceAuthorizationGrant(config, codes)).rejects.toMatchObject({ error: 'access_denied' });
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(codes.verification_uri);
      await page.getByLabel('Username').fill('dana');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByLabel('Code').fill(codes.user_code.toLowerCase().replace('-', ''));
      await page.getByRole('button', { name: 'Continue' }).click();
      // Deny needs no box ticked.
      await page.getByRole('button', { name: 'Deny' }).click();
      await page.getByText('You denied the request').waitFor();
    } finally {
      await context.close();
    }
    await denied;
  });
});

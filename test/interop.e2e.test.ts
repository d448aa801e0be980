import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser as Chromium } from 'playwright-core';
import { launchChromium } from '@authcli/test-support/chromium';
import { runCli, tempConfigHome } from '@authcli/test-support/cli-process';
import { approveDeviceAtOtherProvider, startOtherProvider } from '@authcli/test-support/other-op';

describe('authcli against another OpenID Connect server (node-oidc-provider)', () => {
  let op: { issuer: string; close: () => Promise<void> };
  let chromium: Chromium;

  beforeAll(async () => {
    op = await startOtherProvider();
    chromium = await launchChromium();
  });
  afterAll(async () => {
    await chromium?.close();
    await op?.close();
  });

  it('browser login: discovery, PKCE, loopback callback with iss, ID token verified, then status and token', async () => {
    const home = tempConfigHome();
    const env = { XDG_CONFIG_HOME: home, AUTHCLI_ISSUER: op.issuer };
    const login = runCli(['login', '--browser', '--no-open', '--scope', 'openid profile'], env);
    const [, url] = await login.waitFor(/^\s+(http:\/\/\S+\?\S+)$/m);
    const page = await chromium.newPage();
    try {
      await page.goto(url!);
      await page.locator('input[name=login]').fill('olivia');
      await page.locator('input[name=password]').fill('any password');
      await page.locator('button[type=submit]').click();
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.getByText('Signed in').waitFor();
    } finally {
      await page.close();
    }
    const done = await login.exit;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toBe(`Signed in to ${op.issuer} as olivia.\n`);
    const status = await runCli(['status', '--json'], env).exit;
    // A Bearer-only server (no dpop_signing_alg_values_supported): a Bearer token, and no DPoP key made.
    expect(JSON.parse(status.stdout)).toMatchObject({ signed_in: true, issuer: op.issuer, subject: 'olivia', token_type: 'Bearer' });
    expect(existsSync(join(home, 'authcli', 'dpop-keys.json'))).toBe(false);
    const token = await runCli(['token'], env).exit;
    expect(token.code).toBe(0);
    expect(token.stdout.trim().length).toBeGreaterThan(20);
    // `token --dpop` has nothing to bind here: one line saying to send the token as Bearer.
    const dpop = await runCli(['token', '--dpop', '--htu', `${op.issuer}/me`], env).exit;
    expect(dpop.code).toBe(1);
    expect(dpop.stderr).toMatch(
      /^authcli: the sign-in to \S+ has a Bearer token \(the server does not use DPoP\): run `authcli token`.*\n$/,
    );
    const logout = await runCli(['logout'], env).exit;
    expect(logout.code, logout.stderr).toBe(0);
  });

  it('device login: the default flow works against it too', async () => {
    const home = tempConfigHome();
    const env = { XDG_CONFIG_HOME: home, AUTHCLI_ISSUER: op.issuer };
    const login = runCli(['login', '--scope', 'openid profile'], env);
    const [, url] = await login.waitFor(/open (\S+) on any device/);
    const [, code] = await login.waitFor(/^\s+(\S{4,}-?\S*)\s*$/m);
    const page = await chromium.newPage();
    try {
      await approveDeviceAtOtherProvider(page, url!, code!, 'olivia', () => login.child.exitCode !== null);
    } finally {
      await page.close();
    }
    const done = await login.exit;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toContain(`Signed in to ${op.issuer}`);
  });
});

import { afterAll, beforeAll, expect, it } from 'vitest';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Browser as Chromium } from 'playwright-core';
import { tempConfigHome } from '@authcli/test-support/cli-process';
import { launchChromium } from '@authcli/test-support/chromium';
import { addUsers } from '@authcli/test-support/seed';
import { startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';
import { describeWith } from '@authcli/test-support/tools';

const PASSWORD = 'oidc-agent e2e password';
/** Debian's oidc-agent-cli (scripts/ensure-third-party-clients.mjs installs it; its absence fails the run there and here). */
const OIDC_GEN = process.env.AUTHCLI_OIDC_GEN ?? '/usr/bin/oidc-gen';

/**
 * oidc-agent 4.2 (not written here) registers itself by OpenID Connect Dynamic Registration with its default
 * redirect URIs: loopback ones without a path (`http://localhost:4242`) and a private-use URI scheme
 * (`edu.kit.data.oidc-agent:/redirect`, RFC 8252 §7.1), as `application_type` web with a client secret. It
 * used to be refused (`invalid_redirect_uri`); unmodified, it now registers and signs in by the device flow.
 */
describeWith(
  'oidc-agent',
  existsSync(OIDC_GEN),
  `${OIDC_GEN} is missing`,
)('oidc-agent registers itself and signs in (issue 29, RFC 8252 §7.1)', () => {
  let server: ServerProcess;
  let chromium: Chromium;

  beforeAll(async () => {
    [server, chromium] = await Promise.all([
      startServerProcess({ env: { AUTHCLI_REGISTRATION: 'open', AUTHCLI_DEVICE_POLL_INTERVAL: '1' } }),
      launchChromium(),
    ]);
    await addUsers(server.env, [{ username: 'olga', password: PASSWORD }]);
  });
  afterAll(async () => {
    await chromium?.close();
    await server?.stop();
  });

  it('oidc-gen --flow device: registration with its default redirect URIs, the device flow, then oidc-token', async () => {
    const home = tempConfigHome();
    const base = { PATH: process.env.PATH ?? '', HOME: home, TMPDIR: home };
    // The agent prints the shell lines that point oidc-gen at it (OIDC_SOCK) and its pid.
    const started = execFileSync('oidc-agent', ['--no-autoload'], { env: base, encoding: 'utf8' });
    const sock = /OIDC_SOCK=([^;\s]+)/.exec(started)![1]!;
    const agentPid = Number(/OIDCD_PID=(\d+)/.exec(started)![1]);
    const env = { ...base, OIDC_SOCK: sock };
    try {
      const gen = spawn(
        OIDC_GEN,
        ['--flow', 'device', '--iss', server.issuer, '--scope', 'openid profile offline_access', '--pw-cmd', 'echo pw', 'olga-account'],
        { env, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let said = '';
      gen.stdout.on('data', (d: Buffer) => (said += d.toString()));
      gen.stderr.on('data', (d: Buffer) => (said += d.toString()));
      const exited = new Promise<number | null>((resolve) => gen.once('close', resolve));
      await expect.poll(() => said, { timeout: 15_000 }).toMatch(/enter the code: [A-Z]{4}-[A-Z]{4}/);
      expect(said).not.toMatch(/invalid_redirect_uri|public client/);
      const code = /enter the code: ([A-Z]{4}-[A-Z]{4})/.exec(said)![1]!;

      const page = await chromium.newPage();
      try {
        await page.goto(`${server.issuer}/device?user_code=${code}`);
        await page.getByLabel('Username').fill('olga');
        await page.getByLabel('Password').fill(PASSWORD);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('button', { name: 'Continue' }).click();
        await page.getByRole('heading', { name: /^Sign in to oidc-agent:olga-account/ }).waitFor();
        await page.getByLabel(`My device shows ${code}, and I started this sign-in`).check();
        await page.getByRole('button', { name: 'Approve' }).click();
        await page.getByText('Your device is signed in').waitFor();
      } finally {
        await page.close();
      }
      expect(await exited, said).toBe(0);

      // The account works: oidc-token asks the agent, which refreshes with the registered client's secret.
      const token = execFileSync('oidc-token', ['olga-account'], { env, encoding: 'utf8' }).trim();
      const info = await fetch(`${server.issuer}/oauth/userinfo`, { headers: { authorization: `Bearer ${token}` } });
      expect(info.status).toBe(200);
      expect(((await info.json()) as { preferred_username?: string }).preferred_username).toBe('olga');
    } finally {
      try {
        process.kill(agentPid);
      } catch {
        // Already gone.
      }
    }
  });
});

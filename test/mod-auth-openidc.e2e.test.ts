import { afterAll, beforeAll, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser as Chromium } from 'playwright-core';
import { launchChromium } from '@authcli/test-support/chromium';
import { freePort } from '@authcli/test-support/http';
import { addApp, addUsers } from '@authcli/test-support/seed';
import { startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';
import { describeWith } from '@authcli/test-support/tools';

const PASSWORD = 'mod_auth_openidc password';
const APACHE = process.env.AUTHCLI_APACHE2 ?? '/usr/sbin/apache2';
const MODULES = process.env.AUTHCLI_APACHE_MODULES ?? '/usr/lib/apache2/modules';
const available = existsSync(APACHE) && existsSync(join(MODULES, 'mod_auth_openidc.so'));

/**
 * Apache's mod_auth_openidc (Debian's libapache2-mod-auth-openidc, not written here; scripts/ensure-third-party-
 * clients.mjs installs it) as the relying party, set to `OIDCResponseMode form_post` with PKCE S256: a person
 * opens a protected page, signs in here, and the code comes back to Apache by the auto-submitted form (OAuth 2.0
 * Form Post Response Mode); Apache redeems it, checks the ID token and lets the person in.
 */
describeWith(
  'mod_auth_openidc',
  available,
  `${APACHE} or ${MODULES}/mod_auth_openidc.so is missing`,
)('mod_auth_openidc with OIDCResponseMode form_post (issue 29)', () => {
  let server: ServerProcess;
  let chromium: Chromium;
  let apache: ChildProcess | undefined;
  let root: string;
  let origin: string;

  beforeAll(async () => {
    [server, chromium] = await Promise.all([startServerProcess(), launchChromium()]);
    await addUsers(server.env, [{ username: 'nadia', password: PASSWORD }]);
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    const redirectUri = `${origin}/protected/redirect_uri`;
    const app = await addApp(server.env, {
      name: 'Apache site',
      kind: 'confidential',
      callbackUrls: [redirectUri],
      scopes: ['openid', 'profile'],
    });
    // Apache's children run as www-data: the folder must be readable by it.
    root = mkdtempSync(join(tmpdir(), 'authcli-apache-'));
    chmodSync(root, 0o755);
    mkdirSync(join(root, 'www', 'protected'), { recursive: true });
    writeFileSync(join(root, 'www', 'protected', 'index.html'), 'the protected page\n');
    const module = (name: string, file: string) => `LoadModule ${name} ${MODULES}/${file}`;
    writeFileSync(
      join(root, 'httpd.conf'),
      [
        `ServerRoot ${root}`,
        `PidFile ${root}/httpd.pid`,
        `Listen 127.0.0.1:${port}`,
        'ServerName 127.0.0.1',
        'User www-data',
        'Group www-data',
        module('mpm_event_module', 'mod_mpm_event.so'),
        module('authn_core_module', 'mod_authn_core.so'),
        module('authz_core_module', 'mod_authz_core.so'),
        module('authz_user_module', 'mod_authz_user.so'),
        module('auth_openidc_module', 'mod_auth_openidc.so'),
        `ErrorLog ${root}/error.log`,
        'LogLevel warn auth_openidc:info',
        `DocumentRoot ${root}/www`,
        `OIDCProviderMetadataURL ${server.issuer}/.well-known/openid-configuration`,
        `OIDCClientID ${app.client_id}`,
        `OIDCClientSecret ${app.client_secret}`,
        `OIDCRedirectURI ${redirectUri}`,
        `OIDCCryptoPassphrase ${randomBytes(24).toString('hex')}`,
        'OIDCResponseMode form_post',
        'OIDCPKCEMethod S256',
        'OIDCScope "openid profile"',
        'OIDCInfoHook userinfo id_token',
        '<Location /protected>',
        '  AuthType openid-connect',
        '  Require valid-user',
        '</Location>',
        '',
      ].join('\n'),
    );
    apache = spawn(APACHE, ['-f', join(root, 'httpd.conf'), '-DFOREGROUND'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let said = '';
    apache.stderr!.on('data', (d: Buffer) => (said += d.toString()));
    const deadline = Date.now() + 15_000;
    for (;;) {
      try {
        await fetch(`${origin}/`);
        break;
      } catch {
        if (Date.now() > deadline || apache.exitCode !== null) throw new Error(`apache did not start: ${said}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  });
  afterAll(async () => {
    if (apache && apache.exitCode === null) {
      const gone = new Promise((r) => apache!.once('exit', r));
      apache.kill('SIGTERM');
      await gone;
    }
    await chromium?.close();
    await server?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('a protected page: sign in here, the code posted back to Apache by form_post, Apache lets the person in', async () => {
    const page = await chromium.newPage();
    const posts: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().startsWith(`${origin}/protected/redirect_uri`)) posts.push(r.postData() ?? '');
    });
    try {
      await page.goto(`${origin}/protected/index.html`);
      await page.getByLabel('Username').fill('nadia');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Approve' }).click();
      await page.waitForURL(`${origin}/protected/index.html`);
      expect((await page.locator('body').innerText()).trim(), readFileSync(join(root, 'error.log'), 'utf8')).toBe('the protected page');
      // The response came by POST (form_post), with the code, state and iss in its body.
      expect(posts).toHaveLength(1);
      const posted = new URLSearchParams(posts[0]);
      expect(posted.get('code')).toEqual(expect.any(String));
      expect(posted.get('iss')).toBe(server.issuer);
      // Apache's session: the ID token from here, and userinfo with the name.
      await page.goto(`${origin}/protected/redirect_uri?info=json`);
      const info = JSON.parse(await page.locator('body').innerText()) as {
        id_token?: { iss?: string };
        userinfo?: { preferred_username?: string };
      };
      expect(info.id_token?.iss).toBe(server.issuer);
      expect(info.userinfo?.preferred_username).toBe('nadia');
    } finally {
      await page.close();
    }
  });
});

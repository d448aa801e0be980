// Makes docs/images/device-confirmation.png, the picture in the README: the device confirmation page (the one
// after the user code is entered at /device: the application, the scopes, Approve and Deny) of a real sign-in.
// It starts a server on a free loopback port over a store in a temp folder, adds a user, runs `authcli login`
// (the device flow) against it, drives Debian's Chromium (playwright-core, the test package's) through /device,
// takes the screenshot, approves, and checks that the CLI signed in. Needs a build (`npx -y pnpm@10 run build`)
// and Chromium (`node scripts/ensure-chromium.mjs`). Run: node scripts/screenshot.mjs
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const OUT = join(root, 'docs/images/device-confirmation.png');
const SERVER = join(root, 'packages/server/bin/authcli-server.cjs');
const CLI = join(root, 'packages/cli/bin/authcli.cjs');
const { chromium } = createRequire(join(root, 'test/package.json'))('playwright-core');

const USER = 'alice';
const PASSWORD = 'correct horse battery';

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });

/** Resolves with the first match of `re` in what `stream` prints, within `ms`. */
function waitFor(stream, re, ms, what) {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms; got:\n${text}`)), ms);
    stream.on('data', (chunk) => {
      text += chunk;
      const m = re.exec(text);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), 'authcli-screenshot-'));
const env = { ...process.env, DATABASE_URL: join(dir, 'authcli.db'), XDG_CONFIG_HOME: join(dir, 'config'), AUTHCLI_STORAGE: 'file' };
const port = await freePort();
const issuer = `http://127.0.0.1:${port}`;
// The server's own default issuer is http://localhost:<port>; the CLI insists on the issuer discovery names.
const server = spawn(process.execPath, [SERVER, 'start', '--port', String(port)], {
  env: { ...env, AUTHCLI_ISSUER: issuer },
  stdio: ['ignore', 'pipe', 'inherit'],
});
let login;
let browser;
try {
  await waitFor(server.stdout, /authcli-server started/, 20_000, 'start line');
  const added = spawnSync(process.execPath, [SERVER, 'users', 'add', USER, '--password-stdin'], { env, input: `${PASSWORD}\n` });
  if (added.status !== 0) throw new Error(`users add: ${added.stderr}`);

  login = spawn(process.execPath, [CLI, 'login', '--issuer', issuer, '--no-open'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((resolve) => login.on('exit', resolve));
  const [, userCode] = await waitFor(login.stderr, /\b([BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4})\b/, 20_000, 'user code');

  browser = await chromium.launch({
    executablePath: process.env.AUTHCLI_CHROMIUM ?? '/usr/bin/chromium-headless-shell',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run', '--disable-sync'],
  });
  const page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
  await page.goto(`${issuer}/device`);
  await page.getByLabel('Username').fill(USER);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByLabel('Code').fill(userCode);
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByRole('button', { name: 'Approve' }).waitFor();
  mkdirSync(join(root, 'docs/images'), { recursive: true });
  await page.screenshot({ path: OUT, fullPage: true });
  await page.getByLabel(`My device shows ${userCode}`).check();
  await page.getByRole('button', { name: 'Approve' }).click();
  await page.getByText('Your device is signed in').waitFor();

  const code = await exited;
  if (code !== 0) throw new Error(`authcli login exited ${code}`);
  console.log(`wrote ${OUT} (${Math.round(statSync(OUT).size / 1024)} KB); authcli login signed in as ${USER} at ${issuer}`);
} finally {
  await browser?.close();
  login?.kill();
  server.kill('SIGTERM');
  await new Promise((resolve) => (server.exitCode === null ? server.on('exit', resolve) : resolve()));
  rmSync(dir, { recursive: true, force: true });
}

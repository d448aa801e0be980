// Browser tests drive Debian's Chromium headless shell through playwright-core
// (never a downloaded browser): the same Chromium, built without the browser's
// own windows, as Playwright uses for headless runs. The full browser in headless
// mode also draws its windows' omnibox in a renderer of its own, twice the CPU
// for the same pages. Installs it with apt-get when it is missing and we are
// root; otherwise says what to do.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const CHROMIUM = process.env.AUTHCLI_CHROMIUM ?? '/usr/bin/chromium-headless-shell';

if (!existsSync(CHROMIUM)) {
  if (process.getuid?.() !== 0) {
    console.error(`ensure-chromium: ${CHROMIUM} is missing; install it with: sudo apt-get install -y chromium-headless-shell`);
    process.exit(1);
  }
  console.log('ensure-chromium: installing Debian chromium-headless-shell with apt-get');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'chromium-headless-shell'], { stdio: 'inherit', env });
}
console.log(`ensure-chromium: ${execFileSync(CHROMIUM, ['--version'], { encoding: 'utf8' }).trim()}`);

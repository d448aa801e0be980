// Browser tests drive Debian's Chromium through playwright-core (never a
// downloaded browser). Installs it with apt-get when it is missing and we
// are root; otherwise says what to do.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const CHROMIUM = process.env.AUTHCLI_CHROMIUM ?? '/usr/bin/chromium';

if (!existsSync(CHROMIUM)) {
  if (process.getuid?.() !== 0) {
    console.error(`ensure-chromium: ${CHROMIUM} is missing; install it with: sudo apt-get install -y chromium`);
    process.exit(1);
  }
  console.log('ensure-chromium: installing Debian chromium with apt-get');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'chromium'], { stdio: 'inherit', env });
}
console.log(`ensure-chromium: ${execFileSync(CHROMIUM, ['--version'], { encoding: 'utf8' }).trim()}`);

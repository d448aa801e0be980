// test/deploy.e2e.test.ts runs Debian's nginx with deploy/nginx/authcli.conf in front of a real server. Installs it
// with apt-get when it is missing and we are root. Unlike Chromium, nginx is optional: when it cannot be installed
// (not root, no apt-get, no network) this says so and exits 0, and those tests report themselves as skipped.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const NGINX = process.env.AUTHCLI_NGINX ?? '/usr/sbin/nginx';

if (!existsSync(NGINX)) {
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) {
    console.error(`ensure-nginx: ${NGINX} is missing, so the nginx tests will be skipped; install it with: sudo apt-get install -y nginx`);
    process.exit(0);
  }
  console.log('ensure-nginx: installing Debian nginx with apt-get');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
    execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'nginx'], { stdio: 'inherit', env });
  } catch (err) {
    console.error(`ensure-nginx: apt-get failed (${err.message.split('\n')[0]}), so the nginx tests will be skipped`);
    process.exit(0);
  }
}
// `nginx -v` prints its version on standard error.
const probe = spawnSync(NGINX, ['-v'], { encoding: 'utf8' });
console.log(
  `ensure-nginx: ${probe.status === 0 ? probe.stderr.trim() : `${NGINX} does not run (${probe.error?.message ?? probe.stderr.trim()})`}`,
);

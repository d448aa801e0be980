// test/deploy.e2e.test.ts runs Debian's nginx with deploy/nginx/authcli.conf in front of a real server, with a
// certificate made by openssl. Installs what is missing of `nginx openssl` with apt-get when we are root. When they
// cannot be installed (not root, no apt-get, no network) the run fails, unless AUTHCLI_TEST_ALLOW_MISSING names nginx
// (scripts/test-tools.mjs).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { allowedMissing, aptInstall, missing } from './test-tools.mjs';

const SCRIPT = 'ensure-nginx';
const NGINX = process.env.AUTHCLI_NGINX ?? '/usr/sbin/nginx';
const NEEDED = [
  [NGINX, 'nginx'],
  ['/usr/bin/openssl', 'openssl'],
];
const INSTALL = 'sudo apt-get install -y nginx openssl';

allowedMissing(SCRIPT);
const absent = () => NEEDED.filter(([path]) => !existsSync(path));
if (absent().length > 0) {
  const why = aptInstall(SCRIPT, [...new Set(absent().map(([, pkg]) => pkg))]);
  const still = absent().map(([path]) => path);
  if (still.length > 0) {
    missing(SCRIPT, 'nginx', `${still.join(', ')} ${still.length === 1 ? 'is' : 'are'} missing${why ? `, and ${why}` : ''}`, INSTALL);
    process.exit();
  }
}
// `nginx -v` prints its version on standard error.
const probe = spawnSync(NGINX, ['-v'], { encoding: 'utf8' });
if (probe.error || probe.status !== 0) {
  missing(SCRIPT, 'nginx', `${NGINX} does not run (${probe.error?.message ?? probe.stderr.trim()})`, INSTALL);
  process.exit();
}
console.log(`ensure-nginx: ${probe.stderr.trim()}`);

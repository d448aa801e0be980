// Third-party clients the e2e tests drive unmodified, from Debian: oidc-agent (test/oidc-agent.e2e.test.ts: a native
// app that registers itself with a private-use URI scheme redirect, RFC 8252 §7.1) and Apache's mod_auth_openidc
// (test/mod-auth-openidc.e2e.test.ts: a relying party set to response_mode=form_post). Installs what is missing with
// apt-get when we are root; Apache is kept from starting a server of its own on port 80 (RUNLEVEL=1 for
// invoke-rc.d): the test starts one from a temporary folder. When they cannot be installed (not root, no apt-get, no
// network) this says so and those tests report themselves skipped, except in CI (CI=true), where a skipped test would
// pass unseen: there it fails.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const WANTED = [
  { path: '/usr/bin/oidc-gen', packages: ['oidc-agent-cli'] },
  { path: '/usr/sbin/apache2', packages: ['apache2'] },
  { path: '/usr/lib/apache2/modules/mod_auth_openidc.so', packages: ['libapache2-mod-auth-openidc'] },
];

function giveUp(message) {
  console.error(`ensure-third-party-clients: ${message}`);
  process.exit(process.env.CI ? 1 : 0);
}

const missing = WANTED.filter((w) => !existsSync(w.path)).flatMap((w) => w.packages);
if (missing.length) {
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) {
    giveUp(`${missing.join(', ')} missing, so their tests will be skipped; install with: sudo apt-get install -y ${missing.join(' ')}`);
  }
  console.log(`ensure-third-party-clients: installing Debian ${missing.join(', ')} with apt-get`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive', RUNLEVEL: '1' };
  try {
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
    execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], { stdio: 'inherit', env });
  } catch (err) {
    giveUp(`apt-get failed (${err.message.split('\n')[0]}), so their tests will be skipped`);
  }
  // A service started despite RUNLEVEL (some policies ignore it) is stopped: the tests need nothing on port 80.
  spawnSync('apache2ctl', ['stop'], { stdio: 'ignore' });
}
const gen = spawnSync('/usr/bin/oidc-gen', ['--version'], { encoding: 'utf8' });
if (gen.error || gen.status !== 0) giveUp(`oidc-gen does not run (${gen.error?.message ?? gen.stderr.trim()})`);
const apache = spawnSync('/usr/sbin/apache2', ['-v'], { encoding: 'utf8' });
if (apache.error || apache.status !== 0) giveUp(`apache2 does not run (${apache.error?.message ?? apache.stderr.trim()})`);
console.log(`ensure-third-party-clients: ${gen.stdout.trim().split('\n')[0]}; ${apache.stdout.split('\n')[0].trim()}; mod_auth_openidc`);

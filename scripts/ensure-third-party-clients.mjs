// Third-party clients the e2e tests drive unmodified, from Debian: oidc-agent (test/oidc-agent.e2e.test.ts: a native
// app that registers itself with a private-use URI scheme redirect, RFC 8252 §7.1) and Apache's mod_auth_openidc
// (test/mod-auth-openidc.e2e.test.ts: a relying party set to response_mode=form_post). Installs what is missing with
// apt-get when we are root; Apache is kept from starting a server of its own on port 80 (RUNLEVEL=1 for
// invoke-rc.d): the test starts one from a temporary folder. When one cannot be installed (not root, no apt-get, no
// network) the run fails, unless AUTHCLI_TEST_ALLOW_MISSING names it: oidc-agent, mod_auth_openidc
// (scripts/test-tools.mjs).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { allowedMissing, aptInstall, missing } from './test-tools.mjs';

const SCRIPT = 'ensure-third-party-clients';
const OIDC_GEN = process.env.AUTHCLI_OIDC_GEN ?? '/usr/bin/oidc-gen';
const APACHE = process.env.AUTHCLI_APACHE2 ?? '/usr/sbin/apache2';
const MODULES = process.env.AUTHCLI_APACHE_MODULES ?? '/usr/lib/apache2/modules';
const WANTED = [
  { tool: 'oidc-agent', path: OIDC_GEN, packages: ['oidc-agent-cli'] },
  { tool: 'oidc-agent', path: '/usr/bin/oidc-agent', packages: ['oidc-agent-cli'] },
  { tool: 'mod_auth_openidc', path: APACHE, packages: ['apache2'] },
  { tool: 'mod_auth_openidc', path: join(MODULES, 'mod_auth_openidc.so'), packages: ['libapache2-mod-auth-openidc'] },
];
const INSTALL = {
  'oidc-agent': 'sudo apt-get install -y oidc-agent-cli',
  mod_auth_openidc: 'sudo apt-get install -y apache2 libapache2-mod-auth-openidc',
};

allowedMissing(SCRIPT);
const absent = () => WANTED.filter((w) => !existsSync(w.path));
let why;
if (absent().length > 0) {
  why = aptInstall(SCRIPT, [...new Set(absent().flatMap((w) => w.packages))], { env: { RUNLEVEL: '1' } });
  // A service started despite RUNLEVEL (some policies ignore it) is stopped: the tests need nothing on port 80.
  if (!why) spawnSync('apache2ctl', ['stop'], { stdio: 'ignore' });
}
const failed = new Set();
for (const tool of ['oidc-agent', 'mod_auth_openidc']) {
  const still = absent()
    .filter((w) => w.tool === tool)
    .map((w) => w.path);
  if (still.length === 0) continue;
  failed.add(tool);
  missing(SCRIPT, tool, `${still.join(', ')} ${still.length === 1 ? 'is' : 'are'} missing${why ? `, and ${why}` : ''}`, INSTALL[tool]);
}
const versions = [];
if (!failed.has('oidc-agent')) {
  const gen = spawnSync(OIDC_GEN, ['--version'], { encoding: 'utf8' });
  if (gen.error || gen.status !== 0)
    missing(SCRIPT, 'oidc-agent', `${OIDC_GEN} does not run (${gen.error?.message ?? gen.stderr.trim()})`, INSTALL['oidc-agent']);
  else versions.push(gen.stdout.trim().split('\n')[0]);
}
if (!failed.has('mod_auth_openidc')) {
  const apache = spawnSync(APACHE, ['-v'], { encoding: 'utf8' });
  if (apache.error || apache.status !== 0) {
    missing(
      SCRIPT,
      'mod_auth_openidc',
      `${APACHE} does not run (${apache.error?.message ?? apache.stderr.trim()})`,
      INSTALL.mod_auth_openidc,
    );
  } else versions.push(`${apache.stdout.split('\n')[0].trim()}; mod_auth_openidc`);
}
if (versions.length > 0) console.log(`${SCRIPT}: ${versions.join('; ')}`);

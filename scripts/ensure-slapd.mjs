// test/ldap-connector.e2e.test.ts runs Debian's OpenLDAP server (slapd) from a temporary folder, loaded with ldapadd
// (test/support/slapd.ts). Installs `slapd ldap-utils` with apt-get when either is missing and we are root. Debian's
// package would configure and start a directory of its own on port 389; debconf's slapd/no_configuration stops that:
// the tests bring their own slapd.conf, and the machine is left with the programs only. When they cannot be installed
// (not root, no apt-get, no network) this says so and the LDAP tests report themselves as skipped, except in CI
// (CI=true), where a skipped connector test would pass unseen: there it fails.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const SLAPD = process.env.AUTHCLI_SLAPD ?? '/usr/sbin/slapd';
const LDAPADD = '/usr/bin/ldapadd';

function giveUp(message) {
  console.error(`ensure-slapd: ${message}`);
  process.exit(process.env.CI ? 1 : 0);
}

if (!existsSync(SLAPD) || !existsSync(LDAPADD)) {
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) {
    giveUp(
      `${SLAPD} or ${LDAPADD} is missing, so the LDAP tests will be skipped; install them with: sudo apt-get install -y slapd ldap-utils`,
    );
  }
  console.log('ensure-slapd: installing Debian slapd and ldap-utils with apt-get');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    execFileSync('debconf-set-selections', {
      input: 'slapd slapd/no_configuration boolean true\n',
      stdio: ['pipe', 'inherit', 'inherit'],
      env,
    });
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
    execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'slapd', 'ldap-utils'], { stdio: 'inherit', env });
  } catch (err) {
    giveUp(`apt-get failed (${err.message.split('\n')[0]}), so the LDAP tests will be skipped`);
  }
}
// `slapd -VV` prints its version on standard error and exits.
const probe = spawnSync(SLAPD, ['-VV'], { encoding: 'utf8' });
const version = `${probe.stderr ?? ''}`.split('\n').find((line) => line.includes('slapd'));
if (probe.error || !version) giveUp(`${SLAPD} does not run (${probe.error?.message ?? probe.stderr.trim()})`);
console.log(`ensure-slapd: ${version.trim()}`);

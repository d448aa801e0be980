// test/ldap-connector.e2e.test.ts and test/connectors-ldap.e2e.test.ts run Debian's OpenLDAP server (slapd) from a
// temporary folder, loaded with ldapadd, with a test CA made by openssl (test/support/slapd.ts). Installs what is
// missing of `slapd ldap-utils openssl` with apt-get when we are root. Debian's package would configure and start a
// directory of its own on port 389; debconf's slapd/no_configuration stops that: the tests bring their own
// slapd.conf, and the machine is left with the programs only. When they cannot be installed (not root, no apt-get,
// no network) the run fails, unless AUTHCLI_TEST_ALLOW_MISSING names slapd (scripts/test-tools.mjs).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { allowedMissing, aptInstall, missing } from './test-tools.mjs';

const SCRIPT = 'ensure-slapd';
const SLAPD = process.env.AUTHCLI_SLAPD ?? '/usr/sbin/slapd';
const NEEDED = [
  [SLAPD, 'slapd'],
  ['/etc/ldap/schema/nis.schema', 'slapd'],
  ['/usr/bin/ldapadd', 'ldap-utils'],
  ['/usr/bin/openssl', 'openssl'],
];
const INSTALL = 'sudo apt-get install -y slapd ldap-utils openssl';

allowedMissing(SCRIPT);
const absent = () => NEEDED.filter(([path]) => !existsSync(path));
if (absent().length > 0) {
  const packages = [...new Set(absent().map(([, pkg]) => pkg))];
  const why = aptInstall(SCRIPT, packages, {
    before: (env) =>
      execFileSync('debconf-set-selections', {
        input: 'slapd slapd/no_configuration boolean true\n',
        stdio: ['pipe', 'inherit', 'inherit'],
        env,
      }),
  });
  const still = absent().map(([path]) => path);
  if (still.length > 0) {
    missing(SCRIPT, 'slapd', `${still.join(', ')} ${still.length === 1 ? 'is' : 'are'} missing${why ? `, and ${why}` : ''}`, INSTALL);
    process.exit();
  }
}
// `slapd -VV` prints its version on standard error and exits.
const probe = spawnSync(SLAPD, ['-VV'], { encoding: 'utf8' });
const version = `${probe.stderr ?? ''}`.split('\n').find((line) => line.includes('slapd'));
if (probe.error || !version) {
  missing(SCRIPT, 'slapd', `${SLAPD} does not run (${probe.error?.message ?? probe.stderr.trim()})`, INSTALL);
  process.exit();
}
console.log(`ensure-slapd: ${version.trim()}`);

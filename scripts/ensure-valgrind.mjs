// test/instructions.e2e.test.ts (the instruction-count regression guard) runs the server and the CLI under valgrind's
// callgrind. Installs Debian's valgrind with apt-get when it is missing and we are root. When it cannot be installed
// (not root, no apt-get, no network) the run fails, unless AUTHCLI_TEST_ALLOW_MISSING names valgrind
// (scripts/test-tools.mjs).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { allowedMissing, aptInstall, missing, onPath } from './test-tools.mjs';

const SCRIPT = 'ensure-valgrind';
const INSTALL = 'sudo apt-get install -y valgrind';
// AUTHCLI_VALGRIND: another valgrind than the one on PATH (test/support/instructions.ts reads it too).
const VALGRIND = process.env.AUTHCLI_VALGRIND ?? 'valgrind';
const present = () => (process.env.AUTHCLI_VALGRIND ? existsSync(VALGRIND) : onPath('valgrind') && onPath('callgrind_control'));

allowedMissing(SCRIPT);
if (!present()) {
  const why = aptInstall(SCRIPT, ['valgrind']);
  if (!present()) {
    missing(SCRIPT, 'valgrind', `valgrind is missing${why ? `, and ${why}` : ''}`, INSTALL);
    process.exit();
  }
}
const probe = spawnSync(VALGRIND, ['--version'], { encoding: 'utf8' });
if (probe.error || probe.status !== 0) {
  missing(SCRIPT, 'valgrind', `valgrind does not run (${probe.error?.message ?? probe.stderr.trim()})`, INSTALL);
  process.exit();
}
console.log(`ensure-valgrind: ${probe.stdout.trim()}`);

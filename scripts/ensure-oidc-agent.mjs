// test/oidc-agent.e2e.test.ts runs Debian's oidc-agent (a third-party client that registers itself with a private-use
// URI scheme redirect, RFC 8252 §7.1). Installs `oidc-agent-cli` with apt-get when it is missing and we are root.
// When it cannot be installed (not root, no apt-get, no network) this says so and the test reports itself skipped,
// except in CI (CI=true), where a skipped test would pass unseen: there it fails.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const OIDC_GEN = '/usr/bin/oidc-gen';

function giveUp(message) {
  console.error(`ensure-oidc-agent: ${message}`);
  process.exit(process.env.CI ? 1 : 0);
}

if (!existsSync(OIDC_GEN)) {
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) {
    giveUp(`${OIDC_GEN} is missing, so the oidc-agent test will be skipped; install it with: sudo apt-get install -y oidc-agent-cli`);
  }
  console.log('ensure-oidc-agent: installing Debian oidc-agent-cli with apt-get');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
    execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'oidc-agent-cli'], { stdio: 'inherit', env });
  } catch (err) {
    giveUp(`apt-get failed (${err.message.split('\n')[0]}), so the oidc-agent test will be skipped`);
  }
}
const probe = spawnSync(OIDC_GEN, ['--version'], { encoding: 'utf8' });
if (probe.error || probe.status !== 0) giveUp(`${OIDC_GEN} does not run (${probe.error?.message ?? probe.stderr.trim()})`);
console.log(`ensure-oidc-agent: ${probe.stdout.trim().split('\n')[0]}`);

// What the test command's installers of outside programs share (ensure-nginx.mjs, ensure-slapd.mjs,
// ensure-third-party-clients.mjs). A program the tests drive that is missing and cannot be installed fails the run,
// with or without CI set: a suite that skipped itself would pass unseen. On a machine that need not run some of those
// suites, AUTHCLI_TEST_ALLOW_MISSING names them (comma-separated: slapd, nginx, oidc-agent, mod_auth_openidc, valgrind); their
// tests then report themselves skipped (test/support/tools.ts reads the same variable).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** The tools AUTHCLI_TEST_ALLOW_MISSING may name. */
export const TOOLS = ['slapd', 'nginx', 'oidc-agent', 'mod_auth_openidc', 'valgrind'];

/** The tools AUTHCLI_TEST_ALLOW_MISSING names; an unknown name fails at once (a typo must not skip a suite). */
export function allowedMissing(script) {
  const names = (process.env.AUTHCLI_TEST_ALLOW_MISSING ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !TOOLS.includes(n));
  if (unknown.length > 0) {
    console.error(`${script}: AUTHCLI_TEST_ALLOW_MISSING names ${unknown.join(', ')}, which is none of ${TOOLS.join(', ')}`);
    process.exit(1);
  }
  return new Set(names);
}

/** Whether `program` is on PATH (apt-get, found the way execFileSync will find it). */
export function onPath(program) {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, program)));
}

/**
 * Installs Debian `packages` with apt-get, as root; returns undefined when it did, else why not (not root, no
 * apt-get, apt-get failed). `before` runs first (debconf answers); `env` is added to apt-get's.
 */
export function aptInstall(script, packages, { env = {}, before } = {}) {
  if (process.getuid?.() !== 0) return 'not root, so apt-get cannot install them';
  if (!onPath('apt-get')) return 'there is no apt-get';
  console.log(`${script}: installing Debian ${packages.join(', ')} with apt-get`);
  const aptEnv = { ...process.env, DEBIAN_FRONTEND: 'noninteractive', ...env };
  try {
    before?.(aptEnv);
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env: aptEnv });
    execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...packages], { stdio: 'inherit', env: aptEnv });
    return undefined;
  } catch (err) {
    return `apt-get failed (${err.message.split('\n')[0]})`;
  }
}

/**
 * Reports `tool` missing: allowed by AUTHCLI_TEST_ALLOW_MISSING, a warning (its tests will be skipped); else an error
 * that fails the script once it has said everything (process.exitCode).
 */
export function missing(script, tool, why, install) {
  if (allowedMissing(script).has(tool)) {
    console.error(`${script}: ${why}; AUTHCLI_TEST_ALLOW_MISSING names ${tool}, so its tests will be skipped`);
    return;
  }
  console.error(
    `${script}: ${why}. Its tests cannot run, so the test run fails. Install it (${install}), or, on a machine that ` +
      `need not run them, set AUTHCLI_TEST_ALLOW_MISSING=${tool} to skip them.`,
  );
  process.exitCode = 1;
}

import { describe } from 'vitest';

/**
 * The outside programs some suites drive, by the names AUTHCLI_TEST_ALLOW_MISSING takes (scripts/test-tools.mjs, whose
 * installers the test command runs first, reads the same variable).
 */
export type Tool = 'slapd' | 'nginx' | 'oidc-agent' | 'mod_auth_openidc' | 'valgrind';
const TOOLS: readonly string[] = ['slapd', 'nginx', 'oidc-agent', 'mod_auth_openidc', 'valgrind'] satisfies Tool[];

/** The tools AUTHCLI_TEST_ALLOW_MISSING names; an unknown name is an error (a typo must not skip a suite). */
export function allowedMissing(env: NodeJS.ProcessEnv = process.env): Set<Tool> {
  const names = (env.AUTHCLI_TEST_ALLOW_MISSING ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !TOOLS.includes(n));
  if (unknown.length > 0) throw new Error(`AUTHCLI_TEST_ALLOW_MISSING names ${unknown.join(', ')}, which is none of ${TOOLS.join(', ')}`);
  return new Set(names as Tool[]);
}

/**
 * The `describe` of a suite that drives `tool`. It runs when the tool is `present`. When it is not, the suite is
 * skipped only if AUTHCLI_TEST_ALLOW_MISSING names the tool (a developer's machine without it); otherwise the file
 * fails at once, saying what is missing: a suite that skipped itself would pass unseen.
 */
export function describeWith(tool: Tool, present: boolean, missing: string) {
  if (!present && !allowedMissing().has(tool)) {
    throw new Error(
      `${missing}, so these tests cannot run. Install it (the test command's scripts/ensure-*.mjs do, as root), or set ` +
        `AUTHCLI_TEST_ALLOW_MISSING=${tool} to skip them on a machine that need not run them.`,
    );
  }
  return describe.skipIf(!present);
}

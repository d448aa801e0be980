import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');
const VITEST = join(root, 'node_modules/vitest/vitest.mjs');

/** Each installer the test command runs first, and the tools (AUTHCLI_TEST_ALLOW_MISSING's names) it is for. */
const INSTALLERS = [
  { script: 'ensure-slapd.mjs', tools: ['slapd'] },
  { script: 'ensure-nginx.mjs', tools: ['nginx'] },
  { script: 'ensure-third-party-clients.mjs', tools: ['oidc-agent', 'mod_auth_openidc'] },
  { script: 'ensure-valgrind.mjs', tools: ['valgrind'] },
];

/** The suites that drive those tools, with the tool each needs. */
const SUITES = [
  { file: 'test/ldap-connector.e2e.test.ts', tool: 'slapd' },
  { file: 'test/connectors-ldap.e2e.test.ts', tool: 'slapd' },
  { file: 'test/oidc-agent.e2e.test.ts', tool: 'oidc-agent' },
  { file: 'test/mod-auth-openidc.e2e.test.ts', tool: 'mod_auth_openidc' },
  { file: 'test/deploy.e2e.test.ts', tool: 'nginx' },
  { file: 'test/instructions.e2e.test.ts', tool: 'valgrind' },
  { file: 'test/instructions-regression.e2e.test.ts', tool: 'valgrind' },
];

interface VitestReport {
  numFailedTestSuites: number;
  numFailedTests: number;
  numPassedTests: number;
  numPendingTests: number;
  testResults: { name: string; status: string; message: string; assertionResults: { status: string }[] }[];
}

/**
 * A machine without slapd, nginx, oidc-agent, Apache with mod_auth_openidc or valgrind, and without CI set: the test command
 * fails, it never passes with those suites skipped. Real processes: each installer as the test command runs it, and
 * vitest on the suites, with every tool's path in an empty folder and, as the only program on PATH, an apt-get that
 * fails as one without a network does (and notes that it was asked). AUTHCLI_TEST_ALLOW_MISSING, a developer's
 * explicit choice, is the one way to skip them.
 */
describe('a missing tool fails the test run, with or without CI; AUTHCLI_TEST_ALLOW_MISSING alone skips its tests', () => {
  let dir: string;
  let bin: string;
  /** Where each tool would be: nowhere. */
  let gone: Record<string, string>;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'authcli-missing-tools-'));
    bin = join(dir, 'bin');
    mkdirSync(bin);
    const absent = join(dir, 'absent');
    gone = {
      AUTHCLI_SLAPD: join(absent, 'slapd'),
      AUTHCLI_NGINX: join(absent, 'nginx'),
      AUTHCLI_OIDC_GEN: join(absent, 'oidc-gen'),
      AUTHCLI_APACHE2: join(absent, 'apache2'),
      AUTHCLI_APACHE_MODULES: absent,
      AUTHCLI_VALGRIND: join(absent, 'valgrind'),
    };
    // Shell builtins only: nothing else is on PATH.
    writeFileSync(
      join(bin, 'apt-get'),
      '#!/bin/sh\necho "apt-get $*" >> "$0.log"\necho "E: Temporary failure resolving \'deb.debian.org\'" >&2\nexit 100\n',
    );
    writeFileSync(join(bin, 'debconf-set-selections'), '#!/bin/sh\nwhile read -r line; do :; done\nexit 0\n');
    for (const f of ['apt-get', 'debconf-set-selections']) chmodSync(join(bin, f), 0o755);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** `node scripts/<script>` in a bare environment: no CI, PATH the stand-in apt-get alone, the tools gone. */
  const install = (script: string, env: Record<string, string> = {}) =>
    spawnSync(process.execPath, [join(root, 'scripts', script)], {
      env: { PATH: bin, HOME: dir, ...gone, ...env },
      encoding: 'utf8',
      cwd: root,
    });

  it.each(INSTALLERS)('scripts/$script exits non-zero when it cannot install, and says how to install or opt out', ({ script, tools }) => {
    rmSync(join(bin, 'apt-get.log'), { force: true });
    const failed = install(script);
    expect(failed.status, failed.stderr).toBe(1);
    for (const tool of tools) expect(failed.stderr).toContain(`set AUTHCLI_TEST_ALLOW_MISSING=${tool} to skip them`);
    expect(failed.stderr).toMatch(process.getuid?.() === 0 ? /apt-get failed/ : /not root/);
    // As root it did try: apt-get was asked, and failed.
    if (process.getuid?.() === 0) expect(readFileSync(join(bin, 'apt-get.log'), 'utf8')).toMatch(/^apt-get update/);

    const allowed = install(script, { AUTHCLI_TEST_ALLOW_MISSING: tools.join(',') });
    expect(allowed.status, allowed.stderr).toBe(0);
    for (const tool of tools) expect(allowed.stderr).toContain(`AUTHCLI_TEST_ALLOW_MISSING names ${tool}, so its tests will be skipped`);
  });

  it('one tool allowed missing does not excuse another; an unknown name in AUTHCLI_TEST_ALLOW_MISSING fails', () => {
    const one = install('ensure-third-party-clients.mjs', { AUTHCLI_TEST_ALLOW_MISSING: 'oidc-agent' });
    expect(one.status, one.stderr).toBe(1);
    expect(one.stderr).toContain('so its tests will be skipped');
    expect(one.stderr).toContain('set AUTHCLI_TEST_ALLOW_MISSING=mod_auth_openidc to skip them');
    const typo = install('ensure-slapd.mjs', { AUTHCLI_TEST_ALLOW_MISSING: 'slpad' });
    expect(typo.status).toBe(1);
    expect(typo.stderr).toContain(
      'AUTHCLI_TEST_ALLOW_MISSING names slpad, which is none of slapd, nginx, oidc-agent, mod_auth_openidc, valgrind',
    );
  });

  it('the test command runs every installer before vitest, and .ci/run runs the test command without CI or an opt-out', () => {
    const test = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.test!;
    const steps = test.split(' && ');
    for (const { script } of INSTALLERS) expect(steps.indexOf(`node scripts/${script}`), script).toBeGreaterThanOrEqual(0);
    // Every project, then the instruction-count guard alone (vitest.config.ts says why).
    expect(steps.slice(-2)).toEqual([
      'vitest run --project pkce --project protocol --project client --project cli --project server --project e2e',
      'vitest run --project instructions --maxWorkers=1 --minWorkers=1',
    ]);
    const ci = readFileSync(join(root, '.ci/run'), 'utf8');
    expect(ci).toMatch(/^npx -y pnpm@10 install --frozen-lockfile && npx -y pnpm@10 test$/m);
    expect(ci).toMatch(/^unset AUTHCLI_TEST_ALLOW_MISSING$/m);
    expect(ci).not.toMatch(/\bCI=/);
  });

  /** vitest on `files` as the test command runs it (the repository's config), in a bare environment without CI. */
  function vitest(files: string[], env: Record<string, string> = {}): { report: VitestReport; stdout: string; status: number | null } {
    const out = join(dir, `report-${Date.now()}.json`);
    const run = spawnSync(
      process.execPath,
      [
        VITEST,
        'run',
        '--project',
        'e2e',
        '--project',
        'instructions',
        ...files,
        '--reporter=default',
        '--reporter=json',
        `--outputFile.json=${out}`,
      ],
      { env: { PATH: process.env.PATH!, HOME: process.env.HOME!, ...gone, ...env }, encoding: 'utf8', cwd: root },
    );
    expect(existsSync(out), `${run.stdout}\n${run.stderr}`).toBe(true);
    return { report: JSON.parse(readFileSync(out, 'utf8')) as VitestReport, stdout: run.stdout, status: run.status };
  }

  it('each suite that drives a missing tool fails, naming it and the opt-out; allowed missing, it is skipped', () => {
    const { report, stdout, status } = vitest(SUITES.map((s) => s.file));
    expect(status).toBe(1);
    // Shuffled without CI too: the seed is printed.
    expect(stdout).toMatch(/Running tests with seed "\d+"/);
    expect(report.numFailedTestSuites).toBe(SUITES.length);
    for (const { file, tool } of SUITES) {
      const result = report.testResults.find((r) => r.name.endsWith(file));
      expect(result?.status, file).toBe('failed');
      expect(result?.message, file).toContain(`set AUTHCLI_TEST_ALLOW_MISSING=${tool} to skip them`);
    }

    // Allowed missing (deploy.e2e.test.ts aside: its other tests need no tool, and would run), each suite is skipped.
    const skipped = SUITES.filter((s) => s.tool !== 'nginx');
    const allowed = vitest(
      skipped.map((s) => s.file),
      { AUTHCLI_TEST_ALLOW_MISSING: [...new Set(skipped.map((s) => s.tool))].join(',') },
    );
    expect(allowed.status, allowed.stdout).toBe(0);
    expect(allowed.report.numFailedTests + allowed.report.numPassedTests).toBe(0);
    expect(allowed.report.numPendingTests).toBeGreaterThan(0);
    for (const r of allowed.report.testResults) expect(r.assertionResults.every((a) => a.status === 'skipped')).toBe(true);
  });
});

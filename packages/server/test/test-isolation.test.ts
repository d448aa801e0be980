/**
 * The suite runs with vitest's isolate off (vitest.config.ts): a worker process runs one test file after
 * another, so a file that changed what the process shares would change the files after it, in an order the
 * CI shuffle picks. This keeps the rule that makes that safe: no test file (or test support module) mocks
 * modules, fakes timers, stubs globals, writes process.env, or changes the working folder or the umask.
 * Time is injected (the server's `now`, the CLI's clock), environments go to child processes as their own
 * objects, and permissions tests run their commands as processes with their own umask.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** What would outlive its file: [what, pattern]. */
const SHARED_STATE: [string, RegExp][] = [
  ['a module mock', /\bvi\.(mock|doMock|hoisted)\(/],
  ['fake timers', /\bvi\.useFakeTimers\(/],
  ['a stubbed global or env', /\bvi\.stub(Env|Global)\(/],
  [
    'a process.env write',
    /\bprocess\.env(\.\w+|\[[^\]]+\])\s*(=(?!=)|\?\?=|\|\|=)|\bdelete\s+process\.env\b|Object\.assign\(\s*process\.env\b/,
  ],
  ['a working-folder change', /\bprocess\.chdir\(/],
  ['a umask change', /\bprocess\.umask\(\s*[^)\s]/],
];

/** Every .ts file of the tests: packages/<name>/test, test/ and test/support, not node_modules. */
function testFiles(): string[] {
  const dirs = [...readdirSync(join(ROOT, 'packages')).map((p) => join(ROOT, 'packages', p, 'test')), join(ROOT, 'test')];
  const files: string[] = [];
  for (const dir of dirs) {
    let names: string[];
    try {
      names = readdirSync(dir, { recursive: true, encoding: 'utf8' });
    } catch {
      continue;
    }
    for (const name of names) if (/\.tsx?$/.test(name) && !name.includes('node_modules')) files.push(join(dir, name));
  }
  return files;
}

describe('test isolation (vitest isolate off)', () => {
  it('no test file changes what the worker process shares with the next file', () => {
    const files = testFiles();
    // The walk found the tests: an empty list would pass without checking anything.
    for (const known of ['packages/server/test/helpers.ts', 'test/cli.e2e.test.ts', 'test/support/seed.ts']) {
      expect(files, known).toContain(join(ROOT, known));
    }
    const self = fileURLToPath(import.meta.url);
    const found: string[] = [];
    for (const file of files) {
      if (file === self) continue;
      const lines = readFileSync(file, 'utf8').split('\n');
      lines.forEach((line, i) => {
        for (const [what, pattern] of SHARED_STATE) {
          if (pattern.test(line)) found.push(`${relative(ROOT, file)}:${i + 1}: ${what}: ${line.trim()}`);
        }
      });
    }
    expect(found).toEqual([]);
  });

  it('the patterns catch what they are for', () => {
    const caught = (line: string) => SHARED_STATE.filter(([, p]) => p.test(line)).map(([what]) => what);
    expect(caught("vi.mock('../src/store/open.js')")).toEqual(['a module mock']);
    expect(caught('vi.useFakeTimers();')).toEqual(['fake timers']);
    expect(caught("vi.stubEnv('TZ', 'UTC')")).toEqual(['a stubbed global or env']);
    expect(caught("process.env.AUTHCLI_PORT = '9000';")).toEqual(['a process.env write']);
    expect(caught("process.env['HOME'] = dir;")).toEqual(['a process.env write']);
    expect(caught('delete process.env.DATABASE_URL;')).toEqual(['a process.env write']);
    expect(caught('Object.assign(process.env, env);')).toEqual(['a process.env write']);
    expect(caught("process.chdir('/tmp');")).toEqual(['a working-folder change']);
    expect(caught('process.umask(0o000);')).toEqual(['a umask change']);
    // Reading is fine.
    expect(caught('const url = process.env.AUTHCLI_TEST_POSTGRES_URL;')).toEqual([]);
    expect(caught("if (process.env.CI === 'true') {}")).toEqual([]);
    expect(caught('const env = { ...process.env, HOME: dir };')).toEqual([]);
    expect(caught('const mask = process.umask();')).toEqual([]);
  });
});

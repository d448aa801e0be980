import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const PACKAGE = join(import.meta.dirname, '..');
const DIST = join(PACKAGE, 'dist');

/** What only the tests' raw row access (src/store/test-rows.ts) is made of: none of it may be in what the server runs. */
const TEST_ONLY = ['TestRows', 'forgetLatestMigration', 'dropMigrationTable', 'rowsForTests'];

/** Every built file `entry` loads, itself included: its imports of dist/'s own files (`./NAME.js`), static and dynamic. */
function loadedBy(entry: string): string[] {
  const seen = new Set<string>();
  const queue = [join(DIST, entry)];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.\/[\w.-]+\.c?js)["']/g)) queue.push(join(dirname(file), m[1]!));
  }
  return [...seen].map((f) => relative(DIST, f)).sort();
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : /\.tsx?$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

/**
 * The raw row access the tests use ships in neither the `authcli-server` bundle nor the library's index: it is the
 * separate entry `@authcli/server/testing` (dist/testing.js), which nothing of the server imports.
 */
describe('what the built server carries', () => {
  it('the bin bundle (dist/main.js, its chunks and workers) and the library index hold no test-only row access', () => {
    expect(existsSync(join(DIST, 'main.js')), 'run `npx -y pnpm@10 run build` first').toBe(true);
    const bin = readFileSync(join(PACKAGE, 'bin/authcli-server.cjs'), 'utf8');
    expect(bin).toContain("import('../dist/main.js')");
    for (const entry of ['main.js', 'index.js', 'checkpoint-worker.js', 'password-worker.cjs']) {
      const files = loadedBy(entry);
      expect(files.length).toBeGreaterThan(0);
      for (const file of files) {
        const text = readFileSync(join(DIST, file), 'utf8');
        for (const word of TEST_ONLY) expect(text.includes(word), `${word} in ${file} (loaded by ${entry})`).toBe(false);
      }
    }
    // The entry the tests import has it, so the check above looks for the right words.
    const testing = readFileSync(join(DIST, 'testing.js'), 'utf8');
    for (const word of TEST_ONLY.slice(0, 3)) expect(testing).toContain(word);
    expect(loadedBy('main.js')).not.toContain('testing.js');
  });

  it('no source of the server imports the test-only modules but the testing entry', () => {
    const importers = sources(join(PACKAGE, 'src'))
      .filter((f) => /from '[./]+(store\/)?(test-rows|testing)\.js'/.test(readFileSync(f, 'utf8')))
      .map((f) => relative(PACKAGE, f));
    expect(importers).toEqual(['src/testing.ts']);
  });
});

/**
 * Every package's source files (packages/<name>/src, .ts and .tsx) stay at 400
 * lines or fewer: a module holds one concern, and one that grows past this is
 * split by concern, as oauth/authorize.ts, oauth/dynamic-registration.ts and
 * web/playground/main.ts were. The check covers all packages; it sits with the
 * server's tests because they run without a build.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const MAX_LINES = 400;
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The .ts and .tsx files under packages/<name>/src, every package, at any depth. */
function sourceFiles(): string[] {
  const files: string[] = [];
  for (const pkg of readdirSync(join(ROOT, 'packages'))) {
    const src = join(ROOT, 'packages', pkg, 'src');
    if (!existsSync(src)) continue;
    for (const name of readdirSync(src, { recursive: true, encoding: 'utf8' })) {
      if (/\.tsx?$/.test(name)) files.push(join(src, name));
    }
  }
  return files;
}

/** Lines as an editor numbers them (and `wc -l` counts them when the file ends in a newline). */
function lineCount(text: string): number {
  const lines = text.split('\n').length;
  return text.endsWith('\n') ? lines - 1 : lines;
}

describe('source size', () => {
  it('no source file is over 400 lines', () => {
    const files = sourceFiles();
    // The walk found the packages: an empty list would pass without checking anything.
    for (const known of ['packages/server/src/app.ts', 'packages/cli/src/cli.ts', 'packages/server/src/web/playground/main.ts']) {
      expect(files, known).toContain(join(ROOT, known));
    }
    const over = files
      .map((file) => ({ file: relative(ROOT, file), lines: lineCount(readFileSync(file, 'utf8')) }))
      .filter(({ lines }) => lines > MAX_LINES)
      .map(({ file, lines }) => `${file}: ${lines} lines`);
    expect(over, `split these by concern into files of at most ${MAX_LINES} lines`).toEqual([]);
  });
});

import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // In CI, files and the tests in them run in a random order (the seed is printed: `--sequence.seed=<seed>` replays
    // it), so a test that depends on another's leftovers fails there. The root's sequence applies to every project.
    sequence: { shuffle: !!process.env.CI },
    projects: [
      { test: { name: 'pkce', root: 'packages/pkce', include: ['test/**/*.test.ts'] } },
      { test: { name: 'protocol', root: 'packages/protocol', include: ['test/**/*.test.ts'] } },
      { test: { name: 'cli', root: 'packages/cli', include: ['test/**/*.test.ts'] } },
      {
        test: { name: 'server', root: 'packages/server', include: ['test/**/*.test.{ts,tsx}'], testTimeout: 30_000, hookTimeout: 60_000 },
        esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
      },
      {
        test: {
          name: 'e2e',
          root: 'test',
          include: ['**/*.test.ts'],
          exclude: ['**/node_modules/**'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});

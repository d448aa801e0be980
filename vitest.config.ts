import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      { test: { name: 'pkce', root: 'packages/pkce', include: ['test/**/*.test.ts'] } },
      { test: { name: 'cli', root: 'packages/cli', include: ['test/**/*.test.ts'] } },
      {
        test: { name: 'server', root: 'packages/server', include: ['test/**/*.test.{ts,tsx}'], testTimeout: 30_000, hookTimeout: 60_000 },
        esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
      },
      { test: { name: 'e2e', root: 'test', include: ['**/*.test.ts'], exclude: ['**/node_modules/**'], testTimeout: 60_000, hookTimeout: 60_000 } },
    ],
  },
});

import { readFileSync } from 'node:fs';
import { defineConfig } from 'tsup';

const { version } = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')) as { version: string };

export default defineConfig({
  entry: ['src/cli.ts'],
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  clean: true,
  sourcemap: true,
  // @authcli/protocol is bundled in: config.ts needs it on the `authcli token` fast path, which loads no
  // package from node_modules (test/cli-session.e2e.test.ts); it is about a kilobyte, without side effects.
  noExternal: ['@authcli/protocol'],
  // `authcli --version` is package.json's, fixed at build time (no file read on every start).
  define: { __AUTHCLI_VERSION__: JSON.stringify(version) },
});

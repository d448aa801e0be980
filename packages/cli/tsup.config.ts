import { readFileSync } from 'node:fs';
import { defineConfig } from 'tsup';

const { version } = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')) as { version: string };

export default defineConfig([
  {
    entry: ['src/cli.ts'],
    format: ['esm'],
    target: 'node20',
    platform: 'node',
    // package.json's build empties dist first: the two builds below run at once, and neither may clean the other's.
    clean: false,
    sourcemap: true,
    // @authcli/protocol is bundled in: config.ts needs it on the `authcli token` fast path, which loads no
    // package from node_modules (test/cli-session.e2e.test.ts); it is about a kilobyte, without side effects.
    noExternal: ['@authcli/protocol'],
    // `authcli --version` is package.json's, fixed at build time (no file read on every start).
    define: { __AUTHCLI_VERSION__: JSON.stringify(version) },
  },
  // The fast path of `authcli token` (commands/cached-token.ts) as one file: Node links each ES module it loads on
  // its own, and this path runs on every kubectl call. cli.ts imports it by a computed name, so the main build above
  // neither bundles nor splits it; the native keychain binding and the HTTP and JOSE packages stay imports.
  {
    entry: { 'token-fast': 'src/commands/cached-token.ts' },
    format: ['esm'],
    target: 'node20',
    platform: 'node',
    splitting: false,
    sourcemap: true,
    noExternal: ['@authcli/protocol'],
    external: ['@napi-rs/keyring', 'undici', 'jose'],
  },
]);

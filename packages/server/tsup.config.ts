import { readFileSync } from 'node:fs';
import { defineConfig } from 'tsup';

const { version } = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')) as { version: string };

export default defineConfig([
  {
    // The password and checkpoint workers are entries of their own: worker threads load them by file name
    // (util/password-pool.ts, store/checkpointer.ts).
    entry: {
      main: 'src/main.ts',
      index: 'src/index.ts',
      'password-worker': 'src/util/password-worker.ts',
      'checkpoint-worker': 'src/store/checkpoint-worker.ts',
    },
    format: ['esm'],
    target: 'node20',
    platform: 'node',
    // `pnpm build` empties dist first; the two builds here run side by side and must not clean each other.
    clean: false,
    sourcemap: true,
    // `authcli-server --version` is package.json's, fixed at build time.
    define: { __AUTHCLI_SERVER_VERSION__: JSON.stringify(version) },
  },
  {
    // The browser modules: the playground (main.ts and the modules it imports, one file with @authcli/pkce and jose inside, served at
    // /assets/playground.js) and the dashboard's copy buttons (/assets/copy.js).
    entry: { playground: 'src/web/playground/main.ts', copy: 'src/web/copy/main.ts' },
    outDir: 'dist/public',
    format: ['esm'],
    target: 'es2022',
    platform: 'browser',
    noExternal: [/.*/],
    minify: true,
    sourcemap: false,
    clean: false,
  },
]);

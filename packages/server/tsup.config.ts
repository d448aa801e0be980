import { readFileSync } from 'node:fs';
import { defineConfig } from 'tsup';

const { version } = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')) as { version: string };

export default defineConfig([
  {
    // The checkpoint worker is an entry of its own: its thread loads it by file name (store/checkpointer.ts).
    entry: {
      main: 'src/main.ts',
      index: 'src/index.ts',
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
    // The password worker (util/password-pool.ts) is one CommonJS file with nothing to import: piscina loads a
    // worker with require(), and Node 20's require() of an ES module graph can abort the whole process
    // ("v8::Module::IsGraphAsync must be used on an instantiated module") when several pools start at once.
    entry: { 'password-worker': 'src/util/password-worker.ts' },
    format: ['cjs'],
    outExtension: () => ({ js: '.cjs' }),
    target: 'node20',
    platform: 'node',
    clean: false,
    sourcemap: true,
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

import { readFileSync } from 'node:fs';
import { defineConfig, type Options } from 'tsup';

const { version } = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')) as { version: string };

/** What every Node build here shares. `pnpm build` empties dist first; the builds run side by side and must not
 * clean each other. `authcli-server --version` is package.json's, fixed at build time. */
const node: Options = {
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  clean: false,
  sourcemap: true,
  define: { __AUTHCLI_SERVER_VERSION__: JSON.stringify(version) },
};

export default defineConfig([
  {
    ...node,
    // The library (index: what tests and other packages import), the tests' raw row access (testing: an entry of its
    // own so that nothing the server runs carries it), and the checkpoint worker, an entry of its own because its
    // thread loads it by file name (store/checkpointer.ts).
    entry: {
      index: 'src/index.ts',
      testing: 'src/testing.ts',
      'checkpoint-worker': 'src/store/checkpoint-worker.ts',
    },
  },
  {
    ...node,
    // The `authcli-server` command, with its dependencies inside: Node then reads a handful of files instead of
    // about 700 modules (kysely alone is 279), so an operator command starts in 0.2 s of CPU instead of 0.8 s
    // and `start` listens 0.4 s sooner. Not inside: better-sqlite3 and @node-rs/argon2 (native addons), pg-native (pg's optional
    // addon, not installed) and piscina, which starts its threads from its own files. The bundled CommonJS
    // modules get the require, __filename and __dirname of the chunk they are in (dist/); the ones that use
    // __dirname to find files of their own (pino's transports) are never reached: the server logs to stdout.
    // The package's library entry (index) keeps its dependencies outside, as a library should.
    entry: { main: 'src/main.ts' },
    noExternal: [/^(?!(better-sqlite3|@node-rs\/argon2|pg-native|piscina)$)/],
    banner: {
      js: [
        "import { createRequire as __authcliRequire } from 'node:module';",
        "import { fileURLToPath as __authcliPath } from 'node:url';",
        "import { dirname as __authcliDirname } from 'node:path';",
        'const require = __authcliRequire(import.meta.url);',
        'const __filename = __authcliPath(import.meta.url);',
        'const __dirname = __authcliDirname(__filename);',
      ].join(' '),
    },
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
    // /assets/playground.js), the dashboard's copy buttons (/assets/copy.js), and the passkey ceremonies of the
    // sign-in and account pages (/assets/passkey.js, with @simplewebauthn/browser inside).
    entry: { playground: 'src/web/playground/main.ts', copy: 'src/web/copy/main.ts', passkey: 'src/web/passkey/main.ts' },
    outDir: 'dist/public',
    format: ['esm'],
    target: 'es2022',
    platform: 'browser',
    noExternal: [/.*/],
    // One file per page script: the pages' routes serve each by name, not the chunks they would share.
    splitting: false,
    minify: true,
    sourcemap: false,
    clean: false,
  },
]);

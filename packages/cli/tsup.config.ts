import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig, type Options } from 'tsup';

type Plugin = NonNullable<Options['esbuildPlugins']>[number];

/**
 * `@authcli/client/internal/<module>.js` is the library's source module (packages/client/src/<module>.ts): the CLI
 * is built on the library's modules and bundles them as its own code, so its lazy imports and the one-file fast
 * path of `authcli token` stay as they were (tsconfig.json and vitest.config.ts have the same alias).
 */
const clientInternals: Plugin = {
  name: 'authcli-client-internals',
  setup(build) {
    const src = fileURLToPath(new URL('../client/src/', import.meta.url));
    build.onResolve({ filter: /^@authcli\/client\/internal\// }, (args) => ({
      path: `${src}${args.path.slice('@authcli/client/internal/'.length).replace(/\.js$/, '.ts')}`,
    }));
  },
};

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
    esbuildPlugins: [clientInternals],
    // `authcli --version` is package.json's, fixed at build time (no file read on every start).
    define: { __AUTHCLI_VERSION__: JSON.stringify(version) },
  },
  // The fast path of `authcli token` (commands/cached-token.ts) as one CommonJS file: Node links each ES module it
  // loads on its own, and an ES module entry starts Node's ESM loader (about 6 ms of its internals compiled on every
  // start, measured with --cpu-prof); this path runs on every kubectl call. bin/authcli.cjs requires it before
  // anything else and cli.ts does not import it, so the main build above neither bundles nor splits it; the native
  // keychain binding and the HTTP and JOSE packages stay imports (dynamic import() is kept as it is).
  {
    entry: { 'token-fast': 'src/commands/cached-token.ts' },
    format: ['cjs'],
    target: 'node20',
    platform: 'node',
    splitting: false,
    sourcemap: true,
    // import.meta.url (createRequire in the sources) as the CommonJS file's own URL.
    shims: true,
    noExternal: ['@authcli/protocol'],
    esbuildPlugins: [clientInternals],
    external: ['@napi-rs/keyring', 'undici', 'jose'],
  },
]);

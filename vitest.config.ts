import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * The password-hash cost (log2 of Argon2id's memory in KiB) of every server the tests start, in-process or as a process, and of
 * `users add` run as a command: the bottom of AUTHCLI_PASSWORD_HASH_COST's bounds, a hash in about a
 * millisecond instead of the production 0.3-1.8 s. The tests about the cost itself set their own.
 */
const env = {
  AUTHCLI_PASSWORD_HASH_COST: '10',
  // Server processes stop at once on SIGTERM: the shutdown tests set the drain they are about.
  AUTHCLI_SHUTDOWN_DRAIN: '0',
};

/** The CLI reaches @authcli/client's modules by this name (packages/cli/tsconfig.json, bundled by its tsup.config.ts). */
const clientInternals = {
  alias: [
    { find: /^@authcli\/client\/internal\/(.*)$/, replacement: `${fileURLToPath(new URL('./packages/client/src/', import.meta.url))}$1` },
  ],
};

export default defineConfig({
  test: {
    // Files and the tests in them always run in a random order, in CI or not (the seed is printed: `Running tests with
    // seed "<seed>"`, and `--sequence.seed=<seed>` replays it), so a test that depends on another's leftovers fails.
    // The root's sequence applies to every project.
    sequence: { shuffle: true },
    // A file per core (vitest's default leaves one core idle), each in a process of its own (the forks pool), so
    // servers, ports and temp folders never meet; on PostgreSQL each worker has a database of its own
    // (test/support/databases.ts postgresTestUrl). Not more: the end-to-end files' servers, CLIs and browsers are
    // processes too, and past the cores they only slow each other into timeouts.
    pool: 'forks',
    maxWorkers: availableParallelism(),
    minWorkers: 1,
    // A worker process runs file after file without starting afresh (vitest's isolate off): fastify, kysely and the
    // server's sources load once per worker instead of once per file, half the CPU of the whole suite (test:unit
    // 75 s to 45 s, everything 416 s to 290 s on 2 cores). It holds because no test changes what a process shares:
    // no vi.mock, no fake timers, no process.env writes, no chdir or umask (test-isolation.test.ts checks), and every
    // server, store and folder a file makes is its own and closed by it.
    isolate: false,
    projects: [
      { test: { name: 'pkce', root: 'packages/pkce', include: ['test/**/*.test.ts'], env } },
      { test: { name: 'protocol', root: 'packages/protocol', include: ['test/**/*.test.ts'], env } },
      { test: { name: 'client', root: 'packages/client', include: ['test/**/*.test.ts'], env } },
      { test: { name: 'cli', root: 'packages/cli', include: ['test/**/*.test.ts'], env }, resolve: clientInternals },
      {
        test: {
          name: 'server',
          root: 'packages/server',
          include: ['test/**/*.test.{ts,tsx}'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
          env,
        },
        resolve: clientInternals,
        esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
      },
      {
        test: {
          name: 'e2e',
          root: 'test',
          include: ['**/*.test.ts'],
          // The instruction-count guard runs after everything else, alone (the `instructions` project below).
          exclude: ['**/node_modules/**', 'instructions*.e2e.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          env,
          // The server package's built bundle (test-support seed.ts writes through it) is loaded by Node as it is,
          // not transformed again by vitest: 2-4 s less per file that seeds.
          server: { deps: { external: [/packages\/server\/dist\//] } },
        },
      },
      {
        // The instruction-count guard and its proof (test/instructions*.e2e.test.ts), run by `pnpm test` after every
        // other project, one file at a time: under valgrind the server's per-request count still moves with the
        // machine's load (its once-a-second caches and list refreshes are spread over fewer requests when requests
        // are slower), measured up to +12 % on the pending poll beside two busy cores and within 2 % alone.
        test: {
          name: 'instructions',
          root: 'test',
          include: ['instructions*.e2e.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          env,
          server: { deps: { external: [/packages\/server\/dist\//] } },
        },
      },
    ],
  },
});

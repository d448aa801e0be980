import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { checkBaseline, countGuarded, readBaseline } from './support/instruction-baseline.js';
import { valgrindPresent } from './support/instructions.js';
import { describeWith } from './support/tools.js';

/**
 * The instruction-count guard (instructions.e2e.test.ts) fails on a deliberate 10 % regression: a build whose code
 * exchange and `authcli token` each do a tenth more, made by test/support/instruction-burn.cjs preloaded into the
 * server and the CLI. (The burn is the same on every request, so the cheaper paths grow by more.)
 */
const BURN = join(resolve(fileURLToPath(new URL('.', import.meta.url))), 'support/instruction-burn.cjs');
/**
 * What the burn costs under valgrind: per request, the wrapped `emit` and a SHA-256 object (about 30 k, from runs
 * of the server with it) and per byte hashed (28, OpenSSL's code, counted alone); at a process's start, the
 * preload itself and per byte encoded (counted with `authcli token`, which is deterministic).
 */
const REQUEST = { fixed: 30_000, perByte: 28 };
const START = { fixed: 2_040_000, perByte: 1.792 };

describeWith(
  'valgrind',
  valgrindPresent(),
  'valgrind is not installed',
)('the instruction-count guard on a regression', () => {
  it(
    'fails on a deliberate 10 % regression: a code exchange and `authcli token` that each do a tenth more',
    { timeout: 40 * 60_000 },
    async () => {
      const baseline = readBaseline();
      const bytes = (instructions: number, cost: { fixed: number; perByte: number }) =>
        String(Math.round((0.1 * instructions - cost.fixed) / cost.perByte));
      // Counted once, as the guard's first count is (it counts again only to clear a path), and every server path
      // with it, so that the server warms up as it does in the guard.
      const counts = await countGuarded({
        serverNodeArgs: ['--require', BURN],
        serverEnv: { INSTR_BURN_BYTES: bytes(baseline.paths.exchange, REQUEST) },
        cliNodeArgs: ['--require', BURN],
        cliEnv: { INSTR_BURN_START_BYTES: bytes(baseline.paths.cliToken, START) },
      });
      const outcome = checkBaseline(baseline, counts);
      console.log(outcome.report);
      expect(outcome.ok).toBe(false);
      for (const label of ['code exchange', 'authcli token']) expect(outcome.report).toMatch(new RegExp(`^REGRESSION +${label}`, 'm'));
      // The regressions made are the ones meant: `authcli token` a tenth more to a percent (its count repeats to the
      // instruction), the exchange about a tenth (the burn's own cost is known to a few thousand instructions, and
      // the count moves by a few percent from run to run).
      expect(outcome.growth.cliToken).toBeGreaterThan(0.09);
      expect(outcome.growth.cliToken).toBeLessThan(0.11);
      expect(outcome.growth.exchange).toBeGreaterThan(0.07);
      expect(outcome.growth.exchange).toBeLessThan(0.16);
    },
  );
});

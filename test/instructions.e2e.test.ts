import { expect, it } from 'vitest';
import { guard, readBaseline, TOLERANCE } from './support/instruction-baseline.js';
import { valgrindPresent } from './support/instructions.js';
import { describeWith } from './support/tools.js';

/**
 * The instruction-count regression guard (issue 38): the hot paths of this build, counted under valgrind's
 * callgrind (test/support/instructions.ts), against bench/instructions-baseline.json. The count still moves with
 * the machine's load, so `pnpm test` runs it after the rest of the suite, alone (vitest.config.ts). That it fails on a real
 * regression is shown by instructions-regression.e2e.test.ts (a file of its own, so the two run side by side).
 */
describeWith(
  'valgrind',
  valgrindPresent(),
  'valgrind is not installed',
)('the instruction-count guard', () => {
  it(`every hot path is within ${TOLERANCE * 100} % of its baseline`, { timeout: 40 * 60_000 }, async () => {
    const outcome = await guard(readBaseline());
    console.log(outcome.report);
    expect(outcome.ok, outcome.report).toBe(true);
  });
});

/**
 * Instructions per request on the hot paths, counted by valgrind's callgrind (test/support/instructions.ts):
 * repeatable on a machine whose speed changes from minute to minute, where requests per second are not
 * (bench/README.md, "Instruction counts").
 *
 *   node --import tsx instructions.ts [SERVER_BIN ...]      every kind, for each build in a row (default: this one)
 *   node --import tsx instructions.ts --check               the guarded paths against instructions-baseline.json
 *   node --import tsx instructions.ts --write-baseline "why" counts the guarded paths and writes the baseline
 *
 * Knobs: INSTR_BATCH (50 requests a batch), INSTR_BATCHES (9 per kind), INSTR_WARMUP (400 per kind), INSTR_KEEP
 * (keep the callgrind files), INSTR_NODE_ARGS (for the server's node).
 */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { countServer, LABELS, type ServerKind } from '@authcli/test-support/instructions';
import { checkBaseline, countGuarded, readBaseline, writeBaseline } from '@authcli/test-support/instruction-baseline';
import { dpopSigner } from './dpop.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const ALL_KINDS: ServerKind[] = ['exchange', 'dpopExchange', 'refresh', 'dpopRefresh', 'introspection', 'poll', 'confidentialPoll'];
const m = (n: number) => `${(n / 1e6).toFixed(3)} M`;

const args = process.argv.slice(2);
if (args[0] === '--check') {
  const outcome = checkBaseline(readBaseline(), await countGuarded());
  console.log(outcome.report);
  process.exitCode = outcome.ok ? 0 : 1;
} else if (args[0] === '--write-baseline') {
  const why = args[1];
  if (!why) throw new Error('--write-baseline needs the reason, e.g. --write-baseline "the exchange now checks X"');
  const counts = await countGuarded();
  writeBaseline(counts, why);
  for (const [path, c] of Object.entries(counts))
    console.log(`${LABELS[path as keyof typeof LABELS]}: ${m(c.main)} (batches ${c.batches.map(m).join(', ')})`);
} else {
  const bins = args.length > 0 ? args : [join(here, '../packages/server/bin/authcli-server.cjs')];
  for (const bin of bins) {
    const counts = await countServer({
      bin,
      kinds: ALL_KINDS,
      dpop: dpopSigner(),
      batchSize: Number(process.env.INSTR_BATCH ?? 50),
      batches: Number(process.env.INSTR_BATCHES ?? 9),
      warmup: Number(process.env.INSTR_WARMUP ?? 400),
      nodeArgs: process.env.INSTR_NODE_ARGS?.split(' ').filter(Boolean) ?? [],
      keep: Boolean(process.env.INSTR_KEEP),
    });
    console.log(bin);
    for (const [kind, c] of Object.entries(counts)) {
      console.log(
        `  ${LABELS[kind as ServerKind]}: ${m(c.main)} on the main thread (median of ${c.batches.length} batches: ${c.batches.map(m).join(', ')}), ${m(c.all)} in all threads`,
      );
    }
  }
}

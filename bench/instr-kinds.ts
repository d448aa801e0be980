/**
 * Counts chosen kinds for several builds (a bisecting aid): node --import tsx instr-kinds.ts kind,kind BIN...
 * INSTR_KEEP=1 keeps each build's callgrind dumps (their folder is printed) for `callgrind_annotate`.
 */
import { countServer, type ServerKind } from '@authcli/test-support/instructions';
import { dpopSigner } from './dpop.js';

const [kinds, ...bins] = process.argv.slice(2);
for (const bin of bins) {
  const counts = await countServer({
    bin,
    kinds: kinds!.split(',') as ServerKind[],
    dpop: dpopSigner(),
    batchSize: 50,
    batches: 5,
    warmup: 400,
    keep: process.env.INSTR_KEEP === '1',
  });
  for (const [kind, c] of Object.entries(counts)) console.log(`${bin} ${kind}: ${(c.main / 1e6).toFixed(3)} M`);
}

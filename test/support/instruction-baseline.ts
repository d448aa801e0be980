/**
 * The instruction-count regression guard: bench/instructions-baseline.json holds, per hot path, the main-thread
 * instructions per request of the build it was written from (test/support/instructions.ts counts them), and
 * {@link checkBaseline} fails when a path has grown by more than {@link TOLERANCE}, or shrunk by more (a baseline
 * left above an improvement would let a later regression of that size pass unseen). Updating the baseline is a
 * commit of its own that says why: `node --import tsx bench/instructions.ts --write-baseline "<why>"`.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Counted, countCliToken, countServer, GUARDED, type GuardedPath, LABELS, VALGRIND } from './instructions.js';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
export const BASELINE_FILE = join(root, 'bench/instructions-baseline.json');
const SERVER_BIN = join(root, 'packages/server/bin/authcli-server.cjs');
const CLI_BIN = join(root, 'packages/cli/bin/authcli.cjs');

/** How far a path may move from its baseline: 5 %, where runs of one build differ by at most about 2 %. */
export const TOLERANCE = 0.05;

export interface Baseline {
  /** Why the figures are what they are: the commit that wrote them says it too. */
  why: string;
  written: string;
  node: string;
  valgrind: string;
  /** Main-thread instructions per request (per process for `cliToken`). */
  paths: Record<GuardedPath, number>;
}

const valgrindVersion = () => spawnSync(VALGRIND, ['--version'], { encoding: 'utf8' }).stdout?.trim() || 'no valgrind';

export function readBaseline(file = BASELINE_FILE): Baseline {
  return JSON.parse(readFileSync(file, 'utf8')) as Baseline;
}

export function writeBaseline(counts: Record<GuardedPath, Counted>, why: string, file = BASELINE_FILE): void {
  const baseline: Baseline = {
    why,
    written: new Date().toISOString().slice(0, 10),
    node: process.version,
    valgrind: valgrindVersion(),
    paths: Object.fromEntries(GUARDED.map((p) => [p, Math.round(counts[p].main)])) as Record<GuardedPath, number>,
  };
  writeFileSync(file, `${JSON.stringify(baseline, null, 2)}\n`);
}

export interface GuardOptions {
  /** Extra node arguments of the server (a deliberate regression's `--import`), and its environment's additions. */
  serverNodeArgs?: string[];
  serverEnv?: Record<string, string>;
  /** Extra node arguments of the CLI process, and its environment's additions. */
  cliNodeArgs?: string[];
  cliEnv?: Record<string, string>;
  /** The guarded paths to count (all of them by default). */
  paths?: readonly GuardedPath[];
}

/** Counts the guarded paths of this checkout's build. */
export async function countGuarded(opts: GuardOptions = {}): Promise<Record<GuardedPath, Counted>> {
  const paths = opts.paths ?? GUARDED;
  const kinds = paths.filter((p): p is Exclude<GuardedPath, 'cliToken'> => p !== 'cliToken');
  const server =
    kinds.length > 0 ? await countServer({ bin: SERVER_BIN, kinds, nodeArgs: opts.serverNodeArgs ?? [], env: opts.serverEnv ?? {} }) : {};
  return {
    ...server,
    ...(paths.includes('cliToken') && { cliToken: countCliToken(CLI_BIN, { nodeArgs: opts.cliNodeArgs ?? [], env: opts.cliEnv }) }),
  } as Record<GuardedPath, Counted>;
}

/**
 * The guard as the suite runs it: the paths counted, and when one is out of tolerance, counted once more from a
 * fresh server, each path keeping the nearer of its two counts. A real change moves both counts; a batch of V8's
 * own work (a recompilation, a collection) that pushed one median seldom pushes both (bench/README.md: runs of one
 * build agree within about 3 %).
 */
export async function guard(baseline: Baseline, opts: GuardOptions = {}): Promise<GuardOutcome> {
  const first = await countGuarded(opts);
  const outcome = checkBaseline(baseline, first);
  if (outcome.ok) return outcome;
  const again = await countGuarded(opts);
  const nearer = Object.fromEntries(
    (Object.keys(first) as GuardedPath[]).map((p) => {
      const [a, b] = [first[p], again[p]];
      return [p, Math.abs(a.main / baseline.paths[p] - 1) <= Math.abs(b.main / baseline.paths[p] - 1) ? a : b];
    }),
  ) as Record<GuardedPath, Counted>;
  const second = checkBaseline(baseline, nearer);
  return {
    ...second,
    report: `first count:\n${outcome.report}\n\ncounted again, each path's count nearer its baseline:\n${second.report}`,
  };
}

export interface GuardOutcome {
  ok: boolean;
  /** Each path's growth over its baseline (0.1: 10 % more instructions). */
  growth: Partial<Record<GuardedPath, number>>;
  report: string;
}

/** Compares `counts` with `baseline`; the report names every path, and says what to do about a failure. */
export function checkBaseline(baseline: Baseline, counts: Partial<Record<GuardedPath, Counted>>): GuardOutcome {
  const lines: string[] = [];
  const growth: Partial<Record<GuardedPath, number>> = {};
  let ok = true;
  if (baseline.node !== process.version || baseline.valgrind !== valgrindVersion()) {
    lines.push(
      `the baseline was counted with node ${baseline.node} and ${baseline.valgrind}, this is node ${process.version} and ${valgrindVersion()}: the counts are not comparable; write a new baseline with this Node, from the commit before your change`,
    );
    ok = false;
  }
  for (const path of GUARDED) {
    const c = counts[path];
    if (!c) continue;
    const g = c.main / baseline.paths[path] - 1;
    growth[path] = g;
    const verdict = g > TOLERANCE ? 'REGRESSION' : g < -TOLERANCE ? 'IMPROVED: lower the baseline' : 'ok';
    if (verdict !== 'ok') ok = false;
    lines.push(
      `${verdict.padEnd(28)} ${LABELS[path]}: ${(c.main / 1e6).toFixed(3)} M instructions (baseline ${(baseline.paths[path] / 1e6).toFixed(3)} M, ${g >= 0 ? '+' : ''}${(g * 100).toFixed(1)} %; batches ${c.batches.map((b) => (b / 1e6).toFixed(3)).join(' ')})`,
    );
  }
  if (!ok) {
    lines.push(
      `more than ${TOLERANCE * 100} % from bench/instructions-baseline.json (written ${baseline.written}: ${baseline.why}). If the change is meant, write the baseline again in a commit that says why: node --import tsx bench/instructions.ts --write-baseline "<why>"`,
    );
  }
  return { ok, growth, report: lines.join('\n') };
}

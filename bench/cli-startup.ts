// Cold start of the built CLI: wall time of whole `node packages/cli/dist/cli.js …` processes, median of N runs.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Startup {
  name: string;
  medianMs: number;
  minMs: number;
  runs: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function time(args: string[], env: NodeJS.ProcessEnv, runs: number): { medianMs: number; minMs: number } {
  const samples: number[] = [];
  for (let i = 0; i < runs + 2; i++) {
    const t = performance.now();
    spawnSync(process.execPath, args, { env, stdio: 'ignore' });
    if (i >= 2) samples.push(performance.now() - t); // two warm-ups fill the OS file cache
  }
  return { medianMs: median(samples), minMs: Math.min(...samples) };
}

export function cliStartup(cli: string, runs = 21): Startup[] {
  const home = mkdtempSync(join(tmpdir(), 'authcli-startup-'));
  const env = { PATH: process.env.PATH ?? '', HOME: home, XDG_CONFIG_HOME: home, AUTHCLI_ISSUER: 'http://127.0.0.1:9' };
  try {
    return [
      { name: 'node -e 0 (Node itself)', ...time(['-e', '0'], env, runs), runs },
      { name: 'authcli --help', ...time([cli, '--help'], env, runs), runs },
      { name: 'authcli status (signed out)', ...time([cli, 'status'], env, runs), runs },
    ];
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

// `node --import tsx metrics-ab.ts`: what turning metrics on costs a pending device poll (the cheapest request on
// a hot path, so the one where a per-request cost shows most). Two `authcli-server start` processes side by side,
// one without and one with AUTHCLI_METRICS_PORT, each on its own embedded store seeded with pending device
// authorizations; the polls alternate between them in short rounds (A B B A ...), so a machine that changes
// speed affects both alike. Reported per server: polls/s and server CPU per poll (/proc, user + system).
// Bounded: BENCH_AB_ROUNDS rounds (4) of BENCH_AB_SECONDS (4) per server; traffic to 127.0.0.1 only.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '@authcli/server';
import { freePort } from '@authcli/test-support/http';
import { pollPending, seedPending } from './device.js';

const here = dirname(fileURLToPath(import.meta.url));
const SERVER = join(here, '../packages/server/bin/authcli-server.cjs');
const ROUNDS = Number(process.env.BENCH_AB_ROUNDS ?? 4);
const SECONDS = Number(process.env.BENCH_AB_SECONDS ?? 4);
const CODES = Number(process.env.BENCH_DEVICE_CODES ?? 200_000);

/** User + system CPU seconds a process has used (Linux /proc). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface Server {
  name: string;
  issuer: string;
  child: ChildProcess;
  codes: string[];
  polls: number;
  seconds: number;
  cpu: number;
}

async function start(name: string, dir: string, extraEnv: Record<string, string>): Promise<Server> {
  const port = await freePort();
  const databaseUrl = join(dir, `${name}.db`);
  const child = spawn(process.execPath, [SERVER, 'start'], {
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...extraEnv },
    stdio: 'ignore',
  });
  const issuer = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${issuer}/readyz`)).ok) break;
    } catch {
      /* not yet */
    }
    if (i > 200 || child.exitCode !== null) throw new Error(`${name} did not start`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const seeding = await openStore(databaseUrl);
  let codes: string[];
  try {
    codes = await seedPending(seeding, CODES, 1_000_000);
    await seeding.checkpoint();
  } finally {
    await seeding.close();
  }
  return { name, issuer, child, codes, polls: 0, seconds: 0, cpu: 0 };
}

async function round(s: Server, codes: string[], seconds = SECONDS): Promise<void> {
  const before = cpuSeconds(s.child.pid!);
  const { figures } = await pollPending(s.issuer, codes, seconds, 32);
  s.cpu += cpuSeconds(s.child.pid!) - before;
  if (figures.mismatches || figures.errors)
    throw new Error(`${s.name}: ${figures.mismatches} answers not pending, ${figures.errors} errors`);
  s.polls += figures.rps * seconds;
  s.seconds += seconds;
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'authcli-metrics-ab-'));
  const servers: Server[] = [];
  try {
    servers.push(await start('off', dir, {}));
    servers.push(await start('on', dir, { AUTHCLI_METRICS_PORT: String(await freePort()) }));
    const [off, on] = servers as [Server, Server];
    // Warm-up on codes of their own (a code polled again within 5 s would rightly get slow_down), then the
    // measured rounds on the rest, each round on a slice of its own that it cannot poll through (a code is
    // polled at most once a round: more codes per round than polls; the run stops with an error otherwise).
    const warm = 10_000;
    await round(off, off.codes.slice(0, warm), 2);
    await round(on, on.codes.slice(0, warm), 2);
    Object.assign(off, { polls: 0, seconds: 0, cpu: 0 });
    Object.assign(on, { polls: 0, seconds: 0, cpu: 0 });
    const slice = Math.floor((CODES - warm) / ROUNDS);
    for (let r = 0; r < ROUNDS; r++) {
      const codes = (s: Server) => s.codes.slice(warm + r * slice, warm + (r + 1) * slice);
      for (const s of r % 2 === 0 ? [off, on] : [on, off]) await round(s, codes(s));
    }
    console.log(`pending device polls, 32 connections, ${ROUNDS} alternating rounds of ${SECONDS} s per server`);
    for (const s of servers) {
      console.log(
        `metrics ${s.name.padEnd(3)}: ${(s.polls / s.seconds).toFixed(0)} polls/s, server CPU ${((s.cpu / s.polls) * 1e6).toFixed(1)} µs per poll`,
      );
    }
    console.log(
      `on / off: polls/s ${(on.polls / on.seconds / (off.polls / off.seconds)).toFixed(3)}, CPU per poll ${(on.cpu / on.polls / (off.cpu / off.polls)).toFixed(3)}`,
    );
  } finally {
    for (const s of servers) s.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

/**
 * A/B: this checkout's server against the build of a git ref, interleaved in one run on one machine, so that the
 * machine's changes of speed (a shared VM: up to 2x within minutes) fall on both builds alike.
 *
 *   node --import tsx ab.ts <git-ref>        (or: npx -y pnpm@10 bench:ab <git-ref>)
 *
 * The ref is built once into bench/.ab/<commit> (`git archive`, `pnpm install --frozen-lockfile`, the server's
 * build) and reused. Both servers run side by side, each on a fresh SQLite file, and are measured in turn: in each
 * of AB_ROUNDS (3) rounds every scenario runs on both builds, the order alternating from round to round (A then B,
 * then B then A), each run AB_SECONDS (5) long after a warm-up of its own. The answer per scenario is the median
 * over the rounds of B's rate / A's rate, beside each round's figures and the server CPU per answer (/proc).
 *
 * Scenarios (AB_SCENARIOS, comma-separated):
 * - `poll`: pending device polls (RFC 8628 §3.4) by a confidential client (client_secret_basic), 32 connections,
 *   every answer `authorization_pending`; the codes come from each server's own device authorization endpoint,
 *   and each is polled again only after more than its 5 s interval (never `slow_down`);
 * - `exchange`: authorization code exchanges (public client, PKCE S256), 16 connections, codes minted through the
 *   server's authorize route right before the run (they live 60 s), every answer with an ID token.
 *
 * AB_NODE_ARGS are given to both servers' node (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`). Raw figures land in
 * bench/results/ab.json.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { challengeS256, generateVerifier } from '@authcli/pkce';
import { Browser, freePort, hidden } from '@authcli/test-support/http';
import { waitUntilReady } from '@authcli/test-support/server-process';
import { distinctPosts, type LoadFigures } from './load.js';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..');
const ROUNDS = Number(process.env.AB_ROUNDS ?? 3);
const SECONDS = Number(process.env.AB_SECONDS ?? 5);
const WARMUP_SECONDS = 2;
const SCENARIOS = (process.env.AB_SCENARIOS ?? 'poll,exchange').split(',') as Scenario[];
const PASSWORD = 'ab password 1';
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** Pending device codes per server: at up to 16,000 polls/s each comes back after more than 5 s. */
const DEVICE_CODES = Number(process.env.AB_DEVICE_CODES ?? 100_000);
/** Codes minted per exchange run: more than a run can use at this machine's rate. */
const CODES_PER_RUN = Number(process.env.AB_CODES ?? 4_000 * SECONDS);

type Scenario = 'poll' | 'exchange';

/** Builds `ref` into bench/.ab/<commit> unless it is there; returns its server bin. */
function buildRef(ref: string): { commit: string; bin: string } {
  const commit = execFileSync('git', ['rev-parse', '--verify', `${ref}^{commit}`], { cwd: repo, encoding: 'utf8' }).trim();
  const dir = join(here, '.ab', commit);
  const bin = join(dir, 'packages/server/bin/authcli-server.cjs');
  if (existsSync(join(dir, '.built'))) return { commit, bin };
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  console.error(`building ${ref} (${commit.slice(0, 12)}) into ${dir}`);
  execFileSync('sh', ['-c', `git archive ${commit} | tar -x -C '${dir}'`], { cwd: repo, stdio: 'inherit' });
  const pnpm = (...args: string[]) => execFileSync('npx', ['-y', 'pnpm@10', ...args], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  pnpm('install', '--frozen-lockfile', '--prefer-offline');
  pnpm('-r', '--filter', './packages/pkce', '--filter', './packages/protocol', '--filter', './packages/server', 'run', 'build');
  writeFileSync(join(dir, '.built'), `${commit}\n`);
  return { commit, bin };
}

function cli(bin: string, args: string[], env: NodeJS.ProcessEnv, input = ''): string {
  const r = spawnSync(process.execPath, [bin, ...args], { env: { ...process.env, ...env }, input, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

/** CPU seconds a process has used so far in user and in kernel mode (Linux /proc). */
function cpuSeconds(pid: number): { user: number; system: number } {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 };
}

/** One server under test: its process, a signed-in browser that approved the built-in app, a confidential client. */
interface Side {
  label: string;
  bin: string;
  issuer: string;
  server: ChildProcess;
  dir: string;
  authorizeUrl: string;
  jar: Browser;
  verifier: string;
  backendAuth: string;
  deviceCodes: string[];
}

async function startSide(label: string, bin: string): Promise<Side> {
  const dir = mkdtempSync(join(tmpdir(), 'authcli-ab-'));
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const env = {
    DATABASE_URL: join(dir, 'ab.db'),
    PORT: String(port),
    HOST: '127.0.0.1',
    AUTHCLI_ISSUER: issuer,
    LOG_LEVEL: 'warn',
    // The device codes are asked for from one address at full speed, far past the default per-IP limit.
    AUTHCLI_LIMITS: 'device-authz-ip=100000000/1m,device-authz-client=100000000/1m',
  };
  cli(bin, ['users', 'add', 'ab', '--password-stdin'], env, `${PASSWORD}\n`);
  const backend = JSON.parse(
    cli(
      bin,
      [
        'apps',
        'add',
        '--name',
        'Backend',
        '--kind',
        'confidential',
        '--callback',
        'https://app.example/cb',
        '--scope',
        'openid profile',
        '--grant',
        'device_code',
        '--json',
      ],
      env,
    ),
  ) as { client_id: string; client_secret: string };
  const server = spawn(process.execPath, [...(process.env.AB_NODE_ARGS?.split(' ').filter(Boolean) ?? []), bin, 'start'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await waitUntilReady(issuer, server, () => '');

  const jar = new Browser(issuer);
  const page = await jar.get('/signin');
  await jar.postForm('/signin', { _csrf: hidden(page.text, '_csrf'), username: 'ab', password: PASSWORD });
  const verifier = generateVerifier();
  const authorizeUrl = `${issuer}/oauth/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: 'authcli',
    redirect_uri: 'http://127.0.0.1:1/callback',
    scope: 'openid profile',
    state: 'ab',
    nonce: 'n'.repeat(43),
    code_challenge: await challengeS256(verifier),
    code_challenge_method: 'S256',
  })}`;
  const consent = await jar.get(authorizeUrl);
  if (consent.status !== 200) throw new Error(`${label}: expected the consent page, got ${consent.status}`);
  await jar.postForm('/consent', { _csrf: hidden(consent.text, '_csrf'), request: hidden(consent.text, 'request'), decision: 'approve' });

  const backendAuth = `Basic ${Buffer.from(`${encodeURIComponent(backend.client_id)}:${encodeURIComponent(backend.client_secret)}`).toString('base64')}`;
  const side: Side = { label, bin, issuer, server, dir, authorizeUrl, jar, verifier, backendAuth, deviceCodes: [] };
  if (SCENARIOS.includes('poll')) side.deviceCodes = await deviceCodes(side, DEVICE_CODES);
  return side;
}

/** Runs `work` `n` times, `concurrency` at a time. */
async function times(n: number, concurrency: number, work: () => Promise<void>): Promise<void> {
  let started = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (started++ < n) await work();
    }),
  );
}

async function deviceCodes(side: Side, n: number): Promise<string[]> {
  const codes: string[] = [];
  await times(n, 16, async () => {
    const r = await fetch(`${side.issuer}/oauth/device/authorization`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: side.backendAuth },
      body: 'scope=openid%20profile',
    });
    if (r.status !== 200) throw new Error(`${side.label}: device authorization answered ${r.status}`);
    codes.push(((await r.json()) as { device_code: string }).device_code);
  });
  return codes;
}

async function mintCodes(side: Side, n: number): Promise<string[]> {
  const codes: string[] = [];
  await times(n, 16, async () => {
    const r = await side.jar.get(side.authorizeUrl);
    if (r.status !== 303 || !r.location) throw new Error(`${side.label}: authorize answered ${r.status}`);
    codes.push(new URL(r.location).searchParams.get('code')!);
  });
  return codes;
}

/** The next `n` device codes of the side's ring (each comes back after all the others). */
const pollCursor = new Map<Side, number>();
function nextDeviceCodes(side: Side, n: number): string[] {
  const at = pollCursor.get(side) ?? 0;
  const out = Array.from({ length: n }, (_, i) => side.deviceCodes[(at + i) % side.deviceCodes.length]!);
  pollCursor.set(side, (at + n) % side.deviceCodes.length);
  return out;
}

const windows: { side: string; pid: number; scenario: Scenario; seconds: number; startUs: number; endUs: number }[] = [];

interface Run {
  rps: number;
  /** Server CPU (user + system) per answer, in microseconds, and the part of it spent in the kernel. */
  cpuUsPerAnswer: number;
  systemUsPerAnswer: number;
  p99: number;
  /** Answers that were not the expected ones, or no answer (they fail the run); a pending poll's is a 400. */
  wrong: number;
}

async function measure(side: Side, scenario: Scenario, seconds: number): Promise<Run> {
  let load: Parameters<typeof distinctPosts>[0];
  if (scenario === 'poll') {
    // Polled in the order they were issued; the ring is long enough that no code comes back within 5 s.
    const codes = nextDeviceCodes(side, Math.min(side.deviceCodes.length, 16_000 * seconds));
    load = {
      url: `${side.issuer}/oauth/token`,
      connections: 32,
      seconds,
      bodies: codes.map((c) => `grant_type=${encodeURIComponent(DEVICE_GRANT)}&device_code=${c}`),
      headers: codes.map(() => ({ authorization: side.backendAuth })),
      once: true,
      verify: (body) => String(body).includes('"error":"authorization_pending"'),
    };
  } else {
    const codes = await mintCodes(side, CODES_PER_RUN);
    load = {
      url: `${side.issuer}/oauth/token`,
      connections: 16,
      seconds,
      bodies: codes.map((code) =>
        new URLSearchParams({
          grant_type: 'authorization_code',
          client_id: 'authcli',
          code,
          redirect_uri: 'http://127.0.0.1:1/callback',
          code_verifier: side.verifier,
        }).toString(),
      ),
      once: true,
      verify: (body) => String(body).includes('"id_token"'),
    };
  }
  const cpuBefore = cpuSeconds(side.server.pid!);
  const startUs = process.hrtime.bigint() / 1000n;
  const f: LoadFigures = await distinctPosts(load);
  const cpuAfter = cpuSeconds(side.server.pid!);
  // When each run was, on the monotonic clock a `--cpu-prof` profile's timestamps use (AB_NODE_ARGS): its samples
  // of one run are those between these two.
  windows.push({
    side: side.label,
    pid: side.server.pid!,
    scenario,
    seconds,
    startUs: Number(startUs),
    endUs: Number(process.hrtime.bigint() / 1000n),
  });
  const user = cpuAfter.user - cpuBefore.user;
  const system = cpuAfter.system - cpuBefore.system;
  return {
    rps: f.rps,
    cpuUsPerAnswer: ((user + system) / f.total) * 1e6,
    systemUsPerAnswer: (system / f.total) * 1e6,
    p99: f.p99,
    wrong: f.mismatches + f.errors,
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function main() {
  const ref = process.argv[2];
  if (!ref) throw new Error('usage: node --import tsx ab.ts <git-ref>');
  for (const s of SCENARIOS) if (s !== 'poll' && s !== 'exchange') throw new Error(`unknown scenario ${s} (poll, exchange)`);
  const before = buildRef(ref);
  const head = execFileSync('git', ['describe', '--always', '--dirty'], { cwd: repo, encoding: 'utf8' }).trim();
  const sides: Side[] = [];
  try {
    sides.push(await startSide(`${ref} (${before.commit.slice(0, 7)})`, before.bin));
    sides.push(await startSide(`this checkout (${head})`, join(repo, 'packages/server/bin/authcli-server.cjs')));
    const [a, b] = sides as [Side, Side];
    for (const scenario of SCENARIOS) for (const side of sides) await measure(side, scenario, WARMUP_SECONDS);
    const runs = new Map<Scenario, { a: Run[]; b: Run[] }>(SCENARIOS.map((s) => [s, { a: [], b: [] }]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const scenario of SCENARIOS) {
        const order = round % 2 === 0 ? [a, b] : [b, a];
        for (const side of order) {
          const r = await measure(side, scenario, SECONDS);
          if (r.wrong > 0) throw new Error(`${side.label}, ${scenario}: ${r.wrong} wrong answers`);
          runs.get(scenario)![side === a ? 'a' : 'b'].push(r);
        }
      }
    }
    const lines = [
      `A/B — ${new Date().toISOString()} — node ${process.version}; A = ${a.label}, B = ${b.label}; ${ROUNDS} rounds of ${SECONDS} s, order alternating`,
      '',
      '| scenario | round | A req/s | B req/s | B/A | A CPU µs/answer (kernel) | B CPU µs/answer (kernel) |',
      '|---|---:|---:|---:|---:|---:|---:|',
    ];
    const summary: Record<string, { medianRatio: number; medianCpuRatio: number }> = {};
    for (const [scenario, { a: ra, b: rb }] of runs) {
      const ratios = ra.map((x, i) => rb[i]!.rps / x.rps);
      const cpuRatios = ra.map((x, i) => rb[i]!.cpuUsPerAnswer / x.cpuUsPerAnswer);
      ra.forEach((x, i) => {
        const y = rb[i]!;
        lines.push(
          `| ${scenario} | ${i + 1} | ${x.rps.toFixed(0)} | ${y.rps.toFixed(0)} | ${ratios[i]!.toFixed(3)} | ${x.cpuUsPerAnswer.toFixed(0)} (${x.systemUsPerAnswer.toFixed(0)}) | ${y.cpuUsPerAnswer.toFixed(0)} (${y.systemUsPerAnswer.toFixed(0)}) |`,
        );
      });
      summary[scenario] = { medianRatio: median(ratios), medianCpuRatio: median(cpuRatios) };
    }
    lines.push('');
    for (const [scenario, s] of Object.entries(summary)) {
      lines.push(
        `${scenario}: B/A rate, median of ${ROUNDS} rounds: ${s.medianRatio.toFixed(3)}; B/A CPU per answer: x${s.medianCpuRatio.toFixed(3)}`,
      );
    }
    process.stdout.write(`${lines.join('\n')}\n`);
    mkdirSync(join(here, 'results'), { recursive: true });
    writeFileSync(
      join(here, 'results', 'ab.json'),
      JSON.stringify({ a: a.label, b: b.label, runs: Object.fromEntries(runs), summary, windows }, null, 2),
    );
  } finally {
    for (const s of sides) {
      s.server.kill('SIGTERM');
      await new Promise((r) => (s.server.exitCode !== null ? r(undefined) : s.server.once('close', r)));
      rmSync(s.dir, { recursive: true, force: true });
    }
  }
}

await main();

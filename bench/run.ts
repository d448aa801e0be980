// `pnpm bench`: load scenarios against a real `authcli-server start` process
// on the embedded SQLite store, beside a bare Fastify route in the same run.
// Every loop is bounded in time and count; traffic goes to 127.0.0.1 only.
import type autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { challengeS256, generateVerifier } from '@authcli/pkce';
import { openStore } from '@authcli/server';
import { Browser, freePort, hidden } from '@authcli/test-support/http';
import { bytesPerPending, deviceAuthorizations, pollOutcome, pollPending, seedPending, storelessTokenAnswers } from './device.js';
import { cliStartup } from './cli-startup.js';
import { distinctPosts, repeated, type LoadFigures } from './load.js';
import { dpopNonce, dpopSigner } from './dpop.js';
import { atNewBrowsers, honestBurst, seedPeople, signInFlood, statusText, type BurstFigures, type FloodFigures } from './signin-flood.js';
import { clientAuthScenario } from './client-auth.js';

const here = dirname(fileURLToPath(import.meta.url));
/** The server bin measured: this checkout's, or BENCH_SERVER (another checkout's build, for a before/after run). */
const SERVER = process.env.BENCH_SERVER ?? join(here, '../packages/server/bin/authcli-server.cjs');
const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
/** Seconds of warm-up before each device-flow measurement, and the pending codes set aside for it. */
const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const WARMUP_CODES = 100_000;
const PASSWORD = 'bench password 1';
const SCENARIOS = new Set((process.env.BENCH_SCENARIOS ?? 'code,dpop,mixed,client,device,cli').split(','));
/** Single-use tokens per kind of the DPoP scenario (four kinds), in how many rounds, and its longest run in seconds. */
const DPOP_TOKENS = Number(process.env.BENCH_DPOP_TOKENS ?? 8000);
const DPOP_ROUNDS = Number(process.env.BENCH_DPOP_ROUNDS ?? 4);
const DPOP_SECONDS = Number(process.env.BENCH_DPOP_SECONDS ?? 10);

function run(args: string[], env: NodeJS.ProcessEnv, input = ''): Promise<string> {
  return new Promise((res, rej) => {
    const c = spawn(process.execPath, args, { env: { ...process.env, ...env } });
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d));
    c.stderr.on('data', (d: Buffer) => process.stderr.write(d));
    c.on('close', (code) => (code === 0 ? res(out) : rej(new Error(`${args.join(' ')} exited ${code}`))));
    c.stdin.end(input);
  });
}

async function waitReady(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error('process exited');
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} not ready`);
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

async function load(opts: autocannon.Options): Promise<LoadFigures> {
  return repeated({ ...opts, duration: DURATION });
}

type Row = readonly [string, LoadFigures];

/** Authorization code exchange: mint codes through /oauth/authorize, then exchange them. */
type Bound = { sequential: number; pooled: number };

/** RS256 ID-token signatures alone, in a separate process (see sign-bound.ts). */
async function signBound(seconds: number): Promise<Bound> {
  return JSON.parse(await run(['--import', 'tsx', join(here, 'sign-bound.ts'), String(seconds)], {})) as Bound;
}

/** A signed-in session that has approved the built-in public application, and its authorization URL. */
async function approvedSession(issuer: string) {
  const jar = new Browser(issuer);
  const page = await jar.get('/signin');
  await jar.postForm('/signin', { _csrf: hidden(page.text, '_csrf'), username: 'bench', password: PASSWORD });
  const verifier = generateVerifier();
  const challenge = await challengeS256(verifier);
  const redirectUri = 'http://127.0.0.1:1/callback';
  const authorizeUrl = `${issuer}/oauth/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: 'authcli',
    redirect_uri: redirectUri,
    scope: process.env.BENCH_SCOPE ?? 'openid profile',
    state: 'bench',
    nonce: 'n'.repeat(43),
    code_challenge: challenge,
    code_challenge_method: 'S256',
  })}`;
  const consent = await jar.get(authorizeUrl);
  // An earlier scenario's session may have approved the application already: then there is no consent page.
  if (consent.status === 200) {
    await jar.postForm('/consent', { _csrf: hidden(consent.text, '_csrf'), request: hidden(consent.text, 'request'), decision: 'approve' });
  }
  return { jar, authorizeUrl, verifier, redirectUri };
}

/** Mints codes through the real authorize route (consent remembered: one 303 each), 16 at a time. */
async function mintCodes(
  session: Awaited<ReturnType<typeof approvedSession>>,
  want: number,
): Promise<{ codes: string[]; mintRps: number }> {
  const codes: string[] = [];
  const mintStart = performance.now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (codes.length < want) {
        const r = await session.jar.get(session.authorizeUrl);
        if (r.status !== 303 || !r.location) throw new Error(`authorize answered ${r.status}`);
        codes.push(new URL(r.location).searchParams.get('code')!);
      }
    }),
  );
  return { codes, mintRps: codes.length / ((performance.now() - mintStart) / 1000) };
}

/** Exchanges each code once, 16 connections (or BENCH_CONN), every answer checked for an ID token. */
function exchangeCodes(
  issuer: string,
  session: Awaited<ReturnType<typeof approvedSession>>,
  codes: string[],
  connections: number,
): Promise<LoadFigures> {
  return distinctPosts({
    url: `${issuer}/oauth/token`,
    connections,
    seconds: DURATION,
    bodies: codes.map((code) => codeBody(session, code)),
    once: true, // codes are single-use: a connection that used up its share stops
    verify: (body) => String(body).includes('"id_token":"'),
  });
}

async function codeScenario(issuer: string, serverPid: number, baselines: { bare: LoadFigures; sign: LoadFigures }) {
  const session = await approvedSession(issuer);
  const { codes, mintRps } = await mintCodes(session, Number(process.env.BENCH_CODES ?? 40_000));

  // The exchange: form parse, client lookup, PKCE check, atomic consume, ES256 access token, RS256 ID token.
  // This machine's speed drifts (a shared VM): the ceiling is measured right before and right after, and averaged.
  const before = await signBound(4);
  const cpuBefore = { server: cpuSeconds(serverPid), bench: process.cpuUsage() };
  const connections = Number(process.env.BENCH_CONN ?? 16);
  const exchange = await exchangeCodes(issuer, session, codes, connections);
  const serverCores = (cpuSeconds(serverPid) - cpuBefore.server) / DURATION;
  const benchUsage = process.cpuUsage(cpuBefore.bench);
  const after = await signBound(4);
  const bound = { sequential: (before.sequential + after.sequential) / 2, pooled: (before.pooled + after.pooled) / 2 };
  const drift = Math.abs(before.sequential - after.sequential) / bound.sequential;
  const loadCores = (benchUsage.user + benchUsage.system) / 1e6 / DURATION;
  const rows: Row[] = [['POST /oauth/token authorization_code (16 conn)', exchange]];
  const notes = [
    `codes minted through GET /oauth/authorize: ${codes.length} at ${mintRps.toFixed(0)}/s; exchanged: ${exchange.total}${exchange.total >= codes.length - connections ? ' (all of them: raise BENCH_CODES)' : ''}, ${exchange.non2xx + exchange.mismatches === 0 ? 'every answer had tokens' : `${exchange.non2xx} errors, ${exchange.mismatches} answers without an ID token`}`,
    `RS256 ID-token signatures alone, one process: ${bound.sequential.toFixed(0)}/s on the main thread (${before.sequential.toFixed(0)} before the exchange, ${after.sequential.toFixed(0)} after${drift > 0.2 ? ': the machine changed speed during the run, figures unreliable' : ''}), ${bound.pooled.toFixed(0)}/s through the thread pool`,
    `exchange / bare route: ${(exchange.rps / baselines.bare.rps).toFixed(3)}`,
    `exchange / signing-only HTTP route under the same load: ${(exchange.rps / baselines.sign.rps).toFixed(3)}`,
    `exchange / RS256 signatures (main thread): ${(exchange.rps / bound.sequential).toFixed(3)}  (target >= 0.80)`,
    `exchange / RS256 signatures (thread pool): ${(exchange.rps / bound.pooled).toFixed(3)}`,
    `exchange p99 ${exchange.p99} ms (target < 50 ms)`,
    `CPU during the exchange: server ${serverCores.toFixed(2)} cores (event loop + thread pool), load generator ${loadCores.toFixed(2)} cores`,
  ];
  return { rows, notes, raw: { exchange, mintRps, serverCores, loadCores, bound: { before, after } } };
}

/** The body of a code exchange by the built-in public application. */
function codeBody(session: Awaited<ReturnType<typeof approvedSession>>, code: string): string {
  return `grant_type=authorization_code&client_id=authcli&redirect_uri=${encodeURIComponent(session.redirectUri)}&code_verifier=${session.verifier}&code=${code}`;
}

/** Exchanges codes (16 at a time, before any clock starts) for the refresh tokens a refresh measurement uses up. */
async function refreshTokens(issuer: string, session: Awaited<ReturnType<typeof approvedSession>>, codes: string[], proof?: () => string) {
  const tokens: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < codes.length) {
        const code = codes[next++]!;
        const res = await fetch(`${issuer}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', ...(proof && { dpop: proof() }) },
          body: codeBody(session, code),
        });
        const json = (await res.json()) as { refresh_token?: string };
        if (!json.refresh_token) throw new Error(`setup exchange answered ${res.status}: ${JSON.stringify(json)}`);
        tokens.push(json.refresh_token);
      }
    }),
  );
  return tokens;
}

/**
 * DPoP (RFC 9449) beside the plain exchange on the same server: code exchange without and with a proof, refresh
 * without and with one, in BENCH_DPOP_ROUNDS rounds whose order alternates (plain first, then DPoP first), so
 * that the machine's drift falls on both alike. Every request of a DPoP run has its own proof (ES256, the
 * server's nonce, a fresh jti), signed before the clock starts; codes are minted right before the run that
 * uses them (they live 60 s), refresh tokens by exchanges of their own, the DPoP ones bound to the key (a public
 * client). Each run stops when its single-use bodies are used up: its rate is answers over elapsed time, and
 * its cost the server's CPU time (/proc) over answers, which other load on the machine disturbs far less than
 * the rate. What a proof adds at the server: header parse, ES256 verification against the embedded JWK, the
 * nonce HMAC, the JWK thumbprint, one INSERT of the jti, and `cnf` in the access token.
 */
async function dpopScenario(issuer: string, serverPid: number) {
  const session = await approvedSession(issuer);
  const tokenUrl = `${issuer}/oauth/token`;
  const prove = dpopSigner();
  const nonce = await dpopNonce(issuer, prove);
  const rounds = DPOP_ROUNDS;
  const n = Math.floor(DPOP_TOKENS / rounds);
  const connections = Number(process.env.BENCH_CONN ?? 16);
  const proofs = () => Array.from({ length: n }, () => ({ dpop: prove(tokenUrl, nonce) }));
  const codes = async () => (await mintCodes(session, n)).codes.slice(0, n);
  const refreshBody = (t: string) => `grant_type=refresh_token&client_id=authcli&refresh_token=${t}`;
  type Kind = 'plain' | 'dpop' | 'plainRefresh' | 'dpopRefresh';
  const sums: Record<Kind, { figures: LoadFigures[]; cpu: number }> = {
    plain: { figures: [], cpu: 0 },
    dpop: { figures: [], cpu: 0 },
    plainRefresh: { figures: [], cpu: 0 },
    dpopRefresh: { figures: [], cpu: 0 },
  };
  const run = async (kind: Kind, bodies: string[], headers?: Record<string, string>[]) => {
    const cpu = cpuSeconds(serverPid);
    const f = await distinctPosts({
      url: tokenUrl,
      connections,
      seconds: DPOP_SECONDS,
      bodies,
      ...(headers && { headers }),
      once: true,
      verify: (body) => String(body).includes('"access_token":"'),
    });
    sums[kind].cpu += cpuSeconds(serverPid) - cpu;
    sums[kind].figures.push(f);
  };
  const exchanges: Record<'plain' | 'dpop', () => Promise<void>> = {
    plain: async () =>
      run(
        'plain',
        (await codes()).map((c) => codeBody(session, c)),
      ),
    dpop: async () => {
      const bodies = (await codes()).map((c) => codeBody(session, c));
      await run('dpop', bodies, proofs());
    },
  };
  const refreshes: Record<'plain' | 'dpop', () => Promise<void>> = {
    plain: async () => run('plainRefresh', (await refreshTokens(issuer, session, await codes())).map(refreshBody)),
    dpop: async () => {
      const tokens = await refreshTokens(issuer, session, await codes(), () => prove(tokenUrl, nonce));
      await run('dpopRefresh', tokens.map(refreshBody), proofs());
    },
  };
  for (let r = 0; r < rounds; r++) {
    const order: ('plain' | 'dpop')[] = r % 2 === 0 ? ['plain', 'dpop'] : ['dpop', 'plain'];
    for (const k of order) await exchanges[k]();
    for (const k of order) await refreshes[k]();
  }
  // One row per kind: the rounds' answers over their elapsed time, latencies of the slowest round.
  const total = (kind: Kind): LoadFigures & { cpuUs: number } => {
    const fs = sums[kind].figures;
    const sum = (pick: (f: LoadFigures) => number) => fs.reduce((a, f) => a + pick(f), 0);
    const answers = sum((f) => f.total);
    return {
      rps: answers / sum((f) => f.seconds),
      p50: Math.max(...fs.map((f) => f.p50)),
      p99: Math.max(...fs.map((f) => f.p99)),
      errors: sum((f) => f.errors),
      non2xx: sum((f) => f.non2xx),
      mismatches: sum((f) => f.mismatches),
      total: answers,
      seconds: sum((f) => f.seconds),
      cpuUs: (sums[kind].cpu / answers) * 1e6,
    };
  };
  const plain = total('plain');
  const dpop = total('dpop');
  const plainR = total('plainRefresh');
  const dpopR = total('dpopRefresh');
  const label = (what: string) => `POST /oauth/token ${what} (${connections} conn, ${rounds} rounds of ${n})`;
  const rows: Row[] = [
    [label('authorization_code, Bearer'), plain],
    [label('authorization_code, DPoP proof'), dpop],
    [label('refresh_token, Bearer'), plainR],
    [label('refresh_token, DPoP-bound'), dpopR],
  ];
  const failures = [plain, dpop, plainR, dpopR].reduce((a, f) => a + f.non2xx + f.mismatches, 0);
  const ratio = (a: number, b: number) => (a / b).toFixed(3);
  const notes = [
    `DPoP rate / plain exchange rate: exchange ${ratio(dpop.rps, plain.rps)}, refresh ${ratio(dpopR.rps, plain.rps)} (target >= 0.75); DPoP refresh / plain refresh ${ratio(dpopR.rps, plainR.rps)}`,
    `server CPU per answer: exchange ${plain.cpuUs.toFixed(0)} us plain, ${dpop.cpuUs.toFixed(0)} us DPoP (x${ratio(dpop.cpuUs, plain.cpuUs)}); refresh ${plainR.cpuUs.toFixed(0)} us plain, ${dpopR.cpuUs.toFixed(0)} us DPoP (x${ratio(dpopR.cpuUs, plainR.cpuUs)}; x${ratio(dpopR.cpuUs, plain.cpuUs)} of the plain exchange) (target <= 1.25)`,
    `DPoP proofs carried the server nonce (${nonce ? 'AUTHCLI_DPOP_NONCE on' : 'nonces off'}); ${failures === 0 ? 'every answer had tokens' : `${failures} answers without tokens`}`,
  ];
  return { rows, notes, raw: { dpop: { plain, dpop, plainRefresh: plainR, dpopRefresh: dpopR } } };
}

/**
 * Code exchanges while wrong-password sign-ins arrive at BENCH_FLOOD_RATE a second (100 by default), each from
 * its own address and for its own username, so that no limit refuses them and each costs a hash if the hashing
 * queue can take it. Password hashing runs on threads of its own behind a queue bounded by a deadline: the
 * exchange's p99 must stay under 100 ms. Before the flood, honest people sign in at the same moment (20, then
 * BENCH_BURST, 50 by default), each from their own address with the right password: they wait their turn
 * instead of being refused. During it, the first 20 sign in again from their browsers, which the server now
 * knows (a device cookie): they are served ahead of the flood.
 */
async function mixedScenario(issuer: string, serverPid: number, databaseUrl: string) {
  const session = await approvedSession(issuer);
  const { codes } = await mintCodes(session, Number(process.env.BENCH_CODES ?? 40_000));
  const rate = Number(process.env.BENCH_FLOOD_RATE ?? 100);
  const people = await seedPeople(databaseUrl, 'bench', Math.max(20, Number(process.env.BENCH_BURST ?? 50)));
  const first = atNewBrowsers(issuer, people.slice(0, 20));
  const bursts: Record<string, BurstFigures> = {};
  bursts.honest20 = await honestBurst(issuer, first, PASSWORD);
  bursts[`honest${people.length}`] = await honestBurst(issuer, atNewBrowsers(issuer, people), PASSWORD);
  const cpuBefore = cpuSeconds(serverPid);
  const flood = await signInFlood(issuer, rate);
  let exchange: LoadFigures;
  let floodFigures: FloodFigures;
  try {
    // Once the hashing queue is full of the flood's guesses (its first 503), the returning browsers sign in.
    const returning = flood.saturated.then(() => honestBurst(issuer, first, PASSWORD));
    exchange = await exchangeCodes(issuer, session, codes, Number(process.env.BENCH_CONN ?? 16));
    bursts.returning20DuringFlood = await returning;
  } finally {
    floodFigures = await flood.stop();
  }
  const serverCores = (cpuSeconds(serverPid) - cpuBefore) / DURATION;
  const burstText = (b: BurstFigures) =>
    `${statusText(b.byStatus)}${b.failures ? `, ${b.failures} failed to connect` : ''} (median answer ${b.p50Ms} ms, last ${b.maxMs} ms)`;
  const rows: Row[] = [[`POST /oauth/token authorization_code (16 conn) during ${rate} wrong-password sign-ins/s`, exchange]];
  const notes = [
    `mixed: honest sign-ins at the same moment, each from its own address with the right password (303 = signed in, 503 = past the hashing queue): 20: ${burstText(bursts.honest20)}; ${people.length}: ${burstText(bursts[`honest${people.length}`]!)}`,
    `mixed: ${floodFigures.sent} wrong-password sign-ins at ${floodFigures.rate.toFixed(0)}/s from as many addresses: ${statusText(floodFigures.byStatus)}${floodFigures.failures ? `, ${floodFigures.failures} failed to connect` : ''} (401 = hashed, 503 = past the hashing queue, answered at once)`,
    `mixed: 20 returning browsers (device cookie) signing in at once during the flood: ${burstText(bursts.returning20DuringFlood!)}`,
    `mixed: exchange p99 ${exchange.p99} ms during the sign-in flood (target < 100 ms); ${exchange.non2xx + exchange.mismatches === 0 ? 'every answer had tokens' : `${exchange.non2xx} errors, ${exchange.mismatches} answers without an ID token`}; server ${serverCores.toFixed(2)} cores`,
  ];
  return { rows, notes, raw: { mixedExchange: exchange, flood: floodFigures, mixedServerCores: serverCores, signInBursts: bursts } };
}

/** Device flow: pending polls (all on time) and device authorization requests, 32 connections. */
async function deviceScenario(
  issuer: string,
  databaseUrl: string,
  baselines: { bare32: LoadFigures; bareBase: string; bareAgain: () => Promise<LoadFigures> },
) {
  // Pending device authorizations, written straight into the server's store (another process, same SQLite
  // file, closed while the server runs so that only the server holds it), and copied into the database file
  // before anything is measured, so that no measurement pays for the seeding.
  const seeding = await openStore(databaseUrl);
  let all: string[];
  try {
    all = await seedPending(seeding, Number(process.env.BENCH_DEVICE_CODES ?? 200_000) + WARMUP_CODES, 1_000_000);
    await seeding.checkpoint();
  } finally {
    await seeding.close();
  }
  // Each scenario is measured warm, like the bare GET route (which runs at 16 connections first): a warm-up
  // run of WARMUP seconds first, on pending codes of its own (a code polled in the warm-up and again in the
  // measured run less than 5 s later would rightly get slow_down).
  const [warmCodes, codes] = [all.slice(0, WARMUP_CODES), all.slice(WARMUP_CODES)];
  await pollPending(baselines.bareBase, warmCodes, WARMUP, 32);
  const barePolls = await pollPending(baselines.bareBase, codes, DURATION, 32);
  await pollPending(issuer, warmCodes, WARMUP, 32);
  const polls = await pollPending(issuer, codes, DURATION, 32);
  // This machine changes speed within minutes (a shared VM): the bare route is measured again right after the
  // polls, and the ratio uses the mean of the two (flagged when they differ by more than 20 %).
  const bareAfter = await baselines.bareAgain();
  const bareMean = (baselines.bare32.rps + bareAfter.rps) / 2;
  const bareDrift = Math.abs(baselines.bare32.rps - bareAfter.rps) / bareMean;
  await storelessTokenAnswers(issuer, WARMUP, 32);
  const storeless = await storelessTokenAnswers(issuer, DURATION, 32);
  const reading = await openStore(databaseUrl);
  const outcome = await pollOutcome(reading).finally(() => reading.close());
  await deviceAuthorizations(issuer, WARMUP, 32);
  const auth = await deviceAuthorizations(issuer, DURATION, 32);
  const rows: Row[] = [
    ['bare Fastify POST, same request and answer as a pending poll (32 conn)', barePolls.figures],
    ['POST /oauth/token device_code, pending (32 conn)', polls.figures],
    ['bare Fastify GET /bare again, right after the polls (32 conn)', bareAfter],
    ['POST /oauth/token, unsupported grant_type: same server and answer path, no store (32 conn)', storeless],
    ['POST /oauth/device/authorization (32 conn)', auth],
  ];
  const notes = [
    `pending polls: ${polls.figures.non2xx} answers, ${polls.figures.mismatches} not authorization_pending; the store shows ${outcome.polled} codes polled (warm-ups included), ${outcome.slowedDown} slowed down; each code polled every ${polls.cycleSeconds.toFixed(1)} s (>= 5 s: on time)`,
    `pending polls / bare route (32 conn, mean of before and after: ${bareMean.toFixed(0)}/s${bareDrift > 0.2 ? `; the two differ by ${(bareDrift * 100).toFixed(0)} %: the machine changed speed, figures unreliable` : ''}): ${(polls.figures.rps / bareMean).toFixed(3)}  (target >= 0.50)`,
    `pending polls / bare POST route with the polls' load shape (32 conn): ${(polls.figures.rps / barePolls.figures.rps).toFixed(3)}`,
    `pending polls / the same server's token endpoint answering without the store (32 conn): ${(polls.figures.rps / storeless.rps).toFixed(3)}; that answer / bare GET: ${(storeless.rps / bareMean).toFixed(3)}`,
    `pending polls p99 ${polls.figures.p99} ms (target < 25 ms)`,
  ];
  return { rows, notes, raw: { polls, barePolls, storeless, auth, outcome, bareAfter, bareMean } };
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'authcli-bench-'));
  const port = await freePort();
  const databaseUrl = join(dir, 'bench.db');
  const issuer = `http://127.0.0.1:${port}`;
  const env = {
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    HOST: '127.0.0.1',
    // The pages are served at the issuer's host only (another name of it is redirected there): the bench signs in
    // at 127.0.0.1, so that is the issuer.
    AUTHCLI_ISSUER: issuer,
    LOG_LEVEL: 'warn',
    // The sign-in flood gives each request its own address in X-Forwarded-For, as one proxy in front would.
    AUTHCLI_TRUST_PROXY: '1',
    // The device scenario measures device authorization requests from one address at full speed: far past the
    // per-IP and per-application limits, which would answer 429 instead of doing the work being measured.
    AUTHCLI_LIMITS: 'device-authz-ip=100000000/1m,device-authz-client=100000000/1m',
  };
  await run([SERVER, 'users', 'add', 'bench', '--password-stdin'], env, `${PASSWORD}\n`);
  const confidential = JSON.parse(
    await run(
      [
        SERVER,
        'apps',
        'add',
        '--name',
        'Bench backend',
        '--kind',
        'confidential',
        '--callback',
        'https://bench.example/cb',
        '--scope',
        'openid',
        '--json',
      ],
      env,
    ),
  ) as { client_id: string; client_secret: string };
  const server = spawn(process.execPath, [...(process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? []), SERVER, 'start'], {
    env: { ...process.env, ...env },
    stdio: 'ignore',
  });
  const barePort = await freePort();
  const bare = spawn(process.execPath, ['--import', 'tsx', join(here, 'bare-server.ts'), String(barePort)], { stdio: 'ignore' });
  const children = [server, bare];
  try {
    await waitReady(`${issuer}/readyz`, server);
    await waitReady(`http://127.0.0.1:${barePort}/bare`, bare);
    const rows: Row[] = [];
    const notes: string[] = [];
    const raw: Record<string, unknown> = {};

    const bareRoute = await load({ url: `http://127.0.0.1:${barePort}/bare`, connections: 16 });
    rows.push(['bare Fastify GET /bare (16 conn)', bareRoute]);
    if (SCENARIOS.has('code')) {
      const signRoute = await load({ url: `http://127.0.0.1:${barePort}/sign`, connections: 16 });
      rows.push(['GET /sign: one RS256 ID-token signature, nothing else (16 conn)', signRoute]);
      const code = await codeScenario(issuer, server.pid!, { bare: bareRoute, sign: signRoute });
      rows.push(...code.rows);
      notes.push(...code.notes);
      Object.assign(raw, code.raw, { signRoute });
    }
    if (SCENARIOS.has('dpop')) {
      const dpop = await dpopScenario(issuer, server.pid!);
      rows.push(...dpop.rows);
      notes.push(...dpop.notes);
      Object.assign(raw, dpop.raw);
    }
    if (SCENARIOS.has('mixed')) {
      const mixed = await mixedScenario(issuer, server.pid!, databaseUrl);
      rows.push(...mixed.rows);
      notes.push(...mixed.notes);
      Object.assign(raw, mixed.raw);
    }
    if (SCENARIOS.has('client')) {
      const rate = Number(process.env.BENCH_FLOOD_RATE ?? 100);
      const c = await clientAuthScenario(issuer, { id: confidential.client_id, secret: confidential.client_secret }, load, rate);
      rows.push(['POST /oauth/introspect, confidential client, client_secret_basic (16 conn)', c.right]);
      rows.push([`the same while wrong secrets arrive at ${rate}/s from 5 addresses`, c.underFlood]);
      notes.push(
        `wrong secrets: ${c.flood.sent} sent, answered ${JSON.stringify(c.flood.byStatus)}; introspection answers not {"active":false}: ${c.right.mismatches + c.underFlood.mismatches}`,
      );
      Object.assign(raw, { clientAuth: c });
    }
    if (SCENARIOS.has('device')) {
      const bare32 = await load({ url: `http://127.0.0.1:${barePort}/bare`, connections: 32 });
      rows.push(['bare Fastify GET /bare (32 conn)', bare32]);
      const device = await deviceScenario(issuer, databaseUrl, {
        bare32,
        bareBase: `http://127.0.0.1:${barePort}`,
        bareAgain: () => load({ url: `http://127.0.0.1:${barePort}/bare`, connections: 32 }),
      });
      rows.push(...device.rows);
      notes.push(...device.notes);
      Object.assign(raw, device.raw);
      const bytes = await bytesPerPending();
      notes.push(
        `embedded store: ${bytes.bytesPerRow.toFixed(0)} bytes per pending device authorization (100,000 of them, indexes included)`,
      );
      raw.bytes = bytes;
    }
    raw.bareRoute = bareRoute;
    if (SCENARIOS.has('cli')) {
      const startup = cliStartup(join(here, '../packages/cli/bin/authcli.cjs'));
      for (const s of startup) {
        const target =
          s.name === 'authcli --help'
            ? ' (target < 150 ms)'
            : s.ratio
              ? `, ${s.ratio.value.toFixed(2)} x node -e 0 (target <= ${s.ratio.target})`
              : '';
        notes.push(`cold start, ${s.name}: median ${s.medianMs.toFixed(0)} ms, min ${s.minMs.toFixed(0)} ms over ${s.runs} runs${target}`);
      }
      raw.startup = startup;
    }

    const lines = [
      `authcli bench — ${new Date().toISOString()} — node ${process.version}, ${DURATION}s per scenario, embedded SQLite`,
      '',
      '| scenario | req/s | p50 ms | p99 ms | errors | non-2xx |',
      '|---|---:|---:|---:|---:|---:|',
      ...rows.map(([name, f]) => `| ${name} | ${f.rps.toFixed(0)} | ${f.p50} | ${f.p99} | ${f.errors} | ${f.non2xx} |`),
      '',
      ...notes,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    mkdirSync(join(here, 'results'), { recursive: true });
    writeFileSync(join(here, 'results', 'latest.json'), JSON.stringify(raw, null, 2));
  } finally {
    for (const c of children) c.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

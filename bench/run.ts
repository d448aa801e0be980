// `pnpm bench`: load scenarios against a real `authcli-server start` process
// on the embedded SQLite store, beside a bare Fastify route in the same run.
// Every loop is bounded in time and count; traffic goes to 127.0.0.1 only.
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { challengeS256, generateVerifier } from '@authcli/pkce';
import { Browser, freePort, hidden } from '../test/support/http.js';

const here = dirname(fileURLToPath(import.meta.url));
const SERVER = join(here, '../packages/server/dist/main.js');
const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const PASSWORD = 'bench password 1';

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

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

async function load(opts: autocannon.Options): Promise<Figures> {
  const r = await autocannon({ ...opts, duration: DURATION });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx };
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'authcli-bench-'));
  const port = await freePort();
  const env = { DATABASE_URL: join(dir, 'bench.db'), PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' };
  const issuer = `http://127.0.0.1:${port}`;
  await run([SERVER, 'users', 'add', 'bench', '--password-stdin'], env, `${PASSWORD}\n`);
  const server = spawn(process.execPath, [...(process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? []), SERVER, 'start'], { env: { ...process.env, ...env }, stdio: 'ignore' });
  const barePort = await freePort();
  const bare = spawn(process.execPath, ['--import', 'tsx', join(here, 'bare-server.ts'), String(barePort)], { stdio: 'ignore' });
  const children = [server, bare];
  try {
    await waitReady(`${issuer}/readyz`, server);
    await waitReady(`http://127.0.0.1:${barePort}/bare`, bare);

    // A signed-in session that has approved the built-in public application.
    const jar = new Browser(issuer);
    const page = await jar.get('/signin');
    await jar.postForm('/signin', { _csrf: hidden(page.text, '_csrf'), return_to: '/', username: 'bench', password: PASSWORD });
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
    await jar.postForm('/consent', { _csrf: hidden(consent.text, '_csrf'), request: hidden(consent.text, 'request'), decision: 'approve' });

    // Mint codes through the real authorize route (consent remembered: one 303 each), 16 at a time.
    const want = Number(process.env.BENCH_CODES ?? 30_000);
    const codes: string[] = [];
    const mintStart = performance.now();
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (codes.length < want) {
          const r = await jar.get(authorizeUrl);
          if (r.status !== 303 || !r.location) throw new Error(`authorize answered ${r.status}`);
          codes.push(new URL(r.location).searchParams.get('code')!);
        }
      }),
    );
    const mintRps = codes.length / ((performance.now() - mintStart) / 1000);

    // The exchange: form parse, client lookup, PKCE check, atomic consume, ES256 access token, RS256 ID token.
    let next = 0;
    let ran = 0;
    const cpuBefore = { server: cpuSeconds(server.pid!), bench: process.cpuUsage() };
    const exchange = await load({
      url: `${issuer}/oauth/token`,
      connections: Number(process.env.BENCH_CONN ?? 16),
      requests: [
        {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          setupRequest: (req) => {
            const code = codes[next++];
            if (code === undefined) throw new Error('ran out of codes: raise BENCH_CODES');
            ran++;
            return {
              ...req,
              body: `grant_type=authorization_code&client_id=authcli&redirect_uri=${encodeURIComponent(redirectUri)}&code_verifier=${verifier}&code=${code}`,
            };
          },
        },
      ],
    });
    const serverCores = (cpuSeconds(server.pid!) - cpuBefore.server) / DURATION;
    const benchUsage = process.cpuUsage(cpuBefore.bench);
    const loadCores = (benchUsage.user + benchUsage.system) / 1e6 / DURATION;
    const bareRoute = await load({ url: `http://127.0.0.1:${barePort}/bare`, connections: 16 });
    const signRoute = await load({ url: `http://127.0.0.1:${barePort}/sign`, connections: 16 });
    const bound = JSON.parse(await run(['--import', 'tsx', join(here, 'sign-bound.ts'), '6'], {})) as { sequential: number; pooled: number };

    const rows = [
      ['bare Fastify GET /bare (16 conn)', bareRoute],
      ['GET /sign: one RS256 ID-token signature, nothing else (16 conn)', signRoute],
      ['POST /oauth/token authorization_code (16 conn)', exchange],
    ] as const;
    const lines = [
      `authcli bench — ${new Date().toISOString()} — node ${process.version}, ${DURATION}s per scenario, embedded SQLite`,
      '',
      '| scenario | req/s | p50 ms | p99 ms | errors | non-2xx |',
      '|---|---:|---:|---:|---:|---:|',
      ...rows.map(([name, f]) => `| ${name} | ${f.rps.toFixed(0)} | ${f.p50} | ${f.p99} | ${f.errors} | ${f.non2xx} |`),
      '',
      `codes minted through GET /oauth/authorize: ${codes.length} at ${mintRps.toFixed(0)}/s; exchanged: ${ran}`,
      `RS256 ID-token signatures alone, one process: ${bound.sequential.toFixed(0)}/s on the main thread, ${bound.pooled.toFixed(0)}/s through the thread pool`,
      `exchange / bare route: ${(exchange.rps / bareRoute.rps).toFixed(3)}`,
      `exchange / signing-only HTTP route under the same load: ${(exchange.rps / signRoute.rps).toFixed(3)}`,
      `exchange / RS256 signatures (main thread): ${(exchange.rps / bound.sequential).toFixed(3)}  (target >= 0.80)`,
      `exchange / RS256 signatures (thread pool): ${(exchange.rps / bound.pooled).toFixed(3)}`,
      `exchange p99 ${exchange.p99} ms (target < 50 ms)`,
      `CPU during the exchange: server ${serverCores.toFixed(2)} cores (event loop + thread pool), load generator ${loadCores.toFixed(2)} cores`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    mkdirSync(join(here, 'results'), { recursive: true });
    writeFileSync(join(here, 'results', 'latest.json'), JSON.stringify({ exchange, bareRoute, signRoute, bound, mintRps, serverCores, loadCores }, null, 2));
  } finally {
    for (const c of children) c.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

/**
 * Instructions per request on the two hot paths, counted by valgrind's
 * callgrind: repeatable on a machine whose speed changes from minute to
 * minute, where requests per second are not (bench/README.md, "Instruction
 * counts").
 *
 *   node --import tsx instructions.ts [SERVER_BIN ...]
 *
 * Each SERVER_BIN (default: this checkout's bin/authcli-server.cjs; pass
 * another checkout's to compare two builds in one run) is started with
 * `start` under `valgrind --tool=callgrind --instr-atstart=no` on a fresh
 * SQLite file. Everything else runs at full speed outside valgrind: a user
 * signs in and approves the built-in application, codes are minted, device
 * authorizations created, and warm-up requests sent with instrumentation
 * off. Then `callgrind_control -i on` counts, over every thread of the
 * server process, exactly INSTR_EXCHANGES code exchanges, and then
 * INSTR_POLLS pending device polls; each phase is dumped on its own.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { challengeS256, generateVerifier } from '@authcli/pkce';
import { Browser, freePort, hidden } from '@authcli/test-support/http';

const here = fileURLToPath(new URL('.', import.meta.url));
const EXCHANGES = Number(process.env.INSTR_EXCHANGES ?? 300);
const POLLS = Number(process.env.INSTR_POLLS ?? 1000);
const WARMUP = Number(process.env.INSTR_WARMUP ?? 600);
const CONCURRENCY = 4;
const PASSWORD = 'instructions password 1';
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

function runNode(args: string[], env: NodeJS.ProcessEnv, input = ''): void {
  const r = spawnSync(process.execPath, args, { env: { ...process.env, ...env }, input, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr}`);
}

function callgrindControl(pid: number, ...args: string[]): void {
  const r = spawnSync('callgrind_control', [...args, String(pid)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`callgrind_control ${args.join(' ')} failed: ${r.stderr}${r.stdout}`);
}

/** Runs `work` on `items`, CONCURRENCY at a time. */
async function each<T>(items: T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

/**
 * The instructions (Ir) of the one new dump `prefix`.N (`callgrind_control -d`
 * numbers them; with --separate-threads one file per thread, `-01` the main
 * thread): the main thread's, and all threads' together (JIT compiler, GC
 * helpers, the hashing pool, the checkpointer).
 */
function dumpedInstructions(dir: string, prefix: string, seen: Set<string>): { main: number; all: number } {
  const fresh = readdirSync(dir).filter((f) => /\.\d+-\d+$/.test(f) && f.startsWith(`${prefix}.`) && !seen.has(f));
  if (fresh.length === 0) throw new Error('no new callgrind dump');
  let main = 0;
  let all = 0;
  for (const f of fresh) {
    seen.add(f);
    const m = /^totals: (\d+)/m.exec(readFileSync(join(dir, f), 'utf8'));
    if (!m) throw new Error(`no totals in ${f}`);
    all += Number(m[1]);
    if (f.endsWith('-01')) main = Number(m[1]);
  }
  return { main, all };
}

async function waitReady(url: string, exited: () => boolean): Promise<void> {
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    if (exited()) throw new Error('the server exited');
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${url} not ready`);
}

interface Counts {
  bin: string;
  exchange: { main: number; all: number };
  poll: { main: number; all: number };
}

async function measure(bin: string): Promise<Counts> {
  const dir = mkdtempSync(join(tmpdir(), 'authcli-instr-'));
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const env = {
    DATABASE_URL: join(dir, 'authcli.db'),
    PORT: String(port),
    AUTHCLI_ISSUER: issuer,
    LOG_LEVEL: 'warn',
    AUTHCLI_LIMITS: 'device-authz-ip=100000000/1m,device-authz-client=100000000/1m',
  };
  runNode([bin, 'users', 'add', 'bench', '--password-stdin'], env, `${PASSWORD}\n`);
  const server = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      '--separate-threads=yes',
      `--callgrind-out-file=${join(dir, 'callgrind.out')}`,
      process.execPath,
      ...(process.env.INSTR_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
      bin,
      'start',
    ],
    { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  server.stderr!.on('data', (d: Buffer) => (stderr += d));
  const pid = server.pid!;
  const seen = new Set<string>();
  try {
    await waitReady(`${issuer}/healthz`, () => server.exitCode !== null);

    // A signed-in user who has approved the built-in application: GET /oauth/authorize then answers a code.
    const jar = new Browser(issuer);
    const page = await jar.get('/signin');
    await jar.postForm('/signin', { _csrf: hidden(page.text, '_csrf'), username: 'bench', password: PASSWORD });
    const verifier = generateVerifier();
    const redirectUri = 'http://127.0.0.1:1/callback';
    const authorizeUrl = `${issuer}/oauth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: 'authcli',
      redirect_uri: redirectUri,
      scope: 'openid profile',
      state: 'bench',
      nonce: 'n'.repeat(43),
      code_challenge: await challengeS256(verifier),
      code_challenge_method: 'S256',
    })}`;
    const consent = await jar.get(authorizeUrl);
    if (consent.status !== 200) throw new Error(`expected the consent page, got ${consent.status}`);
    await jar.postForm('/consent', { _csrf: hidden(consent.text, '_csrf'), request: hidden(consent.text, 'request'), decision: 'approve' });

    /** Codes live 60 s: each batch is minted right before it is exchanged. */
    const mint = async (n: number) => {
      const codes: string[] = [];
      await each(Array.from({ length: n }), async () => {
        const r = await jar.get(authorizeUrl);
        if (r.status !== 303 || !r.location) throw new Error(`authorize answered ${r.status}`);
        codes.push(new URL(r.location).searchParams.get('code')!);
      });
      return codes;
    };
    const exchange = async (code: string) => {
      const r = await fetch(`${issuer}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: redirectUri,
          client_id: 'authcli',
          code_verifier: verifier,
        }),
      });
      const body = (await r.json()) as { id_token?: string };
      if (r.status !== 200 || !body.id_token) throw new Error(`exchange answered ${r.status}`);
    };

    const deviceCodes: string[] = [];
    await each(Array.from({ length: WARMUP + POLLS }), async () => {
      const r = await fetch(`${issuer}/oauth/device/authorization`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ client_id: 'authcli', scope: 'openid profile' }),
      });
      if (r.status !== 200) throw new Error(`device authorization answered ${r.status}`);
      deviceCodes.push(((await r.json()) as { device_code: string }).device_code);
    });
    const poll = async (deviceCode: string) => {
      const r = await fetch(`${issuer}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: DEVICE_GRANT, device_code: deviceCode, client_id: 'authcli' }),
      });
      const body = (await r.json()) as { error?: string };
      if (body.error !== 'authorization_pending') throw new Error(`poll answered ${r.status} ${body.error}`);
    };

    await each(deviceCodes.slice(0, WARMUP), poll);
    for (let done = 0; done < WARMUP; done += 100) await each(await mint(100), exchange);

    // Counted in batches of 100, each minted with instrumentation off: under callgrind 300 exchanges outlast a code.
    for (let done = 0; done < EXCHANGES; done += 100) {
      const batch = await mint(Math.min(100, EXCHANGES - done));
      callgrindControl(pid, '-i', 'on');
      await each(batch, exchange);
      callgrindControl(pid, '-i', 'off');
    }
    callgrindControl(pid, '-d');
    const exchangeIr = dumpedInstructions(dir, 'callgrind.out', seen);
    callgrindControl(pid, '-z');

    callgrindControl(pid, '-i', 'on');
    await each(deviceCodes.slice(WARMUP), poll);
    callgrindControl(pid, '-i', 'off');
    callgrindControl(pid, '-d');
    const pollIr = dumpedInstructions(dir, 'callgrind.out', seen);

    return {
      bin,
      exchange: { main: exchangeIr.main / EXCHANGES, all: exchangeIr.all / EXCHANGES },
      poll: { main: pollIr.main / POLLS, all: pollIr.all / POLLS },
    };
  } catch (err) {
    throw new Error(
      `${(err as Error).message} (${String((err as Error).cause ?? '')}; server exit ${server.exitCode})\n${stderr.slice(-2000)}`,
    );
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('close', r));
    if (!process.env.INSTR_KEEP) rmSync(dir, { recursive: true, force: true });
    else console.error(`kept ${dir}`);
  }
}

const bins = process.argv.slice(2);
if (bins.length === 0) bins.push(join(here, '../packages/server/bin/authcli-server.cjs'));
for (const bin of bins) {
  const c = await measure(bin);
  const m = (n: number) => (n / 1e6).toFixed(3);
  console.log(
    `${c.bin}\n  code exchange: ${m(c.exchange.main)} M instructions on the main thread, ${m(c.exchange.all)} M in all threads\n  pending poll:  ${m(c.poll.main)} M instructions on the main thread, ${m(c.poll.all)} M in all threads`,
  );
}

/**
 * Instructions per request on the hot paths, counted by valgrind's
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
 * signs in and approves the built-in application, codes are minted, refresh
 * tokens and device authorizations created, and warm-up requests sent with
 * instrumentation off. Then `callgrind_control -i on` counts, over every
 * thread of the server process, INSTR_EXCHANGES token requests of each kind
 * (code exchange and refresh, each without and with a DPoP proof, RFC 9449),
 * in batches of 100 whose kinds take turns, each batch dumped on its own;
 * and then INSTR_POLLS pending device polls.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { challengeS256, generateVerifier } from '@authcli/pkce';
import { Browser, freePort, hidden } from '@authcli/test-support/http';
import { dpopNonce, dpopSigner } from './dpop.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const EXCHANGES = Number(process.env.INSTR_EXCHANGES ?? 300);
const BATCH = 100;
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

/** The token requests counted, in the order their batches take turns. */
const KINDS = ['exchange', 'dpopExchange', 'refresh', 'dpopRefresh'] as const;
type Kind = (typeof KINDS)[number];
type Polls = 'poll' | 'confidentialPoll';
const LABELS: Record<Kind | Polls, string> = {
  exchange: 'code exchange',
  dpopExchange: 'code exchange, DPoP',
  refresh: 'refresh',
  dpopRefresh: 'refresh, DPoP-bound',
  poll: 'pending poll',
  confidentialPoll: 'pending poll, confidential client',
};

type PerRequest = { main: number; all: number };

interface Counts {
  bin: string;
  perRequest: Record<Kind | Polls, PerRequest>;
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
  // A confidential client (client_secret_basic) for the second set of polls: what a backend's device login sends.
  const added = spawnSync(
    process.execPath,
    [bin, 'apps', 'add', '--name', 'Backend', '--kind', 'confidential', '--callback', 'https://app.example/cb'].concat([
      '--scope',
      'openid profile',
      '--grant',
      'device_code',
      '--json',
    ]),
    { env: { ...process.env, ...env }, encoding: 'utf8' },
  );
  if (added.status !== 0) throw new Error(`apps add exited ${added.status}: ${added.stderr}`);
  const backend = JSON.parse(added.stdout) as { client_id: string; client_secret: string };
  const backendAuth = `Basic ${Buffer.from(`${encodeURIComponent(backend.client_id)}:${encodeURIComponent(backend.client_secret)}`).toString('base64')}`;
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

    /** Codes live 60 s: each batch is minted right before it is used. */
    const mint = async (n: number) => {
      const codes: string[] = [];
      await each(Array.from({ length: n }), async () => {
        const r = await jar.get(authorizeUrl);
        if (r.status !== 303 || !r.location) throw new Error(`authorize answered ${r.status}`);
        codes.push(new URL(r.location).searchParams.get('code')!);
      });
      return codes;
    };
    const tokenUrl = `${issuer}/oauth/token`;
    const prove = dpopSigner();
    let nonce = await dpopNonce(issuer, prove);
    /** A token request; its answer's refresh token. */
    const token = async (fields: Record<string, string>, dpop: boolean) => {
      const r = await fetch(tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(dpop && { dpop: prove(tokenUrl, nonce) }) },
        body: new URLSearchParams({ client_id: 'authcli', ...fields }),
      });
      const body = (await r.json()) as { access_token?: string; refresh_token?: string; token_type?: string };
      if (r.status !== 200 || !body.access_token || !body.refresh_token) throw new Error(`token request answered ${r.status}`);
      if (body.token_type !== (dpop ? 'DPoP' : 'Bearer')) throw new Error(`token_type ${body.token_type}`);
      return body.refresh_token;
    };
    const exchange = (code: string, dpop: boolean) =>
      token({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier }, dpop);
    const refresh = (refreshToken: string, dpop: boolean) => token({ grant_type: 'refresh_token', refresh_token: refreshToken }, dpop);

    /**
     * What one batch of `kind` sends, prepared with instrumentation off: codes minted just before (they live
     * 60 s), refresh tokens from exchanges of their own (a DPoP one bound to the key: a public client).
     */
    const prepare = async (kind: Kind, n: number): Promise<string[]> => {
      nonce = await dpopNonce(issuer, prove);
      const codes = await mint(n);
      if (kind === 'exchange' || kind === 'dpopExchange') return codes;
      const tokens: string[] = [];
      await each(codes, async (c) => {
        tokens.push(await exchange(c, kind === 'dpopRefresh'));
      });
      return tokens;
    };
    const send = async (kind: Kind, items: string[]) => {
      const dpop = kind === 'dpopExchange' || kind === 'dpopRefresh';
      await each(items, async (item) => {
        await (kind === 'exchange' || kind === 'dpopExchange' ? exchange(item, dpop) : refresh(item, dpop));
      });
    };

    /** Device codes of the public `authcli`, or (`confidential`) of the backend. */
    const deviceCodesOf = async (confidential: boolean) => {
      const codes: string[] = [];
      await each(Array.from({ length: WARMUP + POLLS }), async () => {
        const r = await fetch(`${issuer}/oauth/device/authorization`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', ...(confidential && { authorization: backendAuth }) },
          body: new URLSearchParams({ ...(!confidential && { client_id: 'authcli' }), scope: 'openid profile' }),
        });
        if (r.status !== 200) throw new Error(`device authorization answered ${r.status}`);
        codes.push(((await r.json()) as { device_code: string }).device_code);
      });
      return codes;
    };
    const deviceCodes = await deviceCodesOf(false);
    const backendCodes = await deviceCodesOf(true);
    const pollAs = (confidential: boolean) => async (deviceCode: string) => {
      const r = await fetch(tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(confidential && { authorization: backendAuth }) },
        body: new URLSearchParams({ grant_type: DEVICE_GRANT, device_code: deviceCode, ...(!confidential && { client_id: 'authcli' }) }),
      });
      const body = (await r.json()) as { error?: string };
      if (body.error !== 'authorization_pending') throw new Error(`poll answered ${r.status} ${body.error}`);
    };
    const poll = pollAs(false);
    const backendPoll = pollAs(true);

    await each(deviceCodes.slice(0, WARMUP), poll);
    await each(backendCodes.slice(0, WARMUP), backendPoll);
    for (const kind of KINDS) {
      for (let done = 0; done < WARMUP; done += BATCH) await send(kind, await prepare(kind, Math.min(BATCH, WARMUP - done)));
    }

    // Counted in batches of 100 whose kinds take turns (each round in another order), so that V8's own work
    // (compiling, collecting) falls on every kind alike; each batch is dumped and added to its kind.
    const sums = Object.fromEntries(KINDS.map((k) => [k, { main: 0, all: 0 }])) as Record<Kind, PerRequest>;
    for (let done = 0, round = 0; done < EXCHANGES; done += BATCH, round++) {
      const n = Math.min(BATCH, EXCHANGES - done);
      const order = round % 2 === 0 ? KINDS : [...KINDS].reverse();
      for (const kind of order) {
        const items = await prepare(kind, n);
        callgrindControl(pid, '-z');
        callgrindControl(pid, '-i', 'on');
        await send(kind, items);
        callgrindControl(pid, '-i', 'off');
        callgrindControl(pid, '-d');
        const ir = dumpedInstructions(dir, 'callgrind.out', seen);
        sums[kind].main += ir.main;
        sums[kind].all += ir.all;
      }
    }

    /** The instructions of `work` alone: counted from zero, then dumped. */
    const counted = async (work: () => Promise<void>) => {
      callgrindControl(pid, '-z');
      callgrindControl(pid, '-i', 'on');
      await work();
      callgrindControl(pid, '-i', 'off');
      callgrindControl(pid, '-d');
      return dumpedInstructions(dir, 'callgrind.out', seen);
    };
    const pollIr = await counted(() => each(deviceCodes.slice(WARMUP), poll));
    const backendPollIr = await counted(() => each(backendCodes.slice(WARMUP), backendPoll));

    const per = (ir: PerRequest, n: number): PerRequest => ({ main: ir.main / n, all: ir.all / n });
    return {
      bin,
      perRequest: {
        ...(Object.fromEntries(KINDS.map((k) => [k, per(sums[k], EXCHANGES)])) as Record<Kind, PerRequest>),
        poll: per(pollIr, POLLS),
        confidentialPoll: per(backendPollIr, POLLS),
      },
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
  const x = (n: number, of: number) => `x${(n / of).toFixed(3)}`;
  const { exchange } = c.perRequest;
  console.log(c.bin);
  for (const [kind, ir] of Object.entries(c.perRequest) as [Kind | Polls, PerRequest][]) {
    const ratio =
      kind === 'poll' || kind === 'confidentialPoll'
        ? ''
        : ` (${x(ir.main, exchange.main)} and ${x(ir.all, exchange.all)} of the plain exchange)`;
    console.log(`  ${LABELS[kind]}: ${m(ir.main)} M instructions on the main thread, ${m(ir.all)} M in all threads${ratio}`);
  }
}

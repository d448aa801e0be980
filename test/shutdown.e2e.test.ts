import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '@authcli/test-support/http';
import { serverCommand, startServerProcess, waitUntilReady, type ServerProcess } from '@authcli/test-support/server-process';

const BODY = 'client_id=authcli&scope=openid';
const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');

/**
 * A device authorization request (RFC 8628 §3.1) whose headers and all but the last byte of its body are sent
 * now: the server has it in flight until `finish()` sends that byte.
 */
function slowRequest(port: number): { ready: Promise<void>; finish: () => void; response: Promise<string> } {
  const socket: Socket = connect(port, '127.0.0.1');
  let response = '';
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => (response += d));
  const done = new Promise<string>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('close', () => resolve(response));
  });
  const ready = new Promise<void>((resolve) =>
    socket.once('connect', () => {
      socket.write(
        `POST /oauth/device/authorization HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${BODY.length}\r\nConnection: close\r\n\r\n${BODY.slice(0, -1)}`,
        () => resolve(),
      );
    }),
  );
  return { ready, finish: () => socket.end(BODY.slice(-1)), response: done };
}

/** A GET on a connection of its own, written as soon as it connects; `response` is all the server sent ('' if reset). */
function rawGet(port: number, path: string): { sent: Promise<void>; response: Promise<string> } {
  const socket: Socket = connect(port, '127.0.0.1');
  let response = '';
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => (response += d));
  const done = new Promise<string>((resolve) => {
    socket.on('error', () => resolve(response));
    socket.on('close', () => resolve(response));
  });
  const sent = new Promise<void>((resolve) =>
    socket.once('connect', () =>
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`, () => resolve()),
    ),
  );
  return { sent, response: done };
}

const exited = (server: ServerProcess) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (server.child.exitCode !== null) resolve({ code: server.child.exitCode, signal: null });
    else server.child.once('exit', (code, signal) => resolve({ code, signal }));
  });

describe('graceful shutdown of `authcli-server start`', () => {
  let server: ServerProcess | undefined;
  afterEach(async () => server?.stop());

  it('SIGTERM: no new connections, every request in flight completes with 200, the store is closed, exit 0', async () => {
    server = await startServerProcess({
      env: { AUTHCLI_DEVICE_CODE_TTL: '120', AUTHCLI_DEVICE_POLL_INTERVAL: '2', AUTHCLI_SHUTDOWN_DRAIN: '0' },
    });
    const port = Number(new URL(server.issuer).port);
    const slow = Array.from({ length: 6 }, () => slowRequest(port));
    await Promise.all(slow.map((s) => s.ready));
    // Let the server read the heads, so each request is in flight (routed, waiting for its body).
    await new Promise((r) => setTimeout(r, 300));
    const exit = exited(server);
    server.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    await expect(fetch(`${server.issuer}/readyz`)).rejects.toThrow();

    for (const s of slow) s.finish();
    const responses = await Promise.all(slow.map((s) => s.response));
    for (const r of responses) {
      expect(r).toMatch(/^HTTP\/1\.1 200 /);
      const body = JSON.parse(r.slice(r.indexOf('\r\n\r\n') + 4)) as { device_code: string; expires_in: number; interval: number };
      expect(body.device_code).toMatch(/\S{20,}/);
      // AUTHCLI_DEVICE_CODE_TTL and AUTHCLI_DEVICE_POLL_INTERVAL (RFC 8628 §3.2 expires_in and interval).
      expect(body.expires_in).toBe(120);
      expect(body.interval).toBe(2);
    }
    expect(await exit).toEqual({ code: 0, signal: null });
    // Closing the embedded store checkpoints its write-ahead log into the file and removes it.
    expect(existsSync(`${server.env.DATABASE_URL}-wal`)).toBe(false);
    expect(server.output()).not.toMatch(/unexpected error|shutdown failed/);
  });

  it('SIGTERM under load, three runs: 200 requests each on its own connection, sent before the signal, all answered 200 while /readyz turns 503; exit 0, store intact', async () => {
    for (let run = 1; run <= 3; run++) {
      server = await startServerProcess({ env: { AUTHCLI_SHUTDOWN_DRAIN: '2' } });
      const port = Number(new URL(server.issuer).port);
      const requests = Array.from({ length: 200 }, (_, i) => rawGet(port, i % 2 ? '/.well-known/openid-configuration' : '/oauth/jwks'));
      await Promise.all(requests.map((r) => r.sent));
      const exit = exited(server);
      const signalledAt = Date.now();
      server.child.kill('SIGTERM');
      // Draining: new connections are still served, and readiness says to stop sending (once the signal is in).
      let ready = await fetch(`${server.issuer}/readyz`);
      for (let i = 0; ready.status === 200 && i < 50; i++) {
        await new Promise((r) => setTimeout(r, 20));
        ready = await fetch(`${server.issuer}/readyz`);
      }
      expect(ready.status, `run ${run}`).toBe(503);
      expect(await ready.json()).toEqual({ status: 'unavailable', reason: 'shutting_down' });
      expect(ready.headers.get('connection')).toBe('close');
      const answers = await Promise.all(requests.map((r) => r.response));
      const statuses = answers.reduce<Record<string, number>>((t, a) => {
        const key = /^HTTP\/1\.1 (\d{3}) /.exec(a)?.[1] ?? (a || 'reset or empty');
        t[key] = (t[key] ?? 0) + 1;
        return t;
      }, {});
      expect(statuses, `run ${run}`).toEqual({ 200: 200 });
      expect(await exit, `run ${run}`).toEqual({ code: 0, signal: null });
      expect(Date.now() - signalledAt).toBeGreaterThanOrEqual(1900);
      expect(server.output()).not.toMatch(/unexpected error|shutdown failed/);
      // The store is whole: a command opens it, and the built-in application is there.
      const apps = await serverCommand(['apps', 'list', '--json'], server.env);
      expect(apps.code, apps.stderr).toBe(0);
      expect(JSON.parse(apps.stdout)).toContainEqual(expect.objectContaining({ client_id: 'authcli' }));
      server = undefined;
    }
  });

  it('a second signal ends the drain at once', async () => {
    server = await startServerProcess({ env: { AUTHCLI_SHUTDOWN_DRAIN: '60' } });
    const exit = exited(server);
    const start = Date.now();
    server.child.kill('SIGTERM');
    await expect.poll(async () => (await fetch(`${server!.issuer}/readyz`)).status, { timeout: 5_000 }).toBe(503);
    server.child.kill('SIGTERM');
    expect(await exit).toEqual({ code: 0, signal: null });
    expect(Date.now() - start).toBeLessThan(20_000);
  });

  it('SIGINT: a request that outlasts AUTHCLI_SHUTDOWN_GRACE is cut, and the server still exits 0', async () => {
    server = await startServerProcess({ env: { AUTHCLI_SHUTDOWN_GRACE: '1' } });
    const port = Number(new URL(server.issuer).port);
    const stuck = slowRequest(port);
    await stuck.ready;
    await new Promise((r) => setTimeout(r, 300));
    const exit = exited(server);
    const start = Date.now();
    server.child.kill('SIGINT');
    expect(await exit).toEqual({ code: 0, signal: null });
    expect(Date.now() - start).toBeGreaterThanOrEqual(900);
    // The stuck request never ends by itself, so any exit proves it was cut; the bound only catches a grace
    // that was not applied (a loaded CI machine needs seconds to close the store and its threads).
    expect(Date.now() - start).toBeLessThan(20_000);
    expect(await stuck.response).toBe('');
  });

  it('device code lifetime and interval out of bounds stop `start` with one line', async () => {
    const ttl = await serverCommand(['start'], { AUTHCLI_DEVICE_CODE_TTL: '30' });
    expect(ttl.code).toBe(1);
    expect(ttl.stderr).toBe('authcli-server: AUTHCLI_DEVICE_CODE_TTL must be a whole number from 60 to 3600, got "30"\n');
    const interval = await serverCommand(['start'], { AUTHCLI_DEVICE_POLL_INTERVAL: '0' });
    expect(interval.code).toBe(1);
    expect(interval.stderr).toBe('authcli-server: AUTHCLI_DEVICE_POLL_INTERVAL must be a whole number from 1 to 60, got "0"\n');
  });
});

/** scripts/start.mjs, run by a Node of its own to the end; its exit code and what it wrote where. */
function runToEnd(script: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [script], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((done) => child.once('close', (code) => done({ code, stdout, stderr })));
}

/**
 * A checkout of its own for scripts/start.mjs: one package whose sources have no build yet, a package manager
 * (npm_execpath) that runs `build` (the script `build`) and a stand-in `authcli-server` that prints a banner line.
 */
function checkoutToBuild(build: string): { script: string; env: NodeJS.ProcessEnv; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'authcli-start-build-'));
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  write('scripts/start.mjs', readFileSync(join(ROOT, 'scripts/start.mjs'), 'utf8'));
  write('packages/demo/src/index.ts', 'export const demo = 1;\n');
  write('packages/server/bin/authcli-server.cjs', "console.log('authcli-server (the banner)', process.argv.slice(2).join(' '));\n");
  write('pm.cjs', `if (process.argv.slice(2).join(' ') !== 'run build') process.exit(9);\n${build}`);
  return {
    script: join(dir, 'scripts/start.mjs'),
    env: { npm_execpath: join(dir, 'pm.cjs') },
    remove: () => rmSync(dir, { recursive: true }),
  };
}

describe('`pnpm start` (scripts/start.mjs)', () => {
  it('a build keeps its output back (some 175 lines of file names): the banner comes right after the one line that says it builds', async () => {
    const checkout = checkoutToBuild(
      "for (let i = 0; i < 175; i++) console.log('packages/demo build: ESM dist/chunk-' + i + '.js 1.00 KB');\nconsole.error('a note on stderr');\n",
    );
    try {
      const run = await runToEnd(checkout.script, checkout.env);
      expect(run).toEqual({ code: 0, stderr: 'building (demo changed)\n', stdout: 'authcli-server (the banner) start\n' });
    } finally {
      checkout.remove();
    }
  });

  it('a build that fails prints all it said and starts nothing: start exits with its code', async () => {
    const checkout = checkoutToBuild(
      "console.log('packages/demo build: src/index.ts(1,14): error TS2304: Cannot find name \\'x\\'.');\nconsole.error(' ERR_PNPM_RECURSIVE_RUN_FIRST_FAIL  @authcli/demo build: `tsup` Exit status 2');\nprocess.exit(2);\n",
    );
    try {
      const run = await runToEnd(checkout.script, checkout.env);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      const lines = run.stderr.split('\n');
      expect(lines[0]).toBe('building (demo changed)');
      // The build's standard output and error, each as it came (which of the two pipes is read first may vary).
      expect(lines.slice(1, 3).sort()).toEqual([
        ' ERR_PNPM_RECURSIVE_RUN_FIRST_FAIL  @authcli/demo build: `tsup` Exit status 2',
        "packages/demo build: src/index.ts(1,14): error TS2304: Cannot find name 'x'.",
      ]);
      expect(lines.slice(3)).toEqual(['the build failed (exit 2): nothing was started', '']);
    } finally {
      checkout.remove();
    }
  });

  it('with the build up to date, starts without building; SIGINT is passed on and it exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'authcli-start-'));
    const port = await freePort();
    const script = join(resolve(fileURLToPath(new URL('.', import.meta.url)), '..'), 'scripts/start.mjs');
    const child = spawn(process.execPath, [script], {
      env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: join(dir, 'authcli.db'), LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await waitUntilReady(`http://127.0.0.1:${port}`, child, () => out);
      const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
        child.once('exit', (code, signal) => r({ code, signal })),
      );
      child.kill('SIGINT');
      expect(await exit).toEqual({ code: 0, signal: null });
      expect(out).not.toContain('building');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

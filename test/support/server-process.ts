import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './http.js';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
export const SERVER_BIN = join(root, 'packages/server/bin/authcli-server.cjs');

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `authcli-server <args>` to completion, feeding `input` on stdin; in `cwd` when given. */
export function serverCommand(args: string[], env: NodeJS.ProcessEnv, input?: string, cwd?: string): Promise<CommandResult> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [SERVER_BIN, ...args], {
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(cwd !== undefined && { cwd }),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', rej);
    child.once('close', (code) => res({ code, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

/** Waits (up to 20 s) until the server process answers `/readyz`; fails with its output if it exits first. */
export async function waitUntilReady(issuer: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early:\n${output()}`);
    try {
      if ((await fetch(`${issuer}/readyz`)).ok) return;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`server did not start:\n${output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface ServerProcess {
  issuer: string;
  env: NodeJS.ProcessEnv;
  child: ChildProcess;
  output: () => string;
  stop: () => Promise<void>;
}

/**
 * Starts `authcli-server start` as a real process on a loopback port with its own SQLite file (or `database`).
 * `port`: that port instead of a free one (the same server started again after a restart).
 */
export async function startServerProcess(
  opts: { database?: string; env?: Record<string, string>; port?: number } = {},
): Promise<ServerProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'authcli-e2e-'));
  const port = opts.port ?? (await freePort());
  const env: Record<string, string> = {
    DATABASE_URL: opts.database ?? join(dir, 'authcli.db'),
    LOG_LEVEL: 'warn',
    PORT: String(port),
    HOST: '127.0.0.1',
    // The address it listens on, which the tests use (the default would be http://localhost:<port>).
    AUTHCLI_ISSUER: `http://127.0.0.1:${port}`,
    ...Object.fromEntries(Object.entries(opts.env ?? {}).map(([k, v]) => [k, v.replaceAll('{port}', String(port))])),
  };
  const child = spawn(process.execPath, [SERVER_BIN, 'start'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  // The address it listens on (an issuer of its own, e.g. AUTHCLI_ISSUER=http://localhost:{port} for passkeys,
  // with {port} standing for the port chosen here, is the test's to name).
  const issuer = `http://127.0.0.1:${port}`;
  await waitUntilReady(issuer, child, () => out);
  return {
    issuer,
    env,
    child,
    output: () => out,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

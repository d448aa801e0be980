import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from './support/http.js';
import { SERVER_BIN, type CommandResult } from './support/server-process.js';

const PASSWORD = 'keys at rest password';

const mode = (path: string) => statSync(path).mode & 0o777;
const octal = (path: string) => mode(path).toString(8).padStart(4, '0');

/** Temporary folders made by this file, removed at the end. */
const folders: string[] = [];
function tempFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'authcli-at-rest-'));
  folders.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

/**
 * `authcli-server <args>` under `umask 000` (the loosest there is: the
 * modes a file gets are then exactly the ones the server asks for), killed if
 * it runs longer than `timeoutMs`.
 */
function spawnUnderUmask000(args: string[], env: Record<string, string>) {
  return spawn('/bin/sh', ['-c', 'umask 000 && exec "$@"', 'sh', process.execPath, SERVER_BIN, ...args], {
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

function runUnderUmask000(args: string[], env: Record<string, string>, input = '', timeoutMs = 20_000): Promise<CommandResult> {
  return new Promise((res, rej) => {
    const child = spawnUnderUmask000(args, env);
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', rej);
    child.once('close', (code) => {
      clearTimeout(timer);
      res({ code, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

/** `authcli-server start` under `umask 000`, ready to answer. */
async function startUnderUmask000(env: Record<string, string>) {
  const port = await freePort();
  const child = spawnUnderUmask000(['start'], { PORT: String(port), HOST: '127.0.0.1', ...env });
  child.stdin.end();
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const issuer = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early:\n${out}`);
    try {
      if ((await fetch(`${issuer}/readyz`)).ok) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`server did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const exit = async (signal: NodeJS.Signals) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    await exited;
  };
  return { issuer, output: () => out, stop: () => exit('SIGTERM'), crash: () => exit('SIGKILL') };
}

/** Waits for `text` to show in a process's output (stderr lines may trail the readiness answer). */
async function waitForOutput(output: () => string, text: string): Promise<string> {
  for (let i = 0; i < 50 && !output().includes(text); i++) await new Promise((r) => setTimeout(r, 100));
  return output();
}

const occurrences = (text: string, part: string) => text.split(part).length - 1;

describe('data folder and database files are private, whatever the umask', () => {
  it('start under umask 000 creates the data folder 0700 and the database, -wal and -shm 0600', async () => {
    const dir = tempFolder();
    const db = join(dir, 'srv', 'data', 'authcli.db');
    const server = await startUnderUmask000({ DATABASE_URL: db });
    try {
      expect(octal(join(dir, 'srv'))).toBe('0700');
      expect(octal(join(dir, 'srv', 'data'))).toBe('0700');
      for (const file of [db, `${db}-wal`, `${db}-shm`]) {
        expect(existsSync(file), file).toBe(true);
        expect(octal(file), file).toBe('0600');
      }
    } finally {
      await server.stop();
    }
  });

  it('users add (a one-shot command) under umask 000 creates the folder 0700 and the database 0600', async () => {
    const dir = tempFolder();
    const db = join(dir, 'data', 'authcli.db');
    const added = await runUnderUmask000(['users', 'add', 'alice', '--password-stdin'], { DATABASE_URL: db }, `${PASSWORD}\n`);
    expect(added.code, added.stderr).toBe(0);
    expect(octal(join(dir, 'data'))).toBe('0700');
    expect(octal(db)).toBe('0600');
    for (const side of [`${db}-wal`, `${db}-shm`]) if (existsSync(side)) expect(octal(side), side).toBe('0600');
  });

  it('an existing database, -wal and -shm left 0644 (an older server, a crash) are tightened to 0600 at open', async () => {
    const dir = tempFolder();
    const db = join(dir, 'authcli.db');
    const first = await startUnderUmask000({ DATABASE_URL: db });
    await first.crash(); // SIGKILL: the -wal and -shm stay behind
    const files = [db, `${db}-wal`, `${db}-shm`];
    for (const file of files) {
      expect(existsSync(file), file).toBe(true);
      chmodSync(file, 0o644);
    }
    const second = await startUnderUmask000({ DATABASE_URL: db });
    try {
      for (const file of files) expect(octal(file), file).toBe('0600');
    } finally {
      await second.stop();
    }
  });

  it("a folder the operator chose is never chmodded; a group/other-readable one is reported once at start", async () => {
    const dir = tempFolder();
    chmodSync(dir, 0o755);
    const db = join(dir, 'authcli.db');
    const server = await startUnderUmask000({ DATABASE_URL: db });
    try {
      const out = await waitForOutput(server.output, 'database folder');
      expect(occurrences(out, `the database folder ${dir} (mode 0755) is readable by other users`)).toBe(1);
      expect(octal(dir)).toBe('0755');
      expect(octal(db)).toBe('0600');
    } finally {
      await server.stop();
    }
    const private_ = tempFolder(); // mkdtemp: 0700
    const quiet = await startUnderUmask000({ DATABASE_URL: join(private_, 'authcli.db') });
    try {
      await waitForOutput(quiet.output, 'signing threads');
      expect(quiet.output()).not.toContain('database folder');
    } finally {
      await quiet.stop();
    }
  });
});

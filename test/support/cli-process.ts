import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { onTestFinished } from 'vitest';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
export const CLI_BIN = join(root, 'packages/cli/bin/authcli.cjs');

/** A config home of its own for the running test (tests never touch the real ~/.config), removed after it. */
export function tempConfigHome(): string {
  const home = mkdtempSync(join(tmpdir(), 'authcli-xdg-'));
  onTestFinished(() => rmSync(home, { recursive: true, force: true }));
  return home;
}

export interface CliRun {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the first match of `re` in stderr (where the CLI talks to people). */
  waitFor: (re: RegExp, timeoutMs?: number) => Promise<RegExpMatchArray>;
  exit: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

/** Starts the real `authcli` process (no terminal: no colour, no countdown, no prompts); `input`, when given, is its stdin. */
export function runCli(args: string[], env: Record<string, string>, input?: string): CliRun {
  const child = spawn(process.execPath, [CLI_BIN, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: env.XDG_CONFIG_HOME ?? tmpdir(), ...env },
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (input !== undefined) child.stdin!.end(input);
  let out = '';
  let err = '';
  const waiters: { re: RegExp; resolve: (m: RegExpMatchArray) => void }[] = [];
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
    for (const w of [...waiters]) {
      const m = err.match(w.re);
      if (m) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(m);
      }
    }
  });
  const exit = new Promise<{ code: number | null; stdout: string; stderr: string }>((res) =>
    child.once('close', (code) => res({ code, stdout: out, stderr: err })),
  );
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exit,
    waitFor: (re, timeoutMs = 15_000) =>
      new Promise((res, rej) => {
        const m = err.match(re);
        if (m) return res(m);
        const t = setTimeout(() => rej(new Error(`timed out waiting for ${re} in stderr:\n${err}`)), timeoutMs);
        waiters.push({
          re,
          resolve: (x) => {
            clearTimeout(t);
            res(x);
          },
        });
        void exit.then(() => rej(new Error(`authcli exited before ${re} appeared:\n${err}\n${out}`)));
      }),
  };
}

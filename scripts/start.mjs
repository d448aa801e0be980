#!/usr/bin/env node
/**
 * `pnpm start`: builds only when a package's sources are newer than its
 * build (quietly: its output is shown only when it fails), then runs
 * `authcli-server start` (extra arguments are passed on).
 *
 * The server runs as a child with the terminal; a signal the launcher gets
 * (Ctrl-C reaches both; `kill` reaches this one) is passed on, and the
 * launcher exits with the server's own code, so a stop asked for exits 0 and
 * pnpm prints no ELIFECYCLE line.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');

/** The newest (or oldest) modification time of the files under `dir`, 0 (or Infinity) when there are none. */
function mtimes(dir, pick, start) {
  let t = start;
  if (!existsSync(dir)) return t;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) t = pick(t, statSync(join(entry.parentPath ?? entry.path, entry.name)).mtimeMs);
  }
  return t;
}

/** Packages whose src, package.json or tsup config changed after their dist was written (or that have none). */
function stalePackages() {
  const stale = [];
  for (const name of readdirSync(join(root, 'packages'))) {
    const dir = join(root, 'packages', name);
    if (!existsSync(join(dir, 'src'))) continue;
    const inputs = [join(dir, 'package.json'), join(dir, 'tsup.config.ts')].filter(existsSync).map((f) => statSync(f).mtimeMs);
    const newestInput = Math.max(mtimes(join(dir, 'src'), Math.max, 0), ...inputs);
    // A build empties dist and writes every file: its oldest file is when the build ran.
    const built = mtimes(join(dir, 'dist'), Math.min, Infinity);
    if (built === Infinity || newestInput > built) stale.push(name);
  }
  return stale;
}

/**
 * Runs the build with its output kept back: a line per file the bundlers write (some 175) would push the banner
 * off the screen. A build that fails prints all of it, in the order it came, and `start` stops with its code.
 */
async function quietBuild(cmd, args) {
  const child = spawn(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  const output = [];
  child.stdout.on('data', (d) => output.push(d));
  child.stderr.on('data', (d) => output.push(d));
  const [status, error] = await new Promise((done) => {
    child.once('error', (err) => done([null, err]));
    child.once('close', (code, signal) => done([code ?? (signal ? 1 : 0), undefined]));
  });
  if (error) {
    process.stderr.write(
      `cannot run ${cmd} to build (${error.message}): run this through \`pnpm start\`, or build with \`pnpm run build\` first\n`,
    );
    return 1;
  }
  if (status !== 0) {
    process.stderr.write(Buffer.concat(output));
    process.stderr.write(`the build failed (exit ${status}): nothing was started\n`);
  }
  return status;
}

/** Runs `authcli-server start` with the terminal, passing signals on and exiting with its code. */
function serve() {
  const server = spawn(process.execPath, [join(root, 'packages/server/bin/authcli-server.cjs'), 'start', ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      if (server.exitCode === null) server.kill(signal);
    });
  }
  server.on('exit', (code, signal) => process.exit(code ?? (signal === 'SIGINT' || signal === 'SIGTERM' ? 0 : 1)));
}

const stale = stalePackages();
let built = 0;
if (stale.length > 0) {
  process.stderr.write(`building (${stale.join(', ')} changed)\n`);
  // pnpm names itself in npm_execpath when it runs this script; a .cjs/.js there is run by this node.
  const pm = process.env.npm_execpath;
  const [cmd, args] = pm && /\.[cm]?js$/.test(pm) ? [process.execPath, [pm, 'run', 'build']] : [pm || 'pnpm', ['run', 'build']];
  built = await quietBuild(cmd, args);
}
// A failed build: its code, set rather than process.exit(), so that what it printed is all written out first.
if (built !== 0) process.exitCode = built;
else serve();

#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { sayError } from './operator/output.js';
import { appsCommand } from './operator/apps.js';
import { auditCommand } from './operator/audit.js';
import { connectorsCommand } from './operator/connectors.js';
import { configCommand } from './operator/config.js';
import { limitsCommand } from './operator/limits.js';
import { logoutsCommand } from './operator/logouts.js';
import { registrationCommand } from './operator/registration.js';
import { resourcesCommand } from './operator/resources.js';
import { workloadsCommand } from './operator/workloads.js';
import { isExpected } from './operator/shared.js';
import { startCommand } from './operator/start.js';
import { storeCommands } from './operator/store.js';
import { usersCommand } from './operator/users.js';
import { isStoreUnavailable } from './store/unavailable.js';

/** package.json's version, fixed at build time by tsup's `define` (tsup.config.ts). */
declare const __AUTHCLI_SERVER_VERSION__: string;

/** The operator's command line: one module per command group in operator/. */
export function program(): Command {
  const cli = new Command('authcli-server')
    .description('OAuth 2.0 / OpenID Connect authorization server for authcli')
    .version(__AUTHCLI_SERVER_VERSION__)
    // A usage error is one line and the help to read (main), not the whole help; every command inherits this.
    .configureOutput({ outputError: () => undefined })
    .exitOverride();
  startCommand(cli);
  configCommand(cli);
  usersCommand(cli);
  limitsCommand(cli);
  resourcesCommand(cli);
  appsCommand(cli);
  workloadsCommand(cli);
  connectorsCommand(cli);
  logoutsCommand(cli);
  registrationCommand(cli);
  storeCommands(cli);
  auditCommand(cli);
  return cli;
}

/** Commander's usage error in one line ("unknown option '--prot'. Did you mean --port?"), and which help to read. */
function usageLine(err: CommanderError, argv: readonly string[]): string {
  const message = err.message
    .replace(/^error: /, '')
    .replace(/\s*\n\((Did you mean [^)]*)\)/, '. $1')
    .replace(/\s*\n\s*/g, ' ');
  // The command the arguments name, as deep as they go (`users add`), for its own help.
  const path: string[] = [];
  let command: Command | undefined = program();
  for (const arg of argv.slice(2)) {
    const sub: Command | undefined = command?.commands.find((c) => c.name() === arg || c.aliases().includes(arg));
    if (!sub) break;
    path.push(sub.name());
    command = sub;
  }
  return `${message} (see \`authcli-server${path.length ? ` ${path.join(' ')}` : ''} --help\`)`;
}

/** A listener that could not start (the port in use, or not ours to take) as one line with what to do. */
function listenProblem(err: unknown): string | undefined {
  const {
    code,
    syscall,
    address,
    port,
    settings = '--port or PORT',
  } = err as {
    code?: string;
    syscall?: string;
    address?: string;
    port?: number;
    /** The settings the port comes from (operator/start.ts adds it). */
    settings?: string;
  };
  if (syscall !== 'listen') return undefined;
  const where = address === undefined ? `port ${port}` : `${address.includes(':') ? `[${address}]` : address}:${port}`;
  if (code === 'EADDRINUSE') {
    return `${where} is already in use (another authcli-server, or another program): stop it, or choose another port with ${settings}`;
  }
  if (code === 'EACCES') {
    return `cannot listen on ${where}: permission denied (ports below 1024 need privileges): choose a port from 1024 up with ${settings}, and put a proxy in front`;
  }
  if (code === 'EADDRNOTAVAIL')
    return `cannot listen on ${where}: no network interface of this machine has that address (check --host or HOST)`;
  return `cannot listen on ${where}: ${(err as Error).message}`;
}

async function main(argv: string[]): Promise<void> {
  try {
    await program().parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.exitCode !== 0) sayError(`authcli-server: ${usageLine(err, argv)}`);
      process.exitCode = err.exitCode;
      return;
    }
    if (isExpected(err)) {
      sayError(`authcli-server: ${err.message}`);
      process.exitCode = 1;
      return;
    }
    if (isStoreUnavailable(err)) {
      sayError(`authcli-server: the database failed or did not answer: ${(err as Error).message}`);
      process.exitCode = 1;
      return;
    }
    const listening = listenProblem(err);
    if (listening) {
      sayError(`authcli-server: ${listening}`);
      process.exitCode = 1;
      return;
    }
    const code = (err as { code?: string }).code;
    if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === '3D000' || code === '28P01') {
      sayError(`authcli-server: ${(err as Error).message}`);
      process.exitCode = 1;
      return;
    }
    sayError('authcli-server: unexpected error (a bug; please report it)');
    for (const line of ((err as Error).stack ?? String(err)).split('\n')) sayError(line);
    process.exitCode = 2;
  }
}

void main(process.argv);

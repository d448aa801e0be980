#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { sayError } from './operator/output.js';
import { appsCommand } from './operator/apps.js';
import { configCommand } from './operator/config.js';
import { limitsCommand } from './operator/limits.js';
import { registrationCommand } from './operator/registration.js';
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
    .showHelpAfterError()
    .exitOverride();
  startCommand(cli);
  configCommand(cli);
  usersCommand(cli);
  limitsCommand(cli);
  appsCommand(cli);
  registrationCommand(cli);
  storeCommands(cli);
  return cli;
}

async function main(argv: string[]): Promise<void> {
  try {
    await program().parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
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
    const code = (err as { code?: string }).code;
    if (
      code === 'EADDRINUSE' ||
      code === 'EACCES' ||
      code === 'ECONNREFUSED' ||
      code === 'ENOTFOUND' ||
      code === '3D000' ||
      code === '28P01'
    ) {
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

#!/usr/bin/env node
import { Command, CommanderError } from 'commander';

/** The `authcli` command. Sign-in commands arrive with the CLI milestone; this entry point already builds and parses. */
export function program(): Command {
  return new Command('authcli')
    .description('Sign in to an OAuth 2.0 / OpenID Connect server from the command line')
    .version('0.1.0')
    .exitOverride();
}

try {
  await program().parseAsync(process.argv);
} catch (err) {
  if (!(err instanceof CommanderError)) throw err;
  process.exitCode = err.exitCode;
}

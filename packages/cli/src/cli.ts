#!/usr/bin/env node
// Only commander loads at start; each command imports its modules when it runs, so `--help` stays fast.
// `authcli token` with a valid cached token answers before even commander loads (see the last line).
import { createRequire } from 'node:module';
import type { Command } from 'commander';

/** commander, loaded synchronously when the command line needs it; the cached-token path does without. */
const commander = () => createRequire(import.meta.url)('commander') as typeof import('commander');

const VERSION = '0.1.0';

interface CommonFlags {
  issuer?: string;
  clientId?: string;
  clientSecret?: string;
}

function common(cmd: Command): Command {
  return cmd
    .option('--issuer <url>', 'authorization server (env AUTHCLI_ISSUER, default http://127.0.0.1:8080)')
    .option('--client-id <id>', 'client id (env AUTHCLI_CLIENT_ID, default authcli)')
    .option('--client-secret <secret>', 'client secret of a confidential client (env AUTHCLI_CLIENT_SECRET)');
}

export function program(signal: AbortSignal): Command {
  const { Command } = commander();
  const cli = new Command('authcli')
    .description('Sign in to an OAuth 2.0 / OpenID Connect server from the command line')
    .version(VERSION)
    .showHelpAfterError()
    .exitOverride();

  common(cli.command('login').description('sign in: device flow (code + QR), or --browser for this machine\'s browser'))
    .option('--browser', 'sign in through the local browser (authorization code + PKCE, loopback redirect)')
    .option('--scope <scopes>', 'scopes to request', 'openid profile offline_access')
    .option('--no-open', 'do not open a browser; only print the URL')
    .option('--port <port>', 'loopback port for --browser (default: any free port)')
    .option('--json', 'print the result as JSON')
    .action(async (flags) => (await import('./commands/login.js')).login(flags, signal));

  common(cli.command('status').description('who is signed in where, token expiry, scopes; exit 0 valid or renewable, 1 signed out, 2 expired'))
    .option('--json', 'print JSON')
    .action(async (flags) => (await import('./commands/status.js')).status(flags));

  common(cli.command('token').description('print a valid access token (refreshing it if needed), e.g. $(authcli token)'))
    .option('--json', 'print {access_token, token_type, expires_at, expires_in, scope}')
    .option('--format <format>', 'token, json, or exec-credential (a kubectl client.authentication.k8s.io/v1 ExecCredential)')
    .action(async (flags: CommonFlags & { json?: boolean; format?: string }) => (await import('./commands/session.js')).token(flags, signal));

  common(cli.command('logout').description('revoke the session at the server and delete local credentials'))
    .option('--local', 'only forget the session on this machine (the token stays valid at the server)')
    .action(async (flags: CommonFlags & { local?: boolean }) => (await import('./commands/session.js')).logout(flags, signal));

  return cli;
}

/** One error boundary: expected failures are one line and exit 1 (130 on Ctrl-C); anything else is a bug. */
async function main(): Promise<void> {
  const ac = new AbortController();
  process.once('SIGINT', () => ac.abort());
  try {
    await program(ac.signal).parseAsync(process.argv);
  } catch (err) {
    if (err instanceof commander().CommanderError) {
      process.exitCode = err.exitCode;
      return;
    }
    const { CliError } = await import('./errors.js');
    if (err instanceof CliError) {
      process.stderr.write(`authcli: ${err.message}\n`);
      process.exitCode = err.code === 'cancelled' ? 130 : 1;
      return;
    }
    process.stderr.write(`authcli: unexpected error (a bug; please report it)\n${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 2;
  }
  // A pending prompt or keep-alive socket must not hold the process open.
  setTimeout(() => process.exit(), 200).unref();
}

/** `authcli token` with a valid cached token, answered without commander, HTTP or JWT code: scripts and kubectl call it constantly. */
async function cachedToken(): Promise<boolean> {
  return process.argv[2] === 'token' && (await import('./commands/cached-token.js')).cachedToken(process.argv.slice(3));
}

if (!(await cachedToken())) await main();

#!/usr/bin/env node
// Only commander and the small output and error modules load at start; each command imports its modules when it runs, so `--help` stays fast.
// `authcli token` with a valid cached token is answered before this module loads (bin/authcli.cjs, the last line).
import { createRequire } from 'node:module';
import type { Command, CommanderError } from 'commander';
import type { Output } from './output.js';

/** commander, loaded synchronously when the command line needs it; the cached-token path does without. */
const commander = () => createRequire(import.meta.url)('commander') as typeof import('commander');

/** package.json's version, put in by tsup at build time (tsup.config.ts `define`): no file read at start. */
declare const __AUTHCLI_VERSION__: string;

interface CommonFlags {
  profile?: string;
  issuer?: string;
  clientId?: string;
  clientSecret?: string;
  clientSecretStdin?: boolean;
}

function common(cmd: Command): Command {
  const { Option } = commander();
  return (
    cmd
      .option(
        '--profile <name>',
        'which account: each profile has its own issuer, client and sign-in (env AUTHCLI_PROFILE, default "default")',
      )
      .option('--issuer <url>', "authorization server (env AUTHCLI_ISSUER; default the profile's last sign-in, else http://localhost:8080)")
      .option('--client-id <id>', 'client id (env AUTHCLI_CLIENT_ID, default authcli)')
      .addOption(
        new Option('--client-secret-stdin', 'read the secret of a confidential client from stdin (or env AUTHCLI_CLIENT_SECRET)').conflicts(
          'clientSecret',
        ),
      )
      // Still accepted for old scripts, with a warning: argv is visible in `ps` and shell history.
      .addOption(new Option('--client-secret <secret>').hideHelp())
      .addOption(
        new Option(
          '--storage <where>',
          'where credentials are kept (env AUTHCLI_STORAGE; default: the keychain when one answers, else the file)',
        ).choices(['file', 'keychain']),
      )
  );
}

/** The options a person may give before the command name as well as after it. */
const GLOBAL_OPTIONS = ['profile', 'storage'] as const;

export function program(signal: AbortSignal, out: Output): Command {
  const { Command } = commander();
  const cli = new Command('authcli')
    .description('Sign in to an OAuth 2.0 / OpenID Connect server from the command line')
    .version(__AUTHCLI_VERSION__)
    .option('--debug', 'on failure, print the whole error (cause chain, stack)')
    // The global options, also accepted before the command name (`authcli --profile work token`), as kubectl's and
    // the AWS CLI's are; each command has them too, and one given after the command name wins.
    .option('--profile <name>', 'which account (any command; before or after its name)')
    .addOption(new (commander().Option)('--storage <where>', 'where credentials are kept (any command)').choices(['file', 'keychain']))
    // Usage errors are printed by the error boundary (one line and where to look), not as the whole help.
    .configureOutput({ outputError: () => undefined })
    .exitOverride()
    .hook('preAction', (root, action) => {
      for (const name of GLOBAL_OPTIONS) {
        const before = root.getOptionValue(name);
        if (before === undefined || action === root) continue;
        const known = action.options.some((o) => o.attributeName() === name);
        if (!known) {
          const path = [];
          for (let c: Command | null = action; c && c !== root; c = c.parent) path.unshift(c.name());
          throw new (commander().CommanderError)(1, 'commander.unknownOption', `error: ${path.join(' ')} takes no --${name} option`);
        }
        if (action.getOptionValueSource(name) !== 'cli') action.setOptionValueWithSource(name, before, 'cli');
      }
      // credentials.ts reads AUTHCLI_STORAGE; the flag overrides it for this process.
      const storage = action.opts<{ storage?: string }>().storage;
      if (storage) process.env.AUTHCLI_STORAGE = storage;
      // `memory` is @authcli/client's (a sign-in that lasts as long as its process): a command's would be gone at its end.
      if (process.env.AUTHCLI_STORAGE === 'memory') {
        throw new (commander().CommanderError)(1, 'authcli.storage', 'error: AUTHCLI_STORAGE must be file or keychain, not "memory"');
      }
    });

  cli.hook('preAction', (_, action) => {
    if (action.getOptionValueSource('clientSecret') === 'cli') {
      out.say(
        'authcli: warning: --client-secret is visible to other users in `ps` and stays in shell history; use --client-secret-stdin or AUTHCLI_CLIENT_SECRET',
      );
    }
  });

  common(cli.command('login').description("sign in: device flow (code + QR), or --browser for this machine's browser"))
    .option('--browser', 'sign in through the local browser (authorization code + PKCE, loopback redirect)')
    .option('--scope <scopes>', 'scopes to request', 'openid profile offline_access')
    .option(
      '--ci',
      "a CI job signs in with its own OIDC token (GitHub Actions' ID-token request, or --ci-token-env): token exchange, no secret",
    )
    .option('--ci-audience <aud>', 'with --ci on GitHub Actions: the audience asked for (default: the issuer)')
    .option('--ci-token-env <name>', 'with --ci: the environment variable holding the OIDC token (GitLab: an id_tokens entry)')
    .option(
      '--client-credentials',
      "an application signs in as itself (no person): AUTHCLI_CLIENT_ID and its secret (AUTHCLI_CLIENT_SECRET or --client-secret-stdin); scope: the API's by default",
    )
    .option('--no-open', 'do not open a browser; only print the URL')
    .option('--no-qr', 'device flow: do not draw the QR code (it is drawn only on a terminal)')
    .option('--port <port>', 'loopback port for --browser (default: any free port)')
    .option('--timeout <seconds>', 'how long --browser waits for the browser (default 300)')
    .option('--dpop', 'bind the tokens to a key on this machine (DPoP, RFC 9449); default Bearer, unless the application requires DPoP')
    .option('--json', 'print the result as JSON')
    .option('--force', "replace the profile's current sign-in without asking")
    .option('--resource <url>', 'tokens for this API (RFC 8707): its identifier, as `authcli-server resources list` shows it')
    .action(async (flags) => (await import('./commands/login.js')).login(flags, signal, out));

  common(
    cli.command('status').description('who is signed in where, token expiry, scopes; exit 0 valid or renewable, 1 signed out, 2 expired'),
  )
    .option('--json', 'print JSON')
    .action(async (flags) => (await import('./commands/status.js')).status(flags));

  common(cli.command('token').description('print a valid access token (refreshing it if needed), e.g. $(authcli token)'))
    .option('--json', 'print {access_token, token_type, expires_at, expires_in, scope}')
    .option('--format <format>', 'token, json, or exec-credential (a kubectl client.authentication.k8s.io/v1 ExecCredential)')
    .option('--dpop', 'for a DPoP-bound token: print the Authorization and DPoP header lines of one request (curl -H @-)')
    .option('--htm <method>', 'with --dpop: the request method (default GET)')
    .option('--htu <url>', 'with --dpop: the request URL')
    .option('--nonce <nonce>', "with --dpop: the resource server's DPoP-Nonce, when it asks for one")
    .option('--resource <url>', 'a token for another API the sign-in covers (RFC 8707), got from the same sign-in')
    .action(async (flags: CommonFlags & { json?: boolean; format?: string; dpop?: boolean; htm?: string; htu?: string; nonce?: string }) =>
      (await import('./commands/session.js')).token(flags, signal),
    );

  common(
    cli
      .command('api')
      .argument('<url>', 'an absolute http(s) URL, or a path on the issuer such as /oauth/userinfo')
      .description('make an authenticated HTTP request with the signed-in token (a DPoP proof when bound); body to stdout, exit 0 on 2xx'),
  )
    .option('-X, --method <method>', 'the request method (default GET, or POST with -d)')
    .option('-H, --header <line>', 'a request header "Name: value" (repeatable)', (line: string, all: string[] = []) => [...all, line])
    .option('-d, --data <data>', 'the request body: text, @FILE for a file, @- for stdin (JSON gets application/json, else a form)')
    .option('-i, --include', 'print the status line and response headers before the body')
    .option('--resource <url>', "send the token of this API (RFC 8707) of the sign-in, not the sign-in's own")
    .action(async (url: string, flags) => (await import('./commands/api.js')).api(url, flags, signal));

  common(cli.command('logout').description('revoke the session at the server and delete local credentials'))
    .option('--local', 'only forget the session on this machine (the token stays valid at the server)')
    .action(async (flags: CommonFlags & { local?: boolean }) => (await import('./commands/session.js')).logout(flags, signal));

  const profiles = cli
    .command('profiles')
    .description('list profiles (the default), or forget one')
    .addHelpText('after', '\n`authcli profiles` is `authcli profiles list` (--json, --storage): see `authcli profiles list --help`.');
  profiles
    .command('list', { isDefault: true })
    .description('every profile: its issuer, client, user, status and where the sign-in is kept')
    .option('--json', 'print a JSON array')
    .addOption(
      new (commander().Option)('--storage <where>', 'where credentials are kept (env AUTHCLI_STORAGE)').choices(['file', 'keychain']),
    )
    .action(async (flags: { json?: boolean }) => (await import('./commands/profiles.js')).profiles(flags));
  profiles
    .command('remove <name>')
    .description('forget a signed-out profile: its issuer and client, so it is no longer listed')
    .action(async (name: string) => (await import('./commands/profiles.js')).removeProfile(name));

  return cli;
}

/** Commander's usage error as a CliError: its one line, and the help to read instead of the whole help. */
async function usageError(err: CommanderError, cli: Command, argv: readonly string[]) {
  const { CliError } = await import('./errors.js');
  // The command named, and its subcommand when it has them (`profiles remove`).
  const args = argv.slice(2);
  const names = new Set(cli.commands.map((c) => c.name()));
  const at = args.findIndex((a) => names.has(a));
  const top = at < 0 ? undefined : cli.commands.find((c) => c.name() === args[at]);
  const sub = top?.commands.find((c) => c.name() === args[at + 1]);
  const command = top && [top.name(), ...(sub ? [sub.name()] : [])].join(' ');
  // "error: unknown command 'x'\n(Did you mean y?)" -> "unknown command 'x'. Did you mean y?"
  const message = err.message
    .replace(/^error: /, '')
    .replace(/\s*\n\((Did you mean [^)]*)\)/, '. $1')
    .replace(/\s*\n\s*/g, ' ');
  return new CliError('usage', message, { hint: `See \`authcli${command ? ` ${command}` : ''} --help\`.` });
}

/**
 * One error boundary: every failure goes through formatError; exit 1 (130 on
 * Ctrl-C, commander's code for usage, 70 for a bug: EX_SOFTWARE, apart from
 * `status`'s own 0/1/2).
 */
async function main(): Promise<void> {
  const ac = new AbortController();
  process.once('SIGINT', () => ac.abort());
  const [{ CliError, formatError }, { createOutput }] = await Promise.all([import('./errors.js'), import('./output.js')]);
  const out = createOutput();
  const cli = program(ac.signal, out);
  try {
    await cli.parseAsync(process.argv);
  } catch (caught) {
    let err = caught;
    let exitCode = 1;
    if (caught instanceof commander().CommanderError) {
      // --help, --version, and the help shown for a bare `authcli`: already printed.
      if (['commander.helpDisplayed', 'commander.version', 'commander.help'].includes(caught.code)) {
        process.exitCode = caught.exitCode;
        return;
      }
      err = await usageError(caught, cli, process.argv);
      exitCode = caught.exitCode;
    } else if (caught instanceof CliError) {
      exitCode = caught.code === 'cancelled' ? 130 : 1;
    } else {
      exitCode = 70;
    }
    const debug = cli.opts<{ debug?: boolean }>().debug === true || process.env.AUTHCLI_DEBUG === '1';
    out.say(await formatError(err, { debug }));
    process.exitCode = exitCode;
  }
  // A pending prompt or keep-alive socket must not hold the process open.
  setTimeout(() => process.exit(), 200).unref();
}

// `authcli token` with a valid cached token never gets here: bin/authcli.cjs answers it from dist/token-fast.cjs
// (commands/cached-token.ts, one CommonJS file) before this ES module loads, and comes here only when it cannot.
await main();

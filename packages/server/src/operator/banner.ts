import { basename, isAbsolute, relative, sep } from 'node:path';
import { DEFAULT_DATABASE_URL } from '../config/config.js';
import { parseDatabaseUrl } from '../store/open.js';

/** Where `authcli` signs in when no issuer is given (packages/cli/src/config.ts DEFAULT_ISSUER). */
export const CLI_DEFAULT_ISSUER = 'http://localhost:8080';

/** What `start` says it started with: the banner on a terminal, the fields of the JSON line otherwise. */
export interface Started {
  version: string;
  issuer: string;
  store: string;
  listening: string;
  dashboard: string;
  signingThreads: string;
  users: number;
  passkeys: string;
  metrics?: string;
}

/** How this process was run: its script (process.argv[1]) and its folder. */
export interface Invocation {
  script: string | undefined;
  cwd: string;
}

/** A word a POSIX shell takes as it is, quoted when it would not. */
const shellWord = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/**
 * The command that runs `authcli-server` as typed in the folder the server runs in: `authcli-server` when it was
 * run by that name (an installed command), `node packages/server/bin/authcli-server.cjs` in a checkout (the
 * README's words), else node and the script's full path.
 */
export function serverCommandLine(run: Invocation): string {
  const script = run.script;
  if (!script) return 'authcli-server';
  // Run by the name of an installed bin (npm's link, on PATH): the name alone runs it.
  if (basename(script) === 'authcli-server') return 'authcli-server';
  const inside = relative(run.cwd, script);
  const shown = inside !== '' && !inside.startsWith('..') && !isAbsolute(inside) ? inside.split(sep).join('/') : script;
  return `node ${shellWord(shown)}`;
}

/**
 * The lines to add the first user when there is none: the exact command, run from another terminal in this
 * folder, with the store this server uses when it is not the default one (a PostgreSQL URL is never printed: it
 * may hold a password).
 */
export function addUserLines(databaseUrl: string, issuer: string, run: Invocation): string[] {
  const postgres = parseDatabaseUrl(databaseUrl).dialect === 'postgres';
  const database = databaseUrl === DEFAULT_DATABASE_URL || postgres ? '' : ` --database ${shellWord(databaseUrl)}`;
  return [
    `no users yet: add one from a second terminal, in ${run.cwd}${postgres ? " with this server's DATABASE_URL" : ''} (it asks for a password):`,
    `  ${serverCommandLine(run)} users add NAME${database}`,
    `then sign in at ${issuer}/signin`,
  ];
}

/** The banner `start` prints on a terminal. */
export function bannerLines(started: Started, databaseUrl: string, run: Invocation): string[] {
  return [
    `authcli-server ${started.version}`,
    `  issuer:          ${started.issuer}`,
    `  store:           ${started.store}`,
    `  listening on:    ${started.listening}`,
    `  dashboard:       ${started.dashboard}`,
    ...(started.metrics ? [`  metrics:         ${started.metrics}`] : []),
    `  signing threads: ${started.signingThreads}`,
    `  passkeys:        ${started.passkeys}`,
    ...(started.users === 0 ? addUserLines(databaseUrl, started.issuer, run) : [`sign in at ${started.issuer}/signin`]),
    // The CLI signs in to http://localhost:8080 unless told: another issuer must be named to it.
    ...(started.issuer === CLI_DEFAULT_ISSUER ? [] : [`the CLI signs in here with: authcli login --issuer ${started.issuer}`]),
    'Ctrl-C stops it.',
  ];
}

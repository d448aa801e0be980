import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { IssuerError, normalizeIssuer } from '@authcli/protocol';
import { CliError } from './errors.js';

export const DEFAULT_ISSUER = 'http://localhost:8080';
export const DEFAULT_CLIENT_ID = 'authcli';

/** `$XDG_CONFIG_HOME/authcli` (default `~/.config/authcli`): config.json and credentials.json. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME?.startsWith('/') ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'authcli');
}

export interface ClientSettings {
  issuer: string;
  clientId: string;
  clientSecret: string | undefined;
}

export interface SettingFlags {
  issuer?: string | undefined;
  clientId?: string | undefined;
  clientSecret?: string | undefined;
  /** `--client-secret-stdin`: the secret is the first line of stdin. */
  clientSecretStdin?: boolean | undefined;
}

interface ConfigFile {
  issuer?: string;
  client_id?: string;
  client_secret?: string;
}

/** A file's text, or undefined when it does not exist; any other failure is a CliError naming the file. */
export async function readTextIfPresent(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CliError('config', `cannot read ${file}: ${(err as Error).message}`);
  }
}

async function readConfigFile(env: NodeJS.ProcessEnv): Promise<ConfigFile> {
  const file = join(configDir(env), 'config.json');
  const text = await readTextIfPresent(file);
  if (text === undefined) return {};
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
    return parsed as ConfigFile;
  } catch (err) {
    throw new CliError('config', `${file} is not valid JSON: ${(err as Error).message}`);
  }
}

/** The issuer identifier in its canonical form (@authcli/protocol, RFC 8414 §2), the one the server publishes; a config error if it cannot be one. */
function issuerSetting(value: string): string {
  try {
    return normalizeIssuer(value);
  } catch (err) {
    if (err instanceof IssuerError) throw new CliError('config', err.message, { cause: err });
    throw err;
  }
}

const MAX_SECRET_BYTES = 64 * 1024;

/**
 * The client secret from stdin (`--client-secret-stdin`), like `docker
 * login --password-stdin`: nothing lands in shell history or `ps`. The first
 * line counts, so `<<< "$SECRET"` and a file with a final newline both work.
 * Not from a terminal, where it would be echoed on the screen.
 */
export async function readSecretFromStdin(stdin: NodeJS.ReadableStream & { isTTY?: boolean | undefined } = process.stdin): Promise<string> {
  if (stdin.isTTY) {
    throw new CliError('usage', '--client-secret-stdin reads the secret from a pipe or a file, not from the terminal', {
      hint: 'For example: authcli login --client-secret-stdin < secret.txt',
    });
  }
  let text = '';
  for await (const chunk of stdin) {
    text += typeof chunk === 'string' ? chunk : (chunk as Buffer).toString('utf8');
    if (text.includes('\n') || text.length > MAX_SECRET_BYTES) break;
  }
  const secret = text.split(/\r?\n/)[0]!;
  if (!secret)
    throw new CliError('usage', '--client-secret-stdin: stdin is empty', {
      hint: 'Pipe the secret in, e.g. authcli login --client-secret-stdin < secret.txt',
    });
  return secret;
}

/** Flags > env (AUTHCLI_ISSUER, AUTHCLI_CLIENT_ID, AUTHCLI_CLIENT_SECRET) > config file > built-in defaults. */
export async function resolveSettings(
  flags: SettingFlags,
  env: NodeJS.ProcessEnv = process.env,
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean | undefined },
): Promise<ClientSettings> {
  const file = await readConfigFile(env);
  const issuer = flags.issuer ?? env.AUTHCLI_ISSUER ?? file.issuer ?? DEFAULT_ISSUER;
  const clientId = flags.clientId ?? env.AUTHCLI_CLIENT_ID ?? file.client_id ?? DEFAULT_CLIENT_ID;
  const fromStdin = flags.clientSecretStdin ? await readSecretFromStdin(stdin) : undefined;
  const clientSecret = fromStdin ?? flags.clientSecret ?? env.AUTHCLI_CLIENT_SECRET ?? file.client_secret;
  return { issuer: issuerSetting(issuer), clientId, clientSecret: clientSecret || undefined };
}

import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { IssuerError, normalizeIssuer } from '@authcli/protocol';
import { AuthcliError } from './errors.js';

export const DEFAULT_ISSUER = 'http://localhost:8080';
export const DEFAULT_CLIENT_ID = 'authcli';
/** The profile of a command without `--profile` or `AUTHCLI_PROFILE`; its sessions are stored under the bare issuer, as before profiles. */
export const DEFAULT_PROFILE = 'default';
/** A profile name: 1-64 letters, digits, `.`, `_`, `-`, starting with a letter or digit (never a space or `#`, which slots rely on). */
export const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * `AUTHCLI_CONFIG_DIR` when it is an absolute path (@authcli/client's `directory` sets it), else
 * `$XDG_CONFIG_HOME/authcli` (default `~/.config/authcli`): config.json, credentials.json, the locks.
 */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const own = env.AUTHCLI_CONFIG_DIR;
  if (own && isAbsolute(own)) return own;
  const base = env.XDG_CONFIG_HOME?.startsWith('/') ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'authcli');
}

export interface ClientSettings {
  issuer: string;
  clientId: string;
  clientSecret: string | undefined;
  /** The API (RFC 8707 resource) tokens are asked for: sent with every authorization and token request; none: the issuer's own. */
  resource?: string | undefined;
  /**
   * Where the sign-in is kept and locked (AUTHCLI_STORAGE, XDG_CONFIG_HOME): the environment the settings were
   * resolved in; process.env when absent. @authcli/client passes its `storage` option through it.
   */
  env?: NodeJS.ProcessEnv | undefined;
}

/** The settings of one profile, and the slot its session, DPoP keys and lock are stored under. */
export interface ProfileSettings extends ClientSettings {
  profile: string;
  /** See {@link slotOf}: the issuer for the default profile, `<issuer>#<profile>` for the others. */
  slot: string;
  /**
   * True when nothing named the issuer (no flag, AUTHCLI_ISSUER, config.json or earlier sign-in of the profile): it
   * is {@link DEFAULT_ISSUER}. The CLI then says so when the user's other profiles sign in elsewhere.
   */
  defaultIssuer?: true;
}

export interface SettingFlags {
  /** `--profile NAME`. */
  profile?: string | undefined;
  issuer?: string | undefined;
  clientId?: string | undefined;
  clientSecret?: string | undefined;
  /** `--client-secret-stdin`: the secret is the first line of stdin. */
  clientSecretStdin?: boolean | undefined;
}

interface ClientSection {
  issuer?: string;
  client_id?: string;
  client_secret?: string;
}

interface ConfigFile extends ClientSection {
  /** Per profile: what it signs in to, winning over the profile's last sign-in and the top level. */
  profiles?: Record<string, ClientSection>;
}

/** What `authcli login` remembers of a profile's last sign-in (`profiles.json`, no secrets). */
export interface RememberedProfile {
  issuer: string;
  client_id: string;
}

/**
 * Where a profile's session for an issuer is stored (the credentials file's key, the keychain account's
 * first part, the DPoP keys' and the lock's key): the issuer itself for the default profile, so what was
 * stored before profiles existed is the default profile's; `<issuer>#<profile>` for the others (an issuer
 * has no fragment and no space, so the `#` is unambiguous and the keychain account still splits at its
 * first space).
 */
export function slotOf(issuer: string, profile: string): string {
  return profile === DEFAULT_PROFILE ? issuer : `${issuer}#${profile}`;
}

/** The issuer and profile a slot stands for. */
export function parseSlot(slot: string): { issuer: string; profile: string } {
  const hash = slot.indexOf('#');
  return hash < 0 ? { issuer: slot, profile: DEFAULT_PROFILE } : { issuer: slot.slice(0, hash), profile: slot.slice(hash + 1) };
}

/** The issuer, and the profile when it is not the default one: how messages name a sign-in. */
export function describeSlot(slot: string): string {
  const { issuer, profile } = parseSlot(slot);
  return profile === DEFAULT_PROFILE ? issuer : `${issuer} (profile ${profile})`;
}

/** The command that signs in again to this slot's profile, for messages: `authcli login` or `authcli login --profile NAME`. */
export function loginCommand(slot: string): string {
  const { profile } = parseSlot(slot);
  return profile === DEFAULT_PROFILE ? 'authcli login' : `authcli login --profile ${profile}`;
}

/** The profile a command is about: `--profile`, else `AUTHCLI_PROFILE`, else `default`; a name that cannot be one is refused. */
export function profileName(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const rule = "a profile name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit";
  if (flag !== undefined) {
    if (!PROFILE_NAME.test(flag)) throw new AuthcliError('usage', `invalid profile name ${JSON.stringify(flag)}: ${rule}`);
    return flag;
  }
  const fromEnv = env.AUTHCLI_PROFILE;
  if (fromEnv === undefined || fromEnv === '') return DEFAULT_PROFILE;
  if (!PROFILE_NAME.test(fromEnv))
    throw new AuthcliError('config', `AUTHCLI_PROFILE must be a profile name, not ${JSON.stringify(fromEnv)}: ${rule}`);
  return fromEnv;
}

/** `$XDG_CONFIG_HOME/authcli/profiles.json`: each profile's last sign-in (issuer, client id), written by `login`. */
export function profilesPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(configDir(env), 'profiles.json');
}

/** Every profile's last sign-in; none when the file does not exist. A damaged file is an error naming it. */
export async function readProfileIndex(env: NodeJS.ProcessEnv = process.env): Promise<Record<string, RememberedProfile>> {
  const file = profilesPath(env);
  const text = await readTextIfPresent(file);
  if (text === undefined) return {};
  try {
    const parsed = JSON.parse(text) as { version?: unknown; profiles?: unknown };
    if (parsed.version !== 1 || !isObject(parsed.profiles)) throw new Error('unknown format');
    const entries = Object.entries(parsed.profiles).filter(
      (e): e is [string, RememberedProfile] => isObject(e[1]) && typeof e[1].issuer === 'string' && typeof e[1].client_id === 'string',
    );
    return Object.fromEntries(entries);
  } catch (err) {
    throw new AuthcliError('config', `${file} is damaged (${(err as Error).message}); delete it (it only remembers each profile's issuer)`);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A file's text, or undefined when it does not exist; any other failure is an AuthcliError naming the file. Read at once
 * through a required node:fs: the files are small, and `authcli token`'s fast path then compiles neither
 * node:fs/promises nor its file handles (about 2 ms of its start, measured with --cpu-prof).
 */
export async function readTextIfPresent(file: string): Promise<string | undefined> {
  try {
    return (createRequire(import.meta.url)('node:fs') as typeof import('node:fs')).readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new AuthcliError('config', `cannot read ${file}: ${(err as Error).message}`);
  }
}

export async function readConfigFile(env: NodeJS.ProcessEnv = process.env): Promise<ConfigFile> {
  const file = join(configDir(env), 'config.json');
  const text = await readTextIfPresent(file);
  if (text === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
    if (!isObject(parsed)) throw new Error('not an object');
  } catch (err) {
    throw new AuthcliError('config', `${file} is not valid JSON: ${(err as Error).message}`);
  }
  const { profiles } = parsed as ConfigFile;
  if (profiles !== undefined && (!isObject(profiles) || !Object.values(profiles).every(isObject))) {
    throw new AuthcliError('config', `${file}: "profiles" must map profile names to objects such as {"issuer": "https://id.example.com"}`);
  }
  return parsed as ConfigFile;
}

/** The issuer identifier in its canonical form (@authcli/protocol, RFC 8414 §2), the one the server publishes; a config error if it cannot be one. */
function issuerSetting(value: string): string {
  try {
    return normalizeIssuer(value);
  } catch (err) {
    if (err instanceof IssuerError) throw new AuthcliError('config', err.message, { cause: err });
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
    throw new AuthcliError('usage', '--client-secret-stdin reads the secret from a pipe or a file, not from the terminal', {
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
    throw new AuthcliError('usage', '--client-secret-stdin: stdin is empty', {
      hint: 'Pipe the secret in, e.g. authcli login --client-secret-stdin < secret.txt',
    });
  return secret;
}

/**
 * The profile's settings, each from the first of: flags > env (AUTHCLI_ISSUER, AUTHCLI_CLIENT_ID,
 * AUTHCLI_CLIENT_SECRET) > `profiles.<NAME>` in config.json > the profile's last sign-in (profiles.json:
 * issuer and client id; the client id only with the issuer it signed in to) > the top level of config.json >
 * built-in defaults. profiles.json is read only when an earlier source leaves something open.
 */
export async function resolveSettings(
  flags: SettingFlags,
  env: NodeJS.ProcessEnv = process.env,
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean | undefined },
): Promise<ProfileSettings> {
  const profile = profileName(flags.profile, env);
  const file = await readConfigFile(env);
  const section = file.profiles?.[profile] ?? {};
  const givenIssuer = flags.issuer ?? env.AUTHCLI_ISSUER ?? section.issuer;
  const givenClient = flags.clientId ?? env.AUTHCLI_CLIENT_ID ?? section.client_id;
  const last = givenIssuer === undefined || givenClient === undefined ? (await readProfileIndex(env))[profile] : undefined;
  const named = givenIssuer ?? last?.issuer ?? file.issuer;
  const issuer = issuerSetting(named ?? DEFAULT_ISSUER);
  const lastClient = last?.issuer === issuer ? last.client_id : undefined;
  const clientId = givenClient ?? lastClient ?? file.client_id ?? DEFAULT_CLIENT_ID;
  const fromStdin = flags.clientSecretStdin ? await readSecretFromStdin(stdin) : undefined;
  const clientSecret = fromStdin ?? flags.clientSecret ?? env.AUTHCLI_CLIENT_SECRET ?? section.client_secret ?? file.client_secret;
  return {
    issuer,
    clientId,
    clientSecret: clientSecret || undefined,
    profile,
    slot: slotOf(issuer, profile),
    ...(named === undefined && { defaultIssuer: true as const }),
  };
}

/**
 * `--resource URL` (RFC 8707 §2): an absolute http(s) URL without a fragment, the identifier of an API the server
 * issues tokens for; undefined when not given.
 */
export function resourceFlag(value: string | undefined, command: string): string | undefined {
  if (value === undefined) return undefined;
  if (!isApiIdentifier(value)) {
    throw new AuthcliError(
      'usage',
      `--resource must be the absolute http(s) URL of an API, without a fragment; got ${JSON.stringify(value)}`,
      {
        hint: `See \`authcli ${command} --help\`; \`authcli-server resources list\` shows the APIs.`,
      },
    );
  }
  return value;
}

/** Whether `value` can identify an API (RFC 8707 §2): an absolute http(s) URL without a fragment. */
export function isApiIdentifier(value: string): boolean {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  return Boolean(url && (url.protocol === 'https:' || url.protocol === 'http:') && !value.includes('#'));
}

// What the CLI says when the issuer a command uses is probably not the one the person meant: a profile that fell back
// to the built-in default while the other profiles sign in elsewhere, and a sign-in kept under another loopback name
// of the same server. Read only on the way to a login or a "not signed in": the cached `authcli token` never comes here.
import {
  DEFAULT_ISSUER,
  DEFAULT_PROFILE,
  describeSlot,
  type ProfileSettings,
  readConfigFile,
  readProfileIndex,
  slotOf,
} from '@authcli/client/internal/config.js';
import { readSession } from '@authcli/client/internal/credentials.js';
import { canonical } from './commands/profiles.js';

/** `a`, `a and b`, `a, b and c`, `a, b, c and 2 more`. */
function listed(names: readonly string[]): string {
  if (names.length <= 1) return names.join('');
  if (names.length <= 3) return `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
  return `${names.slice(0, 3).join(', ')} and ${names.length - 3} more`;
}

/**
 * The issuer each other profile signs in to without flags: its section in config.json, else its last sign-in
 * (profiles.json). Profiles that name none are left out (they too would be at the default).
 */
async function otherProfiles(profile: string, env: NodeJS.ProcessEnv): Promise<Map<string, string>> {
  const [config, index] = await Promise.all([readConfigFile(env), readProfileIndex(env)]);
  const issuers = new Map<string, string>();
  for (const name of new Set([...Object.keys(config.profiles ?? {}), ...Object.keys(index)])) {
    const issuer = canonical(config.profiles?.[name]?.issuer) ?? index[name]?.issuer;
    if (name !== profile && issuer !== undefined) issuers.set(name, issuer);
  }
  return issuers;
}

/**
 * When the profile's issuer is the built-in default only because nothing named one, and the other profiles
 * mostly sign in to another issuer: the line that says so and the `--issuer` to pass. The issuer suggested is the
 * one most other profiles use (a tie goes to the default profile's, then to the first by name); none when that is
 * the default itself, or there are no other profiles.
 */
export async function defaultIssuerNotice(settings: ProfileSettings, env: NodeJS.ProcessEnv = settings.env ?? process.env) {
  if (!settings.defaultIssuer) return undefined;
  const byIssuer = new Map<string, string[]>();
  for (const [name, issuer] of [...(await otherProfiles(settings.profile, env))].sort(([a], [b]) => a.localeCompare(b))) {
    byIssuer.set(issuer, [...(byIssuer.get(issuer) ?? []), name]);
  }
  const rank = (names: string[]) => [names.length, names.includes(DEFAULT_PROFILE) ? 1 : 0];
  const [likely] = [...byIssuer].sort(([, a], [, b]) => {
    const [x, y] = [rank(a), rank(b)];
    return y[0]! - x[0]! || y[1]! - x[1]!;
  });
  if (!likely || likely[0] === settings.issuer) return undefined;
  const [issuer, names] = likely;
  return `Profile ${settings.profile} has no issuer: using ${DEFAULT_ISSUER} (the default), but ${names.length > 1 ? 'profiles' : 'profile'} ${listed(names)} ${names.length > 1 ? 'use' : 'uses'} ${issuer}; pass --issuer ${issuer} to use it.`;
}

/** The names one loopback server answers to: another of them in an issuer is the same server (RFC 8252 §8.3). */
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];

/**
 * The issuer under another loopback name (same scheme, port and path) where this profile is signed in, when
 * the profile has no sign-in at its own issuer's name: `http://localhost:P` for `http://127.0.0.1:P`. Undefined
 * for any other host, or when there is none.
 */
export async function loopbackSignIn(settings: ProfileSettings): Promise<string | undefined> {
  const url = new URL(settings.issuer);
  if (!LOOPBACK_NAMES.includes(url.hostname)) return undefined;
  for (const name of LOOPBACK_NAMES) {
    if (name === url.hostname) continue;
    const other = new URL(settings.issuer);
    other.hostname = name;
    const issuer = canonical(other.href);
    // A store that cannot be read here (a locked keychain) only means no mention: the error being said stays as it was.
    const held = issuer && (await readSession(slotOf(issuer, settings.profile), settings.env).catch(() => undefined));
    if (held) return issuer;
  }
  return undefined;
}

/**
 * "Not signed in" in the words of the case: the sign-in under another loopback name of the same server, when the
 * profile has one (and the `--issuer` that uses it); else the message as it was.
 */
export async function notSignedInMessage(settings: ProfileSettings, message: string): Promise<string> {
  const other = await loopbackSignIn(settings);
  if (!other) return message;
  const here = describeSlot(settings.slot);
  return `not signed in to ${here}; you are signed in to ${other} (the same server by another name?): use --issuer ${other}`;
}

// `authcli profiles`: every profile, with where it signs in, who is signed in and where that is kept. Reads the
// local files and (when it may answer) the keychain; no HTTP or JOSE code.
import { DEFAULT_PROFILE, parseSlot, profileName, readConfigFile, readProfileIndex, slotOf } from '@authcli/client/internal/config.js';
import { CliError } from '../errors.js';
import { forgetProfile } from '../profiles.js';
import { allLocatedSessions, type CredentialStore } from '@authcli/client/internal/credentials.js';
import { normalizeIssuer } from '@authcli/protocol';
import { sessionState, type SessionState } from './status.js';

/** One profile at one issuer (a profile that signed in to several has a row for each). */
export interface ProfileRow {
  profile: string;
  issuer: string;
  client_id: string | undefined;
  subject: string | undefined;
  username: string | undefined;
  state: SessionState;
  /** ISO 8601 (UTC), while signed in. */
  expires_at: string | undefined;
  /** Where the session is kept; null when signed out. */
  storage: CredentialStore | null;
}

/**
 * The rows: every stored session (by its slot), and every profile that config.json's `profiles` names or
 * that signed in before (profiles.json) without a session at that issuer now, as signed out. The default
 * profile first, then by name and issuer.
 */
export async function profileRows(
  env: NodeJS.ProcessEnv = process.env,
  now = Date.now(),
): Promise<{ rows: ProfileRow[]; keychainError?: string | undefined }> {
  const [{ sessions, keychainError }, index, config] = await Promise.all([
    allLocatedSessions(env),
    readProfileIndex(env),
    readConfigFile(env),
  ]);
  const rows = new Map<string, ProfileRow>();
  for (const [slot, { session, store }] of Object.entries(sessions)) {
    const { issuer, profile } = parseSlot(slot);
    const state = sessionState(session, now);
    rows.set(slot, {
      profile,
      issuer,
      client_id: session.client_id,
      subject: session.subject,
      username: session.username,
      state,
      expires_at: new Date(session.expires_at).toISOString(),
      storage: store,
    });
  }
  const known: [string, string | undefined, string | undefined][] = [
    ...Object.entries(index).map(([p, e]) => [p, e.issuer, e.client_id] as [string, string, string]),
    ...Object.entries(config.profiles ?? {}).map(
      ([p, s]) => [p, canonical(s.issuer), s.client_id] as [string, string | undefined, string | undefined],
    ),
  ];
  for (const [profile, issuer, clientId] of known) {
    if (!issuer || [...rows.values()].some((r) => r.profile === profile && r.issuer === issuer)) continue;
    rows.set(slotOf(issuer, profile), {
      profile,
      issuer,
      client_id: clientId,
      subject: undefined,
      username: undefined,
      state: 'signed_out',
      expires_at: undefined,
      storage: null,
    });
  }
  const order = (r: ProfileRow) => [r.profile === DEFAULT_PROFILE ? '' : r.profile, r.issuer];
  const sorted = [...rows.values()].sort((a, b) => {
    const [x, y] = [order(a), order(b)];
    return x[0]!.localeCompare(y[0]!) || x[1]!.localeCompare(y[1]!);
  });
  return { rows: sorted, keychainError };
}

/** A hand-written issuer in its canonical form, or undefined when it cannot be one (resolveSettings says why, when it is used). */
export function canonical(issuer: string | undefined): string | undefined {
  if (issuer === undefined) return undefined;
  try {
    return normalizeIssuer(issuer);
  } catch {
    return undefined;
  }
}

const STATE_TEXT: Record<SessionState, string> = { valid: 'valid', renewable: 'renewable', expired: 'expired', signed_out: 'signed out' };

const storeWord = (store: CredentialStore | null) => (store ? store.kind : '-');

/**
 * The rows for people: aligned columns, and under them where `file` and `keychain` are. When the table is
 * wider than the terminal (`columns`; undefined when stdout is not one), each profile is a block of lines
 * instead, which wraps well.
 */
export function renderProfiles(rows: readonly ProfileRow[], columns: number | undefined): string {
  if (rows.length === 0) return 'No profiles yet: `authcli login` signs in (`--profile NAME` for another account).\n';
  const table = [
    ['PROFILE', 'ISSUER', 'CLIENT', 'USER', 'STATUS', 'STORED'],
    ...rows.map((r) => [
      r.profile,
      r.issuer,
      r.client_id ?? '-',
      r.username ?? r.subject ?? '-',
      STATE_TEXT[r.state],
      storeWord(r.storage),
    ]),
  ];
  const widths = table[0]!.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
  const lines = table.map((row) =>
    row
      .map((cell, c) => (c === row.length - 1 ? cell : cell.padEnd(widths[c]!)))
      .join('  ')
      .trimEnd(),
  );
  const wide = Math.max(...lines.map((l) => l.length)) > (columns ?? Number.POSITIVE_INFINITY);
  const body = wide
    ? rows.flatMap((r, i) => [
        ...(i > 0 ? [''] : []),
        r.profile,
        `  issuer:  ${r.issuer}`,
        `  client:  ${r.client_id ?? '-'}`,
        `  user:    ${r.username ?? r.subject ?? '-'}`,
        `  status:  ${STATE_TEXT[r.state]}`,
        `  stored:  ${storeWord(r.storage)}`,
      ])
    : lines;
  const places = new Map<string, string>();
  for (const r of rows) {
    if (r.storage?.kind === 'file') places.set('file', r.storage.path);
    if (r.storage?.kind === 'keychain') places.set('keychain', r.storage.name);
  }
  const legend = [...places].map(([kind, where]) => `${kind}: ${where}`);
  return `${[...body, ...(legend.length ? ['', ...legend] : [])].join('\n')}\n`;
}

/** `authcli profiles [--json]`. */
export async function profiles(flags: { json?: boolean }): Promise<void> {
  const { rows, keychainError } = await profileRows();
  if (keychainError) process.stderr.write(`Only the file was read: ${keychainError}\n`);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(rows)}\n`);
    return;
  }
  process.stdout.write(renderProfiles(rows, process.stdout.isTTY ? process.stdout.columns : undefined));
}

/**
 * `authcli profiles remove NAME`: forgets a signed-out profile (its issuer and client in profiles.json), so it is
 * no longer listed and `--profile NAME` starts from the defaults again. A profile still signed in anywhere is
 * refused with the logout to run first (its credentials are a sign-in to revoke at the server, not a line to
 * delete); one defined in config.json is the user's own file to edit, and is said so.
 */
export async function removeProfile(name: string): Promise<void> {
  const profile = profileName(name);
  // Wherever a sign-in may be kept, whatever AUTHCLI_STORAGE says now: a profile signed in to the keychain must not
  // be forgotten because this command was told to use the file (its refresh token would be left behind, unnamed).
  const { AUTHCLI_STORAGE: _, ...everywhere } = process.env;
  const { rows, keychainError } = await profileRows(everywhere);
  if (keychainError)
    throw new CliError('storage', `cannot tell whether profile ${profile} is signed in: the keychain did not answer (${keychainError})`);
  const signedIn = rows.filter((r) => r.profile === profile && r.storage !== null);
  if (signedIn.length > 0) {
    const flag = profile === DEFAULT_PROFILE ? '' : ` --profile ${profile}`;
    throw new CliError('usage', `profile ${profile} is signed in to ${signedIn.map((r) => r.issuer).join(', ')}`, {
      hint: `Sign out first: \`authcli logout${flag}${signedIn.length > 1 ? ' --issuer URL` for each.' : '`.'}`,
    });
  }
  const forgotten = await forgetProfile(profile);
  const inConfig = (await readConfigFile()).profiles?.[profile] !== undefined;
  if (inConfig) {
    throw new CliError('config', `profile ${profile} is defined in config.json${forgotten ? ' (its last sign-in is forgotten)' : ''}`, {
      hint: 'Remove it from "profiles" in config.json.',
    });
  }
  if (!forgotten) throw new CliError('usage', `no profile ${profile}`, { hint: '`authcli profiles` lists them.' });
  process.stderr.write(`Forgot profile ${profile}.\n`);
}

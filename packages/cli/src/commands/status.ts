// Loads no HTTP or JOSE code: `authcli status` only reads the local credentials.
import { DEFAULT_PROFILE, describeSlot, loginCommand, resolveSettings, type SettingFlags } from '@authcli/client/internal/config.js';
import { allSessions, describeStore, locateSession, type StoredSession } from '@authcli/client/internal/credentials.js';
import { readDpopKey } from '@authcli/client/internal/storage/dpop.js';

/**
 * Where the sign-in stands, and the exit code that says it to scripts:
 * `valid` and `renewable` (expired, but `authcli token` renews it) 0,
 * `signed_out` 1, `expired` (no refresh token: sign in again) 2.
 */
export type SessionState = 'valid' | 'renewable' | 'signed_out' | 'expired';

export const STATUS_EXIT_CODES: Record<SessionState, number> = { valid: 0, renewable: 0, signed_out: 1, expired: 2 };

/** A person's sign-in with a refresh token, an application's (its secret), a GitHub Actions job's (a new job token). */
const renewable = (s: StoredSession) =>
  Boolean(s.refresh_token) || s.kind === 'application' || (s.kind === 'workload' && s.ci?.token_env === undefined);

export function sessionState(session: StoredSession | undefined, now: number): SessionState {
  if (!session) return 'signed_out';
  if (session.expires_at > now) return 'valid';
  return renewable(session) ? 'renewable' : 'expired';
}

/** How long, roughly: `less than a minute`, `12 min`, `3 h`. */
function span(ms: number): string {
  const m = Math.round(Math.abs(ms) / 60_000);
  if (m < 1) return 'less than a minute';
  if (m < 90) return `${m} min`;
  return `${Math.round(m / 60)} h`;
}

/**
 * The access token's line of `status`: valid until when, or expired since when and whether `authcli token` renews
 * it (one "expired", with the time it happened). `timeZone` is for tests, as in {@link localTime}.
 */
export function accessTokenLine(
  state: Exclude<SessionState, 'signed_out'>,
  expiresAt: number,
  now: number,
  slot: string,
  timeZone?: string,
): string {
  const when = localTime(expiresAt, timeZone);
  if (state === 'valid') return `valid, expires ${when} (in ${span(expiresAt - now)})`;
  const since = `expired ${when} (${span(now - expiresAt)} ago)`;
  return state === 'renewable' ? `${since}; \`authcli token\` renews it` : `${since} and cannot be renewed: run \`${loginCommand(slot)}\``;
}

type KeyState = 'present' | 'missing' | 'unreadable';

/** Whether this machine has the key a bound sign-in needs; `unreadable` when where it is kept cannot say (a locked keychain). */
async function keyState(slot: string, jkt: string): Promise<KeyState> {
  try {
    return (await readDpopKey(slot, jkt)) ? 'present' : 'missing';
  } catch {
    return 'unreadable';
  }
}

const KEY_LINE: Record<KeyState, string> = {
  present: 'kept on this machine',
  missing: 'is not on this machine: run `authcli login`',
  unreadable: 'could not be read (is the keychain locked?)',
};

function tokenTypeLine(session: StoredSession, key: KeyState | undefined): string {
  if (!session.dpop_jkt || !key) return session.token_type;
  return `DPoP-bound (RFC 9449); its key ${session.dpop_jkt} ${KEY_LINE[key]}`;
}

/**
 * An instant in this machine's time zone (TZ), with the zone: `2026-11-26 16:04 GMT+1`, `2026-11-26 15:04 UTC`.
 * `timeZone` is for tests; the zone's short name is the one Intl gives in English (`EST`, `GMT+1`).
 */
export function localTime(ms: number, timeZone?: string): string {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
    timeZoneName: 'short',
  }).formatToParts(ms);
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? '';
  return `${part('year')}-${part('month')}-${part('day')} ${part('hour')}:${part('minute')} ${part('timeZoneName')}`;
}

/** `authcli status`: who is signed in where, expiry, scopes; exit code per {@link SessionState}. */
export async function status(flags: SettingFlags & { json?: boolean }): Promise<void> {
  const settings = await resolveSettings(flags);
  const { issuer, profile, slot } = settings;
  const { session, store, keychainError } = await locateSession(slot);
  // A locked keyring may hide a session: say why only the file was read.
  if (keychainError && !session) process.stderr.write(`Only the file was read: ${keychainError}\n`);
  const now = Date.now();
  const state = sessionState(session, now);
  // Signed out at the built-in default while the other profiles sign in elsewhere: say so, and which --issuer.
  const notice =
    state === 'signed_out' && settings.defaultIssuer && (await (await import('../issuer-hints.js')).defaultIssuerNotice(settings));
  if (notice) process.stderr.write(`${notice}\n`);
  // A bound token is usable only with its key: say whether this machine has it (a read, no JOSE code).
  const dpopKey = session?.dpop_jkt ? await keyState(slot, session.dpop_jkt) : undefined;
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify(
        session
          ? {
              signed_in: true,
              state,
              profile,
              issuer,
              client_id: session.client_id,
              ...(session.kind && { kind: session.kind }),
              subject: session.subject,
              username: session.username,
              scope: session.scope,
              ...(session.resource && { resource: session.resource }),
              ...(session.resource_tokens && { other_resources: Object.keys(session.resource_tokens) }),
              token_type: session.token_type,
              ...(session.dpop_jkt && { dpop_jkt: session.dpop_jkt, dpop_key: dpopKey }),
              expires_at: new Date(session.expires_at).toISOString(),
              expired: session.expires_at <= now,
              refreshable: renewable(session),
              storage: store,
            }
          : { signed_in: false, state, profile, issuer, storage: store },
      )}\n`,
    );
  } else if (session && state !== 'signed_out') {
    process.stdout.write(
      [
        session.kind === 'application'
          ? `Signed in to ${issuer} as the application ${session.client_id} (client credentials: no person)`
          : session.kind === 'workload'
            ? `Signed in to ${issuer} as the CI workload ${session.subject ?? '(unnamed)'} (token exchange, application ${session.client_id})`
            : `Signed in to ${issuer}${session.username ? ` as ${session.username}` : ''}${session.subject ? ` (subject ${session.subject})` : ''}`,
        ...(profile === DEFAULT_PROFILE ? [] : [`  profile:      ${profile}`]),
        `  client:       ${session.client_id}`,
        `  access token: ${accessTokenLine(state, session.expires_at, now, slot)}`,
        `  token type:   ${tokenTypeLine(session, dpopKey)}`,
        `  refresh:      ${
          session.kind === 'application'
            ? 'with its secret (`authcli token` mints the next token)'
            : session.kind === 'workload'
              ? 'with a new CI token (`authcli token` exchanges it)'
              : session.refresh_token
                ? 'yes (`authcli token` renews the access token)'
                : 'no: sign in again when it expires'
        }`,
        `  scopes:       ${session.scope || '(none)'}`,
        ...(session.resource ? [`  for the API:  ${session.resource}`] : []),
        ...(session.resource_tokens
          ? [`  other APIs:   ${Object.keys(session.resource_tokens).join(' ')} (\`authcli token --resource URL\`)`]
          : []),
        `  stored in:    ${describeStore(store)}`,
        '',
      ].join('\n'),
    );
  } else {
    const others = Object.keys(await allSessions()).map(describeSlot);
    process.stdout.write(
      `Not signed in to ${describeSlot(slot)}. Run \`${loginCommand(slot)}\`.${others.length ? `\nSigned in elsewhere: ${others.join(', ')} (\`authcli profiles\` lists them)` : ''}\n`,
    );
  }
  process.exitCode = STATUS_EXIT_CODES[state];
}

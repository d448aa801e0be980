// Loads no HTTP or JOSE code: `authcli status` only reads the local credentials.
import { resolveSettings, type SettingFlags } from '../config.js';
import { allSessions, describeStore, locateSession } from '../credentials.js';

function describeIn(ms: number): string {
  const m = Math.round(ms / 60_000);
  if (ms <= 0) return 'expired';
  if (m < 1) return 'in less than a minute';
  if (m < 90) return `in ${m} min`;
  return `in ${Math.round(m / 60)} h`;
}

/** `authcli status`: who is signed in where, expiry, scopes. Exit 1 when signed out. */
export async function status(flags: SettingFlags & { json?: boolean }): Promise<void> {
  const settings = await resolveSettings(flags);
  const { session, store, keychainError } = await locateSession(settings.issuer);
  // A locked keyring may hide a session: say why only the file was read.
  if (keychainError && !session) process.stderr.write(`Only the file was read: ${keychainError}\n`);
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify(
        session
          ? {
              signed_in: true,
              issuer: settings.issuer,
              client_id: session.client_id,
              subject: session.subject,
              username: session.username,
              scope: session.scope,
              expires_at: new Date(session.expires_at).toISOString(),
              expired: session.expires_at <= Date.now(),
              refreshable: Boolean(session.refresh_token),
              storage: store,
            }
          : { signed_in: false, issuer: settings.issuer, storage: store },
      )}\n`,
    );
  } else if (session) {
    process.stdout.write(
      [
        `Signed in to ${settings.issuer}${session.username ? ` as ${session.username}` : ''}${session.subject ? ` (subject ${session.subject})` : ''}`,
        `  client:       ${session.client_id}`,
        `  access token: ${session.expires_at <= Date.now() ? 'expired' : 'valid'}, expires ${new Date(session.expires_at).toISOString()} (${describeIn(session.expires_at - Date.now())})`,
        `  refresh:      ${session.refresh_token ? 'yes (`authcli token` renews the access token)' : 'no: sign in again when it expires'}`,
        `  scopes:       ${session.scope || '(none)'}`,
        `  stored in:    ${describeStore(store)}`,
        '',
      ].join('\n'),
    );
  } else {
    const others = Object.keys(await allSessions());
    process.stdout.write(`Not signed in to ${settings.issuer}. Run \`authcli login\`.${others.length ? `\nSigned in elsewhere: ${others.join(', ')}` : ''}\n`);
  }
  if (!session) process.exitCode = 1;
}


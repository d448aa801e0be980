import { resolveSettings, type SettingFlags } from '../config.js';
import { allSessions, deleteSession, readSession, writeSession, type StoredSession } from '../credentials.js';
import { discover } from '../discovery.js';
import { CliError } from '../errors.js';
import { clientAuth, httpTransport, oauthError } from '../http.js';
import { terminalOutput } from '../output.js';
import { asTokenResponse, sessionFromTokens } from '../tokens.js';

/** Tokens this close to expiry are refreshed rather than handed out. */
const EXPIRY_MARGIN_MS = 30_000;

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
  const session = await readSession(settings.issuer);
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
            }
          : { signed_in: false, issuer: settings.issuer },
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
        '',
      ].join('\n'),
    );
  } else {
    const others = Object.keys(await allSessions());
    process.stdout.write(`Not signed in to ${settings.issuer}. Run \`authcli login\`.${others.length ? `\nSigned in elsewhere: ${others.join(', ')}` : ''}\n`);
  }
  if (!session) process.exitCode = 1;
}

function signedOut(issuer: string): CliError {
  return new CliError('signed_out', `not signed in to ${issuer}; run \`authcli login\``);
}

/** `authcli token`: a valid access token on stdout, refreshed through the refresh token when needed. */
export async function token(flags: SettingFlags): Promise<void> {
  const settings = await resolveSettings(flags);
  const session = await readSession(settings.issuer);
  if (!session) throw signedOut(settings.issuer);
  if (session.expires_at - EXPIRY_MARGIN_MS > Date.now()) {
    process.stdout.write(`${session.access_token}\n`);
    return;
  }
  if (!session.refresh_token) throw new CliError('signed_out', `the access token for ${settings.issuer} has expired and cannot be renewed; run \`authcli login\``);
  const meta = await discover(settings.issuer, httpTransport);
  const auth = clientAuth({ ...settings, clientId: session.client_id }, { grant_type: 'refresh_token', refresh_token: session.refresh_token });
  const res = await httpTransport(meta.token_endpoint, { method: 'POST', headers: auth.headers, form: auth.form });
  if (res.status !== 200) {
    const e = oauthError(res);
    if (e?.error === 'invalid_grant') {
      await deleteSession(settings.issuer);
      throw new CliError('signed_out', `the session at ${settings.issuer} has ended (${e.description ?? 'invalid_grant'}); run \`authcli login\``);
    }
    throw new CliError('protocol', `refreshing failed: ${e ? `${e.error}${e.description ? `: ${e.description}` : ''}` : `HTTP ${res.status}`}`);
  }
  const refreshed: StoredSession = await sessionFromTokens(asTokenResponse(res.body), meta, { ...settings, clientId: session.client_id }, { previous: session });
  await writeSession(settings.issuer, refreshed);
  process.stdout.write(`${refreshed.access_token}\n`);
}

/** `authcli logout`: revoke the refresh token (RFC 7009) when the server can, then forget the session. */
export async function logout(flags: SettingFlags): Promise<void> {
  const out = terminalOutput();
  const settings = await resolveSettings(flags);
  const session = await readSession(settings.issuer);
  if (!session) {
    process.stdout.write(`Not signed in to ${settings.issuer}.\n`);
    return;
  }
  const revocable = session.refresh_token ?? session.access_token;
  try {
    const meta = await discover(settings.issuer, httpTransport);
    if (meta.revocation_endpoint) {
      const auth = clientAuth(
        { ...settings, clientId: session.client_id },
        { token: revocable, token_type_hint: session.refresh_token ? 'refresh_token' : 'access_token' },
      );
      const res = await httpTransport(meta.revocation_endpoint, { method: 'POST', headers: auth.headers, form: auth.form });
      if (res.status !== 200) out.say(`The server did not revoke the session (HTTP ${res.status}); forgetting it here anyway.`);
    }
  } catch (err) {
    if (!(err instanceof CliError && (err.code === 'network' || err.code === 'discovery'))) throw err;
    out.say(`Could not reach ${settings.issuer} to revoke the session (${err.message}); forgetting it here anyway.`);
  }
  await deleteSession(settings.issuer);
  process.stdout.write(`Signed out of ${settings.issuer}.\n`);
}

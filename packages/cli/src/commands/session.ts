import { resolveSettings, type SettingFlags } from '../config.js';
import { deleteSession, readSession, writeSession, type StoredSession } from '../credentials.js';
import { discover } from '../discovery.js';
import { CliError } from '../errors.js';
import { clientAuth, httpTransport, oauthError } from '../http.js';
import { terminalOutput } from '../output.js';
import { asTokenResponse, sessionFromTokens } from '../tokens.js';

/** Tokens this close to expiry are refreshed rather than handed out. */
const EXPIRY_MARGIN_MS = 30_000;

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

/**
 * The CLI's credentials file (`$XDG_CONFIG_HOME/authcli/credentials.json`) as tests read and edit it. The CLI
 * decides from a session's stored `expires_at` whether its access token has expired, so a test that needs
 * `authcli token` to refresh (or `status` to say "expired") rewrites that instead of waiting out the token's
 * lifetime. The server still takes the token for valid until its real expiry: a check that needs the server to
 * refuse an expired token has to wait for that (with a short AUTHCLI_ACCESS_TOKEN_TTL).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A session as the file backend keeps it (packages/cli/src/storage/session.ts), with the fields tests look at. */
export interface StoredSession {
  client_id: string;
  access_token: string;
  token_type: string;
  dpop_jkt?: string;
  /** Epoch ms. */
  expires_at: number;
  scope: string;
  refresh_token?: string;
  id_token?: string;
  username?: string;
  /** Epoch ms. */
  obtained_at: number;
}

interface CredentialsFile {
  version: 1;
  sessions: Record<string, StoredSession>;
}

/** Where the CLI run with XDG_CONFIG_HOME=home keeps its file-backed sessions. */
export const credentialsPath = (home: string): string => join(home, 'authcli', 'credentials.json');

function readCredentials(home: string): CredentialsFile {
  return JSON.parse(readFileSync(credentialsPath(home), 'utf8')) as CredentialsFile;
}

/** The session stored for `issuer`; throws when there is none. */
export function storedSession(home: string, issuer: string): StoredSession {
  const session = readCredentials(home).sessions[issuer];
  if (!session) throw new Error(`no session for ${issuer} in ${credentialsPath(home)}`);
  return session;
}

/**
 * Makes the access token stored for `issuer` look expired to the CLI (its `expires_at` a second ago), so the
 * next `authcli token` refreshes it and `status` reports it expired. The file is replaced as the CLI replaces
 * it (a 0600 file renamed over it), so a CLI process reading it meanwhile sees the old file or the new one.
 */
export function expireStoredToken(home: string, issuer: string): void {
  const file = credentialsPath(home);
  const credentials = readCredentials(home);
  const session = credentials.sessions[issuer];
  if (!session) throw new Error(`no session for ${issuer} in ${file}`);
  session.expires_at = Date.now() - 1000;
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}

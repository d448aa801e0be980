import { describeSlot, type ClientSettings, type ProfileSettings } from './config.js';
import { readSession, writeSession, type StoredSession } from './credentials.js';
import { dpopTransport, keyOfSession, savedNonces, type DpopKey } from './dpop.js';
import { AuthcliError } from './errors.js';
import { httpTransport } from './http.js';
import { withSessionLock } from './lock.js';
import { OAuthClient } from './oauth/client.js';
import { discover, type ServerMetadata } from './oauth/discovery.js';
import type { Notices } from './notices.js';
import { deleteDpopKeys, writeDpopKey } from './storage/dpop.js';

/**
 * Revokes a stored session at the server (RFC 7009 §2.1): its refresh token,
 * which ends the whole sign-in and its access tokens at servers that follow
 * the §2.1 SHOULD (this one does), or its access token when it has none.
 * 'unsupported' when the server publishes no revocation endpoint. Throws
 * AuthcliError('network' | 'discovery') when the server cannot be reached and
 * AuthcliError('protocol') when it refuses.
 */
export async function revokeSession(
  settings: ClientSettings,
  session: StoredSession,
  meta?: ServerMetadata,
  /** The sign-in's DPoP key, when it is bound to one and this machine has it: the request carries a proof. */
  key?: DpopKey,
): Promise<'revoked' | 'unsupported'> {
  meta ??= await discover(settings.issuer, httpTransport);
  // The secret belongs to the configured client: a session of another client is revoked as a public client's.
  const client = {
    ...settings,
    clientId: session.client_id,
    // An application's sign-in (login --client-credentials) keeps its own secret.
    clientSecret: session.client_secret ?? (session.client_id === settings.clientId ? settings.clientSecret : undefined),
  };
  const tokenTransport = key ? dpopTransport(httpTransport, key, { nonces: await savedNonces(settings.env) }) : httpTransport;
  const oauth = new OAuthClient({ meta, settings: client, transport: httpTransport, tokenTransport });
  return oauth.revoke(session.refresh_token ?? session.access_token, session.refresh_token ? 'refresh_token' : 'access_token');
}

/**
 * Stores a new sign-in and then revokes the one it replaced: a re-login, or
 * the earlier of two concurrent logins, must not leave a refresh token alive
 * at the server for the rest of its lifetime. The read of the previous session
 * and the write of the new one happen under the session lock, so concurrent
 * logins and refreshes each see the session the other stored and every
 * replaced session is revoked once. Revocation comes after the new session is
 * stored and is best effort: a failure is one line on stderr, never a failed
 * login.
 */
export async function replaceSession(
  settings: ProfileSettings,
  session: StoredSession,
  meta: ServerMetadata,
  out: Notices,
  signal?: AbortSignal,
  /** The new sign-in's DPoP key (when its token is bound): stored with it, in the same lock. */
  key?: DpopKey,
): Promise<void> {
  const { slot } = settings;
  const env = settings.env ?? process.env;
  const named = describeSlot(slot);
  // What to revoke is looked up best effort: a keychain that cannot be read now (locked, gone) must not fail a
  // sign-in that is about to be stored (writeSession falls back to the file and says so).
  const readPrevious = () =>
    readSession(slot, env).catch((err: unknown) => {
      if (err instanceof AuthcliError && err.code === 'storage') return undefined;
      throw err;
    });
  const before = await readPrevious();
  const { previous, previousKey } = await withSessionLock(
    slot,
    before ? [session.client_id, before.client_id] : [session.client_id],
    async () => {
      const stored = await readPrevious();
      // The replaced sign-in's key signs its revocation below; it is removed here with every other old key.
      const storedKey = stored?.dpop_jkt ? await keyOfSession(slot, stored, env).catch(() => undefined) : undefined;
      // The key first: a session stored without its key would be unusable.
      if (key) await writeDpopKey(slot, key.jkt, key.privateJwk, env);
      await writeSession(slot, session, env, out.say);
      await deleteDpopKeys(slot, env, key?.jkt);
      return { previous: stored, previousKey: storedKey };
    },
    {
      signal,
      purpose: `storing the sign-in to ${named}`,
      onWait: (holder) =>
        out.say(`Waiting for another authcli process${holder ? ` (pid ${holder.pid})` : ''} to finish with the sign-in to ${named}...`),
    },
    env,
  );
  if (!previous || (previous.refresh_token ?? previous.access_token) === (session.refresh_token ?? session.access_token)) return;
  try {
    await revokeSession(settings, previous, meta, previousKey);
  } catch (err) {
    if (!(err instanceof AuthcliError)) throw err;
    out.say(
      `Could not revoke the previous sign-in to ${named} (${err.message}); its refresh token stays valid at the server until it expires.`,
    );
  }
}

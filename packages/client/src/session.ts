// The stored sign-in with a token good for a use, refreshed when it must be: what `authcli token` prints, what
// `authcli api` sends and what @authcli/client's getToken returns. Loads no HTTP or JOSE code unless it refreshes.
import { describeSlot, loginCommand, type ProfileSettings } from './config.js';
import { readSession, type StoredSession } from './credentials.js';
import { AuthcliError } from './errors.js';
import { type Notices, SILENT } from './notices.js';
import { sessionFor } from './storage/session.js';
import { hasExpired, needsRefresh, type TokenFormat } from './token-output.js';

/** Not signed in, in the words the CLI has always used. */
export function signedOut(slot: string): AuthcliError {
  return new AuthcliError('signed_out', `not signed in to ${describeSlot(slot)}; run \`${loginCommand(slot)}\``);
}

/**
 * The sign-in stored for the profile (`settings.slot`: `--profile`, `AUTHCLI_PROFILE`) with a token good for
 * `format`, refreshed under the session lock when it is about to expire (see refreshedSession), or when
 * `rejected` is its access token (a resource server refused it). `check` looks at the stored session before
 * any refresh. What `authcli token` prints and `authcli api` sends; throws AuthcliError('signed_out') when the
 * profile is not signed in, or cannot be renewed.
 */
export async function validSession(
  settings: ProfileSettings,
  format: TokenFormat,
  opts: {
    signal?: AbortSignal | undefined;
    check?: ((session: StoredSession) => Promise<void>) | undefined;
    rejected?: string | undefined;
    notices?: Notices | undefined;
  } = {},
): Promise<StoredSession> {
  const { signal, check, rejected, notices = SILENT } = opts;
  const { slot } = settings;
  const stored = await readSession(slot, settings.env);
  if (!stored) throw signedOut(slot);
  await check?.(stored);
  // `--resource`: the token of that API (storage/session.ts sessionFor); none yet is got by a refresh naming it.
  let session = sessionFor(stored, settings.resource);
  if (!session || needsRefresh(session, format, Date.now()) || session.access_token === rejected) {
    const { notRenewable, refreshedSession } = await import('./refresh.js');
    // Without a refresh token a token inside the margin is still handed out; only an expired one is an error.
    // A person's sign-in renews with its refresh token; an application's (login --client-credentials) with its secret.
    // (A CI job's variable token cannot be exchanged again: refreshedSession says so in its own words.)
    const renewable = Boolean(stored.refresh_token) || stored.kind !== undefined;
    if (!renewable && (!session || rejected !== undefined || hasExpired(session, format, Date.now()))) throw notRenewable(slot);
    if (renewable) session = await refreshedSession(settings, stored, format, notices, signal, rejected);
    if (!session) throw notRenewable(slot);
    if (hasExpired(session, format, Date.now())) {
      throw new AuthcliError(
        'protocol',
        format === 'exec-credential' && session.id_token
          ? `${describeSlot(slot)} renewed the sign-in without a new ID token, and the stored one has expired; run \`${loginCommand(slot)}\``
          : `${describeSlot(slot)} renewed the sign-in with a token that has already expired; is this machine's clock right?`,
      );
    }
  }
  return session;
}

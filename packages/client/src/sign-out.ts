// Signing out: the sign-in revoked at the server (RFC 7009), then forgotten here, under the session lock.
import type { ProfileSettings } from './config.js';
import { deleteSession, readSession, type StoredSession } from './credentials.js';
import { AuthcliError } from './errors.js';
import { withSessionLock } from './lock.js';

/**
 * What became of the sign-in: none was stored; forgotten here only (`local`, the token left valid at the server);
 * revoked then forgotten; or forgotten at a server that offers no revocation (the token stays valid there).
 */
export type SignOutResult = { outcome: 'not_signed_in' } | { outcome: 'forgotten' | 'revoked' | 'unsupported'; session: StoredSession };

/**
 * Revokes the profile's sign-in at the server (its refresh token, which ends the access tokens too at servers
 * that follow RFC 7009 §2.1), then forgets it. When the revocation fails the sign-in is kept and the error thrown
 * (AuthcliError 'network', 'discovery' or 'protocol'): a local delete would leave a live refresh token at the
 * server without anyone knowing. `local` only forgets it here.
 */
export async function signOutSession(
  settings: ProfileSettings,
  opts: {
    local?: boolean | undefined;
    signal?: AbortSignal | undefined;
    purpose?: string | undefined;
    /** Only this client's sign-in: another application's on the profile counts as none (the library's use). */
    clientId?: string | undefined;
  } = {},
): Promise<SignOutResult> {
  const { slot, env } = settings;
  const mine = (s: StoredSession | undefined) => (s && (opts.clientId === undefined || s.client_id === opts.clientId) ? s : undefined);
  const seen = mine(await readSession(slot, env));
  if (!seen) return { outcome: 'not_signed_in' };
  return withSessionLock(
    slot,
    [seen.client_id],
    async (): Promise<SignOutResult> => {
      const session = mine(await readSession(slot, env));
      if (!session) return { outcome: 'not_signed_in' };
      if (opts.local) {
        await deleteSession(slot, env);
        return { outcome: 'forgotten', session };
      }
      const [{ revokeSession }, { keyOfSession }] = await Promise.all([import('./revocation.js'), import('./dpop.js')]);
      // A bound sign-in's revocation carries a proof when its key is here; without the key it is revoked all the same.
      const key = await keyOfSession(slot, session, env).catch(() => undefined);
      const revoked = await revokeSession(settings, session, undefined, key);
      await deleteSession(slot, env);
      return { outcome: revoked === 'unsupported' ? 'unsupported' : 'revoked', session };
    },
    { signal: opts.signal, purpose: opts.purpose ?? 'signing out' },
    env,
  );
}

/** Whether an error of signOutSession is the server's refusal or absence (the sign-in is then kept). */
export function revocationFailed(err: unknown): err is AuthcliError {
  return err instanceof AuthcliError && ['network', 'discovery', 'protocol'].includes(err.code);
}

import type { TokenResponse } from '@authcli/protocol';
import { describeSlot, loginCommand, type ProfileSettings } from './config.js';
import { deleteSession, readSession, writeSession, type StoredSession } from './credentials.js';
import { sessionFor } from './storage/session.js';
import { dpopTransport, keyOfSession, savedNonces } from './dpop.js';
import { AuthcliError } from './errors.js';
import { httpTransport } from './http.js';
import { withSessionLock } from './lock.js';
import { OAuthClient } from './oauth/client.js';
import { discover } from './oauth/discovery.js';
import { ProtocolError } from './oauth/errors.js';
import type { Notices } from './notices.js';
import { hasExpired, needsRefresh, presented, type TokenFormat } from './token-output.js';
import { sessionFromTokens } from './tokens.js';

/** `slot`: where the sign-in is stored (config.ts slotOf); the message names its issuer and profile. */
export function notRenewable(slot: string): AuthcliError {
  return new AuthcliError(
    'signed_out',
    `the token for ${describeSlot(slot)} has expired and cannot be renewed (no refresh token); run \`${loginCommand(slot)}\``,
  );
}

/**
 * A session good for `format`, refreshed (RFC 6749 §6) under the session
 * lock: read, and only if the stored session still needs it, refresh and
 * write, all while holding the lock. A process that waited for the lock finds
 * the session another process just stored and uses it, so each refresh token
 * is sent once (RFC 9700 §4.14.2: the server revokes the whole sign-in when a
 * rotated refresh token comes back). `invalid_grant` means the sign-in has
 * ended at the server: the stored session is removed and the error says so.
 * `signal` (Ctrl-C) ends a wait for the lock, never a refresh under way: its
 * answer carries the only valid refresh token.
 */
export async function refreshedSession(
  settings: ProfileSettings,
  seen: StoredSession,
  format: TokenFormat,
  out: Notices,
  signal?: AbortSignal,
  /** An access token a resource server refused (`invalid_token`): refreshed even though it has not expired. */
  rejected?: string,
): Promise<StoredSession> {
  const { issuer, slot } = settings;
  const env = settings.env ?? process.env;
  const named = describeSlot(slot);
  const result = await withSessionLock(
    slot,
    [seen.client_id],
    async (assertHeld): Promise<StoredSession | { otherClient: StoredSession }> => {
      const now = Date.now();
      const current = await readSession(slot, env);
      if (!current)
        throw new AuthcliError(
          'signed_out',
          `not signed in to ${named} (another authcli process signed out); run \`${loginCommand(slot)}\``,
        );
      // `token --resource`: the token of another API the sign-in covers, kept beside the main one (storage/session.ts).
      const view = sessionFor(current, settings.resource);
      if (view && !needsRefresh(view, format, now) && view.access_token !== rejected) return view;
      // A login with another client replaced the session while we waited: its lock is not the one held.
      if (current.client_id !== seen.client_id) return { otherClient: current };
      // Stored by the process we waited for: use it while it lasts rather than refresh once more.
      const seenView = sessionFor(seen, settings.resource);
      if (view && (!seenView || presented(view, format).token !== presented(seenView, format).token) && !hasExpired(view, format, now)) {
        return view;
      }
      const other = settings.resource !== undefined && settings.resource !== current.resource;
      if (current.kind === 'workload') {
        // A CI job (login --ci): a new token of the job exchanged, for its API.
        if (other) throw new AuthcliError('usage', `the CI workload signed in for ${current.resource ?? 'its API'} only`);
        // A token from a variable (GitLab's id_tokens) is one value for the whole job, and each is exchanged once.
        if (current.ci?.token_env !== undefined) {
          throw new AuthcliError(
            'signed_out',
            `the CI token in ${current.ci.token_env} was exchanged when the job signed in, and each is exchanged once; give the job a longer --token-lifetime in its trust policy, or sign in again with a new job token`,
          );
        }
        const { workloadSession } = await import('./workload.js');
        const key = await keyOfSession(slot, current, env);
        const meta = await discover(issuer, httpTransport);
        const exchanged = await workloadSession(
          meta,
          { ...settings, clientId: current.client_id, clientSecret: undefined, resource: current.resource },
          {
            source: { audience: current.ci?.audience ?? issuer, tokenEnv: current.ci?.token_env },
            scope: current.scope || undefined,
            transport: httpTransport,
            tokenTransport: key ? dpopTransport(httpTransport, key, { nonces: await savedNonces(env) }) : httpTransport,
            dpopJkt: key?.jkt,
          },
        );
        assertHeld();
        await writeSession(slot, exchanged, env, out.say);
        return exchanged;
      }
      if (current.kind === 'application') {
        // An application's own token (login --client-credentials): minted again with its secret, for its API.
        if (other) {
          throw new AuthcliError(
            'usage',
            `the application signed in for ${current.resource ?? 'its API'} only; sign it in for ${settings.resource} on another profile (--profile NAME)`,
          );
        }
        const { applicationSession } = await import('./application.js');
        const key = await keyOfSession(slot, current, env);
        const meta = await discover(issuer, httpTransport);
        const minted = await applicationSession(
          meta,
          { ...settings, clientId: current.client_id, clientSecret: current.client_secret, resource: current.resource },
          {
            scope: current.scope || undefined,
            transport: httpTransport,
            tokenTransport: key ? dpopTransport(httpTransport, key, { nonces: await savedNonces(env) }) : httpTransport,
            dpopJkt: key?.jkt,
          },
        );
        assertHeld();
        await writeSession(slot, minted, env, out.say);
        return minted;
      }
      if (!current.refresh_token) {
        if (view && !hasExpired(view, format, now) && view.access_token !== rejected) return view;
        throw notRenewable(slot);
      }
      const client = { ...settings, clientId: current.client_id, resource: other ? settings.resource : current.resource };
      // A DPoP-bound sign-in refreshes with a proof of its key (RFC 9449 §5), or not at all: never as Bearer.
      const key = await keyOfSession(slot, current, env);
      const meta = await discover(issuer, httpTransport);
      const tokenTransport = key ? dpopTransport(httpTransport, key, { nonces: await savedNonces(env) }) : httpTransport;
      const oauth = new OAuthClient({ meta, settings: client, transport: httpTransport, tokenTransport });
      assertHeld();
      let tokens: TokenResponse;
      try {
        tokens = await oauth.refresh(current.refresh_token);
      } catch (err) {
        // invalid_grant (RFC 6749 §5.2): the sign-in has ended at the server; the error says so (explain.ts).
        if (err instanceof ProtocolError && err.error === 'invalid_grant') await deleteSession(slot, env);
        throw err;
      }
      let refreshed: StoredSession;
      try {
        refreshed = await sessionFromTokens(tokens, meta, client, { previous: current, dpopJkt: key?.jkt });
      } catch (err) {
        // The server has rotated the refresh token: keep the new one (and nothing unverified), or the
        // next refresh would send the retired one and end the sign-in.
        if (tokens.refresh_token) await writeSession(slot, { ...current, refresh_token: tokens.refresh_token }, env, out.say);
        throw err;
      }
      if (!other) {
        await writeSession(slot, refreshed, env, out.say);
        return refreshed;
      }
      // Another API's token: the sign-in keeps its own access token, and takes the rotated refresh token.
      const stored: StoredSession = {
        ...current,
        refresh_token: refreshed.refresh_token,
        id_token: refreshed.id_token,
        resource_tokens: {
          ...current.resource_tokens,
          [settings.resource!]: {
            access_token: refreshed.access_token,
            token_type: refreshed.token_type,
            expires_at: refreshed.expires_at,
            scope: refreshed.scope,
            obtained_at: refreshed.obtained_at,
          },
        },
      };
      await writeSession(slot, stored, env, out.say);
      return sessionFor(stored, settings.resource)!;
    },
    {
      signal,
      purpose: `refreshing the sign-in to ${named}`,
      onWait: (holder) =>
        out.say(`Waiting for another authcli process${holder ? ` (pid ${holder.pid})` : ''} that is refreshing the sign-in to ${named}...`),
    },
    env,
  );
  // Retried outside the lock held so far, so no process holds one client's lock while waiting for another's.
  return 'otherClient' in result ? refreshedSession(settings, result.otherClient, format, out, signal, rejected) : result;
}

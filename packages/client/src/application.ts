// `authcli login --client-credentials`: an application signs in as itself (RFC 6749 §4.4), with no person.
import type { ClientSettings } from './config.js';
import type { StoredSession } from './credentials.js';
import { AuthcliError } from './errors.js';
import type { Transport } from './http.js';
import { OAuthClient } from './oauth/client.js';
import type { ServerMetadata } from './oauth/discovery.js';

/** `kind` of a session an application signed in itself. */
export const APPLICATION_KIND = 'application';

/**
 * An application's own token, as a session to store: the client's id and secret (sent with HTTP Basic), the
 * scope asked for (undefined: the server's default, every scope the application has of the API) and the
 * settings' resource (RFC 8707). There is no refresh token (§4.4.3): the secret is kept with the session so that
 * `authcli token` can mint the next one, as it would refresh a person's.
 */
export async function applicationSession(
  meta: ServerMetadata,
  settings: ClientSettings,
  opts: { scope: string | undefined; transport: Transport; tokenTransport?: Transport | undefined; dpopJkt?: string | undefined },
  now: () => number = Date.now,
): Promise<StoredSession> {
  if (!settings.clientSecret) {
    throw new AuthcliError(
      'usage',
      `the application ${settings.clientId} signs in with its secret: set AUTHCLI_CLIENT_SECRET or pass --client-secret-stdin`,
      {
        hint: 'See `authcli login --help`.',
      },
    );
  }
  const client = new OAuthClient({ meta, settings, transport: opts.transport, tokenTransport: opts.tokenTransport });
  const tokens = await client.clientCredentials(opts.scope);
  const bound = tokens.token_type.toLowerCase() === 'dpop';
  if (bound && !opts.dpopJkt) throw new AuthcliError('protocol', 'the server sent a DPoP-bound token to a request without a DPoP proof');
  return {
    kind: APPLICATION_KIND,
    client_id: settings.clientId,
    client_secret: settings.clientSecret,
    access_token: tokens.access_token,
    token_type: bound ? 'DPoP' : 'Bearer',
    ...(bound && { dpop_jkt: opts.dpopJkt }),
    expires_at: now() + (tokens.expires_in ?? 3600) * 1000,
    scope: tokens.scope ?? opts.scope ?? '',
    subject: settings.clientId,
    username: undefined,
    obtained_at: now(),
    ...(settings.resource !== undefined && { resource: settings.resource }),
  };
}

import type { TokenResponse } from '@authcli/protocol';
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import type { ClientSettings } from './config.js';
import type { StoredSession } from './credentials.js';
import { AuthcliError } from './errors.js';
import { httpTransport, type Transport } from './http.js';
import { fetchJwks, type ServerMetadata } from './oauth/discovery.js';
import { fetchUserinfo } from './oauth/userinfo.js';

/**
 * Verifies an ID token before anything is stored (OIDC Core §3.1.3.7):
 * signature against the issuer's JWKS, iss, aud (and azp), exp, and the nonce
 * when one was sent.
 */
export async function verifyIdToken(
  idToken: string,
  meta: ServerMetadata,
  settings: ClientSettings,
  expectedNonce: string | undefined,
  now: () => number = Date.now,
  transport: Transport = httpTransport,
): Promise<{ sub: string; username: string | undefined }> {
  const jwks = await fetchJwks(meta, transport);
  try {
    const { payload } = await jwtVerify(idToken, createLocalJWKSet(jwks), {
      issuer: settings.issuer,
      audience: settings.clientId,
      currentDate: new Date(now()),
      requiredClaims: ['sub', 'exp', 'iat'],
    });
    if (Array.isArray(payload.aud) && payload.aud.length > 1 && payload.azp !== settings.clientId) {
      throw new AuthcliError('id_token', 'the ID token is for another party (azp)');
    }
    if (expectedNonce !== undefined && payload.nonce !== expectedNonce)
      throw new AuthcliError('id_token', 'the ID token nonce does not match this sign-in');
    const username =
      typeof payload.preferred_username === 'string'
        ? payload.preferred_username
        : typeof payload.email === 'string'
          ? payload.email
          : undefined;
    return { sub: payload.sub!, username };
  } catch (err) {
    if (err instanceof AuthcliError) throw err;
    throw new AuthcliError('id_token', `the ID token did not verify: ${(err as Error).message}`, { cause: err });
  }
}

/** Verifies what must be verified, then shapes the session to store. */
export async function sessionFromTokens(
  tokens: TokenResponse,
  meta: ServerMetadata,
  settings: ClientSettings,
  opts: {
    nonce?: string | undefined;
    previous?: StoredSession | undefined;
    now?: () => number;
    /** The thumbprint of the key whose proof went with the request (RFC 9449), if one did. */
    dpopJkt?: string | undefined;
  } = {},
): Promise<StoredSession> {
  const now = opts.now ?? Date.now;
  // A DPoP-bound token is only usable with the key that asked for it; a server may still answer Bearer (§5).
  const bound = tokens.token_type.toLowerCase() === 'dpop';
  if (bound && !opts.dpopJkt) throw new AuthcliError('protocol', 'the server sent a DPoP-bound token to a request without a DPoP proof');
  let subject = opts.previous?.subject;
  let username = opts.previous?.username;
  if (tokens.id_token) {
    const verified = await verifyIdToken(tokens.id_token, meta, settings, opts.nonce, now);
    subject = verified.sub;
    // A server that follows OIDC Core §5.4 puts no profile claims in the ID token when it issues an access token:
    // the name found at sign-in (from userinfo) is kept across refreshes.
    username = verified.username ?? opts.previous?.username;
    if (opts.previous?.subject && opts.previous.subject !== subject)
      throw new AuthcliError('id_token', 'the refreshed ID token is for a different user');
  } else if (!subject) {
    // No ID token (no openid scope): the JWT access token, if it is one, still names the user.
    try {
      subject = decodeJwt(tokens.access_token).sub;
    } catch {
      subject = undefined;
    }
  }
  return {
    client_id: settings.clientId,
    access_token: tokens.access_token,
    token_type: bound ? 'DPoP' : 'Bearer',
    ...(bound && { dpop_jkt: opts.dpopJkt }),
    expires_at: now() + (tokens.expires_in ?? 3600) * 1000,
    scope: tokens.scope ?? opts.previous?.scope ?? '',
    refresh_token: tokens.refresh_token ?? opts.previous?.refresh_token,
    id_token: tokens.id_token ?? opts.previous?.id_token,
    subject,
    username,
    obtained_at: now(),
    ...(settings.resource !== undefined && { resource: settings.resource }),
    ...(opts.previous?.resource_tokens && { resource_tokens: opts.previous.resource_tokens }),
  };
}

/**
 * A name to show for the signed-in user when the ID token carries none:
 * the userinfo endpoint (OIDC Core §5.3), whose `sub` must match the ID
 * token's (§5.3.2). Best effort: undefined on any failure.
 */
export async function displayNameFromUserinfo(
  meta: ServerMetadata,
  accessToken: string,
  subject: string | undefined,
  transport: Transport = httpTransport,
  /** For a DPoP-bound token: a transport that sends it as `DPoP` with a proof (dpopTransport with accessToken). */
  resourceTransport?: Transport,
): Promise<string | undefined> {
  if (!meta.userinfo_endpoint) return undefined;
  try {
    const info = await fetchUserinfo(meta, transport, { accessToken, resourceTransport }, subject);
    return info.preferred_username ?? info.email ?? info.name;
  } catch {
    return undefined;
  }
}

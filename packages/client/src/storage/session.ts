/** What is kept per issuer after a sign-in, whichever backend keeps it. */
export interface StoredSession {
  client_id: string;
  access_token: string;
  /** `Bearer`, or `DPoP` for a token bound to the key whose thumbprint is `dpop_jkt` (RFC 9449). */
  token_type: string;
  /** RFC 7638 thumbprint of the sign-in's DPoP key; the private key is kept apart (storage/dpop.ts), never here. */
  dpop_jkt?: string | undefined;
  /** Epoch ms when the access token expires. */
  expires_at: number;
  scope: string;
  refresh_token?: string | undefined;
  id_token?: string | undefined;
  subject: string | undefined;
  username: string | undefined;
  /** Epoch ms of the token response; when two backends hold a session for one issuer, the newer one wins. */
  obtained_at: number;
  /** The API (RFC 8707 resource) the access token is for (`login --resource`); absent: the issuer's own. */
  resource?: string | undefined;
  /** Tokens for other APIs the sign-in covers (`token --resource`), by resource: refreshed from the one refresh token. */
  resource_tokens?: Record<string, ResourceToken> | undefined;
  /**
   * Who signed in: absent for a person; `application` for `login --client-credentials` (RFC 6749 §4.4), whose
   * token is minted again with `client_secret` (kept here, in the same store as a person's refresh token).
   */
  kind?: 'application' | 'workload' | undefined;
  client_secret?: string | undefined;
  /** A CI workload (`login --ci`): where its OIDC token comes from, to exchange a new one (workload.ts). */
  ci?: { audience: string; token_env?: string } | undefined;
}

/** An access token for another API of the same sign-in. */
export interface ResourceToken {
  access_token: string;
  token_type: string;
  expires_at: number;
  scope: string;
  obtained_at: number;
}

/**
 * The session as it serves `resource`: itself when that is the API its access token is for (or none is asked
 * for), else the same sign-in with that API's token (undefined when there is none yet).
 */
export function sessionFor(session: StoredSession, resource: string | undefined): StoredSession | undefined {
  if (resource === undefined || resource === session.resource) return session;
  const t = session.resource_tokens?.[resource];
  if (!t) return undefined;
  return { ...session, ...t, id_token: undefined, resource };
}

/**
 * The newer of two copies of one issuer's session. Two copies exist after a keychain write failed and the
 * file took the session, or after a crash between a keychain write and the removal of the file's copy;
 * the older one's refresh token may already be rotated, and sending it would be reuse (RFC 9700 §4.14.2).
 */
export function newer(a: StoredSession | undefined, b: StoredSession | undefined): StoredSession | undefined {
  if (!a) return b;
  if (!b) return a;
  return b.obtained_at > a.obtained_at ? b : a;
}

/** A session read from a backend we do not fully control (the keychain); undefined when it is not one of ours. */
export function parseSession(text: string): StoredSession | undefined {
  try {
    const s = JSON.parse(text) as Partial<StoredSession> | null;
    if (typeof s !== 'object' || s === null) return undefined;
    if (
      typeof s.client_id !== 'string' ||
      typeof s.access_token !== 'string' ||
      typeof s.expires_at !== 'number' ||
      typeof s.obtained_at !== 'number'
    ) {
      return undefined;
    }
    return s as StoredSession;
  } catch {
    return undefined;
  }
}

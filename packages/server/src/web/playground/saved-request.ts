/**
 * The authorization request the playground sent, saved until its callback:
 * in this tab's sessionStorage only (never localStorage), keyed by state, for
 * at most 10 minutes, and removed on first use. Without it the callback is
 * not exchanged (callback.ts).
 */

const PREFIX = 'authcli.playground.request.';
/** How long a saved request, and its DPoP key (./dpop.ts), waits for its callback. */
export const TTL_MS = 10 * 60_000;

/** What the callback needs to check and exchange: the request as it was sent. */
export interface SavedRequest {
  issuer: string;
  client_id: string;
  redirect_uri: string;
  scope: string;
  verifier: string;
  state: string;
  nonce: string;
  created_at: number;
  /** The authorization request as sent, to show it again after the round trip. */
  url: string;
  /** With DPoP: the thumbprint of the key pair waiting in IndexedDB for this state (see ./dpop.ts). */
  dpop_jkt?: string;
  /** With PAR (RFC 9126): the parameters pushed, which the authorization request itself no longer carries. */
  pushed?: Record<string, string>;
}

/** Removes this tab's saved requests that are older than TTL_MS or unreadable. */
export function purgeExpired(): void {
  for (let i = sessionStorage.length - 1; i >= 0; i--) {
    const key = sessionStorage.key(i);
    if (!key?.startsWith(PREFIX)) continue;
    try {
      const saved = JSON.parse(sessionStorage.getItem(key)!) as SavedRequest;
      if (Date.now() - saved.created_at > TTL_MS) sessionStorage.removeItem(key);
    } catch {
      sessionStorage.removeItem(key);
    }
  }
}

/** The saved request for `state`, removed as it is read (one use). */
export function takeSaved(state: string): SavedRequest | undefined {
  const key = PREFIX + state;
  const raw = sessionStorage.getItem(key);
  sessionStorage.removeItem(key);
  if (!raw) return undefined;
  const saved = JSON.parse(raw) as SavedRequest;
  return Date.now() - saved.created_at > TTL_MS ? undefined : saved;
}

/** Saves `saved` under its state for the callback, in this tab only. */
export function saveRequest(saved: SavedRequest): void {
  sessionStorage.setItem(PREFIX + saved.state, JSON.stringify(saved));
}

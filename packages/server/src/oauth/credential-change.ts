import { CREDENTIAL_CHANGE_REAUTH_MS } from '../config/defaults.js';
import type { Store } from '../store/store.js';
import { amrOf, meetsAcr, PHISHING_RESISTANT_ACR } from './acr.js';

/** The sign-in a browser session rests on, as stored: when, and how (RFC 8176 methods; a federated class). */
export interface SignInBasis {
  auth_time: number;
  amr: string | null;
  acr: string | null;
}

/**
 * Whether a session may add or remove a way into its account (a passkey, a linked upstream account), and if not,
 * what sign-in it needs first:
 * - `recent`: any sign-in at most {@link CREDENTIAL_CHANGE_REAUTH_MS} ago (an account without a passkey);
 * - `passkey`: a passkey sign-in (`acr` phr) at most that long ago, once the account has a passkey. A password,
 *   however fresh, is then not enough: whoever holds only the password could otherwise add an authenticator of
 *   their own, sign in with it as `phr`, and keep the account after the password is changed; or swap the owner's
 *   passkeys for theirs.
 * The first passkey may be added after a recent password sign-in: there is nothing stronger to ask for.
 */
export type CredentialChange = { allowed: true } | { allowed: false; needs: 'recent' | 'passkey' };

export function credentialChange(session: SignInBasis, accountHasPasskey: boolean, now: number): CredentialChange {
  const recent = now - session.auth_time <= CREDENTIAL_CHANGE_REAUTH_MS;
  if (accountHasPasskey) {
    const passkey = meetsAcr(amrOf(session.amr), PHISHING_RESISTANT_ACR, session.acr);
    return recent && passkey ? { allowed: true } : { allowed: false, needs: 'passkey' };
  }
  return recent ? { allowed: true } : { allowed: false, needs: 'recent' };
}

/** {@link credentialChange} for a signed-in user, whose passkeys the store knows. */
export async function credentialChangeOf(
  store: Store,
  current: { session: SignInBasis; user: { id: string } },
  now: number,
): Promise<CredentialChange> {
  return credentialChange(current.session, (await store.passkeys.listByUser(current.user.id)).length > 0, now);
}

/** What the person is told when {@link credentialChange} refused. */
export function credentialChangeText(needs: 'recent' | 'passkey'): string {
  return needs === 'passkey'
    ? 'Changing how you sign in needs a recent sign-in with one of your passkeys: sign in with a passkey first.'
    : 'Changing how you sign in needs a recent sign-in: sign in again first.';
}

/** A credential change a session may not make until it signs in again (see {@link credentialChange}). */
export class CredentialChangeRefused extends Error {
  override name = 'CredentialChangeRefused';
  constructor(readonly needs: 'recent' | 'passkey') {
    super(credentialChangeText(needs));
  }
}

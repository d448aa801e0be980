/**
 * Authentication context (OIDC Core §2 `acr`, §3.1.2.1 `acr_values`) and
 * methods (RFC 8176 `amr`). A person signs in with a username and password
 * or with a passkey; the session remembers which (`amr`), and the codes and
 * grants it approves carry it to the ID token.
 */

/**
 * The class of a sign-in with a username and password (single factor, no
 * assurance of identity proofing). A URN of this server's own: the
 * registered classes (ISO/IEC 29115 levels, REFEDS profiles) promise more
 * than a password gives.
 */
export const PASSWORD_ACR = 'urn:authcli:acr:password';

/**
 * OpenID EAP ACR Values §2 `phr`, phishing-resistant: a passkey (WebAuthn
 * with user verification), bound to this server's origin, so a look-alike
 * site cannot relay it.
 */
export const PHISHING_RESISTANT_ACR = 'phr';

/** RFC 8176 §2: `pwd`, password-based authentication. */
export const PASSWORD_AMR: readonly string[] = ['pwd'];

/**
 * RFC 8176 §2 methods of a passkey sign-in: proof of possession of a key, `hwk` when the authenticator keeps it
 * on one device, `swk` when it is synced (backed up, so held in software somewhere), and `mfa`: the key is
 * something the person has, unlocked by user verification (a PIN or a biometric), something they know or are.
 */
export function passkeyAmr(backedUp: boolean): readonly string[] {
  return [backedUp ? 'swk' : 'hwk', 'mfa'];
}

/** The methods stored with a session, code or grant (space-separated; null for a password sign-in). */
export function amrOf(stored: string | null | undefined): readonly string[] {
  return stored ? stored.split(' ') : PASSWORD_AMR;
}

/** The class a sign-in made by these methods meets. */
export function acrOf(amr: readonly string[]): string {
  return amr.includes('hwk') || amr.includes('swk') ? PHISHING_RESISTANT_ACR : PASSWORD_ACR;
}

/** The authentication context classes this server can satisfy (discovery's `acr_values_supported`), strongest first. */
export const ACR_VALUES_SUPPORTED: readonly string[] = [PHISHING_RESISTANT_ACR, PASSWORD_ACR];

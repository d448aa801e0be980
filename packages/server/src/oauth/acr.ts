/**
 * Authentication context (OIDC Core §2 `acr`, §3.1.2.1 `acr_values`) and
 * methods (RFC 8176 `amr`). This server signs people in one way, with a
 * username and password, so every ID token carries the same two values;
 * `acr_values_supported` in discovery lists the one class.
 */

/**
 * The class of a sign-in with a username and password (single factor, no
 * assurance of identity proofing). A URN of this server's own: the
 * registered classes (ISO/IEC 29115 levels, REFEDS profiles) promise more
 * than a password gives.
 */
export const PASSWORD_ACR = 'urn:authcli:acr:password';

/** RFC 8176 §2: `pwd`, password-based authentication. */
export const PASSWORD_AMR: readonly string[] = ['pwd'];

/** The authentication context classes this server can satisfy (discovery's `acr_values_supported`). */
export const ACR_VALUES_SUPPORTED: readonly string[] = [PASSWORD_ACR];

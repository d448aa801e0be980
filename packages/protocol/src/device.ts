/**
 * The device authorization response (RFC 8628 §3.2,
 * {@link https://www.rfc-editor.org/rfc/rfc8628#section-3.2}).
 */
export interface DeviceAuthorizationResponse {
  /** REQUIRED. The device verification code, sent back with the device grant (§3.4). */
  device_code: string;
  /** REQUIRED. The code the person types at the verification URI (§6.1). */
  user_code: string;
  /** REQUIRED. Where the person goes on a second device. */
  verification_uri: string;
  /** OPTIONAL. The verification URI with the user code in it, e.g. for a QR code (§3.3.1). */
  verification_uri_complete?: string;
  /** REQUIRED. Lifetime of the device and user codes in seconds. */
  expires_in: number;
  /** OPTIONAL. Seconds to wait between polls; 5 when absent. */
  interval?: number;
}

/**
 * The user-code character set of RFC 8628 §6.1
 * ({@link https://www.rfc-editor.org/rfc/rfc8628#section-6.1}): 20 upper-case
 * consonants, no vowels (no words) and no look-alike characters.
 */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';

/**
 * Characters in a user code, dashes and spaces not counted: 20^8 ≈ 2^34.6
 * codes, the example of RFC 8628 §6.1
 * ({@link https://www.rfc-editor.org/rfc/rfc8628#section-6.1}).
 */
export const USER_CODE_LENGTH = 8;

import { randomBytes } from 'node:crypto';
import { USER_CODE_ALPHABET, USER_CODE_LENGTH } from '@authcli/protocol';

// RFC 8628 §6.1 user codes: 8 characters from 20 consonants (no vowels, so
// no words; no look-alikes), 20^8 ≈ 2^34.6 codes, shown as two groups of four (BCDF-GHJK) and
// entered case- and dash-insensitively.

/** A uniformly random user code (rejection sampling: bytes ≥ 240 would bias the alphabet). */
export function generateUserCode(): string {
  let out = '';
  while (out.length < USER_CODE_LENGTH) {
    for (const b of randomBytes(16)) {
      if (b < 240 && out.length < USER_CODE_LENGTH) out += USER_CODE_ALPHABET[b % 20];
    }
  }
  return out;
}

/** What a person typed, as the stored code: upper case, without dashes and spaces; undefined if it cannot be a code. */
export function normalizeUserCode(input: string): string | undefined {
  const code = input.toUpperCase().replace(/[\s-]/g, '');
  if (code.length !== USER_CODE_LENGTH) return undefined;
  for (const c of code) if (!USER_CODE_ALPHABET.includes(c)) return undefined;
  return code;
}

/** XXXX-XXXX, the form people read and type. */
export function formatUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

import { PROFILE_CLAIMS } from '../oauth/claims.js';
import type { UserClaims } from '../store/store.js';

/** The account page's profile form: the claims a person edits there. */
export type ProfileClaim = (typeof PROFILE_CLAIMS)[number];
export type ProfileValues = Record<ProfileClaim, string>;

/** Each profile claim's label, input type and hint on the form. */
export const FIELDS: Record<ProfileClaim, { label: string; type: 'text' | 'url'; hint?: string; autocomplete?: string }> = {
  name: { label: 'Full name', type: 'text', autocomplete: 'name' },
  given_name: { label: 'Given name', type: 'text', autocomplete: 'given-name' },
  family_name: { label: 'Family name', type: 'text', autocomplete: 'family-name' },
  middle_name: { label: 'Middle name', type: 'text', autocomplete: 'additional-name' },
  nickname: { label: 'Nickname', type: 'text', autocomplete: 'nickname' },
  profile: { label: 'Profile page', type: 'url', hint: 'https://…', autocomplete: 'url' },
  picture: { label: 'Picture', type: 'url', hint: 'https://… (an image)', autocomplete: 'photo' },
  website: { label: 'Website', type: 'url', hint: 'https://…', autocomplete: 'url' },
  gender: { label: 'Gender', type: 'text', autocomplete: 'sex' },
  birthdate: { label: 'Birthdate', type: 'text', hint: 'YYYY-MM-DD, YYYY, or 0000-MM-DD without the year', autocomplete: 'bday' },
  zoneinfo: { label: 'Time zone', type: 'text', hint: 'e.g. Europe/Paris', autocomplete: 'off' },
  locale: { label: 'Language', type: 'text', hint: 'e.g. en-US, fr-CA', autocomplete: 'language' },
};

export function valuesOf(claims: UserClaims): ProfileValues {
  return Object.fromEntries(PROFILE_CLAIMS.map((c) => [c, claims[c] ?? ''])) as ProfileValues;
}

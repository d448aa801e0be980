import { CLAIM_TEXT_MAX, CLAIM_URL_MAX } from '../config/defaults.js';
import { claimsOf, type AddressClaim, type User, type UserClaims } from '../store/store.js';
import { InputError } from '../util/input-error.js';

/**
 * The OpenID Connect standard claims (OIDC Core §5.1): what each may hold,
 * how a change to them is read and applied, and which a scope set releases
 * (§5.4). `sub` is the user id, `preferred_username` the username and
 * `updated_at` the store's record of the last change: none of the three is
 * settable.
 */

/** The claims of the profile scope that a user or the operator sets (§5.4), in the order of §5.1. */
export const PROFILE_CLAIMS = [
  'name',
  'given_name',
  'family_name',
  'middle_name',
  'nickname',
  'profile',
  'picture',
  'website',
  'gender',
  'birthdate',
  'zoneinfo',
  'locale',
] as const satisfies readonly (keyof UserClaims)[];

/** The members of the address claim (§5.1.1). */
export const ADDRESS_FIELDS = [
  'formatted',
  'street_address',
  'locality',
  'region',
  'postal_code',
  'country',
] as const satisfies readonly (keyof AddressClaim)[];

/** Every claim that can be set, in the order of §5.1. */
export const SETTABLE_CLAIMS = [
  ...PROFILE_CLAIMS,
  'email',
  'email_verified',
  'phone_number',
  'phone_number_verified',
  'address',
] as const satisfies readonly (keyof UserClaims)[];

export type SettableClaim = (typeof SETTABLE_CLAIMS)[number];

/** The claims each scope releases (OIDC Core §5.4). */
export const SCOPE_CLAIMS = {
  profile: [...PROFILE_CLAIMS, 'preferred_username', 'updated_at'],
  email: ['email', 'email_verified'],
  address: ['address'],
  phone: ['phone_number', 'phone_number_verified'],
} as const;

/** Every claim a scope can release, for discovery's `claims_supported`. */
export const STANDARD_CLAIM_NAMES: readonly string[] = [...new Set(Object.values(SCOPE_CLAIMS).flat())];

const NOT_SETTABLE: Readonly<Record<string, string>> = {
  sub: 'sub is the user id and cannot be set',
  preferred_username: 'preferred_username is the username and cannot be set',
  updated_at: 'updated_at is kept by the server and cannot be set',
};

const BOOLEAN_CLAIMS = new Set<string>(['email_verified', 'phone_number_verified']);
const URL_CLAIMS = new Set<string>(['profile', 'picture', 'website']);
/** §5.1.1: formatted and street_address may span lines, "\r\n" or "\n" between them. */
const MULTILINE = new Set<string>(['address.formatted', 'address.street_address']);

// C0 controls, DEL and C1 controls (Unicode's Cc); a line break only where the claim may have several lines.
const CONTROL = /\p{Cc}/u;
const LINE_BREAK = /\r\n|\n/g;

// RFC 5322 §3.4.1 addr-spec, the dot-atom form only (no quoted local parts, no domain literals): what mail
// software actually exchanges. The domain has at least two labels of letters, digits and inner hyphens.
const ATEXT = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
const LABEL = '[\\p{L}\\p{N}](?:[\\p{L}\\p{N}-]*[\\p{L}\\p{N}])?';
const EMAIL = new RegExp(`^${ATEXT}(?:\\.${ATEXT})*@${LABEL}(?:\\.${LABEL})+$`, 'u');
/** RFC 5321 §4.5.3.1: 64 octets of local part, 254 in all. */
const EMAIL_LOCAL_MAX = 64;

// §5.1: E.164 is RECOMMENDED, an extension in RFC 3966 syntax: `+` and 2 to 15 digits, then `;ext=` digits.
const PHONE = /^\+[1-9][0-9]{1,14}(?:;ext=[0-9]{1,10})?$/;

// §5.1 birthdate: ISO 8601 YYYY-MM-DD, YYYY alone, or 0000-MM-DD when the year is withheld.
const BIRTHDATE = /^([0-9]{4})(?:-([0-9]{2})-([0-9]{2}))?$/;

// An IANA zone name (Area/Location, or a single name such as UTC): never an offset such as +01:00.
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/;

const list = (names: readonly string[]) => names.join(', ');

function unknownClaim(name: string): InputError {
  const notSettable = NOT_SETTABLE[name];
  if (notSettable) return new InputError(notSettable);
  return new InputError(`unknown claim ${name} (the claims that can be set: ${list(SETTABLE_CLAIMS)})`);
}

function text(path: string, value: unknown, max = CLAIM_TEXT_MAX): string {
  if (typeof value !== 'string') throw new InputError(`${path} must be a string`);
  if (value === '') throw new InputError(`${path} must not be empty (to remove it, unset it)`);
  if (CONTROL.test(MULTILINE.has(path) ? value.replace(LINE_BREAK, '') : value))
    throw new InputError(`${path} must not contain control characters`);
  if (value.length > max) throw new InputError(`${path} is longer than ${max} characters`);
  if (value.trim() !== value) throw new InputError(`${path} must not start or end with spaces`);
  return value;
}

function checkEmail(value: string): string {
  const at = value.lastIndexOf('@');
  if (!EMAIL.test(value) || at > EMAIL_LOCAL_MAX) throw new InputError(`email must be an address such as alice@example.com (got ${value})`);
  return value;
}

function checkUrl(path: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InputError(`${path} must be an absolute http or https URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new InputError(`${path} must be an absolute http or https URL`);
  if (url.username || url.password) throw new InputError(`${path} must not carry a user name or password`);
  return value;
}

function checkBirthdate(value: string): string {
  const m = BIRTHDATE.exec(value);
  const bad = () => new InputError(`birthdate must be YYYY-MM-DD, YYYY, or 0000-MM-DD when the year is withheld (got ${value})`);
  if (!m) throw bad();
  const [, y, mm, dd] = m;
  const year = Number(y);
  if (mm === undefined) {
    if (year === 0) throw bad();
    return value;
  }
  const month = Number(mm);
  const day = Number(dd);
  // Year 0000 stands for "withheld": February 29th stays possible (and 0 is a leap year in the calendar anyway).
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  if (days === undefined || day < 1 || day > days) throw bad();
  return value;
}

/** The zones the runtime lists, by lower case: the spelling a zone given in another case is stored in. */
let zoneSpelling: Map<string, string> | undefined;

/**
 * An IANA time zone the runtime's time zone database knows. Kept as given
 * (an alias such as America/Argentina/Buenos_Aires stays one), only its case
 * put right when the runtime lists the zone.
 */
function checkZone(value: string): string {
  if (ZONE_NAME.test(value)) {
    try {
      new Intl.DateTimeFormat('en', { timeZone: value });
      zoneSpelling ??= new Map(Intl.supportedValuesOf('timeZone').map((z) => [z.toLowerCase(), z]));
      return zoneSpelling.get(value.toLowerCase()) ?? value;
    } catch {
      // Not a zone the database knows: refused below.
    }
  }
  throw new InputError(`zoneinfo must be an IANA time zone such as Europe/Paris (got ${value})`);
}

/** A BCP 47 language tag, canonicalized (en-us becomes en-US). */
function checkLocale(value: string): string {
  try {
    const canonical = Intl.getCanonicalLocales(value);
    if (canonical.length === 1) return canonical[0]!;
  } catch {
    // Not a well-formed tag: refused below.
  }
  throw new InputError(`locale must be a BCP 47 language tag such as en-US or fr-CA (got ${value})`);
}

function checkAddress(value: unknown): AddressClaim | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InputError(`address must be an object of ${list(ADDRESS_FIELDS)}`);
  }
  const out: AddressClaim = {};
  for (const [k, v] of Object.entries(value)) {
    if (!(ADDRESS_FIELDS as readonly string[]).includes(k)) {
      throw new InputError(`unknown address field ${k} (the fields: ${list(ADDRESS_FIELDS)})`);
    }
    out[k as keyof AddressClaim] = text(`address.${k}`, v);
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * One claim's value checked and, where §5.1 names a canonical form (locale,
 * zoneinfo), put in it. An address with no field left is no address.
 * @throws InputError saying what is wrong
 */
export function checkClaim(name: string, value: unknown): UserClaims[SettableClaim] {
  if (!(SETTABLE_CLAIMS as readonly string[]).includes(name)) throw unknownClaim(name);
  if (BOOLEAN_CLAIMS.has(name)) {
    if (typeof value !== 'boolean') throw new InputError(`${name} must be true or false`);
    return value;
  }
  if (name === 'address') return checkAddress(value);
  if (URL_CLAIMS.has(name)) return checkUrl(name, text(name, value, CLAIM_URL_MAX));
  const s = text(name, value);
  switch (name) {
    case 'email':
      return checkEmail(s);
    case 'birthdate':
      return checkBirthdate(s);
    case 'zoneinfo':
      return checkZone(s);
    case 'locale':
      return checkLocale(s);
    case 'phone_number':
      if (!PHONE.test(s)) throw new InputError(`phone_number must be E.164, such as +14155550123 or +14155550123;ext=42 (got ${s})`);
      return s;
    default:
      return s;
  }
}

/**
 * A change to a user's claims, as a JSON merge patch (RFC 7396): a value
 * sets a claim, null removes it, and the address object is merged field by
 * field (null removes a field).
 */
export type ClaimsPatch = Record<string, unknown>;

/** Reads a JSON merge patch of claims (`--claims-json`): a JSON object. */
export function parseClaimsJson(json: string): ClaimsPatch {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (err) {
    throw new InputError(`the claims are not JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new InputError('the claims JSON must be an object');
  return value as ClaimsPatch;
}

/**
 * `NAME=VALUE` (`--claim`) as a patch: `address.FIELD=VALUE` sets one field
 * of the address, and the verified flags take `true` or `false`.
 */
export function claimAssignment(assignment: string): ClaimsPatch {
  const eq = assignment.indexOf('=');
  if (eq <= 0) throw new InputError(`--claim takes NAME=VALUE (got ${assignment})`);
  const name = assignment.slice(0, eq);
  const raw = assignment.slice(eq + 1);
  if (name.startsWith('address.')) return { address: { [name.slice('address.'.length)]: raw } };
  if (BOOLEAN_CLAIMS.has(name)) {
    if (raw !== 'true' && raw !== 'false') throw new InputError(`${name} must be true or false (got ${raw})`);
    return { [name]: raw === 'true' };
  }
  if (name === 'address') return { address: parseClaimsJson(raw) };
  return { [name]: raw };
}

/** `NAME` or `address.FIELD` (`--unset`) as a patch. */
export function claimRemoval(name: string): ClaimsPatch {
  if (name.startsWith('address.')) return { address: { [name.slice('address.'.length)]: null } };
  return { [name]: null };
}

/** Several patches as one, later ones winning (the address merged field by field). */
export function mergePatches(patches: readonly ClaimsPatch[]): ClaimsPatch {
  const out: ClaimsPatch = {};
  for (const p of patches) {
    for (const [k, v] of Object.entries(p)) {
      const prev = out[k];
      out[k] =
        k === 'address' && isObject(v) && isObject(prev) ? { ...(prev as Record<string, unknown>), ...(v as Record<string, unknown>) } : v;
    }
  }
  return out;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The claims after `patch`, every value checked (the patch is refused whole
 * on the first problem). A changed email or phone number is not verified
 * unless the same patch says so: the flag vouched for the old one. Removing
 * the email or phone number removes its flag.
 * @throws InputError
 */
export function applyClaimsPatch(current: UserClaims, patch: ClaimsPatch): UserClaims {
  const next: Record<string, unknown> = { ...current };
  for (const [name, value] of Object.entries(patch)) {
    if (!(SETTABLE_CLAIMS as readonly string[]).includes(name)) throw unknownClaim(name);
    if (value === null) {
      delete next[name];
      continue;
    }
    if (name === 'address' && isObject(value)) {
      const merged: Record<string, unknown> = { ...current.address };
      for (const [k, v] of Object.entries(value)) {
        if (!(ADDRESS_FIELDS as readonly string[]).includes(k)) {
          throw new InputError(`unknown address field ${k} (the fields: ${list(ADDRESS_FIELDS)})`);
        }
        if (v === null) delete merged[k];
        else merged[k] = v;
      }
      const address = checkClaim('address', merged);
      if (address === undefined) delete next.address;
      else next.address = address;
      continue;
    }
    next[name] = checkClaim(name, value);
  }
  for (const [claim, flag] of [
    ['email', 'email_verified'],
    ['phone_number', 'phone_number_verified'],
  ] as const) {
    if (next[claim] === undefined) delete next[flag];
    else if (next[claim] !== current[claim] && !Object.hasOwn(patch, flag)) next[flag] = false;
  }
  return next as UserClaims;
}

/**
 * The claims a scope set releases for a user (OIDC Core §5.4), besides
 * `sub`: profile gives the profile claims, `preferred_username` (the
 * username) and `updated_at` (seconds, §5.1); email, address and phone give
 * theirs. Only the claims that are set.
 */
export function standardClaims(user: User, scopes: readonly string[]): Record<string, unknown> {
  const stored = claimsOf(user) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const scope of scopes) {
    if (!Object.hasOwn(SCOPE_CLAIMS, scope)) continue;
    for (const name of SCOPE_CLAIMS[scope as keyof typeof SCOPE_CLAIMS]) {
      if (name === 'preferred_username') out[name] = user.username;
      else if (name === 'updated_at') {
        if (user.claims_updated_at !== null) out[name] = Math.floor(Number(user.claims_updated_at) / 1000);
      } else if (stored[name] !== undefined) out[name] = stored[name];
    }
  }
  return out;
}

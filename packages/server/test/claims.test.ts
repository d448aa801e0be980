import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { CLAIM_TEXT_MAX, CLAIM_URL_MAX } from '../src/config/defaults.js';
import { addUser, updateUserClaims } from '../src/oauth/accounts.js';
import {
  applyClaimsPatch,
  checkClaim,
  claimAssignment,
  claimRemoval,
  mergePatches,
  parseClaimsJson,
  SETTABLE_CLAIMS,
  standardClaims,
} from '../src/oauth/claims.js';
import type { User } from '../src/store/store.js';
import { InputError } from '../src/util/input-error.js';
import {
  decideOnDevicePage,
  deviceAuthorization,
  dialects,
  PASSWORD,
  poll,
  signedInBrowser,
  startServer,
  type TestServer,
  TEST_PASSWORD_HASH,
} from './helpers.js';

const ok = (name: string, value: unknown) => expect(checkClaim(name, value));
const refused = (name: string, value: unknown, message: RegExp) => expect(() => checkClaim(name, value)).toThrow(message);

describe('oidc core §5.1 standard claims: what each may hold', () => {
  it('§5.1 string claims: any text, but never empty, padded, overlong or with control characters', () => {
    for (const name of ['name', 'given_name', 'family_name', 'middle_name', 'nickname', 'gender']) {
      ok(name, 'Zoë O’Brien-Łukasiewicz 山田').toBeDefined();
      refused(name, '', /must not be empty/);
      refused(name, ' padded', /must not start or end with spaces/);
      refused(name, 'x'.repeat(CLAIM_TEXT_MAX + 1), new RegExp(`longer than ${CLAIM_TEXT_MAX}`));
      ok(name, 'x'.repeat(CLAIM_TEXT_MAX)).toHaveLength(CLAIM_TEXT_MAX);
      for (const c of ['\u0000', '\u0007', '\n', '\r', '\t', '\u001b', '\u007f', '\u0085', '\u009f']) {
        refused(name, `a${c}b`, /control characters/);
      }
      refused(name, 42, /must be a string/);
      refused(name, null, /must be a string/);
    }
  });

  it('§5.1 gender is a free string (female and male are only the defined values)', () => {
    ok('gender', 'non-binary').toBe('non-binary');
    ok('gender', 'female').toBe('female');
  });

  it('§5.1 email: an RFC 5322 addr-spec (dot-atom), at most 254 characters with a 64-character local part', () => {
    for (const v of ['alice@example.com', 'a.b+tag@sub.example.co.uk', "o'hara@example.org", 'x@müller.de']) ok('email', v).toBe(v);
    for (const v of ['alice', 'alice@', '@example.com', 'alice@example', 'a..b@example.com', '.a@example.com', 'a b@example.com']) {
      refused('email', v, /email must be an address/);
    }
    refused('email', `${'a'.repeat(65)}@example.com`, /email must be an address/);
    refused('email', 'alice@exa_mple.com', /email must be an address/);
    refused('email', 'alice@-example.com', /email must be an address/);
  });

  it('§5.1 email_verified and phone_number_verified are JSON booleans', () => {
    ok('email_verified', true).toBe(true);
    ok('phone_number_verified', false).toBe(false);
    refused('email_verified', 'true', /true or false/);
    refused('phone_number_verified', 1, /true or false/);
  });

  it('§5.1 profile, picture and website: absolute http(s) URLs', () => {
    for (const name of ['profile', 'picture', 'website']) {
      ok(name, 'https://example.com/alice').toBe('https://example.com/alice');
      ok(name, 'http://example.com').toBe('http://example.com');
      refused(name, '/alice', /absolute http or https URL/);
      refused(name, 'example.com/alice', /absolute http or https URL/);
      refused(name, 'javascript:alert(1)', /absolute http or https URL/);
      refused(name, 'ftp://example.com/a', /absolute http or https URL/);
      refused(name, 'https://user:pw@example.com/', /user name or password/);
      refused(name, `https://example.com/${'a'.repeat(CLAIM_URL_MAX)}`, new RegExp(`longer than ${CLAIM_URL_MAX}`));
    }
    // A URL longer than a text claim may be is still a URL claim.
    ok('picture', `https://example.com/${'a'.repeat(CLAIM_TEXT_MAX)}`).toBeDefined();
  });

  it('§5.1 birthdate: YYYY-MM-DD, YYYY, or 0000-MM-DD with the year withheld; real calendar dates only', () => {
    for (const v of ['1990-05-17', '1990', '0000-05-17', '2000-02-29', '0000-02-29']) ok('birthdate', v).toBe(v);
    for (const v of ['0000', '1990-5-17', '17/05/1990', '1990-13-01', '1990-00-10', '1990-02-30', '1900-02-29', '1990-04-31', '90']) {
      refused('birthdate', v, /birthdate must be YYYY-MM-DD/);
    }
  });

  it('§5.1 zoneinfo: an IANA time zone name, as the time zone database spells it', () => {
    ok('zoneinfo', 'Europe/Paris').toBe('Europe/Paris');
    ok('zoneinfo', 'America/Argentina/Buenos_Aires').toBe('America/Argentina/Buenos_Aires');
    ok('zoneinfo', 'europe/paris').toBe('Europe/Paris');
    ok('zoneinfo', 'UTC').toBe('UTC');
    for (const v of ['Mars/Olympus_Mons', '+01:00', 'GMT+1 ', 'Europe/', '../etc/passwd']) refused('zoneinfo', v, /IANA time zone|spaces/);
  });

  it('§5.1 locale: a BCP 47 language tag, canonicalized', () => {
    ok('locale', 'en-US').toBe('en-US');
    ok('locale', 'fr-ca').toBe('fr-CA');
    ok('locale', 'zh-Hant-TW').toBe('zh-Hant-TW');
    for (const v of ['en_US', 'english!', 'x', '123', 'en-US,fr']) refused('locale', v, /BCP 47/);
  });

  it('§5.1 phone_number: E.164, with an RFC 3966 extension', () => {
    for (const v of ['+14155550123', '+33123456789', '+14155550123;ext=42']) ok('phone_number', v).toBe(v);
    for (const v of ['4155550123', '+1 (415) 555-0123', '+0123456', '+1234567890123456', '+14155550123;ext=', '+1415x']) {
      refused('phone_number', v, /E\.164/);
    }
  });

  it('§5.1.1 address: an object of its six fields; formatted and street_address may have several lines', () => {
    const address = {
      formatted: '1 Main St\r\nApt 2\nParis',
      street_address: '1 Main St\nApt 2',
      locality: 'Paris',
      region: 'IDF',
      postal_code: '75001',
      country: 'France',
    };
    ok('address', address).toEqual(address);
    refused('address', { locality: 'Par\nis' }, /address\.locality must not contain control characters/);
    refused('address', { formatted: 'a\rb' }, /control characters/);
    refused('address', { formatted: 'a\u0000b' }, /control characters/);
    refused('address', { city: 'Paris' }, /unknown address field city \(the fields: formatted, street_address/);
    refused('address', 'Paris', /address must be an object/);
    refused('address', ['Paris'], /address must be an object/);
    refused('address', { locality: 7 }, /address\.locality must be a string/);
    ok('address', {}).toBeUndefined();
  });

  it('§5.1 unknown claims are refused naming the allowed ones; sub, preferred_username and updated_at are not settable', () => {
    expect(() => checkClaim('shoe_size', '44')).toThrow(
      new InputError(`unknown claim shoe_size (the claims that can be set: ${SETTABLE_CLAIMS.join(', ')})`),
    );
    expect(() => checkClaim('sub', 'x')).toThrow(/sub is the user id/);
    expect(() => checkClaim('preferred_username', 'x')).toThrow(/preferred_username is the username/);
    expect(() => checkClaim('updated_at', 1)).toThrow(/updated_at is kept by the server/);
    expect(() => applyClaimsPatch({}, { updated_at: null })).toThrow(/updated_at is kept by the server/);
  });
});

describe('claims patches (RFC 7396 merge patches)', () => {
  it('NAME=VALUE, address.FIELD=VALUE, booleans and removals read as patches, later ones winning', () => {
    expect(claimAssignment('given_name=Ada=Lovelace')).toEqual({ given_name: 'Ada=Lovelace' });
    expect(claimAssignment('email_verified=true')).toEqual({ email_verified: true });
    expect(() => claimAssignment('email_verified=yes')).toThrow(/true or false/);
    expect(() => claimAssignment('given_name')).toThrow(/NAME=VALUE/);
    expect(claimAssignment('address.locality=Paris')).toEqual({ address: { locality: 'Paris' } });
    expect(claimAssignment('address={"country":"FR"}')).toEqual({ address: { country: 'FR' } });
    expect(claimRemoval('address.region')).toEqual({ address: { region: null } });
    expect(
      mergePatches([claimAssignment('address.locality=Paris'), claimAssignment('address.country=FR'), claimRemoval('nickname')]),
    ).toEqual({ address: { locality: 'Paris', country: 'FR' }, nickname: null });
    expect(() => parseClaimsJson('[1]')).toThrow(/must be an object/);
    expect(() => parseClaimsJson('{')).toThrow(/not JSON/);
  });

  it('a patch sets, removes, merges the address field by field, and is refused whole on one bad value', () => {
    const current = { name: 'Ada', nickname: 'ada', address: { locality: 'London', country: 'UK' } };
    expect(applyClaimsPatch(current, { nickname: null, address: { locality: 'Paris', country: null }, locale: 'fr-fr' })).toEqual({
      name: 'Ada',
      address: { locality: 'Paris' },
      locale: 'fr-FR',
    });
    expect(applyClaimsPatch(current, { address: { locality: null, country: null } })).toEqual({ name: 'Ada', nickname: 'ada' });
    expect(() => applyClaimsPatch(current, { address: { town: null } })).toThrow(/unknown address field town/);
    expect(() => applyClaimsPatch(current, { name: 'Ada L', birthdate: '1815-13-10' })).toThrow(/birthdate/);
    expect(current).toEqual({ name: 'Ada', nickname: 'ada', address: { locality: 'London', country: 'UK' } });
  });

  it('a changed email or phone number is not verified unless the same patch says so; removing it removes its flag', () => {
    const verified = { email: 'a@example.com', email_verified: true, phone_number: '+14155550123', phone_number_verified: true };
    expect(applyClaimsPatch(verified, { email: 'b@example.com' })).toMatchObject({ email: 'b@example.com', email_verified: false });
    expect(applyClaimsPatch(verified, { email: 'b@example.com', email_verified: true }).email_verified).toBe(true);
    expect(applyClaimsPatch(verified, { email: 'a@example.com' }).email_verified).toBe(true);
    expect(applyClaimsPatch(verified, { phone_number: null })).toEqual({ email: 'a@example.com', email_verified: true });
    expect(applyClaimsPatch({}, { email: 'c@example.com' })).toEqual({ email: 'c@example.com', email_verified: false });
  });
});

describe('oidc core §5.4 the claims a scope set releases', () => {
  const user = (claims: object, updatedAt: number | null = 1_700_000_000_123): User => ({
    id: 'u1',
    username: 'ada',
    password_hash: 'x',
    claims: JSON.stringify(claims),
    claims_updated_at: updatedAt,
    is_admin: 0,
    disabled_at: null,
    created_at: 0,
  });
  it('only the claims that are set: no name made up from the username, no updated_at before any change', () => {
    expect(standardClaims(user({}, null), ['openid', 'profile', 'email', 'address', 'phone'])).toEqual({ preferred_username: 'ada' });
    expect(standardClaims(user({ name: 'Ada' }), ['profile'])).toEqual({
      name: 'Ada',
      preferred_username: 'ada',
      updated_at: 1_700_000_000,
    });
    expect(standardClaims(user({ name: 'Ada', email: 'a@example.com' }), ['openid', 'offline_access', 'unknown'])).toEqual({});
  });
});

describe.each(dialects())('userinfo releases exactly the claims of each scope; the ID token none of them (%s)', (dialect) => {
  let server: TestServer;
  let sub: string;
  let updatedAt: number;
  const all = {
    name: 'Ada Lovelace',
    given_name: 'Ada',
    family_name: 'Lovelace',
    middle_name: 'Augusta',
    nickname: 'ada',
    profile: 'https://example.com/ada',
    picture: 'https://example.com/ada.png',
    website: 'https://ada.example',
    gender: 'female',
    birthdate: '1815-12-10',
    zoneinfo: 'Europe/London',
    locale: 'en-GB',
    email: 'ada@example.com',
    email_verified: true,
    phone_number: '+442071234567',
    phone_number_verified: false,
    address: { street_address: '12 St James Sq', locality: 'London', postal_code: 'SW1Y 4LB', country: 'United Kingdom' },
  };

  beforeAll(async () => {
    server = await startServer(dialect);
    await addUser(server.store, { username: 'ada', password: PASSWORD }, server.clock.now(), TEST_PASSWORD_HASH);
    const user = await updateUserClaims(server.store, 'ada', all, server.clock.now());
    sub = user.id;
    updatedAt = Math.floor(server.clock.now() / 1000);
    await addUser(server.store, { username: 'plain', password: PASSWORD }, server.clock.now(), TEST_PASSWORD_HASH);
  });
  afterAll(async () => server?.close());

  async function login(username: string, scope: string) {
    const d = (await deviceAuthorization(server, 'authcli', scope)).json;
    expect((await decideOnDevicePage(await signedInBrowser(server, username), d.user_code, 'approve')).status).toBe(200);
    const res = await poll(server, 'authcli', d.device_code);
    expect(res.status).toBe(200);
    const info = await fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${res.json.access_token}` } });
    expect(info.status).toBe(200);
    const id = decodeJwt(res.json.id_token as string) as Record<string, unknown>;
    const fromIdToken = Object.fromEntries(
      Object.entries(id).filter(([k]) => !['iss', 'aud', 'azp', 'exp', 'iat', 'auth_time', 'at_hash', 'nonce', 'acr', 'amr'].includes(k)),
    );
    return { userinfo: (await info.json()) as Record<string, unknown>, idToken: fromIdToken };
  }

  const { email, email_verified, phone_number, phone_number_verified, address, ...profile } = all;
  it.each([
    ['openid', {}],
    ['openid profile', { ...profile, preferred_username: 'ada', updated_at: 0 }],
    ['openid email', { email, email_verified }],
    ['openid address', { address }],
    ['openid phone', { phone_number, phone_number_verified }],
    ['openid profile email address phone', { ...all, preferred_username: 'ada', updated_at: 0 }],
  ])('scope %s', async (scope, expected) => {
    const want = { sub, ...expected, ...('updated_at' in expected && { updated_at: updatedAt }) };
    const got = await login('ada', scope);
    expect(got.userinfo).toEqual(want);
    // OIDC Core §5.4: an access token was issued, so the ID token names the user by sub alone.
    expect(got.idToken).toEqual({ sub });
  });

  it('a user with no claims set gets sub and preferred_username, nothing empty or null', async () => {
    const got = await login('plain', 'openid profile email address phone');
    expect(got.userinfo).toEqual({ sub: expect.any(String), preferred_username: 'plain' });
  });

  it('discovery lists exactly the scopes and claims served', async () => {
    const meta = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, string[]>;
    // OpenID Connect's, then those of the APIs: here the built-in admin API's (admin/bootstrap.ts).
    expect(meta.scopes_supported).toEqual([
      'openid',
      'profile',
      'email',
      'address',
      'phone',
      'offline_access',
      'admin:read',
      'admin:write',
    ]);
    expect([...meta.claims_supported!].sort()).toEqual(
      [
        ...['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'azp', 'at_hash', 'acr', 'amr', 'preferred_username', 'updated_at'],
        // OpenID Connect Back-Channel Logout 1.0 §2.1: the session ID in ID tokens from a browser session.
        'sid',
        ...Object.keys(all),
      ].sort(),
    );
  });
});

// The LDAP connector's checks that need no directory: filter escaping (RFC 4515 §3) and the settings it refuses
// before connecting. Against a real slapd: test/ldap-connector.e2e.test.ts.
import { describe, expect, it } from 'vitest';
import { SIGNIN_PASSWORD_MAX, SIGNIN_USERNAME_MAX } from '../src/config/defaults.js';
import { authenticateLdap, escapeFilterValue, type LdapSettings, ldapSettingsProblem, userFilterFor } from '../src/connectors/ldap.js';

const base: LdapSettings = {
  url: 'ldaps://ldap.example.test:636',
  startTls: false,
  bindDn: 'cn=authcli,ou=services,dc=example,dc=test',
  bindPassword: 'secret',
  userBase: 'ou=people,dc=example,dc=test',
  userFilter: '(uid={username})',
  allowedGroups: [],
};

describe('escapeFilterValue (RFC 4515 §3)', () => {
  it('writes the five characters a value may not hold as \\XX, and leaves everything else', () => {
    expect(escapeFilterValue('*')).toBe('\\2a');
    expect(escapeFilterValue(')(uid=*')).toBe('\\29\\28uid=\\2a');
    expect(escapeFilterValue('a\\b')).toBe('a\\5cb');
    expect(escapeFilterValue('nul\0')).toBe('nul\\00');
    expect(escapeFilterValue('Zoë O’Brien-Smith@example.test')).toBe('Zoë O’Brien-Smith@example.test');
  });

  it('puts the escaped username at every {username}, and no $-pattern of replace() is read in it', () => {
    expect(userFilterFor('(|(uid={username})(mail={username}))', 'a*')).toBe('(|(uid=a\\2a)(mail=a\\2a))');
    expect(userFilterFor('(uid={username})', "$&$'$`")).toBe("(uid=$&$'$`)");
  });
});

describe('ldapSettingsProblem', () => {
  it('accepts ldaps://, StartTLS, and plain ldap:// to loopback only', () => {
    expect(ldapSettingsProblem(base)).toBeUndefined();
    expect(ldapSettingsProblem({ ...base, url: 'ldap://ldap.example.test', startTls: true })).toBeUndefined();
    for (const url of [
      'ldap://127.0.0.1:3389',
      'ldap://127.0.0.2:3389',
      'ldap://localhost',
      'ldap://[::1]:389',
      'ldap://[::ffff:127.0.0.1]:389',
    ]) {
      expect(ldapSettingsProblem({ ...base, url }), url).toBeUndefined();
    }
    expect(ldapSettingsProblem({ ...base, url: 'ldap://ldap.example.test' })).toMatch(/in clear/);
    expect(ldapSettingsProblem({ ...base, url: 'ldap://10.0.0.1' })).toMatch(/in clear/);
  });

  it('refuses what cannot work or would be unsafe', () => {
    expect(ldapSettingsProblem({ ...base, url: 'https://ldap.example.test' })).toMatch(/ldap:\/\/ or ldaps:\/\//);
    expect(ldapSettingsProblem({ ...base, url: 'not a url' })).toMatch(/not a URL/);
    expect(ldapSettingsProblem({ ...base, url: 'ldaps://ldap.example.test/dc=example?uid' })).toMatch(/scheme, a host and a port only/);
    expect(ldapSettingsProblem({ ...base, startTls: true })).toMatch(/StartTLS is for ldap:\/\//);
    expect(ldapSettingsProblem({ ...base, bindPassword: '' })).toMatch(/RFC 4513/);
    expect(ldapSettingsProblem({ ...base, bindDn: '' })).toMatch(/RFC 4513/);
    expect(ldapSettingsProblem({ ...base, userBase: '' })).toMatch(/userBase/);
    expect(ldapSettingsProblem({ ...base, userFilter: '(uid=alice)' })).toMatch(/\{username\}/);
    // One filter, parentheses balanced: ldapts would read "(&(uid=x)" as "(&(uid=x))" without a word.
    for (const userFilter of [
      'uid={username}',
      '(&(uid={username})',
      '(uid={username}))',
      '(uid={username})(cn=x)',
      ')(uid={username})(',
    ]) {
      expect(ldapSettingsProblem({ ...base, userFilter }), userFilter).toMatch(/one parenthesised filter/);
    }
    for (const userFilter of ['(|(uid={username})(mail={username}))', '(&(objectClass=person)(uid={username})(cn=a\\29b))']) {
      expect(ldapSettingsProblem({ ...base, userFilter }), userFilter).toBeUndefined();
    }
    expect(ldapSettingsProblem({ ...base, allowedGroups: ['engineers'] })).toMatch(/groupBase/);
  });

  it('settings with a problem are unavailable, an empty or oversized password invalid, all before any connection', async () => {
    // Nothing would answer at TEST-NET-1: each answer below comes without a connection, or the test would time out.
    const offline = { ...base, url: 'ldaps://192.0.2.1:636' };
    expect(await authenticateLdap({ ...offline, startTls: true }, 'alice', 'pw')).toMatchObject({ kind: 'unavailable' });
    expect(await authenticateLdap(offline, 'alice', '')).toEqual({ kind: 'invalid' });
    expect(await authenticateLdap(offline, '', 'pw')).toEqual({ kind: 'invalid' });
    expect(await authenticateLdap(offline, 'alice', 'x'.repeat(SIGNIN_PASSWORD_MAX + 1))).toEqual({ kind: 'invalid' });
    expect(await authenticateLdap(offline, 'a'.repeat(SIGNIN_USERNAME_MAX + 1), 'pw')).toEqual({ kind: 'invalid' });
  });
});

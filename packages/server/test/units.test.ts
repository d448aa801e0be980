import { describe, expect, it } from 'vitest';
import type { FastifyRequest } from 'fastify';
import { headerValues } from '../src/http/header-values.js';
import {
  ConfigError,
  loadConfig,
  normalizeIssuer,
  parseLimits,
  parseTrustProxy,
  readKeyEncryptionKey,
  weakPasswordHashWarning,
} from '../src/config/config.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FormError, parseForm } from '../src/http/form.js';
import { callbackUrlProblem, isPrivateUseRedirect, matchRedirectUri } from '../src/oauth/redirect-uri.js';
import { parseScope } from '../src/oauth/scopes.js';
import { loginHint } from '../src/oauth/authorize-checks.js';
import { InvalidScope } from '../src/oauth/errors.js';
import { randomToken, timeOrderedId } from '../src/util/crypto.js';
import {
  DUMMY_PASSWORD_HASH,
  dummyPasswordHash,
  hashPassword,
  isPasswordHash,
  needsRehash,
  verifyPasswordSync,
} from '../src/util/password.js';
import { LIMITS, PASSWORD_HASH, passwordHashParams } from '../src/config/defaults.js';
import { timeAgo, utcMinute } from '../src/web/time-ago.js';
import { legacyScryptHash } from './helpers.js';

describe('rfc6749 §3.1.2.3 redirect_uri matching', () => {
  const reg = ['https://app.example/cb', 'http://127.0.0.1/callback', 'http://[::1]:8080/callback', 'http://localhost/cb'];
  it('exact match', () => {
    expect(matchRedirectUri('https://app.example/cb', reg)).toBe(true);
  });
  it('no normalization: case, trailing slash, default port, query and fragment all differ', () => {
    for (const r of [
      'https://APP.example/cb',
      'https://app.example/cb/',
      'https://app.example:443/cb',
      'https://app.example/cb?x',
      'https://app.example/cb#f',
      'https://app.example/./cb',
    ]) {
      expect(matchRedirectUri(r, reg), r).toBe(false);
    }
  });
  it('rfc8252 §7.3 any port for 127.0.0.1 and [::1] on the same path', () => {
    expect(matchRedirectUri('http://127.0.0.1:1/callback', reg)).toBe(true);
    expect(matchRedirectUri('http://127.0.0.1:65535/callback', reg)).toBe(true);
    expect(matchRedirectUri('http://[::1]:4000/callback', reg)).toBe(true);
    expect(matchRedirectUri('http://[::1]/callback', reg)).toBe(true);
  });
  it('rfc8252 §7.3 not a different path, host, scheme or an invalid port', () => {
    for (const r of [
      'http://127.0.0.1:5000/callbackx',
      'http://127.0.0.1:5000/',
      'https://127.0.0.1:5000/callback',
      'http://127.0.0.1:65536/callback',
      'http://127.0.0.1:0/callback',
      'http://127.0.0.1:080/callback',
      'http://127.0.0.1:5000/callback#x',
      'http://127.0.0.01:5000/callback',
      'http://[::1]:5000/callback',
      'http://127.0.0.1:5000/callback/..',
    ]) {
      if (r === 'http://[::1]:5000/callback') continue; // registered with a port, any port matches
      expect(matchRedirectUri(r, reg), r).toBe(false);
    }
  });
  it('rfc8252 §8.3 localhost matches only exactly', () => {
    expect(matchRedirectUri('http://localhost/cb', reg)).toBe(true);
    expect(matchRedirectUri('http://localhost:3000/cb', reg)).toBe(false);
  });
  it('callback registration accepts https and loopback http, rejects the rest', () => {
    expect(callbackUrlProblem('https://a.example/cb')).toBeUndefined();
    expect(callbackUrlProblem('http://127.0.0.1/callback')).toBeUndefined();
    for (const bad of ['http://a.example/cb', 'https://a.example/cb#frag', '/relative', 'javascript:alert(1)', 'https://u:p@a.example/']) {
      expect(callbackUrlProblem(bad), bad).toBeDefined();
    }
  });
  it('rfc9700 §4.1.3 a callback is registered only as the browser will be sent to it: its normal form, a host name, bounded', () => {
    for (const good of [
      'https://rp.example/',
      'https://rp.example/cb?x=1&y=%20',
      'http://[::1]:8080/cb',
      'https://xn--bcher-kva.example/cb',
      'https://10.0.0.1/cb',
    ]) {
      expect(callbackUrlProblem(good), good).toBeUndefined();
    }
    // What the security review registered: each stored one way and followed another.
    const cases: [string, RegExp][] = [
      ['https://rp.example/cb\r\nLocation: https://evil.example/', /not in its normal form/],
      ['https://rp.exa\tmple/cb', /not in its normal form; register it as https:\/\/rp\.example\/cb$/],
      ['https://rp.example\\@evil.example/cb', /not in its normal form; register it as https:\/\/rp\.example\/@evil\.example\/cb$/],
      ['https://*.example.com/cb', /\*\.example\.com in .* is not a host name .*no wildcards/],
      ['https://rp%2eexample/cb', /not in its normal form; register it as https:\/\/rp\.example\/cb$/],
      ['https://RP.example/cb', /register it as https:\/\/rp\.example\/cb$/],
      ['https://rp.example/a b', /register it as https:\/\/rp\.example\/a%20b$/],
      ['https://bücher.example/cb', /register it as https:\/\/xn--bcher-kva\.example\/cb$/],
      ['https://rp_app.example/cb', /not a host name/],
      [`https://rp.example/${'a'.repeat(8000)}`, /at most 2048 characters \(this one is 8019\)/],
    ];
    for (const [bad, problem] of cases) expect(callbackUrlProblem(bad), bad).toMatch(problem);
  });
  it('an empty path is the one the parser adds a slash to: http://localhost:4242 is taken as sent (oidc-agent registers it)', () => {
    for (const good of ['http://localhost:4242', 'https://rp.example', 'http://127.0.0.1:8080'])
      expect(callbackUrlProblem(good), good).toBeUndefined();
    expect(callbackUrlProblem('https://rp.example?x=1')).toMatch(/register it as https:\/\/rp\.example\/\?x=1$/);
    expect(matchRedirectUri('http://localhost:4242', ['http://localhost:4242'])).toBe(true);
    expect(matchRedirectUri('http://localhost:4242/', ['http://localhost:4242'])).toBe(false);
  });
  it('rfc8252 §7.1 private-use URI schemes in reverse-domain form, matched exactly; no scheme a browser acts on', () => {
    for (const good of [
      'com.example.app:/oauth2redirect/example-provider',
      'edu.kit.data.oidc-agent:/redirect',
      'com.example.app://callback',
      'io.x.y:/cb?from=app',
    ]) {
      expect(callbackUrlProblem(good), good).toBeUndefined();
      expect(isPrivateUseRedirect(good), good).toBe(true);
    }
    for (const [bad, problem] of [
      ['myapp:/callback', /private-use scheme in reverse-domain form such as com\.example\.app:\/callback/],
      ['javascript:alert(1)//a.b', /reverse-domain form/],
      ['data:text/html,x', /reverse-domain form/],
      ['file:///etc/passwd', /reverse-domain form/],
      ['vbscript:x', /reverse-domain form/],
      ['com.example.app:/cb#frag', /must not contain a fragment/],
      ['com.example.app:/c b', /not in its normal form/],
      ['com.example.app://user:pw@host/cb', /must not contain credentials/],
      ['Com.Example.App:/cb', /not in its normal form/],
      ['.example.app:/cb', /not an absolute URL|reverse-domain form/],
    ] as const) {
      expect(callbackUrlProblem(bad), bad).toMatch(problem);
    }
    const registered = ['com.example.app:/cb'];
    expect(matchRedirectUri('com.example.app:/cb', registered)).toBe(true);
    for (const other of [
      'com.example.app:/cb/',
      'com.example.app:/cb?x',
      'com.example.app://cb',
      'com.example.evil:/cb',
      'COM.example.app:/cb',
    ]) {
      expect(matchRedirectUri(other, registered), other).toBe(false);
    }
  });
});

describe('strict form parsing', () => {
  it('decodes + and percent-escapes, keeps first value, records repeats', () => {
    const f = parseForm('a=1+2&b=%C3%A9&a=3&c');
    expect(f.params.a).toBe('1 2');
    expect(f.params.b).toBe('é');
    expect(f.params.c).toBe('');
    expect([...f.repeated]).toEqual(['a']);
  });
  it('empty pairs are skipped; only the first = splits; an empty first value still counts as given', () => {
    const f = parseForm('&&a=&x=1=2&&a=later&%3D=eq&');
    expect({ ...f.params }).toEqual({ a: '', x: '1=2', '=': 'eq' });
    expect([...f.repeated]).toEqual(['a']);
    expect(parseForm('').repeated.size).toBe(0);
  });
  it('every value of every name, in order, for checkbox groups', () => {
    const f = parseForm('grant=a&scope=openid&grant=b&flag&grant=');
    expect(f.params.grant).toBe('a');
    expect({ ...f.lists }).toEqual({ grant: ['a', 'b', ''], scope: ['openid'], flag: [''] });
  });
  it('rejects invalid UTF-8 and malformed escapes', () => {
    expect(() => parseForm(Buffer.from([0x61, 0x3d, 0xff]))).toThrow(FormError);
    expect(() => parseForm('a=%zz')).toThrow(FormError);
    expect(() => parseForm('a=%C3%28')).toThrow(FormError);
  });
  it('rejects NUL, escaped or raw, in names and values (PostgreSQL text cannot hold it)', () => {
    for (const bad of ['a=%00', '%00=1', 'a=x%00y', 'a=\u0000', Buffer.from('a=\u0000')]) expect(() => parseForm(bad)).toThrow(FormError);
    expect(parseForm('a=%2500').params.a).toBe('%00');
  });
  it('prototype keys are plain data', () => {
    const f = parseForm('__proto__=x&constructor=y');
    expect(f.params.__proto__).toBe('x');
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });
});

describe('rfc6749 §3.3 scope', () => {
  it('known and allowed scopes pass, duplicates collapse', () => {
    expect(parseScope('openid  profile openid', ['openid', 'profile'])).toEqual(['openid', 'profile']);
  });
  it('oidc core §3.1.2.1 scope values the server does not understand are ignored', () => {
    expect(parseScope('openid admin profile x:y', ['openid', 'profile'])).toEqual(['openid', 'profile']);
  });
  it('rfc6749 §4.1.2.1 a known scope the application may not use, none left, empty and malformed scopes are invalid_scope', () => {
    for (const s of ['openid email', 'admin', '', undefined, 'open"id']) {
      expect(() => parseScope(s, ['openid', 'profile']), String(s)).toThrow(InvalidScope);
    }
  });
});

describe('oidc core §3.1.2.1 login_hint', () => {
  it('a value that could be a username is kept, trimmed; the longest one is 128 characters', () => {
    expect(loginHint('  ada ')).toBe('ada');
    expect(loginHint('ada@example.com')).toBe('ada@example.com');
    expect(loginHint('"><b>')).toBe('"><b>');
    expect(loginHint('a'.repeat(128))).toBe('a'.repeat(128));
  });
  it('anything else is ignored, never an error: absent, empty, too long, control characters', () => {
    for (const v of [undefined, null, '', '   ', 'a'.repeat(129), 'a\nb', 'a\tb', 'a\u0085b', 'a\u007fb']) {
      expect(loginHint(v), JSON.stringify(v)).toBeUndefined();
    }
  });
});

describe('config', () => {
  it('rfc8414 §2 issuer: https, or http on loopback; no query or fragment', () => {
    expect(normalizeIssuer('https://id.example/')).toBe('https://id.example');
    expect(normalizeIssuer('http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080');
    for (const bad of ['http://id.example', 'https://id.example?x=1', 'https://id.example#f', 'ftp://x', 'not a url']) {
      expect(() => normalizeIssuer(bad), bad).toThrow(ConfigError);
    }
  });
  it('flags beat env beat defaults', () => {
    expect(loadConfig({}, {}).issuer).toBe('http://localhost:8080');
    // Loopback and every-address hosts reach the listener as localhost (a host name can have passkeys); others are themselves.
    expect(loadConfig({ host: '0.0.0.0', port: 9000 }, {}).issuer).toBe('http://localhost:9000');
    expect(loadConfig({ host: '::1' }, {}).issuer).toBe('http://localhost:8080');
    expect(loadConfig({ host: '127.0.0.2' }, {}).issuer).toBe('http://localhost:8080');
    // Another address has no default: plain http is for loopback only, and the https URL is the operator's (start-help.test.ts).
    expect(() => loadConfig({ host: '192.0.2.7' }, {})).toThrow(ConfigError);
    expect(loadConfig({}, { PORT: '9000' }).issuer).toBe('http://localhost:9000');
    expect(loadConfig({ port: '9100' }, { PORT: '9000' }).port).toBe(9100);
    expect(loadConfig({}, { AUTHCLI_ISSUER: 'https://id.example' }).issuer).toBe('https://id.example');
    expect(loadConfig({}, { DATABASE_URL: 'postgres://x/y' }).databaseUrl).toBe('postgres://x/y');
  });
  it('rejects a bad port', () => {
    for (const p of ['abc', '70000', '-1', '8080x']) expect(() => loadConfig({ port: p }, {}), p).toThrow(ConfigError);
  });
});

describe('operator settings', () => {
  it('AUTHCLI_TRUST_PROXY is a hop count or a list of proxy addresses/CIDRs, never "trust everything"', () => {
    expect(parseTrustProxy(undefined)).toBe(false);
    expect(parseTrustProxy('')).toBe(false);
    expect(parseTrustProxy('0')).toBe(false);
    expect(parseTrustProxy('1')).toBe(1);
    expect(parseTrustProxy('2')).toBe(2);
    expect(parseTrustProxy('10.0.0.0/8, 192.0.2.1,::1,fd00::/8')).toEqual(['10.0.0.0/8', '192.0.2.1', '::1', 'fd00::/8']);
    for (const bad of ['true', '*', 'yes', 'loopback', '10.0.0.0/33', '::1/129', '999.1.1.1', '11', '10.0.0.0/8/1', 'proxy.example']) {
      expect(() => parseTrustProxy(bad), bad).toThrow(ConfigError);
    }
  });

  it('the key-encryption key is 32 bytes, base64url or base64, inline or in a file', () => {
    const key = Buffer.alloc(32, 7);
    expect(readKeyEncryptionKey({})).toBeUndefined();
    expect(readKeyEncryptionKey({ AUTHCLI_KEY_ENCRYPTION_KEY: key.toString('base64url') })).toEqual(key);
    expect(readKeyEncryptionKey({ AUTHCLI_KEY_ENCRYPTION_KEY: key.toString('base64') })).toEqual(key);
    const dir = mkdtempSync(join(tmpdir(), 'authcli-kek-'));
    try {
      writeFileSync(join(dir, 'text'), `${key.toString('base64')}\n`);
      writeFileSync(join(dir, 'raw'), key);
      expect(readKeyEncryptionKey({ AUTHCLI_KEY_ENCRYPTION_KEY_FILE: join(dir, 'text') })).toEqual(key);
      expect(readKeyEncryptionKey({ AUTHCLI_KEY_ENCRYPTION_KEY_FILE: join(dir, 'raw') })).toEqual(key);
      expect(() => readKeyEncryptionKey({ AUTHCLI_KEY_ENCRYPTION_KEY_FILE: join(dir, 'missing') })).toThrow(ConfigError);
      expect(() =>
        readKeyEncryptionKey({ AUTHCLI_KEY_ENCRYPTION_KEY_FILE: join(dir, 'raw'), AUTHCLI_KEY_ENCRYPTION_KEY: key.toString('base64') }),
      ).toThrow(ConfigError);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    for (const bad of ['short', Buffer.alloc(16).toString('base64'), Buffer.alloc(33).toString('base64url'), 'not base64 at all!']) {
      expect(() => readKeyEncryptionKey({ AUTHCLI_KEY_ENCRYPTION_KEY: bad }), bad).toThrow(ConfigError);
    }
  });

  it('AUTHCLI_LIMITS overrides named limits and keeps the rest', () => {
    expect(parseLimits(undefined)).toEqual(LIMITS);
    const l = parseLimits('device-authz-client=3000/1m, signin-account=20/15m');
    expect(l['device-authz-client']).toEqual({ limit: 3000, windowMs: 60_000 });
    expect(l['signin-account']).toEqual({ limit: 20, windowMs: 900_000 });
    expect(l['signin-ip']).toEqual(LIMITS['signin-ip']);
    for (const bad of ['nope=1/1m', 'signin-ip=10', 'signin-ip=0/1m', 'signin-ip=10/1d', 'signin-ip=-1/1m', '__proto__=1/1m']) {
      expect(() => parseLimits(bad), bad).toThrow(ConfigError);
    }
  });

  it('timeouts and caps come from the environment within sane bounds', () => {
    const c = loadConfig(
      {},
      {
        AUTHCLI_HEADERS_TIMEOUT: '3',
        AUTHCLI_REQUEST_TIMEOUT: '7',
        AUTHCLI_MAX_CONNECTIONS: '100',
        AUTHCLI_DB_TIMEOUT: '2',
        AUTHCLI_BODY_LIMIT: '4096',
      },
    );
    expect([c.headersTimeoutMs, c.requestTimeoutMs, c.maxConnections, c.dbTimeoutMs, c.bodyLimit]).toEqual([3000, 7000, 100, 2000, 4096]);
    for (const [name, value] of [
      ['AUTHCLI_REQUEST_TIMEOUT', '0'],
      ['AUTHCLI_MAX_CONNECTIONS', '5'],
      ['AUTHCLI_DB_TIMEOUT', 'soon'],
      ['AUTHCLI_BODY_LIMIT', '1e9'],
    ]) {
      expect(() => loadConfig({}, { [name!]: value }), `${name}=${value}`).toThrow(ConfigError);
    }
  });
});

describe('passwords', () => {
  it('Argon2id with per-user salt: same password, different hashes, both verify', async () => {
    // At the tests' cost: the salt is what is checked here (the default cost has the next test).
    const a = await hashPassword('hunter22!', passwordHashParams(10));
    const b = await hashPassword('hunter22!', passwordHashParams(10));
    expect(a).not.toBe(b);
    expect(verifyPasswordSync('hunter22!', a)).toBe(true);
    expect(verifyPasswordSync('hunter22?', a)).toBe(false);
    expect(verifyPasswordSync('x', 'garbage')).toBe(false);
    // NFC: "é" typed as one code point or as e + combining accent is the same password.
    const composed = await hashPassword('caf\u00e9 au lait', passwordHashParams(10));
    expect(verifyPasswordSync('cafe\u0301 au lait', composed)).toBe(true);
  });

  it('RFC 9106 memory-constrained: new hashes use Argon2id with 64 MiB, 3 passes, 1 lane, a 16-byte salt and a 32-byte key', async () => {
    expect(PASSWORD_HASH).toEqual({ memoryKiB: 65536, passes: 3, lanes: 1 });
    const made = await hashPassword('hunter22!');
    const [, alg, version, params, salt, key] = made.split('$');
    expect([alg, version, params]).toEqual(['argon2id', 'v=19', 'm=65536,t=3,p=1']);
    expect(Buffer.from(salt!, 'base64')).toHaveLength(16);
    expect(Buffer.from(key!, 'base64')).toHaveLength(32);
    expect(verifyPasswordSync('hunter22!', made)).toBe(true);
    expect(DUMMY_PASSWORD_HASH.split('$').slice(0, 4)).toEqual(['', 'argon2id', 'v=19', 'm=65536,t=3,p=1']);
    expect(isPasswordHash(DUMMY_PASSWORD_HASH)).toBe(true);
    expect(verifyPasswordSync('', DUMMY_PASSWORD_HASH)).toBe(false);
  });

  it('hashes written with scrypt before Argon2id still verify, and are replaced at the next sign-in whatever their cost', () => {
    for (const N of [1 << 10, 1 << 14]) {
      const old = legacyScryptHash('hunter22!', N);
      expect(isPasswordHash(old)).toBe(true);
      expect(verifyPasswordSync('hunter22!', old)).toBe(true);
      expect(verifyPasswordSync('hunter22?', old)).toBe(false);
      expect(needsRehash(old, passwordHashParams(10))).toBe(true);
    }
    expect(verifyPasswordSync('caf\u00e9', legacyScryptHash('cafe\u0301'))).toBe(true);
    // A hash at the default cost: the dummy hash is encoded like any other, so none need be computed here.
    expect(needsRehash(DUMMY_PASSWORD_HASH)).toBe(false);
  });

  it('a lowered AUTHCLI_PASSWORD_HASH_COST never downgrades a stored hash; a raised one upgrades it', async () => {
    const cheap = passwordHashParams(10);
    const strong = await hashPassword('hunter22!', passwordHashParams(12));
    expect(needsRehash(strong, cheap)).toBe(false);
    expect(needsRehash(strong, passwordHashParams(12))).toBe(false);
    expect(needsRehash(strong, passwordHashParams(13))).toBe(true);
    // Fewer passes at the same memory is a lower cost too.
    expect(needsRehash(await hashPassword('hunter22!', { ...cheap, passes: 1 }), cheap)).toBe(true);
    expect(dummyPasswordHash(cheap).split('$').slice(0, 4)).toEqual(['', 'argon2id', 'v=19', 'm=1024,t=3,p=1']);
    expect(verifyPasswordSync('hunter22!', strong)).toBe(true);
  });

  it('AUTHCLI_PASSWORD_HASH_COST: default 16 (64 MiB), 10-18 accepted, a warning below 16', () => {
    expect(loadConfig({}, {}).passwordHashCost).toBe(16);
    expect(passwordHashParams(loadConfig({}, {}).passwordHashCost)).toEqual(PASSWORD_HASH);
    expect(loadConfig({}, { AUTHCLI_PASSWORD_HASH_COST: '10' }).passwordHashCost).toBe(10);
    expect(loadConfig({}, { AUTHCLI_PASSWORD_HASH_COST: '18' }).passwordHashCost).toBe(18);
    for (const bad of ['9', '19', '16.5', 'high', '-1']) {
      expect(() => loadConfig({}, { AUTHCLI_PASSWORD_HASH_COST: bad }), bad).toThrow(
        /AUTHCLI_PASSWORD_HASH_COST must be a whole number from 10 to 18/,
      );
    }
    expect(weakPasswordHashWarning(16)).toBeUndefined();
    expect(weakPasswordHashWarning(18)).toBeUndefined();
    expect(weakPasswordHashWarning(10)).toMatch(/AUTHCLI_PASSWORD_HASH_COST=10 is below the production minimum \(16.*64 times cheaper/);
  });

  it('a stored hash naming an absurd cost or a malformed one is refused, never computed', () => {
    const salt = Buffer.alloc(16).toString('base64url');
    const key = Buffer.alloc(32).toString('base64url');
    for (const [n, r, p] of [
      ['4294967296', '8', '1'],
      ['1000', '8', '1'],
      ['16384', '1000', '1'],
      ['16384', '8', '99'],
      ['16384', '8', '0'],
    ]) {
      const stored = `scrypt$${n}$${r}$${p}$${salt}$${key}`;
      expect(isPasswordHash(stored), stored).toBe(false);
      expect(verifyPasswordSync('x', stored)).toBe(false);
    }
    const b64 = (n: number) => Buffer.alloc(n).toString('base64').replace(/=+$/, '');
    for (const stored of [
      `$argon2id$v=19$m=4194304,t=3,p=1$${b64(16)}$${b64(32)}`, // 4 GiB
      `$argon2id$v=19$m=65536,t=1000,p=1$${b64(16)}$${b64(32)}`,
      `$argon2id$v=19$m=65536,t=3,p=64$${b64(16)}$${b64(32)}`,
      `$argon2id$v=16$m=1024,t=3,p=1$${b64(16)}$${b64(32)}`, // the 1.0 version, never written
      `$argon2i$v=19$m=1024,t=3,p=1$${b64(16)}$${b64(32)}`,
      `$argon2id$v=19$m=1024,t=3,p=1$${b64(4)}$${b64(32)}`, // a salt too short
      `$argon2id$v=19$m=1024,t=3,p=1$${b64(16)}$${b64(8)}`, // a key too short
      '$argon2id$v=19$m=1024,t=3,p=1$$',
      '$argon2id$garbage',
    ]) {
      expect(isPasswordHash(stored), stored).toBe(false);
      expect(verifyPasswordSync('x', stored), stored).toBe(false);
    }
  });
});

describe('time-ordered ids (grant ids)', () => {
  it('sort as plain strings in the order they were made, and differ when made in the same millisecond', () => {
    const times = [0, 1, 15, 16, 255, 1_700_000_000_000, 1_700_000_000_001, 1_800_000_000_000];
    const ids = times.map((t) => timeOrderedId(t));
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{12}[A-Za-z0-9_-]{16}$/);
    const same = new Set(Array.from({ length: 1000 }, () => timeOrderedId(1_700_000_000_000)));
    expect(same.size).toBe(1000);
  });
});

describe('random tokens', () => {
  it('are base64url of the asked length and never repeat, across refills of the random pool', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      const t = randomToken(i % 3 === 0 ? 16 : 32);
      expect(t).toMatch(i % 3 === 0 ? /^[A-Za-z0-9_-]{22}$/ : /^[A-Za-z0-9_-]{43}$/);
      seen.add(t);
    }
    expect(seen.size).toBe(5000);
    expect(randomToken(300)).toHaveLength(400);
  });
});

describe('headerValues: every field line of a header, for "exactly one" checks (RFC 9449 §4.3)', () => {
  const req = (raw: object) => ({ raw }) as unknown as FastifyRequest;
  it("reads Node's headersDistinct when the request has it", () => {
    expect(headerValues(req({ headers: { dpop: 'a, b' }, headersDistinct: { dpop: ['a', 'b'] }, rawHeaders: [] }), 'dpop')).toEqual([
      'a',
      'b',
    ]);
  });
  it("an absent header is answered from the parsed headers, without building Node's distinct copy of them all", () => {
    const raw = {
      headers: { host: 'x' },
      rawHeaders: ['Host', 'x'],
      get headersDistinct(): never {
        throw new Error('headersDistinct read');
      },
    };
    expect(headerValues(req(raw), 'dpop')).toBeUndefined();
  });
  it('falls back to the raw name/value pairs (an injected request), any case, each line apart', () => {
    const rawHeaders = ['Host', 'x', 'DPoP', 'one', 'content-type', 'text/plain', 'dpop', 'two, three'];
    expect(headerValues(req({ headers: { host: 'x', dpop: 'one, two, three' }, rawHeaders }), 'dpop')).toEqual(['one', 'two, three']);
    expect(headerValues(req({ headers: { host: 'x' }, rawHeaders: ['Host', 'x'] }), 'dpop')).toBeUndefined();
  });
});

describe('how long ago, on the device page and the account page', () => {
  it('reads at a glance: just now, a minute ago, minutes, an hour, hours, days', () => {
    const cases: [number, string][] = [
      [-5_000, 'just now'],
      [0, 'just now'],
      [44_999, 'just now'],
      [45_000, 'a minute ago'],
      [60_000, 'a minute ago'],
      [89_999, 'a minute ago'],
      [90_000, '2 minutes ago'],
      [4 * 60_000, '4 minutes ago'],
      [44 * 60_000, '44 minutes ago'],
      [45 * 60_000, 'an hour ago'],
      [3 * 3_600_000, '3 hours ago'],
      [30 * 3_600_000, 'a day ago'],
      [5 * 86_400_000, '5 days ago'],
    ];
    for (const [ms, text] of cases) expect(timeAgo(ms), String(ms)).toBe(text);
    expect(utcMinute(Date.UTC(2025, 0, 2, 3, 4, 59))).toBe('2025-01-02 03:04 UTC');
  });

  it('AUTHCLI_DEVICE_APPROVAL_WINDOW: 5 minutes by default, a minute to an hour', () => {
    expect(loadConfig({}, {}).deviceApprovalWindowSeconds).toBe(300);
    expect(loadConfig({}, { AUTHCLI_DEVICE_APPROVAL_WINDOW: '120' }).deviceApprovalWindowSeconds).toBe(120);
    for (const bad of ['59', '3601', 'soon', '-1']) {
      expect(() => loadConfig({}, { AUTHCLI_DEVICE_APPROVAL_WINDOW: bad }), bad).toThrow(ConfigError);
    }
  });
});

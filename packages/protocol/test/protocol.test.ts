import { describe, expect, it } from 'vitest';
import {
  AUTHORIZATION_CODE_GRANT_TYPE,
  DEVICE_CODE_GRANT_TYPE,
  IssuerError,
  isLoopbackHost,
  normalizeIssuer,
  OAUTH_AUTHORIZATION_SERVER_PATH,
  OPENID_CONFIGURATION_PATH,
  REFRESH_TOKEN_GRANT_TYPE,
  USER_CODE_ALPHABET,
  USER_CODE_LENGTH,
} from '../src/index.js';

function refused(value: string): IssuerError {
  try {
    normalizeIssuer(value);
  } catch (err) {
    expect(err, value).toBeInstanceOf(IssuerError);
    return err as IssuerError;
  }
  throw new Error(`${value} was accepted as an issuer`);
}

describe('rfc8414 §2 issuer identifier', () => {
  it('a host and port typed without a scheme: refused, with the URL that was probably meant', () => {
    expect(refused('127.0.0.1:8080').message).toBe('issuer "127.0.0.1:8080" is not an absolute URL: did you mean http://127.0.0.1:8080?');
    expect(refused('localhost:9000').message).toBe('issuer "localhost:9000" is not an absolute URL: did you mean http://localhost:9000?');
    expect(refused('id.example.com').message).toBe('issuer "id.example.com" is not an absolute URL: did you mean https://id.example.com?');
    expect(refused('id.example.com/tenant').message).toContain('did you mean https://id.example.com/tenant?');
    expect(refused('not a url').message).toBe('issuer "not a url" is not an absolute URL');
  });

  it('is an https URL with a host, optionally a port and a path', () => {
    expect(normalizeIssuer('https://id.example')).toBe('https://id.example');
    expect(normalizeIssuer('https://id.example:8443')).toBe('https://id.example:8443');
    expect(normalizeIssuer('https://id.example/tenant/one')).toBe('https://id.example/tenant/one');
  });

  it('plain http only for a loopback host, for development on one machine', () => {
    expect(normalizeIssuer('http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080');
    expect(normalizeIssuer('http://127.1.2.3')).toBe('http://127.1.2.3');
    expect(normalizeIssuer('http://localhost:8080')).toBe('http://localhost:8080');
    expect(normalizeIssuer('http://[::1]:8080')).toBe('http://[::1]:8080');
    expect(normalizeIssuer('http://auth.localhost:8080')).toBe('http://auth.localhost:8080');
    for (const bad of [
      'http://id.example',
      'http://127.evil.example',
      'http://10.0.0.1',
      'http://localhost.evil.example',
      'ftp://127.0.0.1',
    ]) {
      expect(refused(bad).message, bad).toMatch(/https/);
    }
  });

  it('has no query component, not even an empty one', () => {
    for (const bad of ['https://id.example?', 'https://id.example/?', 'https://id.example?x=1', 'https://id.example/tenant?x']) {
      expect(refused(bad).message, bad).toMatch(/query or fragment/);
    }
  });

  it('has no fragment component, not even an empty one', () => {
    for (const bad of ['https://id.example#x', 'https://id.example#', 'https://id.example/tenant/#x']) {
      expect(refused(bad).message, bad).toMatch(/query or fragment/);
    }
  });

  it('has no userinfo, and the error does not repeat it', () => {
    for (const bad of ['https://user@id.example', 'https://user:secret@id.example', 'http://user:secret@id.example?x']) {
      const err = refused(bad);
      expect(err.message).toBe('issuer must not contain credentials');
      expect(err.message).not.toContain('secret');
    }
  });

  it('is an absolute URL', () => {
    for (const bad of ['not a url', '', 'id.example', '/tenant']) {
      expect(refused(bad).message, bad).toMatch(/not an absolute URL/);
    }
  });
});

describe('loopback, one definition for every rule that depends on it', () => {
  it('rfc6761 §6.3 localhost and names under it, rfc1122 127.0.0.0/8 in any spelling, ::1 and IPv4-mapped loopback', () => {
    for (const host of [
      'localhost',
      'LOCALHOST',
      'localhost.',
      'auth.localhost',
      '127.0.0.1',
      '127.0.0.2',
      '127.255.255.254',
      '127.1',
      '0x7f.1',
      '::1',
      '[::1]',
      '0:0:0:0:0:0:0:1',
      '::ffff:127.0.0.2',
      '[::ffff:7f00:1]',
    ]) {
      expect(isLoopbackHost(host), host).toBe(true);
    }
  });

  it('nothing else: other addresses, names that merely contain it, and what is not a host', () => {
    for (const host of [
      '128.0.0.1',
      '126.255.255.255',
      '10.0.0.1',
      '0.0.0.0',
      '::',
      '::2',
      '::ffff:10.0.0.1',
      '[::ffff:8000:1]',
      'localhost.evil.example',
      '127.0.0.1.nip.io',
      'evillocalhost',
      '',
      '[',
      'a b',
    ]) {
      expect(isLoopbackHost(host), host).toBe(false);
    }
  });
});

describe('rfc8414 §3.1 terminating slashes are removed before the well-known suffix', () => {
  it('on the host', () => {
    expect(normalizeIssuer('https://id.example/')).toBe('https://id.example');
    expect(normalizeIssuer('https://id.example//')).toBe('https://id.example');
  });

  it('on a path', () => {
    expect(normalizeIssuer('https://id.example/tenant/')).toBe('https://id.example/tenant');
    expect(normalizeIssuer('https://id.example/tenant//')).toBe('https://id.example/tenant');
  });

  it('so the suffix appends without a double slash', () => {
    expect(`${normalizeIssuer('https://id.example/')}${OPENID_CONFIGURATION_PATH}`).toBe(
      'https://id.example/.well-known/openid-configuration',
    );
    const { origin, pathname } = new URL(normalizeIssuer('https://id.example/tenant/'));
    expect(`${origin}${OAUTH_AUTHORIZATION_SERVER_PATH}${pathname}`).toBe(
      'https://id.example/.well-known/oauth-authorization-server/tenant',
    );
  });
});

describe('rfc8414 §3.3 the metadata issuer is identical to the issuer used', () => {
  it('spellings of one issuer normalize to one string', () => {
    for (const spelling of [
      'https://ID.Example',
      'HTTPS://id.example/',
      'https://id.example:443',
      'https://id.example/a/../',
      ' https://id.example ',
    ]) {
      expect(normalizeIssuer(spelling), spelling).toBe('https://id.example');
    }
    expect(normalizeIssuer('http://localhost:80/')).toBe('http://localhost');
  });

  it('is idempotent: the published issuer normalizes to itself', () => {
    for (const issuer of ['https://id.example', 'https://id.example/tenant', 'http://127.0.0.1:8080', 'https://xn--bcher-kva.example']) {
      expect(normalizeIssuer(normalizeIssuer(issuer))).toBe(issuer);
    }
    expect(normalizeIssuer('https://bücher.example')).toBe('https://xn--bcher-kva.example');
  });
});

describe('rfc6749 §4.1.3 and §6, rfc8628 §3.4 grant types', () => {
  it('are the registered names', () => {
    expect(AUTHORIZATION_CODE_GRANT_TYPE).toBe('authorization_code');
    expect(REFRESH_TOKEN_GRANT_TYPE).toBe('refresh_token');
    expect(DEVICE_CODE_GRANT_TYPE).toBe('urn:ietf:params:oauth:grant-type:device_code');
  });
});

describe('rfc8628 §6.1 user codes', () => {
  it('20 upper-case consonants without look-alikes, 8 of them: about 34.5 bits', () => {
    expect(USER_CODE_ALPHABET).toBe('BCDFGHJKLMNPQRSTVWXZ');
    expect(new Set(USER_CODE_ALPHABET).size).toBe(20);
    expect(USER_CODE_ALPHABET).not.toMatch(/[AEIOUY0-9]/);
    expect(USER_CODE_LENGTH * Math.log2(USER_CODE_ALPHABET.length)).toBeGreaterThan(34.5);
  });
});

describe('rfc8414 §3 and OIDC Discovery §4 well-known paths', () => {
  it('are the registered suffixes', () => {
    expect(OPENID_CONFIGURATION_PATH).toBe('/.well-known/openid-configuration');
    expect(OAUTH_AUTHORIZATION_SERVER_PATH).toBe('/.well-known/oauth-authorization-server');
  });
});

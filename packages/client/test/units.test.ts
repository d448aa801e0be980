import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateCallback } from '../src/oauth/authorization.js';
import { resolveSettings } from '../src/config.js';
import { credentialsPath, deleteSession, readSession, writeSession, type StoredSession } from '../src/credentials.js';
import { AuthcliError } from '../src/errors.js';
import { discover, sameLoopbackServer } from '../src/oauth/discovery.js';
import type { Transport } from '../src/http.js';

const ISS = 'https://id.example';
const q = (s: string) => new URLSearchParams(s);

describe('validateCallback (rfc6749 §10.12 state, rfc9207 iss)', () => {
  const expectations = { state: 'S'.repeat(43), issuer: ISS, issRequired: true };

  it('accepts the callback with our state and the issuer', () => {
    expect(validateCallback(q(`code=abc&state=${'S'.repeat(43)}&iss=${encodeURIComponent(ISS)}`), expectations).code).toBe('abc');
  });

  it('rejects a wrong, missing or repeated state', () => {
    for (const bad of [
      `code=abc&state=x&iss=${ISS}`,
      `code=abc&iss=${ISS}`,
      `code=abc&state=${'S'.repeat(43)}&state=${'S'.repeat(43)}&iss=${ISS}`,
    ]) {
      expect(() => validateCallback(q(bad), expectations), bad).toThrow(AuthcliError);
    }
  });

  it('rfc9207 §2.4 rejects another issuer, and a missing iss when the server advertises it', () => {
    const state = 'S'.repeat(43);
    expect(() => validateCallback(q(`code=abc&state=${state}&iss=https://evil.example`), expectations)).toThrow(/RFC 9207/);
    expect(() => validateCallback(q(`code=abc&state=${state}`), expectations)).toThrow(/RFC 9207/);
    expect(validateCallback(q(`code=abc&state=${state}`), { ...expectations, issRequired: false }).code).toBe('abc');
  });

  it('an error callback is an error, not a success', () => {
    const state = 'S'.repeat(43);
    expect(() => validateCallback(q(`error=access_denied&state=${state}&iss=${ISS}`), expectations)).toThrow(
      expect.objectContaining({ code: 'access_denied' }),
    );
    expect(() => validateCallback(q(`error=invalid_scope&state=${state}&iss=${ISS}`), expectations)).toThrow(/invalid_scope/);
    expect(() => validateCallback(q(`state=${state}&iss=${ISS}`), expectations)).toThrow(/neither a code/);
  });
});

describe('settings and credentials', () => {
  let home: string;
  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'authcli-unit-'));
  });
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  it('precedence: flags > env > config file > defaults', async () => {
    const env = { XDG_CONFIG_HOME: home } as NodeJS.ProcessEnv;
    expect(await resolveSettings({}, env)).toEqual({
      issuer: 'http://localhost:8080',
      clientId: 'authcli',
      clientSecret: undefined,
      profile: 'default',
      slot: 'http://localhost:8080',
      defaultIssuer: true,
    });
    mkdirSync(join(home, 'authcli'));
    writeFileSync(join(home, 'authcli', 'config.json'), JSON.stringify({ issuer: 'https://file.example', client_id: 'from-file' }));
    expect(await resolveSettings({}, env)).toMatchObject({ issuer: 'https://file.example', clientId: 'from-file' });
    const withEnv = { ...env, AUTHCLI_ISSUER: 'https://env.example/', AUTHCLI_CLIENT_SECRET: 's' };
    expect(await resolveSettings({}, withEnv)).toMatchObject({ issuer: 'https://env.example', clientId: 'from-file', clientSecret: 's' });
    expect(await resolveSettings({ issuer: 'https://flag.example', clientId: 'flag' }, withEnv)).toMatchObject({
      issuer: 'https://flag.example',
      clientId: 'flag',
    });
  });

  it('bad settings are clear errors', async () => {
    const env = { XDG_CONFIG_HOME: home } as NodeJS.ProcessEnv;
    await expect(resolveSettings({ issuer: 'http://example.com' }, env)).rejects.toThrow(/https/);
    await expect(resolveSettings({ issuer: 'not a url' }, env)).rejects.toThrow(AuthcliError);
    mkdirSync(join(home, 'authcli'));
    writeFileSync(join(home, 'authcli', 'config.json'), '{ nope');
    await expect(resolveSettings({}, env)).rejects.toThrow(/not valid JSON/);
  });

  it('credentials: per issuer, mode 0600, no temp files left, deletable', async () => {
    const env = { XDG_CONFIG_HOME: home, AUTHCLI_STORAGE: 'file' } as NodeJS.ProcessEnv;
    const s: StoredSession = {
      client_id: 'authcli',
      access_token: 'a',
      token_type: 'Bearer',
      expires_at: 1,
      scope: 'openid',
      subject: 'u',
      username: 'alice',
      obtained_at: 0,
    };
    await writeSession('https://a.example', s, env);
    await writeSession('https://b.example', { ...s, username: 'bob' }, env);
    expect(statSync(credentialsPath(env)).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, 'authcli')).mode & 0o777).toBe(0o700);
    expect(readdirSync(join(home, 'authcli'))).toEqual(['credentials.json']);
    expect((await readSession('https://a.example', env))?.username).toBe('alice');
    expect(await deleteSession('https://a.example', env)).toBe(true);
    expect(await readSession('https://a.example', env)).toBeUndefined();
    expect(JSON.parse(readFileSync(credentialsPath(env), 'utf8')).sessions['https://b.example'].username).toBe('bob');
  });

  it('a damaged credentials file is a clear error, not a crash', async () => {
    const env = { XDG_CONFIG_HOME: home } as NodeJS.ProcessEnv;
    mkdirSync(join(home, 'authcli'));
    writeFileSync(join(home, 'authcli', 'credentials.json'), 'garbage');
    await expect(readSession('https://a.example', env)).rejects.toThrow(/damaged/);
  });
});

describe('discovery: an issuer the server does not call itself', () => {
  const answering =
    (issuer: string): Transport =>
    async () => ({ status: 200, headers: new Headers(), body: { issuer, token_endpoint: `${issuer}/oauth/token` } });
  const failure = async (asked: string, named: string) => {
    try {
      await discover(asked, answering(named));
    } catch (err) {
      expect(err).toBeInstanceOf(AuthcliError);
      return (err as Error).message;
    }
    throw new Error('accepted');
  };

  it('the same loopback server by another name: the one it calls itself is suggested', async () => {
    expect(await failure('http://localhost:9000', 'http://127.0.0.1:9000')).toBe(
      'the discovery document names issuer http://127.0.0.1:9000, not http://localhost:9000; use --issuer http://127.0.0.1:9000',
    );
    expect(sameLoopbackServer('http://[::1]:8080', 'http://localhost:8080')).toBe(true);
  });

  it('any other difference (another host, port or path) is said, never resolved by a suggestion', async () => {
    expect(await failure('http://localhost:9000', 'http://localhost:9001')).toBe(
      'the discovery document names issuer http://localhost:9001, not http://localhost:9000',
    );
    expect(await failure('https://id.example', 'https://evil.example')).toBe(
      'the discovery document names issuer https://evil.example, not https://id.example',
    );
    expect(sameLoopbackServer('http://localhost:8080/a', 'http://127.0.0.1:8080/b')).toBe(false);
  });
});

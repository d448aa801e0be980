import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPairSync, sign } from 'node:crypto';
import {
  CLIENT_JWKS_CACHE_BOUNDS_MS,
  CLIENT_JWKS_CACHE_MS,
  CLIENT_JWKS_MAX_BYTES,
  CLIENT_JWKS_REFETCH_COOLDOWN_MS,
  CLIENT_JWKS_TIMEOUT_MS,
} from '../src/config/defaults.js';
import { fetchJson } from '../src/http/fetch-json.js';
import { keepFor } from '../src/oauth/client-jwks.js';
import type { ClientKeys } from '../src/store/store.js';
import { assertion, assertionFields, type ClientKey, clientKey, jwksOf, jwksServer, seedKeyApp } from './client-assertions.js';
import { dialects, ownClock, postForm, startServer, type TestServer } from './helpers.js';

/**
 * A private_key_jwt client's jwks_uri (RFC 7591 §2, RFC 7523 §3 (9)): fetched, kept per Cache-Control within
 * bounds, fetched again for an unknown kid at most once per cooldown (fetches counted at the client's own
 * server), every failure of the fetch an invalid_client answered in bounded time; and never, unless the
 * operator set it, a fetch to this machine or a private network, whatever the name resolves to.
 */

describe('jwks_uri: what is kept, and which addresses are reached', () => {
  it('Cache-Control max-age is honoured within bounds; no-store and no-cache keep the least; nothing said, the default', () => {
    expect(keepFor(undefined)).toBe(CLIENT_JWKS_CACHE_MS);
    expect(keepFor('public, max-age=120')).toBe(120_000);
    expect(keepFor('max-age=5')).toBe(CLIENT_JWKS_CACHE_BOUNDS_MS.min);
    expect(keepFor('max-age=999999999')).toBe(CLIENT_JWKS_CACHE_BOUNDS_MS.max);
    expect(keepFor('no-store')).toBe(CLIENT_JWKS_CACHE_BOUNDS_MS.min);
    expect(keepFor('max-age=3600, no-cache')).toBe(CLIENT_JWKS_CACHE_BOUNDS_MS.min);
    expect(keepFor('s-maxage=10')).toBe(CLIENT_JWKS_CACHE_MS);
  });

  it('a name is checked on what it resolves to when the connection is made (DNS rebinding); literals before', async () => {
    const keys = await jwksServer({ kind: 'json', body: { keys: [] } });
    const options = { timeoutMs: 2000, maxBytes: 1024, publicOnly: true };
    // A name that passed registration and now resolves to this machine.
    const rebound = async () => [{ address: '127.0.0.1', family: 4 }];
    await expect(fetchJson(`https://keys.rp.example:${keys.port}/jwks`, { ...options, resolver: rebound })).rejects.toMatchObject({
      reason: 'its host resolves to an address that is not public',
    });
    // One public and one private address: refused too.
    const mixed = async () => [
      { address: '93.184.216.34', family: 4 },
      { address: '10.0.0.1', family: 4 },
    ];
    await expect(fetchJson(`https://keys.rp.example:${keys.port}/jwks`, { ...options, resolver: mixed })).rejects.toMatchObject({
      reason: 'its host resolves to an address that is not public',
    });
    await expect(fetchJson(`https://localhost:${keys.port}/jwks`, options)).rejects.toMatchObject({
      reason: 'its host resolves to an address that is not public',
    });
    await expect(fetchJson(`https://127.0.0.1:${keys.port}/jwks`, options)).rejects.toMatchObject({
      reason: 'it names an address that is not public',
    });
    await expect(fetchJson(keys.url, options)).rejects.toMatchObject({ reason: 'it is not an https URL' });
    expect(keys.connections()).toBe(0);
    // What an operator set goes anywhere, http included.
    expect((await fetchJson(keys.url, { ...options, publicOnly: false })).json).toEqual({ keys: [] });
    expect(keys.connections()).toBe(1);
  });
});

describe.each(dialects())('jwks_uri fetching (%s)', (dialect) => {
  let server: TestServer;
  let first: ClientKey;
  let second: ClientKey;

  beforeAll(async () => {
    server = await startServer(dialect);
    [first, second] = await Promise.all([clientKey('ES256'), clientKey('PS256')]);
  });
  afterAll(async () => server.close());

  const introspect = async (a: string) => {
    const started = performance.now();
    const res = await postForm(server, '/oauth/introspect', { token: 'x', ...assertionFields(a) });
    return { ...res, ms: performance.now() - started };
  };
  const keyApp = (keys: ClientKeys) => seedKeyApp(server, keys, 'Backend with a jwks_uri');

  it('rfc7523 §3 a rotated key is picked up by its new kid, one fetch per cooldown; made-up kids never add fetches', async () => {
    const clock = ownClock(server);
    const keys = await jwksServer({ kind: 'json', body: jwksOf(first) });
    const id = await keyApp({ jwksUri: keys.url, anyAddress: true });
    expect((await introspect(await assertion(server, id, first))).status).toBe(200);
    expect((await introspect(await assertion(server, id, first))).status).toBe(200);
    expect(keys.requests()).toBe(1);

    // The client rotates: a new key under a new kid, the old one gone.
    keys.answer({ kind: 'json', body: jwksOf(second) });
    clock.advance(CLIENT_JWKS_REFETCH_COOLDOWN_MS);
    expect((await introspect(await assertion(server, id, second))).status).toBe(200);
    expect(keys.requests()).toBe(2);
    // The old key is no longer in the set the server keeps.
    expect((await introspect(await assertion(server, id, first))).status).toBe(401);

    // An attacker's stream of unknown kids: answered from the kept set, no fetch within the cooldown.
    const strangers = await Promise.all(Array.from({ length: 10 }, () => clientKey('ES256')));
    const answers = await Promise.all(strangers.map(async (k) => introspect(await assertion(server, id, k))));
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 10 }, () => 401));
    expect(keys.requests()).toBe(2);
    clock.advance(CLIENT_JWKS_REFETCH_COOLDOWN_MS - 1000);
    expect((await introspect(await assertion(server, id, strangers[0]!))).status).toBe(401);
    expect(keys.requests()).toBe(2);
    // Past the cooldown one more fetch, and only one, for any number of unknown kids.
    clock.advance(1000);
    await Promise.all(strangers.map(async (k) => introspect(await assertion(server, id, k))));
    expect(keys.requests()).toBe(3);
    expect((await introspect(await assertion(server, id, second))).status).toBe(200);
    expect(keys.requests()).toBe(3);
  });

  it('Cache-Control: max-age=120 keeps the set 120 s; then it is fetched again before use', async () => {
    const clock = ownClock(server);
    const keys = await jwksServer({ kind: 'json', body: jwksOf(first), headers: { 'cache-control': 'max-age=120' } });
    const id = await keyApp({ jwksUri: keys.url, anyAddress: true });
    expect((await introspect(await assertion(server, id, first))).status).toBe(200);
    clock.advance(119_000);
    expect((await introspect(await assertion(server, id, first))).status).toBe(200);
    expect(keys.requests()).toBe(1);
    clock.advance(2_000);
    expect((await introspect(await assertion(server, id, first))).status).toBe(200);
    expect(keys.requests()).toBe(2);
  });

  it('a jwks_uri that hangs: invalid_client after the fetch timeout, then at once (cooldown), no crash; it recovers', async () => {
    const clock = ownClock(server);
    const keys = await jwksServer({ kind: 'hang' });
    const id = await keyApp({ jwksUri: keys.url, anyAddress: true });
    const slow = await introspect(await assertion(server, id, first));
    expect(slow.status).toBe(401);
    expect(slow.json.error_description).toBe(
      `the client's jwks_uri could not be used: it did not answer within ${CLIENT_JWKS_TIMEOUT_MS} ms`,
    );
    expect(slow.ms).toBeGreaterThanOrEqual(CLIENT_JWKS_TIMEOUT_MS - 100);
    expect(slow.ms).toBeLessThan(CLIENT_JWKS_TIMEOUT_MS + 2000);
    const quick = await introspect(await assertion(server, id, first));
    expect([quick.status, quick.json.error_description]).toEqual([401, slow.json.error_description]);
    expect(quick.ms).toBeLessThan(1000);
    expect(keys.requests()).toBe(1);
    // The server answers everything else meanwhile, and the client's fixed jwks_uri works after the cooldown.
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    keys.answer({ kind: 'json', body: jwksOf(first) });
    clock.advance(CLIENT_JWKS_REFETCH_COOLDOWN_MS);
    expect((await introspect(await assertion(server, id, first))).status).toBe(200);
  });

  it('a jwks_uri answering too much, not JSON, not a JWK Set, private keys, an error or a redirect: invalid_client, said why', async () => {
    const privateJwk = { ...first.publicJwk, d: 'AAAA' };
    const cases: [Parameters<typeof jwksServer>[0], string][] = [
      [{ kind: 'raw', body: 'x'.repeat(CLIENT_JWKS_MAX_BYTES + 1) }, `its answer is larger than ${CLIENT_JWKS_MAX_BYTES} bytes`],
      [{ kind: 'raw', body: '<html>keys</html>' }, 'its answer is not JSON'],
      [{ kind: 'json', body: { kty: 'EC' } }, 'the JWK Set must be a JWK Set: a JSON object with a keys array (RFC 7517 section 5)'],
      [{ kind: 'json', body: { keys: [privateJwk] } }, 'the JWK Set must hold public keys only'],
      [{ kind: 'raw', body: '{}', status: 500 }, 'it answered 500'],
      [{ kind: 'raw', body: '', status: 302, headers: { location: 'http://169.254.169.254/' } }, 'it answered with a redirect'],
    ];
    for (const [answer, reason] of cases) {
      const keys = await jwksServer(answer);
      const id = await keyApp({ jwksUri: keys.url, anyAddress: true });
      const res = await introspect(await assertion(server, id, first));
      expect(res.status, reason).toBe(401);
      expect(res.json.error_description).toContain(`the client's jwks_uri could not be used: ${reason}`);
      expect(keys.requests()).toBe(1);
    }
  });

  it('a fetched key that is no valid public key (off the curve, a 1024-bit modulus): invalid_client saying so, no crash', async () => {
    const small = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const smallJwk = { ...small.publicKey.export({ format: 'jwk' }), kid: 'small', alg: 'RS256' };
    const offCurve = { kty: 'EC', crv: 'P-256', x: 'AAAA', y: 'AAAA', kid: first.kid };
    const keys = await jwksServer({ kind: 'json', body: { keys: [offCurve, smallJwk] } });
    const id = await keyApp({ jwksUri: keys.url, anyAddress: true });
    const now = Math.floor(server.clock.now() / 1000);
    const part = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const input = `${part({ alg: 'RS256', kid: 'small' })}.${part({ iss: id, sub: id, aud: server.url, jti: 'j-small', exp: now + 60 })}`;
    const bySmallKey = `${input}.${sign('sha256', Buffer.from(input), small.privateKey).toString('base64url')}`;
    for (const a of [await assertion(server, id, first), bySmallKey]) {
      const res = await introspect(a);
      expect([res.status, res.json.error_description]).toEqual([
        401,
        "the client's key for this assertion is not a valid public key (RFC 7517, RFC 7518 section 6)",
      ]);
    }
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  it('a jwks_uri the operator did not set never reaches loopback or a private address: refused before connecting', async () => {
    const keys = await jwksServer({ kind: 'json', body: jwksOf(first) });
    const cases: [string, string][] = [
      [`https://localhost:${keys.port}/jwks`, 'its host resolves to an address that is not public'],
      [`https://127.0.0.1:${keys.port}/jwks`, 'it names an address that is not public'],
      [`https://[::1]:${keys.port}/jwks`, 'it names an address that is not public'],
      ['https://10.0.0.1/jwks', 'it names an address that is not public'],
      ['https://169.254.169.254/latest/meta-data', 'it names an address that is not public'],
      [keys.url, 'it is not an https URL'],
    ];
    for (const [uri, reason] of cases) {
      const id = await keyApp({ jwksUri: uri });
      const res = await introspect(await assertion(server, id, first));
      expect([res.status, res.json.error_description], uri).toEqual([401, `the client's jwks_uri could not be used: ${reason}`]);
    }
    expect(keys.connections()).toBe(0);
  });
});

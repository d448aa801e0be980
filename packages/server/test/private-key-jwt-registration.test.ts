import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_JWKS_MAX_BYTES } from '../src/config/defaults.js';
import { checkClientKeys } from '../src/oauth/client-keys.js';
import { assertion, assertionFields, type ClientKey, clientKey, jwksOf } from './client-assertions.js';
import { dialects, postForm, startServer, type TestServer } from './helpers.js';

/**
 * Dynamic client registration of private_key_jwt clients (RFC 7591 §2 `token_endpoint_auth_method`, `jwks`,
 * `jwks_uri`, `token_endpoint_auth_signing_alg`; RFC 7592 reads and updates), over open registration: public
 * keys only, valid, bounded; a jwks_uri over https to a public host only.
 */

// biome-ignore lint/suspicious/noExplicitAny: assertions read nested fields of answers whose shape is what the test checks
type Json = Record<string, any>;

describe.each(dialects())('registering a private_key_jwt client (%s)', (dialect) => {
  let server: TestServer;
  let es: ClientKey;
  let ps: ClientKey;

  beforeAll(async () => {
    server = await startServer(dialect, { registration: 'open' });
    [es, ps] = await Promise.all([clientKey('ES256'), clientKey('PS256')]);
  });
  afterAll(async () => server.close());

  const send = async (method: string, path: string, body?: unknown, token?: string) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...(token && { authorization: `Bearer ${token}` }) },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json().catch(() => ({}))) as Json };
  };
  const metadata = (extra: Json) => ({
    redirect_uris: ['https://rp.example/cb'],
    grant_types: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_method: 'private_key_jwt',
    ...extra,
  });
  const register = (extra: Json) => send('POST', '/oauth/register', metadata(extra));
  const refused = async (extra: Json, description: RegExp) => {
    const res = await register(extra);
    expect([res.status, res.json.error], JSON.stringify(res.json)).toEqual([400, 'invalid_client_metadata']);
    expect(res.json.error_description).toMatch(description);
  };
  const introspect = (a: string) => postForm(server, '/oauth/introspect', { token: 'x', ...assertionFields(a) });

  it('rfc7591 §2 private_key_jwt with jwks: no secret issued, the keys in the answer, and its assertions authenticate', async () => {
    const res = await register({ jwks: jwksOf(es), token_endpoint_auth_signing_alg: 'ES256' });
    expect(res.status, JSON.stringify(res.json)).toBe(201);
    expect(res.json).toMatchObject({
      token_endpoint_auth_method: 'private_key_jwt',
      token_endpoint_auth_signing_alg: 'ES256',
      jwks: jwksOf(es),
    });
    expect(res.json).not.toHaveProperty('client_secret');
    expect(res.json).not.toHaveProperty('client_secret_expires_at');
    const id = res.json.client_id as string;
    expect((await introspect(await assertion(server, id, es))).status).toBe(200);

    // rfc7592 §2.1 read: the same metadata.
    const read = await send('GET', `/oauth/register/${id}`, undefined, res.json.registration_access_token);
    expect(read.json).toMatchObject({ token_endpoint_auth_method: 'private_key_jwt', jwks: jwksOf(es) });
    // rfc7592 §2.2 update: another key added, and PS256 the one algorithm its assertions may use.
    const updated = await send(
      'PUT',
      `/oauth/register/${id}`,
      metadata({ client_id: id, jwks: jwksOf(ps, es), token_endpoint_auth_signing_alg: 'PS256' }),
      read.json.registration_access_token,
    );
    expect(updated.status, JSON.stringify(updated.json)).toBe(200);
    expect(updated.json).toMatchObject({ jwks: jwksOf(ps, es), token_endpoint_auth_signing_alg: 'PS256' });
    expect((await introspect(await assertion(server, id, ps))).status).toBe(200);
    const old = await introspect(await assertion(server, id, es));
    expect([old.status, old.json.error_description]).toEqual([
      401,
      'the client registered token_endpoint_auth_signing_alg PS256: its assertions must use it',
    ]);
    // The method cannot change to a secret one: a new client for that.
    const toSecret = await send(
      'PUT',
      `/oauth/register/${id}`,
      metadata({ client_id: id, token_endpoint_auth_method: 'client_secret_basic' }),
      updated.json.registration_access_token,
    );
    expect([toSecret.status, toSecret.json.error]).toEqual([400, 'invalid_client_metadata']);
    expect(toSecret.json.error_description).toMatch(/cannot change between none, a client secret method and private_key_jwt/);
  });

  it('rfc7591 §2 private_key_jwt with a jwks_uri on a public https host: registered and returned (fetched on use)', async () => {
    const res = await register({ jwks_uri: 'https://keys.rp.example/jwks.json' });
    expect(res.status, JSON.stringify(res.json)).toBe(201);
    expect(res.json).toMatchObject({ token_endpoint_auth_method: 'private_key_jwt', jwks_uri: 'https://keys.rp.example/jwks.json' });
    expect(res.json).not.toHaveProperty('client_secret');
    expect(res.json).not.toHaveProperty('jwks');
  });

  it('a jwks_uri on this machine, a private network, link-local or plain http is refused at registration', async () => {
    for (const uri of [
      'https://127.0.0.1/jwks',
      'https://localhost/jwks',
      'https://keys.localhost/jwks',
      'https://localhost./jwks',
      'https://10.0.0.5/jwks',
      'https://192.168.1.1/jwks',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/jwks',
      'https://[::ffff:10.0.0.1]/jwks',
      'https://[fd00::1]/jwks',
    ]) {
      await refused({ jwks_uri: uri }, /jwks_uri must be on a public host/);
    }
    await refused({ jwks_uri: 'http://keys.rp.example/jwks' }, /jwks_uri must be an https URL/);
    await refused({ jwks_uri: 'https://user:pw@keys.rp.example/jwks' }, /credentials or a fragment/);
    await refused({ jwks_uri: 'not a url' }, /absolute URL/);
    await refused({ jwks_uri: 42 }, /jwks_uri must be a string/);
  });

  it('jwks: public keys only, valid, usable, bounded; exactly one of jwks and jwks_uri; an allowed algorithm', async () => {
    const rsaPrivate = { kty: 'RSA', n: 'AQAB', e: 'AQAB', d: 'AQAB' };
    await refused({ jwks: { keys: [{ ...es.publicJwk, d: 'AAAA' }] } }, /public keys only/);
    await refused({ jwks: { keys: [rsaPrivate] } }, /public keys only/);
    await refused({ jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] } }, /public keys only/);
    await refused({ jwks: { keys: [] } }, /must hold 1-20 keys/);
    await refused({ jwks: es.publicJwk }, /must be a JWK Set/);
    await refused({ jwks: { keys: ['x'] } }, /every key must be a JWK object with a kty/);
    await refused({ jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'AAAA', y: 'AAAA' }] } }, /not a valid public JWK/);
    await refused({ jwks: { keys: [{ kty: 'RSA', n: 'AQAB', e: 'AQAB' }] } }, /no key that can verify/);
    await refused({ jwks: { keys: [{ ...es.publicJwk, use: 'enc' }] } }, /no key that can verify/);
    // Larger than a registration body may be; the operator's --jwks file is held to the same bound.
    const big = { keys: [{ ...es.publicJwk, x5c: ['A'.repeat(CLIENT_JWKS_MAX_BYTES)] }] };
    await expect(checkClientKeys({ jwks: big }, { operator: true, fapi2: false })).rejects.toThrow(/larger than 32768 bytes/);
    await refused({ jwks: jwksOf(es), jwks_uri: 'https://keys.rp.example/jwks' }, /jwks or jwks_uri, not both/);
    await refused({}, /needs the client's public keys: jwks or jwks_uri/);
    await refused({ jwks: jwksOf(es), token_endpoint_auth_signing_alg: 'HS256' }, /must be one of PS256, ES256, EdDSA, RS256/);
    await refused({ jwks: jwksOf(es), token_endpoint_auth_signing_alg: 'none' }, /must be one of/);
    await refused({ jwks: jwksOf(es), token_endpoint_auth_signing_alg: 'PS256' }, /no key that can verify PS256/);
    // Keys with another method would never be used: refused rather than ignored.
    await refused(
      { token_endpoint_auth_method: 'client_secret_basic', jwks: jwksOf(es) },
      /only with token_endpoint_auth_method private_key_jwt/,
    );
    await refused({ application_type: 'native', jwks: jwksOf(es) }, /native application is a public client/);
  });
});

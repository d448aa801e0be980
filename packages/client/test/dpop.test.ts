import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { calculateJwkThumbprint, decodeProtectedHeader, EmbeddedJWK, jwtVerify } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import {
  accessTokenHash,
  asksForNonce,
  dpopKeyFromJwk,
  dpopProof,
  dpopTransport,
  dpopWhenRequired,
  generateDpopKey,
  htuOf,
  keyOfSession,
  memoryNonces,
  serverUsesDpop,
} from '../src/dpop.js';
import type { HttpResponse, Transport } from '../src/http.js';
import { deleteDpopKeys, dpopKeysPath, readDpopKey, writeDpopKey } from '../src/storage/dpop.js';
import type { StoredSession } from '../src/storage/session.js';

const homes: string[] = [];
afterEach(() => {
  for (const h of homes.splice(0)) rmSync(h, { recursive: true, force: true });
});
function fileEnv(): NodeJS.ProcessEnv {
  const home = mkdtempSync(join(tmpdir(), 'authcli-dpop-'));
  homes.push(home);
  return { XDG_CONFIG_HOME: home, AUTHCLI_STORAGE: 'file' };
}

const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;

function response(status: number, body: unknown, headers: Record<string, string> = {}): HttpResponse {
  return { status, body, headers: new Headers(headers) };
}

describe('rfc9449 §4.2 DPoP proofs', () => {
  it('typ dpop+jwt, ES256, the public key (and only it) in jwk; htm, htu, iat, a new jti every time; verifies with the embedded key', async () => {
    const key = await generateDpopKey();
    const proof = await dpopProof(key, { htm: 'post', htu: 'https://as.example/token' });
    const header = decodeProtectedHeader(proof);
    expect(header).toEqual({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.publicJwk });
    expect(header.jwk).not.toHaveProperty('d');
    const { payload } = await jwtVerify(proof, EmbeddedJWK, { typ: 'dpop+jwt', algorithms: ['ES256'] });
    expect(payload).toMatchObject({ htm: 'POST', htu: 'https://as.example/token' });
    expect(Math.abs((payload.iat as number) - Date.now() / 1000)).toBeLessThan(5);
    expect(payload).not.toHaveProperty('nonce');
    expect(payload).not.toHaveProperty('ath');
    const again = claimsOf(await dpopProof(key, { htm: 'POST', htu: 'https://as.example/token' }));
    expect(typeof payload.jti).toBe('string');
    expect(again.jti).not.toBe(payload.jti);
    expect(key.jkt).toBe(await calculateJwkThumbprint(header.jwk!));
  });

  it('htu drops the query and fragment, keeps the path', () => {
    expect(htuOf('https://rs.example/api/items?page=2&x=y#top')).toBe('https://rs.example/api/items');
    expect(htuOf('https://rs.example')).toBe('https://rs.example/');
    expect(htuOf('HTTPS://RS.Example:443/a%20b?q')).toBe('https://rs.example/a%20b');
  });

  it('rfc9449 §7.1 ath is the base64url SHA-256 of the access token (the RFC example), and the nonce when given', async () => {
    expect(accessTokenHash('Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU')).toBe('fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo');
    const key = await generateDpopKey();
    const proof = await dpopProof(key, {
      htm: 'GET',
      htu: 'https://rs.example/me?x=1',
      accessToken: 'Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU',
      nonce: 'n-1',
    });
    expect(claimsOf(proof)).toMatchObject({
      htu: 'https://rs.example/me',
      ath: 'fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo',
      nonce: 'n-1',
    });
  });

  it('a stored key comes back with the same thumbprint; anything but a P-256 private key is refused', async () => {
    const key = await generateDpopKey();
    expect((await dpopKeyFromJwk(JSON.parse(JSON.stringify(key.privateJwk)))).jkt).toBe(key.jkt);
    await expect(dpopKeyFromJwk(key.publicJwk)).rejects.toThrow(/not a P-256 private key/);
    await expect(dpopKeyFromJwk({ kty: 'RSA', n: 'x', e: 'AQAB', d: 'y' })).rejects.toThrow(/not a P-256 private key/);
  });

  it('rfc9449 §5.1 DPoP is used only when the metadata lists ES256', () => {
    expect(serverUsesDpop({ dpop_signing_alg_values_supported: ['ES256', 'EdDSA'] })).toBe(true);
    expect(serverUsesDpop({ dpop_signing_alg_values_supported: ['EdDSA'] })).toBe(false);
    expect(serverUsesDpop({})).toBe(false);
  });
});

describe('rfc9449 §8, §9 nonces', () => {
  it('use_dpop_nonce from the token endpoint (400) and from a resource (401 WWW-Authenticate) is recognized', () => {
    expect(asksForNonce(response(400, { error: 'use_dpop_nonce' }))).toBe(true);
    expect(asksForNonce(response(400, { error: 'invalid_dpop_proof' }))).toBe(false);
    expect(asksForNonce(response(401, '', { 'www-authenticate': 'DPoP error="use_dpop_nonce", algs="ES256"' }))).toBe(true);
    expect(asksForNonce(response(401, '', { 'www-authenticate': 'DPoP error="invalid_token"' }))).toBe(false);
    expect(asksForNonce(response(200, {}))).toBe(false);
  });

  it('one retry with the DPoP-Nonce of the error; the nonce is remembered per server for the next request; each proof new', async () => {
    const key = await generateDpopKey();
    const seen: { url: string; headers: Record<string, string> }[] = [];
    let nonce = 'n-1';
    const server: Transport = async (url, init) => {
      seen.push({ url, headers: init.headers ?? {} });
      const sent = claimsOf(init.headers!.dpop!).nonce;
      if (sent !== nonce) return response(400, { error: 'use_dpop_nonce' }, { 'dpop-nonce': nonce });
      return response(200, { ok: true }, { 'dpop-nonce': nonce });
    };
    const nonces = memoryNonces();
    const transport = dpopTransport(server, key, { nonces });
    expect((await transport('https://as.example/token', { method: 'POST', form: { a: 'b' } })).status).toBe(200);
    expect(seen).toHaveLength(2);
    expect(claimsOf(seen[0]!.headers.dpop!)).not.toHaveProperty('nonce');
    expect(claimsOf(seen[1]!.headers.dpop!)).toMatchObject({ nonce: 'n-1', htm: 'POST', htu: 'https://as.example/token' });
    expect(claimsOf(seen[0]!.headers.dpop!).jti).not.toBe(claimsOf(seen[1]!.headers.dpop!).jti);
    expect(nonces.get('https://as.example')).toBe('n-1');

    // Next time: the remembered nonce first, no retry.
    await transport('https://as.example/token', { method: 'POST' });
    expect(seen).toHaveLength(3);

    // A server that keeps asking is not asked forever: one retry, then its answer.
    nonce = 'never-matches';
    const always: Transport = async (url, init) => {
      seen.push({ url, headers: init.headers ?? {} });
      return response(400, { error: 'use_dpop_nonce' }, { 'dpop-nonce': `n-${seen.length}` });
    };
    const res = await dpopTransport(always, key, { nonces })('https://as.example/token', { method: 'POST' });
    expect(res.status).toBe(400);
    expect(seen).toHaveLength(5);
  });

  it('rfc9449 §5.2 Bearer until the token endpoint asks for a proof (invalid_dpop_proof, or invalid_grant naming DPoP); bound from then on', async () => {
    for (const refusal of [
      { error: 'invalid_dpop_proof', error_description: 'this application requires DPoP' },
      { error: 'invalid_grant', error_description: 'DPoP proof JWT not provided' },
    ]) {
      const seen: Record<string, string>[] = [];
      const server: Transport = async (_url, init) => {
        seen.push(init.headers ?? {});
        return init.headers?.dpop ? response(200, { access_token: 'at', token_type: 'DPoP' }) : response(400, refusal);
      };
      const onDemand = dpopWhenRequired(server, async () => memoryNonces());
      expect(onDemand.key()).toBeUndefined();
      const res = await onDemand.transport('https://as.example/token', { method: 'POST', form: { grant_type: 'x' } });
      expect(res.status).toBe(200);
      expect(seen.map((h) => Boolean(h.dpop))).toEqual([false, true]);
      const key = onDemand.key()!;
      expect(decodeProtectedHeader(seen[1]!.dpop!).jwk).toEqual(key.publicJwk);
      await onDemand.transport('https://as.example/token', { method: 'POST' });
      expect(seen.map((h) => Boolean(h.dpop))).toEqual([false, true, true]);
      expect(onDemand.key()).toBe(key);
    }
    // Any other refusal is the answer, sent once, and nothing is bound.
    for (const body of [
      { error: 'invalid_grant', error_description: 'the code was used' },
      { error: 'authorization_pending' },
      { error: 'invalid_client' },
      'not json',
    ]) {
      let sent = 0;
      const onDemand = dpopWhenRequired(
        async () => {
          sent++;
          return response(400, body);
        },
        async () => memoryNonces(),
      );
      expect((await onDemand.transport('https://as.example/token', { method: 'POST' })).status).toBe(400);
      expect(sent).toBe(1);
      expect(onDemand.key()).toBeUndefined();
    }
  });

  it('a resource request sends Authorization: DPoP and ath, retrying on 401 use_dpop_nonce', async () => {
    const key = await generateDpopKey();
    const sent: Record<string, string>[] = [];
    const rs: Transport = async (_url, init) => {
      sent.push(init.headers!);
      return claimsOf(init.headers!.dpop!).nonce === 'rs-n'
        ? response(200, { sub: 'a' })
        : response(401, '', { 'www-authenticate': 'DPoP error="use_dpop_nonce"', 'dpop-nonce': 'rs-n' });
    };
    const res = await dpopTransport(rs, key, { nonces: memoryNonces(), accessToken: 'tok' })('https://rs.example/me?q=1', {
      method: 'GET',
    });
    expect(res.status).toBe(200);
    expect(sent).toHaveLength(2);
    expect(sent[1]!.authorization).toBe('DPoP tok');
    expect(claimsOf(sent[1]!.dpop!)).toMatchObject({ htm: 'GET', htu: 'https://rs.example/me', ath: accessTokenHash('tok') });
  });
});

describe('the DPoP key beside the credentials', () => {
  const session = (jkt: string | undefined): StoredSession => ({
    client_id: 'authcli',
    access_token: 'at',
    token_type: jkt ? 'DPoP' : 'Bearer',
    dpop_jkt: jkt,
    expires_at: Date.now() + 60_000,
    scope: '',
    subject: 's',
    username: undefined,
    obtained_at: Date.now(),
  });

  it('kept in a 0600 file as a JWK, found by issuer and thumbprint, removed with the sign-in', async () => {
    const env = fileEnv();
    const key = await generateDpopKey();
    expect(await writeDpopKey('https://as.example', key.jkt, key.privateJwk, env)).toBe('file');
    const { statSync } = await import('node:fs');
    expect(statSync(dpopKeysPath(env)).mode & 0o777).toBe(0o600);
    expect(await readDpopKey('https://as.example', key.jkt, env)).toEqual(key.privateJwk);
    expect((await keyOfSession('https://as.example', session(key.jkt), env))?.jkt).toBe(key.jkt);
    expect(await keyOfSession('https://as.example', session(undefined), env)).toBeUndefined();

    const next = await generateDpopKey();
    await writeDpopKey('https://as.example', next.jkt, next.privateJwk, env);
    await deleteDpopKeys('https://as.example', env, next.jkt);
    expect(await readDpopKey('https://as.example', key.jkt, env)).toBeUndefined();
    expect(await readDpopKey('https://as.example', next.jkt, env)).toEqual(next.privateJwk);
    await deleteDpopKeys('https://as.example', env);
    expect(() => statSync(dpopKeysPath(env))).toThrow(/ENOENT/);
  });

  it('a bound sign-in whose key is not here is refused with what to do, never treated as Bearer', async () => {
    const env = fileEnv();
    const key = await generateDpopKey();
    await expect(keyOfSession('https://as.example', session(key.jkt), env)).rejects.toThrow(
      'the sign-in to https://as.example is bound to a DPoP key that is not on this machine (were the credentials copied here?); run `authcli login`',
    );
    await expect(keyOfSession('https://as.example', { ...session(undefined), token_type: 'DPoP' }, env)).rejects.toThrow(
      /not on this machine/,
    );
  });
});

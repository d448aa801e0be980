import { generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { calculateJwkThumbprint, decodeJwt, exportJWK, generateKeyPair, type CryptoKey, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DPOP_IAT_WINDOW_SECONDS, DPOP_NONCE_WINDOW_SECONDS } from '../src/config/defaults.js';
import { accessTokenHash, jwkThumbprint, normalizeHtu } from '../src/oauth/dpop.js';
import { registerApplication } from '../src/oauth/registration.js';
import {
  authorize,
  basic,
  Browser,
  decideOnDevicePage,
  deviceAuthorization,
  DEVICE_GRANT,
  dialects,
  ownClock,
  postForm,
  secondInstance,
  seedApp,
  seedUser,
  signedInBrowser,
  startServer,
  tokenRequest,
  type TestServer,
} from './helpers.js';
import { testRows } from '../src/testing.js';

/**
 * RFC 9449 (DPoP), https://www.rfc-editor.org/rfc/rfc9449: the proof checks
 * of §4.3 one by one with their negative cases, token binding at the token
 * endpoint for every grant (§5, §6.1, §10), the protected resource (§7.1),
 * introspection (§6.2) and server nonces (§8, §9), on both stores, replays
 * across two instances of one database included.
 */

interface Key {
  alg: string;
  privateKey: CryptoKey;
  jwk: JWK;
  jkt: string;
}

async function newKey(alg = 'ES256'): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = await exportJWK(publicKey);
  return { alg, privateKey, jwk, jkt: await calculateJwkThumbprint(jwk) };
}

interface ProofOptions {
  htm?: string;
  htu?: string;
  iat?: number;
  jti?: string;
  nonce?: string;
  ath?: string;
  typ?: string;
  jwk?: JWK;
  claims?: Record<string, unknown>;
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

/** A second server instance on the first one's database, with its configuration (issuer included) and clock. */

/** A POST with the header lines exactly as given (fetch would join two DPoP headers into one line). */
function rawPost(
  url: string,
  body: string,
  headers: Record<string, string | string[]>,
): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(text) as Record<string, unknown> }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe.each(dialects())('rfc9449 DPoP (%s)', (dialect) => {
  let server: TestServer;
  let pub: string;
  let conf: { id: string; secret: string };
  const redirectUri = 'https://app.example/callback';
  let key: Key;

  beforeAll(async () => {
    // Nonces are their own suite below: here proofs are checked without them.
    server = await startServer(dialect, { dpopNonce: false });
    await seedUser(server, 'alice', { email: 'alice@example.com' });
    pub = (await seedApp(server, { callbackUrls: [redirectUri] })).app.clientId;
    const c = await seedApp(server, { name: 'Conf', kind: 'confidential', callbackUrls: [redirectUri] });
    conf = { id: c.app.clientId, secret: c.clientSecret! };
    key = await newKey();
  });
  afterAll(async () => server.close());

  const tokenUrl = () => `${server.url}/oauth/token`;
  const nowSeconds = () => Math.floor(server.clock.now() / 1000);

  async function proof(k: Key, o: ProofOptions = {}): Promise<string> {
    return new SignJWT({
      htm: o.htm ?? 'POST',
      htu: o.htu ?? tokenUrl(),
      iat: o.iat ?? nowSeconds(),
      jti: o.jti ?? randomBytes(16).toString('base64url'),
      ...(o.nonce !== undefined && { nonce: o.nonce }),
      ...(o.ath !== undefined && { ath: o.ath }),
      ...o.claims,
    })
      .setProtectedHeader({ alg: k.alg, typ: o.typ ?? 'dpop+jwt', jwk: o.jwk ?? k.jwk })
      .sign(k.privateKey);
  }

  /** One browser for the suite: signed in once (seeded), consent remembered, so a code costs two requests. */
  let browser: Browser | undefined;
  async function code(clientId = pub, extra: Record<string, string> = {}) {
    browser ??= await signedInBrowser(server);
    const r = await authorize(server, browser, { clientId, redirectUri, scope: 'openid profile offline_access', extra });
    return { code: r.callback.searchParams.get('code')!, verifier: r.verifier, callback: r.callback };
  }

  const codeFields = (c: { code: string; verifier: string }, clientId = pub) => ({
    grant_type: 'authorization_code',
    code: c.code,
    redirect_uri: redirectUri,
    client_id: clientId,
    code_verifier: c.verifier,
  });

  async function exchange(c: { code: string; verifier: string }, dpop?: string, clientId = pub) {
    return tokenRequest(server, codeFields(c, clientId), dpop === undefined ? {} : { dpop });
  }

  /** A code exchange with a fresh code and the given proof; the answer's error, or 'ok'. */
  async function outcome(dpop: string | Promise<string>): Promise<string> {
    const res = await exchange(await code(), await dpop);
    if (res.status === 200) return 'ok';
    expect(res.status).toBe(400);
    return `${res.json.error}`;
  }

  describe('§4.3 proof checks at the token endpoint', () => {
    it('§5, §6.1 a valid proof: token_type DPoP and an access token with cnf.jkt of the proof key', async () => {
      const res = await exchange(await code(), await proof(key));
      expect(res.status).toBe(200);
      expect(res.json.token_type).toBe('DPoP');
      expect(decodeJwt(res.json.access_token).cnf).toEqual({ jkt: key.jkt });
      // Nonces are off in this suite: no DPoP-Nonce header.
      expect(res.headers.get('dpop-nonce')).toBeNull();
    });

    it('§4.3 (1) no DPoP header: a Bearer token as before', async () => {
      const res = await exchange(await code());
      expect(res.status).toBe(200);
      expect(res.json.token_type).toBe('Bearer');
      expect(decodeJwt(res.json.access_token).cnf).toBeUndefined();
    });

    it('§4.3 (1) two DPoP header lines: invalid_dpop_proof', async () => {
      const c = await code();
      const res = await rawPost(tokenUrl(), new URLSearchParams(codeFields(c)).toString(), { dpop: [await proof(key), await proof(key)] });
      expect(res).toMatchObject({ status: 400, json: { error: 'invalid_dpop_proof' } });
      // The code was not consumed by the refused request.
      expect((await exchange(c, await proof(key))).status).toBe(200);
    });

    it('§4.3 (2) not a JWT: invalid_dpop_proof', async () => {
      expect(await outcome('not-a-jwt')).toBe('invalid_dpop_proof');
      expect(await outcome(`${b64({ typ: 'dpop+jwt', alg: 'ES256', jwk: key.jwk })}.e30`)).toBe('invalid_dpop_proof');
    });

    it('§4.3 (4) typ other than dpop+jwt: invalid_dpop_proof', async () => {
      expect(await outcome(proof(key, { typ: 'JWT' }))).toBe('invalid_dpop_proof');
      expect(await outcome(proof(key, { typ: 'application/dpop+jwt' }))).toBe('invalid_dpop_proof');
    });

    it('§4.3 (5) alg none and symmetric HS256: invalid_dpop_proof', async () => {
      const claims = { htm: 'POST', htu: tokenUrl(), iat: nowSeconds(), jti: 'none-1' };
      expect(await outcome(`${b64({ typ: 'dpop+jwt', alg: 'none', jwk: key.jwk })}.${b64(claims)}.`)).toBe('invalid_dpop_proof');
      const secret = randomBytes(32);
      const hs = await new SignJWT({ ...claims, jti: 'hs-1' })
        .setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt', jwk: { kty: 'oct', k: secret.toString('base64url') } as JWK })
        .sign(secret);
      expect(await outcome(hs)).toBe('invalid_dpop_proof');
    });

    it('§4.3 (5) every advertised algorithm is accepted: ES256, PS256, RS256, EdDSA, Ed25519', async () => {
      const meta = await (await fetch(`${server.url}/.well-known/openid-configuration`)).json();
      expect(meta.dpop_signing_alg_values_supported).toEqual(['ES256', 'PS256', 'RS256', 'EdDSA', 'Ed25519']);
      for (const alg of meta.dpop_signing_alg_values_supported as string[]) {
        const k = await newKey(alg);
        // RFC 7638: the server's thumbprint is jose's.
        expect(jwkThumbprint(k.jwk), alg).toBe(k.jkt);
        const res = await exchange(await code(), await proof(k));
        expect(res.status, alg).toBe(200);
        expect(decodeJwt(res.json.access_token).cnf, alg).toEqual({ jkt: k.jkt });
      }
    });

    it('§4.3 (7) a private key in the jwk header: invalid_dpop_proof', async () => {
      const priv = await exportJWK(key.privateKey);
      expect(priv.d).toBeTruthy();
      expect(await outcome(proof(key, { jwk: priv }))).toBe('invalid_dpop_proof');
    });

    it('§4.3 (7) a known (imported, kept) key with use other than sig, or another alg, is still refused', async () => {
      expect(await outcome(proof(key))).toBe('ok');
      expect(await outcome(proof(key, { jwk: { ...key.jwk, use: 'enc' } }))).toBe('invalid_dpop_proof');
      expect(await outcome(proof(key, { jwk: { ...key.jwk, alg: 'ES384' } }))).toBe('invalid_dpop_proof');
      expect(await outcome(proof(key, { jwk: { ...key.jwk, use: 'sig', alg: 'ES256' } }))).toBe('ok');
    });

    /** A proof put together by hand: any header, any claims, and the signature `signer` makes of the first two segments. */
    function handmade(header: Record<string, unknown>, signer: (input: Buffer) => Buffer, claims: Record<string, unknown> = {}): string {
      const input = `${b64({ typ: 'dpop+jwt', ...header })}.${b64({ htm: 'POST', htu: tokenUrl(), iat: nowSeconds(), jti: randomBytes(16).toString('base64url'), ...claims })}`;
      return `${input}.${signer(Buffer.from(input)).toString('base64url')}`;
    }
    const publicJwk = (k: KeyObject) => k.export({ format: 'jwk' }) as JWK;
    const es256 = (k: KeyObject) => (input: Buffer) => sign('sha256', input, { key: k, dsaEncoding: 'ieee-p1363' });
    const rs256 = (k: KeyObject) => (input: Buffer) => sign('sha256', input, k);

    /** The error and its description, for refusals whose reason matters. */
    async function refusal(dpop: string): Promise<string> {
      const res = await exchange(await code(), dpop);
      expect(res.status).toBe(400);
      return `${res.json.error}: ${res.json.error_description}`;
    }

    it('§4.3 (5), (7) a jwk that is not a key of the proof alg is refused, also once known: RFC 7518 §3.3, §3.4, RFC 8037 §3.1', async () => {
      const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' });
      const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const rsa1024 = generateKeyPairSync('rsa', { modulusLength: 1024 });
      const x25519 = generateKeyPairSync('x25519');
      const cases: [string, string, RegExp][] = [
        [
          'RSA key under ES256',
          handmade({ alg: 'ES256', jwk: publicJwk(rsa.publicKey) }, rs256(rsa.privateKey)),
          /not a key of the proof algorithm/,
        ],
        [
          'EC key under RS256',
          handmade({ alg: 'RS256', jwk: publicJwk(ec.publicKey) }, es256(ec.privateKey)),
          /not a key of the proof algorithm/,
        ],
        ['P-384 key under ES256', handmade({ alg: 'ES256', jwk: publicJwk(p384.publicKey) }, es256(p384.privateKey)), /not on the curve/],
        [
          'X25519 key under EdDSA',
          handmade({ alg: 'EdDSA', jwk: publicJwk(x25519.publicKey) }, () => randomBytes(64)),
          /not a key of the proof algorithm/,
        ],
        [
          '1024-bit RSA key',
          handmade({ alg: 'RS256', jwk: publicJwk(rsa1024.publicKey) }, rs256(rsa1024.privateKey)),
          /shorter than 2048 bits/,
        ],
        [
          'EC point off the curve',
          handmade({ alg: 'ES256', jwk: { ...publicJwk(ec.publicKey), y: publicJwk(ec.publicKey).x } }, es256(ec.privateKey)),
          /not a valid public key/,
        ],
      ];
      for (const [name, dpop, reason] of cases) {
        expect(await refusal(dpop), name).toMatch(reason);
        // Sent again (a refused proof's jti is not recorded): the key's verdict is remembered, and it is the same.
        expect(await refusal(dpop), name).toMatch(reason);
      }
      // The same P-256 key, known and accepted under ES256, is no RS256 key.
      expect(await outcome(handmade({ alg: 'ES256', jwk: publicJwk(ec.publicKey) }, es256(ec.privateKey)))).toBe('ok');
      expect(await refusal(handmade({ alg: 'RS256', jwk: publicJwk(ec.publicKey) }, es256(ec.privateKey)))).toMatch(
        /not a key of the proof algorithm/,
      );
    });

    it('§4.3 (2), (6) RFC 7515: a critical extension, b64, characters outside base64url or a DER ECDSA signature are refused', async () => {
      const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const jwk = publicJwk(ec.publicKey);
      expect(await outcome(handmade({ alg: 'ES256', jwk }, es256(ec.privateKey)))).toBe('ok');
      expect(await refusal(handmade({ alg: 'ES256', jwk, crit: ['exp'] }, es256(ec.privateKey)))).toMatch(/header extension/);
      expect(await refusal(handmade({ alg: 'ES256', jwk, b64: true }, es256(ec.privateKey)))).toMatch(/header extension/);
      const good = handmade({ alg: 'ES256', jwk }, es256(ec.privateKey));
      expect(await refusal(`${good.slice(0, -2)}+/`)).toMatch(/compact serialization/);
      expect(await refusal(`${good}=`)).toMatch(/compact serialization/);
      expect(await refusal(`${good.slice(0, good.lastIndexOf('.'))}.`)).toMatch(/compact serialization/);
      // RFC 7518 §3.4: r ‖ s, 64 bytes; the ASN.1 DER form OpenSSL signs by default is not a JWS signature.
      const der = handmade({ alg: 'ES256', jwk }, (input) => sign('sha256', input, ec.privateKey));
      expect(await refusal(der)).toMatch(/signature is invalid/);
    });

    it('§4.3 (6) RFC 7515 §2 only the canonical base64url of a signature verifies: no dropped last character, no stray bits', async () => {
      const rsa = generateKeyPairSync('rsa', { modulusLength: 3072 });
      // A 3072-bit signature is 384 bytes, 512 characters: a 513th would be dropped by a lenient decoder.
      const good = handmade({ alg: 'RS256', jwk: publicJwk(rsa.publicKey) }, rs256(rsa.privateKey));
      expect(await refusal(`${good}Q`)).toMatch(/signature is invalid/);
      expect(await outcome(good)).toBe('ok');
      // ES256: 64 bytes are 86 characters, the last of which carries 2 unused bits; setting them changes no byte.
      const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const es = handmade({ alg: 'ES256', jwk: publicJwk(ec.publicKey) }, es256(ec.privateKey));
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      const last = alphabet.indexOf(es.at(-1)!);
      const stray = `${es.slice(0, -1)}${alphabet[last | 1]}`;
      expect(stray).not.toBe(es);
      expect(Buffer.from(stray.split('.')[2]!, 'base64url').equals(Buffer.from(es.split('.')[2]!, 'base64url'))).toBe(true);
      expect(await refusal(stray)).toMatch(/signature is invalid/);
      expect(await outcome(es)).toBe('ok');
    });

    it('§4.3 (7) an RSA key too costly to verify with (exponent over 32 bits, modulus over 4096 bits) is refused unverified', async () => {
      const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const jwk = publicJwk(rsa.publicKey);
      const bigExponent = { ...jwk, e: Buffer.concat([Buffer.from([0x80]), randomBytes(383), Buffer.from([0x01])]).toString('base64url') };
      expect(await refusal(handmade({ alg: 'RS256', jwk: bigExponent }, rs256(rsa.privateKey)))).toMatch(/exponent is too large/);
      const modulus = randomBytes(520);
      modulus[0]! |= 0x80;
      modulus[519]! |= 0x01;
      const bigModulus = { kty: 'RSA', n: modulus.toString('base64url'), e: 'AQAB' } as JWK;
      expect(await refusal(handmade({ alg: 'PS256', jwk: bigModulus }, () => randomBytes(520)))).toMatch(/longer than 4096 bits/);
    });

    it('§4.3 (7) a jwk whose kty names an Object member (constructor, __proto__, toString) is invalid_dpop_proof, not a server error', async () => {
      for (const kty of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
        const header = b64({ typ: 'dpop+jwt', alg: 'ES256', jwk: { kty, crv: 'P-256', x: 'AA', y: 'AA' } });
        const claims = b64({ htm: 'POST', htu: tokenUrl(), iat: nowSeconds(), jti: randomBytes(8).toString('hex') });
        expect(await refusal(`${header}.${claims}.${randomBytes(64).toString('base64url')}`), kty).toMatch(
          /^invalid_dpop_proof: the DPoP proof jwk is not a key a proof can have/,
        );
      }
    });

    it('§4.3 (7) RFC 7517 §4.3 a jwk whose key_ops are anything but ["verify"], or whose ext is not a boolean, is refused', async () => {
      for (const key_ops of [['sign'], ['sign', 'verify'], [], 'verify']) {
        expect(await outcome(proof(key, { jwk: { ...key.jwk, key_ops } as JWK })), JSON.stringify(key_ops)).toBe('invalid_dpop_proof');
      }
      expect(await outcome(proof(key, { jwk: { ...key.jwk, ext: 'yes' } as unknown as JWK }))).toBe('invalid_dpop_proof');
      expect(await outcome(proof(key, { jwk: { ...key.jwk, key_ops: ['verify'], ext: true } }))).toBe('ok');
    });

    it('§4.3 RFC 7519 §4.1.4, §4.1.5 a proof whose exp has passed or whose nbf is ahead is refused', async () => {
      expect(await outcome(proof(key, { claims: { exp: nowSeconds() - 1 } }))).toBe('invalid_dpop_proof');
      expect(await outcome(proof(key, { claims: { nbf: nowSeconds() + 60 } }))).toBe('invalid_dpop_proof');
      expect(await outcome(proof(key, { claims: { exp: 'tomorrow' } }))).toBe('invalid_dpop_proof');
      expect(await outcome(proof(key, { claims: { exp: nowSeconds() + 60, nbf: nowSeconds() - 1 } }))).toBe('ok');
    });

    it('§4.3 (6) a signature by another key than the jwk header: invalid_dpop_proof', async () => {
      const other = await newKey();
      expect(await outcome(proof(other, { jwk: key.jwk }))).toBe('invalid_dpop_proof');
    });

    it('§4.3 (3) jti, htm, htu and iat are required', async () => {
      for (const missing of ['jti', 'htm', 'htu', 'iat']) {
        const claims = { htm: 'POST', htu: tokenUrl(), iat: nowSeconds(), jti: randomBytes(8).toString('hex') } as Record<string, unknown>;
        delete claims[missing];
        const jwt = await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk }).sign(key.privateKey);
        expect(await outcome(jwt), missing).toBe('invalid_dpop_proof');
      }
    });

    it('§4.3 (8) htm other than the request method: invalid_dpop_proof', async () => {
      expect(await outcome(proof(key, { htm: 'GET' }))).toBe('invalid_dpop_proof');
      expect(await outcome(proof(key, { htm: 'post' }))).toBe('invalid_dpop_proof');
    });

    it('§4.3 (9) htu of another endpoint, host or scheme: invalid_dpop_proof', async () => {
      const u = new URL(server.url);
      for (const htu of [
        `${server.url}/oauth/userinfo`,
        `${server.url}/oauth/token/`,
        `http://localhost:${u.port}/oauth/token`,
        `https://127.0.0.1:${u.port}/oauth/token`,
        `http://127.0.0.1:${Number(u.port) + 1}/oauth/token`,
        'oauth/token',
      ]) {
        expect(await outcome(proof(key, { htu })), htu).toBe('invalid_dpop_proof');
      }
    });

    it('§4.3 (9) htu query and fragment are ignored; RFC 3986 §6.2.2, §6.2.3 normalization', async () => {
      const u = new URL(server.url);
      for (const htu of [
        `${server.url}/oauth/token?foo=bar#frag`,
        `HTTP://127.0.0.1:${u.port}/oauth/%74oken`,
        `${server.url}/oauth/./x/../token`,
      ]) {
        expect(await outcome(proof(key, { htu })), htu).toBe('ok');
      }
      expect(normalizeHtu('https://AS.Example:443/a/%7e/%2f?q#f')).toBe('https://as.example/a/~/%2F');
      expect(normalizeHtu('https://as.example')).toBe('https://as.example/');
      expect(normalizeHtu('ftp://as.example/x')).toBeUndefined();
    });

    it('§4.3 (9) htu is the configured issuer, not the Host header (the server runs behind proxies)', async () => {
      const c = await code();
      const body = new URLSearchParams(codeFields(c)).toString();
      // The request reaches the server under another name; the proof names the issuer's URL and is accepted.
      const res = await rawPost(tokenUrl(), body, { host: 'proxy.internal', dpop: await proof(key) });
      expect(res.status).toBe(200);
      const c2 = await code();
      const forHost = await proof(key, { htu: 'http://proxy.internal/oauth/token' });
      const refused = await rawPost(tokenUrl(), new URLSearchParams(codeFields(c2)).toString(), { host: 'proxy.internal', dpop: forHost });
      expect(refused).toMatchObject({ status: 400, json: { error: 'invalid_dpop_proof' } });
    });

    it('§4.3 (11) iat too old or too far in the future: invalid_dpop_proof; at the window edge accepted', async () => {
      expect(await outcome(proof(key, { iat: nowSeconds() - DPOP_IAT_WINDOW_SECONDS - 5 }))).toBe('invalid_dpop_proof');
      expect(await outcome(proof(key, { iat: nowSeconds() + DPOP_IAT_WINDOW_SECONDS + 5 }))).toBe('invalid_dpop_proof');
      expect(await outcome(proof(key, { iat: nowSeconds() - DPOP_IAT_WINDOW_SECONDS + 1 }))).toBe('ok');
      expect(await outcome(proof(key, { iat: nowSeconds() + DPOP_IAT_WINDOW_SECONDS - 1 }))).toBe('ok');
      // A NumericDate may have a fraction (RFC 7519 §2): its jti is kept all the same (a whole millisecond, on both stores).
      expect(await outcome(proof(key, { iat: nowSeconds() + 0.12345 }))).toBe('ok');
    });

    it('§4.3 (12), §11.1 a replayed proof (same jti) is refused', async () => {
      const once = await proof(key);
      expect(await outcome(once)).toBe('ok');
      const res = await exchange(await code(), once);
      expect(res.json).toMatchObject({ error: 'invalid_dpop_proof', error_description: expect.stringMatching(/already used/) });
    });

    it('§4.3 (12), §11.1 a proof replayed at a second instance of the same database is refused', async () => {
      const second = await secondInstance(server);
      try {
        const once = await proof(key);
        expect(await outcome(once)).toBe('ok');
        const c = await code();
        const res = await postForm({ ...server, url: second.url }, '/oauth/token', codeFields(c), { dpop: once });
        expect(res.json.error).toBe('invalid_dpop_proof');
        // The second instance takes a fresh proof for the same code (the issuer is the same behind a balancer).
        const ok = await postForm({ ...server, url: second.url }, '/oauth/token', codeFields(c), { dpop: await proof(key) });
        expect(ok.status).toBe(200);
        expect(ok.json.token_type).toBe('DPoP');
      } finally {
        await second.close();
      }
    });

    it('§11.1 20 parallel requests with the same proof: exactly one is accepted', async () => {
      const codes = [];
      for (let i = 0; i < 20; i++) codes.push(await code());
      const once = await proof(key);
      const answers = await Promise.all(codes.map((c) => exchange(c, once)));
      expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
      expect(answers.filter((a) => a.json.error === 'invalid_dpop_proof')).toHaveLength(19);
    });

    it('§11.1 the jti rows are purged once out of the iat window', async () => {
      const rows = () => testRows(server.store).count('dpop_proofs');
      // A proof of its own (tests run in a random order: another's rows may not be there yet).
      expect((await exchange(await code(), await proof(key))).status).toBe(200);
      expect(await rows()).toBeGreaterThan(0);
      // A proof is accepted while |now - iat| is within the window, so its row lives until iat + window.
      await server.store.purgeExpired(server.clock.now() + (2 * DPOP_IAT_WINDOW_SECONDS + 2) * 1000);
      expect(await rows()).toBe(0);
    });
  });

  describe('§5, §10 binding at the token endpoint', () => {
    it('§10 dpop_jkt binds the code: another key is invalid_grant, no proof invalid_dpop_proof, the key itself succeeds', async () => {
      const c = await code(pub, { dpop_jkt: key.jkt });
      const other = await newKey();
      expect((await exchange(c, await proof(other))).json.error).toBe('invalid_grant');
      expect((await exchange(c)).json.error).toBe('invalid_dpop_proof');
      const res = await exchange(c, await proof(key));
      expect(res.status).toBe(200);
      expect(decodeJwt(res.json.access_token).cnf).toEqual({ jkt: key.jkt });
    });

    it('§5, §5.2 an application that requires DPoP (dpop_bound_access_tokens): no proof is invalid_dpop_proof, at every grant', async () => {
      const strict = await registerApplication(
        server.store,
        {
          name: 'Strict',
          kind: 'confidential',
          callbackUrls: [redirectUri],
          scopes: ['openid', 'profile', 'offline_access'],
          requireDpop: true,
        },
        server.clock.now(),
      );
      expect(strict.app.requireDpop).toBe(true);
      const id = strict.app.clientId;
      const authorization = basic(id, strict.clientSecret!);
      const c = await code(id);
      const refused = await tokenRequest(server, codeFields(c, id), { authorization });
      expect(refused.json).toMatchObject({ error: 'invalid_dpop_proof', error_description: expect.stringMatching(/requires DPoP/) });
      // The refused request did not use the code up.
      const ok = await tokenRequest(server, codeFields(c, id), { authorization, dpop: await proof(key) });
      expect(ok.status).toBe(200);
      expect(ok.json.token_type).toBe('DPoP');
      const refresh = { grant_type: 'refresh_token', refresh_token: ok.json.refresh_token as string };
      expect((await tokenRequest(server, refresh, { authorization })).json.error).toBe('invalid_dpop_proof');
      expect((await tokenRequest(server, refresh, { authorization, dpop: await proof(key) })).json.token_type).toBe('DPoP');
    });

    it('§10 dpop_jkt survives the sign-in that the authorization request waits for', async () => {
      const fresh = new Browser(server.url);
      const r = await authorize(server, fresh, { clientId: pub, redirectUri, scope: 'openid', extra: { dpop_jkt: key.jkt } });
      const c = { code: r.callback.searchParams.get('code')!, verifier: r.verifier };
      expect((await exchange(c, await proof(await newKey()))).json.error).toBe('invalid_grant');
      expect((await exchange(c, await proof(key))).status).toBe(200);
    });

    it('§10 a malformed dpop_jkt is refused at the authorization endpoint (invalid_request redirect)', async () => {
      const { callback } = await code(pub, { dpop_jkt: 'not a thumbprint' });
      expect(callback.searchParams.get('error')).toBe('invalid_request');
      expect(callback.searchParams.get('code')).toBeNull();
    });

    it('§5 a public client refresh token is bound: another key invalid_grant, no proof invalid_dpop_proof, the key rotates it', async () => {
      const first = await exchange(await code(), await proof(key));
      const rt = first.json.refresh_token as string;
      expect(rt).toBeTruthy();
      const refresh = (dpop?: string) =>
        tokenRequest(server, { grant_type: 'refresh_token', refresh_token: rt, client_id: pub }, dpop ? { dpop } : {});
      expect((await refresh(await proof(await newKey()))).json.error).toBe('invalid_grant');
      expect((await refresh()).json.error).toBe('invalid_dpop_proof');
      // Neither refused attempt used the token up or ended the sign-in.
      const ok = await refresh(await proof(key));
      expect(ok.status).toBe(200);
      expect(ok.json.token_type).toBe('DPoP');
      expect(decodeJwt(ok.json.access_token).cnf).toEqual({ jkt: key.jkt });
      const next = await tokenRequest(
        server,
        { grant_type: 'refresh_token', refresh_token: ok.json.refresh_token, client_id: pub },
        { dpop: await proof(key) },
      );
      expect(next.status).toBe(200);
    });

    it('§5 a revoked bound refresh token is invalid_grant for anyone, with or without the key', async () => {
      const rt = (await exchange(await code(), await proof(key))).json.refresh_token as string;
      expect((await postForm(server, '/oauth/revoke', { token: rt, client_id: pub })).status).toBe(200);
      const refresh = (headers: Record<string, string>) =>
        tokenRequest(server, { grant_type: 'refresh_token', refresh_token: rt, client_id: pub }, headers);
      expect((await refresh({})).json.error).toBe('invalid_grant');
      expect((await refresh({ dpop: await proof(key) })).json.error).toBe('invalid_grant');
    });

    it('§5 a confidential client refresh token is not key-bound; the new access token is bound to the proof given', async () => {
      const c = await code(conf.id);
      const first = await tokenRequest(
        server,
        { ...codeFields(c, conf.id) },
        { authorization: basic(conf.id, conf.secret), dpop: await proof(key) },
      );
      expect(first.status).toBe(200);
      const other = await newKey();
      const r1 = await tokenRequest(
        server,
        { grant_type: 'refresh_token', refresh_token: first.json.refresh_token },
        { authorization: basic(conf.id, conf.secret), dpop: await proof(other) },
      );
      expect(r1.status).toBe(200);
      expect(decodeJwt(r1.json.access_token).cnf).toEqual({ jkt: other.jkt });
      const r2 = await tokenRequest(
        server,
        { grant_type: 'refresh_token', refresh_token: r1.json.refresh_token },
        { authorization: basic(conf.id, conf.secret) },
      );
      expect(r2.status).toBe(200);
      expect(r2.json.token_type).toBe('Bearer');
    });

    it('§5 device code: the proof of the redeeming request binds the tokens and the refresh token', async () => {
      const d = (await deviceAuthorization(server, 'authcli', 'openid profile')).json;
      // A pending poll with a proof: the proof is checked (and used) like any other.
      const pending = await tokenRequest(
        server,
        { grant_type: DEVICE_GRANT, device_code: d.device_code, client_id: 'authcli' },
        { dpop: await proof(key) },
      );
      expect(pending.json.error).toBe('authorization_pending');
      await decideOnDevicePage(await signedInBrowser(server), d.user_code, 'approve');
      const res = await tokenRequest(
        server,
        { grant_type: DEVICE_GRANT, device_code: d.device_code, client_id: 'authcli' },
        { dpop: await proof(key) },
      );
      expect(res.status).toBe(200);
      expect(res.json.token_type).toBe('DPoP');
      expect(decodeJwt(res.json.access_token).cnf).toEqual({ jkt: key.jkt });
      const stolen = await tokenRequest(server, {
        grant_type: 'refresh_token',
        refresh_token: res.json.refresh_token,
        client_id: 'authcli',
      });
      expect(stolen.json.error).toBe('invalid_dpop_proof');
    });
  });

  describe('§7.1 the protected resource (userinfo) and §6.2 introspection', () => {
    let bound: { access_token: string };
    beforeAll(async () => {
      bound = (await exchange(await code(), await proof(key))).json as { access_token: string };
    });

    const userinfo = (headers: Record<string, string>, method = 'GET') => fetch(`${server.url}/oauth/userinfo`, { method, headers });
    const resourceProof = (k: Key, token: string, o: ProofOptions = {}) =>
      proof(k, { htm: 'GET', htu: `${server.url}/oauth/userinfo`, ath: accessTokenHash(token), ...o });

    it('§7.1 Authorization: DPoP with a proof (ath) is answered', async () => {
      const res = await userinfo({ authorization: `DPoP ${bound.access_token}`, dpop: await resourceProof(key, bound.access_token) });
      expect(res.status).toBe(200);
      expect((await res.json()).sub).toBeTruthy();
      const post = await userinfo(
        { authorization: `DPoP ${bound.access_token}`, dpop: await resourceProof(key, bound.access_token, { htm: 'POST' }) },
        'POST',
      );
      expect(post.status).toBe(200);
    });

    it('§4.3 (10) ath of another token, or none: 401 invalid_dpop_proof in the DPoP challenge', async () => {
      for (const ath of [accessTokenHash('another token'), undefined]) {
        const dpop = await proof(key, { htm: 'GET', htu: `${server.url}/oauth/userinfo`, ...(ath && { ath }) });
        const res = await userinfo({ authorization: `DPoP ${bound.access_token}`, dpop });
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toMatch(
          /^DPoP algs="ES256 PS256 RS256 EdDSA Ed25519", error="invalid_dpop_proof", error_description="[^"]+", Bearer realm="authcli"$/,
        );
      }
    });

    it('§7.1 a DPoP-bound token sent as Bearer (header or body) is refused: invalid_token in the DPoP challenge', async () => {
      const res = await userinfo({ authorization: `Bearer ${bound.access_token}` });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^DPoP algs="[^"]+", error="invalid_token", error_description="[^"]*DPoP-bound/);
      // Even with a valid proof beside it: the scheme is what downgrades.
      const withProof = await userinfo({
        authorization: `Bearer ${bound.access_token}`,
        dpop: await resourceProof(key, bound.access_token),
      });
      expect(withProof.status).toBe(401);
      const body = await fetch(`${server.url}/oauth/userinfo`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ access_token: bound.access_token }),
      });
      expect(body.status).toBe(401);
    });

    it('§7.1 the DPoP scheme without a proof, with another key, or with an unbound token is refused', async () => {
      const none = await userinfo({ authorization: `DPoP ${bound.access_token}` });
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toMatch(/error="invalid_dpop_proof"/);
      const other = await userinfo({
        authorization: `DPoP ${bound.access_token}`,
        dpop: await resourceProof(await newKey(), bound.access_token),
      });
      expect(other.status).toBe(401);
      expect(other.headers.get('www-authenticate')).toMatch(/^DPoP .*error="invalid_token"/);
      const bearer = (await exchange(await code())).json.access_token as string;
      const unbound = await userinfo({ authorization: `DPoP ${bearer}`, dpop: await resourceProof(key, bearer) });
      expect(unbound.status).toBe(401);
      expect(unbound.headers.get('www-authenticate')).toMatch(/^DPoP .*error="invalid_token"/);
      // A Bearer token as Bearer still works, and its challenges name both schemes.
      expect((await userinfo({ authorization: `Bearer ${bearer}` })).status).toBe(200);
      const bad = await userinfo({ authorization: 'Bearer nope' });
      expect(bad.headers.get('www-authenticate')).toMatch(
        /^Bearer realm="authcli", error="invalid_token", error_description="[^"]+", DPoP algs="[^"]+"$/,
      );
    });

    it('§4.3 (12) a proof replayed at the resource is refused', async () => {
      const once = await resourceProof(key, bound.access_token);
      expect((await userinfo({ authorization: `DPoP ${bound.access_token}`, dpop: once })).status).toBe(200);
      const again = await userinfo({ authorization: `DPoP ${bound.access_token}`, dpop: once });
      expect(again.status).toBe(401);
      expect(again.headers.get('www-authenticate')).toMatch(/error="invalid_dpop_proof"/);
    });

    it('§8, §7.1 browser clients (CORS): the DPoP header may be sent, DPoP-Nonce and WWW-Authenticate read', async () => {
      const origin = { origin: 'https://spa.example' };
      const preflight = await fetch(`${server.url}/oauth/token`, {
        method: 'OPTIONS',
        headers: { ...origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, dpop' },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('access-control-allow-headers')).toMatch(/\bdpop\b/);
      const res = await userinfo({ ...origin, authorization: `Bearer ${bound.access_token}` });
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      expect(res.headers.get('access-control-expose-headers')).toBe('dpop-nonce, www-authenticate');
    });

    it('§6.2, rfc7662 §2.2 introspection answers token_type DPoP and cnf.jkt for a bound token', async () => {
      const c = await code(conf.id);
      const t = await tokenRequest(server, codeFields(c, conf.id), { authorization: basic(conf.id, conf.secret), dpop: await proof(key) });
      const res = await postForm(
        server,
        '/oauth/introspect',
        { token: t.json.access_token },
        { authorization: basic(conf.id, conf.secret) },
      );
      expect(res.json).toMatchObject({ active: true, token_type: 'DPoP', cnf: { jkt: key.jkt } });
      const plain = await tokenRequest(server, codeFields(await code(conf.id), conf.id), { authorization: basic(conf.id, conf.secret) });
      const res2 = await postForm(
        server,
        '/oauth/introspect',
        { token: plain.json.access_token },
        { authorization: basic(conf.id, conf.secret) },
      );
      expect(res2.json).toMatchObject({ active: true, token_type: 'Bearer' });
      expect(res2.json.cnf).toBeUndefined();
    });
  });
});

describe.each(dialects())('rfc9449 §8, §9 server nonces (%s)', (dialect) => {
  let server: TestServer;
  let pub: string;
  let key: Key;
  const redirectUri = 'https://app.example/callback';

  beforeAll(async () => {
    server = await startServer(dialect); // AUTHCLI_DPOP_NONCE defaults to on
    await seedUser(server, 'alice');
    pub = (await seedApp(server, { callbackUrls: [redirectUri] })).app.clientId;
    key = await newKey();
  });
  afterAll(async () => server.close());

  const proof = (o: { nonce?: string; htm?: string; htu?: string; ath?: string } = {}) =>
    new SignJWT({
      htm: o.htm ?? 'POST',
      htu: o.htu ?? `${server.url}/oauth/token`,
      iat: Math.floor(server.clock.now() / 1000),
      jti: randomBytes(16).toString('base64url'),
      ...(o.nonce !== undefined && { nonce: o.nonce }),
      ...(o.ath !== undefined && { ath: o.ath }),
    })
      .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk })
      .sign(key.privateKey);

  let browser: Browser | undefined;
  async function codeFields() {
    browser ??= await signedInBrowser(server);
    const r = await authorize(server, browser, { clientId: pub, redirectUri, scope: 'openid' });
    return {
      grant_type: 'authorization_code',
      code: r.callback.searchParams.get('code')!,
      redirect_uri: redirectUri,
      client_id: pub,
      code_verifier: r.verifier,
    };
  }

  it('§8 a proof without a nonce gets 400 use_dpop_nonce and a DPoP-Nonce; the retry with it succeeds and gets the next one', async () => {
    const fields = await codeFields();
    const first = await tokenRequest(server, fields, { dpop: await proof() });
    expect(first.status).toBe(400);
    expect(first.json.error).toBe('use_dpop_nonce');
    const nonce = first.headers.get('dpop-nonce')!;
    expect(nonce).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const retry = await tokenRequest(server, fields, { dpop: await proof({ nonce }) });
    expect(retry.status).toBe(200);
    expect(retry.json.token_type).toBe('DPoP');
    expect(retry.headers.get('dpop-nonce')).toBe(nonce);
  });

  it('§8 a nonce not issued here: use_dpop_nonce with a fresh one', async () => {
    const res = await tokenRequest(server, await codeFields(), { dpop: await proof({ nonce: 'made-up' }) });
    expect(res.json.error).toBe('use_dpop_nonce');
    expect(res.headers.get('dpop-nonce')).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('§8 nonces rotate: the previous window nonce still works, an older one gets use_dpop_nonce and the new nonce', async () => {
    const clock = ownClock(server);
    const n1 = (await tokenRequest(server, await codeFields(), { dpop: await proof() })).headers.get('dpop-nonce')!;
    clock.advance(DPOP_NONCE_WINDOW_SECONDS * 1000);
    const ok = await tokenRequest(server, await codeFields(), { dpop: await proof({ nonce: n1 }) });
    expect(ok.status).toBe(200);
    const n2 = ok.headers.get('dpop-nonce')!;
    expect(n2).not.toBe(n1);
    clock.advance(DPOP_NONCE_WINDOW_SECONDS * 1000);
    const stale = await tokenRequest(server, await codeFields(), { dpop: await proof({ nonce: n1 }) });
    expect(stale.json.error).toBe('use_dpop_nonce');
    const n3 = stale.headers.get('dpop-nonce')!;
    expect([n1, n2]).not.toContain(n3);
    expect((await tokenRequest(server, await codeFields(), { dpop: await proof({ nonce: n2 }) })).status).toBe(200);
  });

  it('§8 a nonce from one instance is accepted by another of the same database', async () => {
    const second = await secondInstance(server);
    try {
      const nonce = (await tokenRequest(server, await codeFields(), { dpop: await proof() })).headers.get('dpop-nonce')!;
      const res = await postForm({ ...server, url: second.url }, '/oauth/token', await codeFields(), { dpop: await proof({ nonce }) });
      expect(res.status).toBe(200);
      expect(res.headers.get('dpop-nonce')).toBe(nonce);
    } finally {
      await second.close();
    }
  });

  it('§9 the resource does not require a nonce, but one that is stale gets 401 use_dpop_nonce in the DPoP challenge', async () => {
    const nonce = (await tokenRequest(server, await codeFields(), { dpop: await proof() })).headers.get('dpop-nonce')!;
    const token = (await tokenRequest(server, await codeFields(), { dpop: await proof({ nonce }) })).json.access_token as string;
    const htu = `${server.url}/oauth/userinfo`;
    const ath = accessTokenHash(token);
    const ok = await fetch(htu, { headers: { authorization: `DPoP ${token}`, dpop: await proof({ htm: 'GET', htu, ath }) } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('dpop-nonce')).toBe(nonce);
    const stale = await fetch(htu, {
      headers: { authorization: `DPoP ${token}`, dpop: await proof({ htm: 'GET', htu, ath, nonce: 'stale' }) },
    });
    expect(stale.status).toBe(401);
    expect(stale.headers.get('www-authenticate')).toMatch(/^DPoP algs="[^"]+", error="use_dpop_nonce"/);
    expect(stale.headers.get('dpop-nonce')).toBe(nonce);
  });
});

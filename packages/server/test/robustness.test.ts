import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { LIMITS } from '../src/config/defaults.js';
import { Browser, hidden, seedUser, signedInBrowser, signIn, startServer, type TestServer } from './helpers.js';

/** `n` bytes that look random but are the same in every run: SHA-256 in counter mode over `seed`. */
function noise(seed: number, n: number): Buffer {
  const blocks: Buffer[] = [];
  for (let k = 0; k * 32 < n; k++) blocks.push(createHash('sha256').update(`${seed}/${k}`).digest());
  return Buffer.concat(blocks).subarray(0, n);
}

/** A deterministic stream of hostile form bodies: noise bytes, broken escapes, odd names, huge values. */
function* hostileBodies(n: number): Generator<Buffer> {
  const pieces = [
    'grant_type=',
    'code=',
    'client_id=authcli',
    'device_code=',
    'token=',
    '%',
    '%zz',
    '%C3%28',
    '&&&',
    '==',
    '+',
    '__proto__=1',
    'constructor=x',
    'scope=openid',
    'refresh_token=',
    '\u0000',
    'é',
  ];
  for (let i = 0; i < n; i++) {
    if (i % 3 === 0) {
      yield noise(i, 1 + (i % 200));
    } else {
      let s = '';
      for (let k = 0; k < 1 + (i % 12); k++) s += pieces[(i * 7 + k * 13) % pieces.length]! + (k % 2 ? '&' : '');
      yield Buffer.from(s);
    }
  }
}

describe('bad input never crashes the server or gets a 5xx', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer('sqlite');
    await seedUser(server);
  });
  afterAll(async () => server.close());

  it('hostile form bodies at every form endpoint get a 4xx (or a valid protocol answer)', async () => {
    const b = await signedInBrowser(server);
    const page = await b.get('/device');
    const csrf = hidden(page.text, '_csrf');
    const targets = [
      '/oauth/token',
      '/oauth/device/authorization',
      '/oauth/revoke',
      '/oauth/userinfo',
      '/oauth/par',
      '/signin',
      '/consent',
      '/device',
      '/device/decision',
      '/dashboard/apps',
    ];
    const total = 120;
    // The answers' statuses by endpoint: what each one answers hostile input with.
    const answers: Record<string, Record<number, number>> = Object.fromEntries(targets.map((t) => [t, {}]));
    for (const body of hostileBodies(total)) {
      for (const path of targets) {
        const withCsrf = path.startsWith('/oauth') ? body : Buffer.concat([Buffer.from(`_csrf=${csrf}&`), body]);
        const res = await fetch(`${server.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: b.cookieHeader() },
          body: new Uint8Array(withCsrf),
        });
        await res.arrayBuffer();
        answers[path]![res.status] = (answers[path]![res.status] ?? 0) + 1;
        expect(res.status, `${path} ${JSON.stringify(withCsrf.toString('latin1'))}`).toBeLessThan(500);
      }
    }
    // Of the 120 bodies, 13 are well-formed forms; the rest are not (bytes that are no form, broken escapes,
    // invalid UTF-8, repeated names) and every endpoint answers those 400. The well-formed ones carry no
    // credentials: the client endpoints answer 401, the token endpoint 400 (grant_type missing, checked first),
    // the pages 400 (a field missing), the code page too until its wrong-entry limit, then 429.
    const wellFormed = 13;
    const codeLimit = LIMITS['user-code-ip'].limit;
    const unauthenticated = { 400: total - wellFormed, 401: wellFormed };
    expect(answers).toEqual({
      '/oauth/token': { 400: total },
      '/oauth/device/authorization': unauthenticated,
      '/oauth/revoke': unauthenticated,
      '/oauth/userinfo': unauthenticated,
      '/oauth/par': unauthenticated,
      '/signin': { 400: total },
      '/consent': { 400: total },
      '/device': { 400: total - wellFormed + codeLimit, 429: wellFormed - codeLimit },
      '/device/decision': { 400: total },
      '/dashboard/apps': { 400: total },
    });
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    // The stored state is intact: the built-in application and the user still work.
    expect((await server.store.applications.get('authcli'))?.name).toBe('authcli');
    expect((await signIn(new Browser(server.url))).status).toBe(303);
  });

  it('hostile query strings at the authorization endpoint get a page, never a 5xx', async () => {
    const b = await signedInBrowser(server);
    for (const q of [
      '%',
      '%%%',
      'client_id=%C3%28',
      'client_id=authcli&redirect_uri=%',
      'a'.repeat(8000),
      '__proto__[x]=1',
      'client_id=authcli&client_id=authcli',
    ]) {
      const res = await b.get(`/oauth/authorize?${q}`);
      expect(res.status, q).toBeLessThan(500);
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { join } from 'node:path';
import { calculateJwkThumbprint, createRemoteJWKSet, decodeJwt, decodeProtectedHeader, EmbeddedJWK, jwtVerify } from 'jose';
import { runCli, tempConfigHome } from '@authcli/test-support/cli-process';
import { approveInBrowser, Browser } from '@authcli/test-support/http';
import { expireStoredToken } from '@authcli/test-support/credentials';
import { runInTerminal } from '@authcli/test-support/pty';
import { addApp, addUsers } from '@authcli/test-support/seed';
import { startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const PASSWORD = 'cli api e2e password';

interface Seen {
  method: string;
  path: string;
  authorization: string;
  contentType: string | undefined;
  header: string | undefined;
  body: string;
  /** The proof's jti and nonce, when one came. */
  jti?: string;
  nonce?: string;
}

/**
 * Another resource server on the machine, written from RFC 6750 and RFC 9449 §7 alone: it verifies the
 * access token (a JWT of the authorization server) against the issuer's keys, takes a token bound to a key
 * (`cnf.jkt`) only with the DPoP scheme and a proof of that key for this method and URL (`ath`, a nonce of its
 * own, §9), and a Bearer token only when unbound. It answers what it saw, as JSON.
 */
async function resourceServer(issuer: string) {
  const meta = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as { jwks_uri: string };
  const jwks = createRemoteJWKSet(new URL(meta.jwks_uri));
  const nonce = randomBytes(16).toString('base64url');
  const seen: Seen[] = [];
  const jtis = new Set<string>();
  /** Access tokens to refuse once as `invalid_token` (revoked, as far as this server knows). */
  const refuseOnce = new Set<string>();
  let origin = '';
  const read = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let text = '';
      req.on('data', (d: Buffer) => (text += d.toString()));
      req.on('end', () => resolve(text));
    });
  const server: Server = createServer(async (req, res) => {
    const body = await read(req);
    const url = new URL(req.url ?? '/', origin);
    const authorization = req.headers.authorization ?? '';
    const entry: Seen = {
      method: req.method ?? '',
      path: url.pathname,
      authorization,
      contentType: req.headers['content-type'],
      header: req.headers['x-test'] as string | undefined,
      body,
    };
    seen.push(entry);
    const refuse = (scheme: string, error: string, extra: Record<string, string> = {}) =>
      res.writeHead(401, { 'www-authenticate': `${scheme} error="${error}"`, ...extra }).end();
    const [scheme, token = ''] = authorization.split(' ');
    let claims;
    try {
      claims = (await jwtVerify(token, jwks, { issuer })).payload;
    } catch {
      return refuse('Bearer', 'invalid_token');
    }
    if (refuseOnce.delete(token) || url.pathname === '/revoked') return refuse(scheme ?? 'Bearer', 'invalid_token');
    const jkt = (claims.cnf as { jkt?: string } | undefined)?.jkt;
    if (scheme === 'Bearer' && jkt) return refuse('DPoP', 'invalid_token');
    if (scheme === 'DPoP') {
      const proof = req.headers.dpop as string | undefined;
      if (!proof || !jkt) return refuse('DPoP', 'invalid_dpop_proof');
      let p;
      try {
        p = (await jwtVerify(proof, EmbeddedJWK, { typ: 'dpop+jwt', algorithms: ['ES256'] })).payload;
      } catch {
        return refuse('DPoP', 'invalid_dpop_proof');
      }
      const key = decodeProtectedHeader(proof).jwk!;
      const ath = createHash('sha256').update(token).digest('base64url');
      entry.jti = p.jti as string;
      entry.nonce = p.nonce as string | undefined;
      if (
        p.htm !== req.method ||
        p.htu !== `${origin}${url.pathname}` ||
        p.ath !== ath ||
        (await calculateJwkThumbprint(key)) !== jkt ||
        jtis.has(p.jti as string)
      ) {
        return refuse('DPoP', 'invalid_dpop_proof');
      }
      jtis.add(p.jti as string);
      if (p.nonce !== nonce) return refuse('DPoP', 'use_dpop_nonce', { 'dpop-nonce': nonce });
    } else if (scheme !== 'Bearer') {
      return refuse('Bearer', 'invalid_request');
    }
    if (url.pathname === '/missing') return res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}');
    res
      .writeHead(url.pathname === '/created' ? 201 : 200, { 'content-type': 'application/json', 'x-served-by': 'rs' })
      .end(JSON.stringify({ method: req.method, path: url.pathname, query: url.search, sub: claims.sub, body, header: entry.header }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return { origin, seen, refuseOnce, nonce, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('authcli api, Bearer by default and DPoP when asked or required (issue 28)', () => {
  let server: ServerProcess;
  let rs: Awaited<ReturnType<typeof resourceServer>>;
  let dpopApp: { client_id: string };

  beforeAll(async () => {
    server = await startServerProcess({ env: { AUTHCLI_ACCESS_TOKEN_TTL: '300' } });
    await addUsers(
      server.env,
      ['amy', 'dan', 'rita', 'tom', 'una'].map((username) => ({ username, password: PASSWORD })),
    );
    dpopApp = await addApp(server.env, {
      name: 'Bound CLI',
      kind: 'public',
      callbackUrls: ['http://127.0.0.1/callback'],
      scopes: ['openid', 'profile', 'offline_access'],
      grantTypes: ['authorization_code', 'refresh_token'],
      requireDpop: true,
    });
    rs = await resourceServer(server.issuer);
  });
  afterAll(async () => {
    await rs?.close();
    await server?.stop();
  });

  const envFor = (home: string) => ({ XDG_CONFIG_HOME: home, AUTHCLI_ISSUER: server.issuer });

  async function signIn(home: string, user: string, args: string[] = []) {
    const run = runCli(['login', '--browser', '--no-open', '--json', ...args], envFor(home));
    const [, url] = await run.waitFor(/^\s+(http:\/\/\S+\/oauth\/authorize\?\S+)$/m);
    await fetch(await approveInBrowser(new Browser(server.issuer), url!, user, PASSWORD));
    const done = await run.exit;
    expect(done.code, done.stderr).toBe(0);
    return { ...done, json: JSON.parse(done.stdout) as { token_type: string; subject: string } };
  }
  const api = (home: string, args: string[], input?: string) => runCli(['api', ...args], envFor(home), input).exit;
  const token = async (home: string) => (await runCli(['token'], envFor(home)).exit).stdout.trim();
  const stored = (home: string) =>
    JSON.parse(readFileSync(join(home, 'authcli', 'credentials.json'), 'utf8')).sessions[server.issuer] as { access_token: string };

  it('a plain login is Bearer: Authorization: Bearer $(authcli token) works at userinfo', async () => {
    const home = tempConfigHome();
    const { json, stderr } = await signIn(home, 'amy');
    expect(json.token_type).toBe('Bearer');
    expect(stderr).not.toMatch(/DPoP-bound/);
    const access = await token(home);
    expect(decodeJwt(access).cnf).toBeUndefined();
    const info = await fetch(`${server.issuer}/oauth/userinfo`, { headers: { authorization: `Bearer ${access}` } });
    expect(info.status).toBe(200);
    expect(((await info.json()) as { sub: string }).sub).toBe(json.subject);
    const status = JSON.parse((await runCli(['status', '--json'], envFor(home)).exit).stdout) as Record<string, unknown>;
    expect(status.token_type).toBe('Bearer');
  });

  it('login --dpop binds the token: Bearer refused; authcli api sends a proof (nonce retry) to the server and to another resource server', async () => {
    const home = tempConfigHome();
    const { json, stderr } = await signIn(home, 'dan', ['--dpop']);
    expect(json.token_type).toBe('DPoP');
    expect(stderr).toMatch(/DPoP-bound .*`authcli api URL`/);
    const access = await token(home);
    expect((decodeJwt(access).cnf as { jkt: string }).jkt).toMatch(/^[\w-]{43}$/);
    expect((await fetch(`${server.issuer}/oauth/userinfo`, { headers: { authorization: `Bearer ${access}` } })).status).toBe(401);

    const info = await api(home, ['/oauth/userinfo']);
    expect(info.code, info.stderr).toBe(0);
    expect(JSON.parse(info.stdout).sub).toBe(json.subject);

    // Another resource server, which asks for a nonce of its own first (RFC 9449 §9): one retry, a new proof each time.
    const before = rs.seen.length;
    const get = await api(home, [`${rs.origin}/items?page=2`, '-H', 'X-Test: one']);
    expect(get.code, get.stderr).toBe(0);
    expect(JSON.parse(get.stdout)).toMatchObject({ method: 'GET', path: '/items', query: '?page=2', sub: json.subject, header: 'one' });
    const attempts = rs.seen.slice(before);
    expect(attempts.map((s) => s.nonce)).toEqual([undefined, rs.nonce]);
    expect(new Set(attempts.map((s) => s.jti)).size).toBe(2);
    expect(attempts.every((s) => s.authorization === `DPoP ${access}`)).toBe(true);

    // The nonce is kept: the next request needs no retry; -X POST -d with a JSON body, -i for the status and headers.
    const post = await api(home, [`${rs.origin}/created`, '-X', 'POST', '-d', '{"name":"x"}', '-i']);
    expect(post.code, post.stderr).toBe(0);
    expect(post.stdout).toMatch(/^HTTP\/1\.1 201 Created\r\n/);
    expect(post.stdout).toMatch(/\r\nx-served-by: rs\r\n/);
    expect(JSON.parse(post.stdout.slice(post.stdout.indexOf('\r\n\r\n') + 4))).toMatchObject({ method: 'POST', body: '{"name":"x"}' });
    expect(rs.seen.at(-1)).toMatchObject({ contentType: 'application/json', nonce: rs.nonce });
  });

  it('authcli api: -d @FILE and a form body, PUT, exit 1 with the body on a 4xx, usage errors', async () => {
    const home = tempConfigHome();
    await signIn(home, 'rita');
    const file = join(home, 'body.txt');
    writeFileSync(file, 'a=1&b=two');
    const put = await api(home, [`${rs.origin}/things/1`, '-X', 'put', '-d', `@${file}`]);
    expect(put.code, put.stderr).toBe(0);
    expect(JSON.parse(put.stdout)).toMatchObject({ method: 'PUT', body: 'a=1&b=two' });
    expect(rs.seen.at(-1)).toMatchObject({
      contentType: 'application/x-www-form-urlencoded',
      authorization: expect.stringMatching(/^Bearer /),
    });
    const fromStdin = await api(home, [`${rs.origin}/echo`, '-d', '@-'], '{"from":"stdin"}');
    expect(JSON.parse(fromStdin.stdout)).toMatchObject({ method: 'POST', body: '{"from":"stdin"}' });

    const missing = await api(home, [`${rs.origin}/missing`]);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe('{"error":"not_found"}');
    expect(missing.stderr).toBe(`authcli: GET ${rs.origin}/missing answered HTTP 404 Not Found\n`);

    for (const [args, message] of [
      [['/x', '-H', 'Authorization: Bearer other'], /-H authorization would replace the sign-in's credentials/],
      [['/x', '-H', 'no colon'], /-H takes "Name: value"/],
      [['/x', '-d', '@/no/such/file'], /-d @\/no\/such\/file: no such file/],
      [['/x', '-X', 'GET', '-d', 'a'], /a GET request has no body/],
      [['ftp://example.com/'], /only http\(s\) URLs/],
    ] as const) {
      const bad = await api(home, [...args]);
      expect(bad.code, args.join(' ')).toBe(1);
      expect(bad.stderr).toMatch(message);
      expect(bad.stdout).toBe('');
    }
    const signedOut = await api(tempConfigHome(), ['/oauth/userinfo']);
    expect(signedOut.code).toBe(1);
    expect(signedOut.stderr).toMatch(/not signed in to .*; run `authcli login`/);
  });

  it('a token the resource refuses as invalid_token is renewed once and the request sent again; an expired one first', async () => {
    const home = tempConfigHome();
    await signIn(home, 'tom');
    const first = stored(home).access_token;
    rs.refuseOnce.add(first);
    const again = await api(home, [`${rs.origin}/me`]);
    expect(again.code, again.stderr).toBe(0);
    const second = stored(home).access_token;
    expect(second).not.toBe(first);
    expect(rs.seen.at(-1)!.authorization).toBe(`Bearer ${second}`);
    // Refused whatever the token: renewed once only, and the refusal is the answer.
    const before = rs.seen.length;
    const refused = await api(home, [`${rs.origin}/revoked`]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/answered HTTP 401 Unauthorized/);
    const tried = rs.seen.slice(before).map((s) => s.authorization);
    expect(tried).toEqual([`Bearer ${second}`, `Bearer ${stored(home).access_token}`]);
    expect(tried[0]).not.toBe(tried[1]);
    // An access token that has expired (as the CLI sees it) is renewed before the request.
    const third = stored(home).access_token;
    expireStoredToken(home, server.issuer);
    const renewed = await api(home, [`${rs.origin}/me`]);
    expect(renewed.code, renewed.stderr).toBe(0);
    expect(stored(home).access_token).not.toBe(third);
  });

  it('six `authcli api` processes at once with an expired token: one renews, the others use its token; the sign-in survives', async () => {
    const home = tempConfigHome();
    await signIn(home, 'una');
    const before = stored(home).access_token;
    expireStoredToken(home, server.issuer);
    const runs = await Promise.all(Array.from({ length: 6 }, () => api(home, ['/oauth/userinfo'])));
    expect(runs.map((r) => [r.code, r.stderr])).toEqual(Array.from({ length: 6 }, () => [0, '']));
    const after = stored(home).access_token;
    expect(after).not.toBe(before);
    // A refresh token sent twice would be a reuse, which revokes the whole sign-in (RFC 9700 §4.14.2): it is alive.
    expireStoredToken(home, server.issuer);
    const later = await api(home, ['/oauth/userinfo']);
    expect(later.code, later.stderr).toBe(0);
    expect(stored(home).access_token).not.toBe(after);
  });

  it('an application that requires DPoP gets a bound sign-in without --dpop; on a terminal `authcli token` says how to use it', async () => {
    const home = tempConfigHome();
    const { json, stderr } = await signIn(home, 'amy', ['--client-id', dpopApp.client_id]);
    expect(json.token_type).toBe('DPoP');
    expect(stderr).toMatch(/DPoP-bound/);
    const env = { ...envFor(home), AUTHCLI_CLIENT_ID: dpopApp.client_id };
    const info = await runCli(['api', '/oauth/userinfo'], env).exit;
    expect(info.code, info.stderr).toBe(0);
    // A program reading the token hears nothing; a person at a terminal is told what works instead of Bearer.
    const piped = await runCli(['token'], env).exit;
    expect(piped.stderr).toBe('');
    const tty = runInTerminal(['token'], env);
    await tty.waitFor(/`authcli api URL` sends one/);
    expect(await tty.exit).toBe(0);
  });
});

import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, tempConfigHome } from '@authcli/test-support/cli-process';
import { credentialsPath, expireStoredToken } from '@authcli/test-support/credentials';
import { approveInBrowser, Browser } from '@authcli/test-support/http';
import { addApp, addUsers } from '@authcli/test-support/seed';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const PASSWORD = 'cli resources e2e password';

/**
 * A team's API on this machine, written from RFC 9068 and the "Protect your API" guide alone: it takes a Bearer
 * access token only when jose verifies it against the issuer's keys with its own identifier as the audience, and
 * answers 403 insufficient_scope unless the token carries the scope its one route needs.
 */
async function teamApi(issuer: string, needed: string) {
  const jwks = createRemoteJWKSet(new URL(`${issuer}/oauth/jwks`));
  let id = '';
  const server: Server = createServer(async (req, res) => {
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    let payload;
    try {
      ({ payload } = await jwtVerify(token, jwks, { issuer, audience: id, typ: 'at+jwt' }));
    } catch {
      return res.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token"' }).end();
    }
    if (!String(payload.scope).split(' ').includes(needed)) {
      return res.writeHead(403, { 'www-authenticate': `Bearer error="insufficient_scope", scope="${needed}"` }).end();
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ api: id, sub: payload.sub, scope: payload.scope }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  id = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return { id, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('authcli with the team’s APIs (RFC 8707 resources)', () => {
  let server: ServerProcess;
  let deploy: Awaited<ReturnType<typeof teamApi>>;
  let billing: Awaited<ReturnType<typeof teamApi>>;
  let clientId: string;

  beforeAll(async () => {
    server = await startServerProcess();
    await addUsers(server.env, [{ username: 'ada', password: PASSWORD }]);
    deploy = await teamApi(server.issuer, 'deploy:write');
    billing = await teamApi(server.issuer, 'invoices:read');
    for (const [api, name, scope] of [
      [deploy, 'Deploy API', 'deploy:write=Deploy to production'],
      [billing, 'Billing', 'invoices:read=Read invoices'],
    ] as const) {
      const added = await serverCommand(['resources', 'add', '--id', api.id, '--name', name, '--scope', scope], server.env);
      expect(added.code, added.stderr).toBe(0);
    }
    ({ client_id: clientId } = await addApp(server.env, {
      name: 'Team tool',
      callbackUrls: ['http://127.0.0.1/callback'],
      scopes: ['openid', 'offline_access', 'deploy:write', 'invoices:read'],
      grantTypes: ['authorization_code', 'refresh_token'],
    }));
  });
  afterAll(async () => {
    await deploy?.close();
    await billing?.close();
    await server?.stop();
  });

  const envFor = (home: string) => ({ XDG_CONFIG_HOME: home, AUTHCLI_ISSUER: server.issuer, AUTHCLI_CLIENT_ID: clientId });
  const cli = (home: string, ...args: string[]) => runCli(args, envFor(home)).exit;

  async function signIn(home: string) {
    const run = runCli(
      ['login', '--browser', '--no-open', '--json', '--scope', 'openid offline_access deploy:write invoices:read', '--resource', deploy.id],
      envFor(home),
    );
    const [, url] = await run.waitFor(/^\s+(http:\/\/\S+\/oauth\/authorize\?\S+)$/m);
    await fetch(await approveInBrowser(new Browser(server.issuer), url!, 'ada', PASSWORD));
    const done = await run.exit;
    expect(done.code, done.stderr).toBe(0);
    return JSON.parse(done.stdout) as { resource: string; scope: string; subject: string };
  }

  /** Rewrites the stored session as the CLI does (a 0600 file renamed over it). */
  function editSession(home: string, edit: (s: { resource_tokens?: Record<string, { expires_at: number }> }) => void) {
    const file = credentialsPath(home);
    const all = JSON.parse(readFileSync(file, 'utf8'));
    edit(all.sessions[server.issuer]);
    const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
    writeFileSync(tmp, JSON.stringify(all), { mode: 0o600 });
    renameSync(tmp, file);
  }

  it('login --resource: the token is for that API (aud, scope), its jose verifier takes it, another API’s refuses it, and authcli api reaches it', async () => {
    const home = tempConfigHome();
    const login = await signIn(home);
    expect(login).toMatchObject({ resource: deploy.id, scope: 'deploy:write' });
    const token = (await cli(home, 'token')).stdout.trim();
    expect(decodeJwt(token)).toMatchObject({ aud: deploy.id, scope: 'deploy:write', sub: login.subject });
    const jwks = createRemoteJWKSet(new URL(`${server.issuer}/oauth/jwks`));
    await expect(jwtVerify(token, jwks, { audience: deploy.id, issuer: server.issuer })).resolves.toBeDefined();
    await expect(jwtVerify(token, jwks, { audience: billing.id, issuer: server.issuer })).rejects.toThrow(/aud/);

    const call = await cli(home, 'api', `${deploy.id}/releases`);
    expect(call.code, call.stderr).toBe(0);
    expect(JSON.parse(call.stdout)).toEqual({ api: deploy.id, sub: login.subject, scope: 'deploy:write' });
    // The other API refuses this token (its audience is not billing's); api renews it once and is refused again.
    const wrong = await cli(home, 'api', `${billing.id}/invoices`);
    expect(wrong.code).not.toBe(0);
    const mine = (await cli(home, 'token')).stdout.trim();
    expect(decodeJwt(mine)).toMatchObject({ aud: deploy.id });

    // token --resource: the second API's token from the same sign-in; the first stays as it was.
    const second = await cli(home, 'token', '--resource', billing.id);
    expect(second.code, second.stderr).toBe(0);
    expect(decodeJwt(second.stdout.trim())).toMatchObject({ aud: billing.id, scope: 'invoices:read', sub: login.subject });
    expect((await cli(home, 'token')).stdout.trim()).toBe(mine);
    // Cached: asked again, the same token without a refresh.
    expect((await cli(home, 'token', '--resource', billing.id)).stdout.trim()).toBe(second.stdout.trim());
    const status = JSON.parse((await cli(home, 'status', '--json')).stdout);
    expect(status).toMatchObject({ resource: deploy.id, other_resources: [billing.id], scope: 'deploy:write' });
    const viaApi = await cli(home, 'api', '--resource', billing.id, `${billing.id}/invoices`);
    expect(viaApi.code, viaApi.stderr).toBe(0);
    expect(JSON.parse(viaApi.stdout)).toMatchObject({ api: billing.id, scope: 'invoices:read' });

    // The main token renewed: a refresh naming its API, so it is the deploy API's again.
    expireStoredToken(home, server.issuer);
    const renewed = (await cli(home, 'token')).stdout.trim();
    expect(renewed).not.toBe(mine);
    expect(decodeJwt(renewed)).toMatchObject({ aud: deploy.id, scope: 'deploy:write' });
  });

  it('four processes renewing the second API’s token at once: one refresh, every one prints a valid token, the sign-in survives', async () => {
    const home = tempConfigHome();
    await signIn(home);
    expect((await cli(home, 'token', '--resource', billing.id)).code).toBe(0);
    editSession(home, (s) => {
      for (const t of Object.values(s.resource_tokens ?? {})) t.expires_at = Date.now() - 1000;
    });
    const runs = await Promise.all(Array.from({ length: 4 }, () => cli(home, 'token', '--resource', billing.id)));
    for (const r of runs) expect(r.code, r.stderr).toBe(0);
    const tokens = new Set(runs.map((r) => r.stdout.trim()));
    expect(tokens.size).toBe(1);
    expect(decodeJwt([...tokens][0]!)).toMatchObject({ aud: billing.id });
    // Each rotated refresh token was sent once: the sign-in is alive for both APIs.
    expireStoredToken(home, server.issuer);
    const main = await cli(home, 'token');
    expect(main.code, main.stderr).toBe(0);
    expect(decodeJwt(main.stdout.trim())).toMatchObject({ aud: deploy.id });
  });

  it('bad --resource: a usage error before any request; an API the sign-in does not cover: the server’s invalid_target', async () => {
    const home = tempConfigHome();
    for (const bad of ['not a url', 'ftp://x.example', 'https://x.example/#f']) {
      const r = await cli(home, 'token', '--resource', bad);
      expect(r.code, bad).toBe(1);
      expect(r.stderr).toContain('--resource must be the absolute http(s) URL of an API');
    }
    await signIn(home);
    const uncovered = await cli(home, 'token', '--resource', 'https://elsewhere.example');
    expect(uncovered.code).not.toBe(0);
    expect(uncovered.stderr).toContain('invalid_target');
    // The refusal cost nothing: the sign-in still renews.
    expireStoredToken(home, server.issuer);
    expect((await cli(home, 'token')).code).toBe(0);
  });

  it('login --client-credentials: the application’s own token for its API; token mints the next one, four processes at once mint once', async () => {
    const app = await addApp(server.env, {
      name: 'Deploy bot',
      kind: 'confidential',
      callbackUrls: [],
      scopes: ['deploy:write'],
      grantTypes: ['client_credentials'],
    });
    const home = tempConfigHome();
    const env = { XDG_CONFIG_HOME: home, AUTHCLI_ISSUER: server.issuer, AUTHCLI_CLIENT_ID: app.client_id };
    const missing = await runCli(['login', '--client-credentials'], env).exit;
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('AUTHCLI_CLIENT_SECRET');
    // The secret from stdin, never in the environment or argv; it is kept with the session to mint the next token.
    const login = await runCli(['login', '--client-credentials', '--client-secret-stdin', '--json'], env, `${app.client_secret}\n`).exit;
    expect(login.code, login.stderr).toBe(0);
    expect(JSON.parse(login.stdout)).toMatchObject({ kind: 'application', subject: app.client_id, scope: 'deploy:write' });
    const token = (await runCli(['token'], env).exit).stdout.trim();
    expect(decodeJwt(token)).toMatchObject({ sub: app.client_id, client_id: app.client_id, aud: deploy.id, scope: 'deploy:write' });
    const call = await runCli(['api', `${deploy.id}/releases`], env).exit;
    expect(call.code, call.stderr).toBe(0);
    expect(JSON.parse(call.stdout)).toMatchObject({ sub: app.client_id, api: deploy.id });
    const status = await runCli(['status'], env).exit;
    expect(status.stdout).toContain(`as the application ${app.client_id} (client credentials: no person)`);
    expect(JSON.parse((await runCli(['status', '--json'], env).exit).stdout)).toMatchObject({ kind: 'application', refreshable: true });

    expireStoredToken(home, server.issuer);
    const runs = await Promise.all(Array.from({ length: 4 }, () => runCli(['token'], env).exit));
    for (const r of runs) expect(r.code, r.stderr).toBe(0);
    const minted = new Set(runs.map((r) => r.stdout.trim()));
    expect(minted.size).toBe(1);
    expect([...minted][0]).not.toBe(token);
    expect(decodeJwt([...minted][0]!)).toMatchObject({ sub: app.client_id, aud: deploy.id });
    // logout revokes the token with the application's own secret (no AUTHCLI_CLIENT_SECRET here).
    const out = await runCli(['logout'], env).exit;
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain('Signed out');
  });
});

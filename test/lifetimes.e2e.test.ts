// Lifetimes (issue 41, point 6): the server's refresh, ID token and session lifetimes are settings, and an
// application may have its own access and refresh token lifetimes (apps add|update, the admin API).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as client from 'openid-client';
import { decodeJwt } from 'jose';
import { withStore } from '@authcli/server';
import { approveInBrowser, Browser } from '@authcli/test-support/http';
import { addApp, addUsers } from '@authcli/test-support/seed';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';
import { authorizationRequest } from './openid-rp.js';

const PASSWORD = 'lifetimes e2e password';
const CALLBACK = 'http://127.0.0.1:9/cb';
type Json = Record<string, unknown>;

/** `apps add` of a public OpenID Connect application with its own access token lifetime. */
const addPublicApp = (name: string, accessTokenTtl: string) => [
  'apps',
  'add',
  '--name',
  name,
  '--kind',
  'public',
  '--callback',
  CALLBACK,
  '--scope',
  'openid',
  '--access-token-ttl',
  accessTokenTtl,
];

describe('lifetimes: the server settings and an application’s own', () => {
  let server: ServerProcess;
  const run = (...args: string[]) => serverCommand(args, server.env);

  beforeAll(async () => {
    // The server's: a week's sign-ins, 2-minute ID tokens, 10-minute browser sessions.
    server = await startServerProcess({
      env: { AUTHCLI_REFRESH_TOKEN_TTL: '604800', AUTHCLI_ID_TOKEN_TTL: '120', AUTHCLI_SESSION_TTL: '600' },
    });
    await addUsers(server.env, [{ username: 'lee', password: PASSWORD }]);
  });
  afterAll(async () => {
    await server?.stop();
  });

  async function addConfidential(name: string, ...extra: string[]) {
    const added = await run(
      'apps',
      'add',
      '--name',
      name,
      '--kind',
      'confidential',
      '--callback',
      CALLBACK,
      '--scope',
      'openid offline_access',
      '--grant',
      'authorization_code',
      '--grant',
      'refresh_token',
      '--json',
      ...extra,
    );
    expect(added.code, added.stderr).toBe(0);
    return JSON.parse(added.stdout) as { client_id: string; client_secret: string };
  }

  /** A code-flow sign-in of lee to `app`; its tokens, the session cookie's header and the grant's lifetime as stored. */
  async function signIn(app: { client_id: string; client_secret: string }) {
    const config = await client.discovery(new URL(server.issuer), app.client_id, app.client_secret, undefined, {
      execute: [client.allowInsecureRequests],
    });
    const b = new Browser(server.issuer);
    const { url, verifier, state } = await authorizationRequest(config, {
      redirect_uri: CALLBACK,
      scope: 'openid offline_access',
      prompt: 'consent',
    });
    const callback = await approveInBrowser(b, url.href, 'lee', PASSWORD);
    const tokens = await client.authorizationCodeGrant(config, new URL(callback), { pkceCodeVerifier: verifier, expectedState: state });
    const access = decodeJwt(tokens.access_token);
    const grantMs = await withStore(server.env.DATABASE_URL!, async (store) => {
      const grant = await store.grants.find(access.gid as string);
      return Number(grant!.expires_at) - Number(grant!.created_at);
    });
    return { tokens, access, grantSeconds: grantMs / 1000, browser: b };
  }

  it('an application with no lifetimes of its own gets the server’s: access 900 s, ID token 120 s, sign-in a week, session 10 minutes', async () => {
    const app = await addConfidential('Server lifetimes');
    const { tokens, access, grantSeconds, browser } = await signIn(app);
    expect(tokens.expires_in).toBe(900);
    expect(access.exp! - access.iat!).toBe(900);
    const id = decodeJwt(tokens.id_token!);
    expect(id.exp! - id.iat!).toBe(120);
    expect(grantSeconds).toBe(604_800);
    expect(tokens.refresh_token).toBeDefined();
    // The session cookie lives AUTHCLI_SESSION_TTL, and so does the session row.
    expect(browser.setCookieHeaders.join('\n')).toMatch(/authcli_session=[^;]+;[^\n]*Max-Age=600/);
  });

  it('apps add|update --access-token-ttl --refresh-token-ttl: its tokens and sign-ins follow them; default gives the server’s back', async () => {
    const app = await addConfidential('Own lifetimes', '--access-token-ttl', '5m', '--refresh-token-ttl', '2h');
    const listed = (JSON.parse((await run('apps', 'list', '--json')).stdout) as Json[]).find((a) => a.client_id === app.client_id);
    expect(listed).toMatchObject({ access_token_ttl: 300, refresh_token_ttl: 7200 });
    const first = await signIn(app);
    expect(first.tokens.expires_in).toBe(300);
    expect(first.access.exp! - first.access.iat!).toBe(300);
    expect(first.grantSeconds).toBe(7200);
    // A renewal keeps the application's lifetime.
    const config = await client.discovery(new URL(server.issuer), app.client_id, app.client_secret, undefined, {
      execute: [client.allowInsecureRequests],
    });
    const renewed = await client.refreshTokenGrant(config, first.tokens.refresh_token!);
    expect(renewed.expires_in).toBe(300);

    const updated = await run('apps', 'update', app.client_id, '--access-token-ttl', '90', '--json');
    expect(updated.code, updated.stderr).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({ access_token_ttl: 90, refresh_token_ttl: 7200 });
    const reset = await run('apps', 'update', app.client_id, '--access-token-ttl', 'default', '--refresh-token-ttl', 'default', '--json');
    expect(JSON.parse(reset.stdout)).toMatchObject({ access_token_ttl: null, refresh_token_ttl: null });
    // The running server reads the application again within APPLICATION_CACHE_MS (a second).
    const deadline = Date.now() + 5_000;
    let back = await signIn(app);
    while (back.tokens.expires_in !== 900 && Date.now() < deadline) back = await signIn(app);
    expect(back.tokens.expires_in).toBe(900);
    expect(back.grantSeconds).toBe(604_800);
  });

  it('client credentials: the access token lives the application’s lifetime', async () => {
    await run('resources', 'add', '--id', 'https://ttl.example', '--name', 'TTL API', '--scope', 'ttl:read');
    const machine = await addApp(server.env, {
      name: 'Machine',
      kind: 'confidential',
      scopes: ['ttl:read'],
      grantTypes: ['client_credentials'],
    });
    expect((await run('apps', 'update', machine.client_id, '--access-token-ttl', '1h')).code).toBe(0);
    const basic = `Basic ${Buffer.from(`${machine.client_id}:${machine.client_secret}`).toString('base64')}`;
    const deadline = Date.now() + 5_000;
    let body: Json = {};
    do {
      const res = await fetch(`${server.issuer}/oauth/token`, {
        method: 'POST',
        headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=client_credentials&scope=ttl%3Aread',
      });
      body = (await res.json()) as Json;
    } while (body.expires_in !== 3600 && Date.now() < deadline);
    expect(body.expires_in).toBe(3600);
    const token = decodeJwt(body.access_token as string);
    expect(token.exp! - token.iat!).toBe(3600);
  });

  it('bad lifetimes: one line, exit 1, nothing changed; the admin API answers them as problems', async () => {
    const app = await addConfidential('Checked lifetimes');
    const cases: [string[], string][] = [
      [['--access-token-ttl', '2d'], '--access-token-ttl must be from 1s to 1d (1-86400 s)'],
      [['--refresh-token-ttl', '30m'], '--refresh-token-ttl must be from 1h to 90d (3600-7776000 s)'],
      [
        ['--access-token-ttl', 'soon'],
        '--access-token-ttl takes seconds, or a number with s, m, h or d (15m, 30d), or default; got "soon"',
      ],
      [
        ['--access-token-ttl', '3h', '--refresh-token-ttl', '2h'],
        'the sign-in lifetime (--refresh-token-ttl, 2h) must be at least the access token lifetime (--access-token-ttl, 3h)',
      ],
    ];
    for (const [flags, message] of cases) {
      const r = await run('apps', 'update', app.client_id, ...flags);
      expect(r.code, flags.join(' ')).toBe(1);
      expect(r.stderr.trim().split('\n').at(-1), flags.join(' ')).toBe(`authcli-server: ${message}`);
    }
    const refused = await run(...addPublicApp('Never', '0'));
    expect(refused.code).toBe(1);
    const apps = JSON.parse((await run('apps', 'list', '--json')).stdout) as Json[];
    expect(apps.find((a) => a.client_id === app.client_id)).toMatchObject({ access_token_ttl: null, refresh_token_ttl: null });
    expect(apps.map((a) => a.name)).not.toContain('Never');

    // The admin API: the same rules, its field names in the message; the answer carries the lifetimes.
    const writer = await addApp(server.env, {
      name: 'Writer',
      kind: 'confidential',
      scopes: ['admin:write'],
      grantTypes: ['client_credentials'],
    });
    const token = await fetch(`${server.issuer}/oauth/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${writer.client_id}:${writer.client_secret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials&scope=admin%3Awrite',
    });
    const bearer = ((await token.json()) as { access_token: string }).access_token;
    const patch = async (body: Json) => {
      const res = await fetch(`${server.issuer}/admin/v1/apps/${app.client_id}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: (await res.json()) as Json };
    };
    expect(await patch({ access_token_ttl: 0 })).toMatchObject({ status: 400 });
    const short = await patch({ access_token_ttl: 7200, refresh_token_ttl: 3600 });
    expect(short.status).toBe(400);
    expect(short.json.detail).toBe(
      'the sign-in lifetime (refresh_token_ttl, 1h) must be at least the access token lifetime (access_token_ttl, 2h)',
    );
    const set = await patch({ access_token_ttl: 600, refresh_token_ttl: 86_400 });
    expect(set.status).toBe(200);
    expect(set.json).toMatchObject({ access_token_ttl: 600, refresh_token_ttl: 86_400 });
    expect((await patch({ access_token_ttl: null })).json).toMatchObject({ access_token_ttl: null, refresh_token_ttl: 86_400 });
  });

  it('a server started with settings an application’s own lifetime no longer fits says which application, at start', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'authcli-lifetimes-'));
    const database = join(dir, 'authcli.db');
    try {
      const added = await serverCommand([...addPublicApp('Long tokens', '2h'), '--json'], { DATABASE_URL: database });
      expect(added.code, added.stderr).toBe(0);
      const { client_id } = JSON.parse(added.stdout) as { client_id: string };
      // Sign-ins of an hour now: its 2-hour access tokens would outlive them.
      const short = await startServerProcess({ database, env: { AUTHCLI_REFRESH_TOKEN_TTL: '3600' } });
      try {
        expect(short.output()).toContain(
          `authcli-server: warning: Long tokens (${client_id}): the sign-in lifetime (the server's AUTHCLI_REFRESH_TOKEN_TTL, 1h) must be at least the access token lifetime (its --access-token-ttl, 2h); its access tokens outlive its sign-ins until apps update sets them again`,
        );
      } finally {
        await short.stop();
      }
      // With the server's default (30 days) it fits: nothing is said.
      const fits = await startServerProcess({ database });
      try {
        expect(fits.output()).not.toContain('Long tokens');
      } finally {
        await fits.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

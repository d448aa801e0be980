import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import * as client from 'openid-client';
import { authorizationRequest } from './openid-rp.js';
import type { Browser as Chromium } from 'playwright-core';
import { launchChromium } from '@authcli/test-support/chromium';
import { approveInBrowser, Browser } from '@authcli/test-support/http';
import { approveAtOtherProvider, startOtherProvider } from '@authcli/test-support/other-op';
import { addUsers } from '@authcli/test-support/seed';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const PASSWORD = 'private key jwt e2e password';
const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** A loopback server of the test's own: the relying party's callback (the URLs it was sent to) and its jwks_uri. */
async function relyingParty(jwks: object) {
  const callbacks: string[] = [];
  const server: Server = createServer((req, res) => {
    if (req.url === '/jwks') {
      res.writeHead(200, { 'content-type': 'application/jwk-set+json' }).end(JSON.stringify(jwks));
      return;
    }
    callbacks.push(req.url!);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('signed in');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    redirectUri: `${base}/cb`,
    jwksUri: `${base}/jwks`,
    callbacks,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/**
 * private_key_jwt (RFC 7523 §2.2, OIDC Core §9) end to end: an application registered by the real operator
 * command with a jwks_uri, and openid-client (`client.PrivateKeyJwt`, not written here) redeeming a code and
 * refreshing against the started server process; the same client code, and the same hand-made assertions,
 * against node-oidc-provider configured for private_key_jwt, so what is accepted and what is refused is the
 * standard's and not this server's.
 */
describe('private_key_jwt with openid-client, against authcli-server and node-oidc-provider', () => {
  let server: ServerProcess;
  let other: Awaited<ReturnType<typeof startOtherProvider>>;
  let chromium: Chromium;
  let rp: Awaited<ReturnType<typeof relyingParty>>;
  let key: { privateKey: CryptoKey; kid: string; publicJwk: object };
  let ours: string;
  const theirs = 'key-rp';

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256', { extractable: true });
    const kid = randomUUID();
    key = { privateKey: pair.privateKey, kid, publicJwk: { ...(await exportJWK(pair.publicKey)), kid, use: 'sig', alg: 'ES256' } };
    rp = await relyingParty({ keys: [key.publicJwk] });
    [server, other, chromium] = await Promise.all([
      startServerProcess(),
      startOtherProvider({ keyClient: { clientId: theirs, jwks: { keys: [key.publicJwk] }, redirectUri: rp.redirectUri } }),
      launchChromium(),
    ]);
    await addUsers(server.env, [{ username: 'gil', password: PASSWORD }]);
    const added = await serverCommand(
      [
        'apps',
        'add',
        '--name',
        'Key RP',
        '--kind',
        'confidential',
        '--callback',
        rp.redirectUri,
        '--scope',
        'openid profile offline_access',
        '--jwks-uri',
        rp.jwksUri,
        '--json',
      ],
      server.env,
    );
    expect(added.code, added.stderr).toBe(0);
    const json = JSON.parse(added.stdout) as Record<string, string>;
    expect(json).not.toHaveProperty('client_secret');
    ours = json.client_id!;
  });
  afterAll(async () => {
    await chromium?.close();
    await other?.close();
    await server?.stop();
    await rp?.close();
  });

  const targets = () =>
    [
      { which: 'authcli-server', issuer: server.issuer, clientId: ours },
      { which: 'node-oidc-provider', issuer: other.issuer, clientId: theirs },
    ] as const;

  /** Signs in at either server in Chromium and returns the callback URL the browser was sent to. */
  async function signIn(which: string, url: URL): Promise<URL> {
    if (which === 'authcli-server') return new URL(await approveInBrowser(new Browser(server.issuer), url.href, 'gil', PASSWORD));
    const page = await chromium.newPage();
    try {
      const before = rp.callbacks.length;
      await page.goto(url.href);
      await approveAtOtherProvider(page, 'gil', () => rp.callbacks.length > before);
      await page.waitForURL((u) => u.href.startsWith(rp.redirectUri));
      return new URL(page.url());
    } finally {
      await page.close();
    }
  }

  for (const target of ['authcli-server', 'node-oidc-provider'] as const) {
    it(`${target}: openid-client redeems a code and refreshes with client.PrivateKeyJwt`, async () => {
      const t = targets().find((x) => x.which === target)!;
      const config = await client.discovery(
        new URL(t.issuer),
        t.clientId,
        { token_endpoint_auth_method: 'private_key_jwt' },
        client.PrivateKeyJwt({ key: key.privateKey, kid: key.kid }),
        { execute: [client.allowInsecureRequests] },
      );
      expect(config.serverMetadata().token_endpoint_auth_methods_supported).toContain('private_key_jwt');
      expect(config.serverMetadata().token_endpoint_auth_signing_alg_values_supported).toContain('ES256');
      const { url, verifier, state } = await authorizationRequest(config, {
        redirect_uri: rp.redirectUri,
        scope: 'openid offline_access',
        prompt: 'consent',
      });
      const callback = await signIn(target, url);
      const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
      expect(tokens.claims()?.iss).toBe(t.issuer);
      expect(tokens.refresh_token).toBeTruthy();
      const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
      expect(refreshed.access_token).toBeTruthy();
      expect(refreshed.access_token).not.toBe(tokens.access_token);
    });
  }

  it('the same assertions are accepted and refused alike by both servers (RFC 7523 §3, OIDC Core §9)', async () => {
    const stranger = (await generateKeyPair('ES256')).privateKey;
    /** An assertion as a client library makes one, with `claims` changed; `signer` the key, `alg` its header. */
    const make = async (issuer: string, clientId: string, claims: Record<string, unknown> = {}, signer = key.privateKey) => {
      const now = Math.floor(Date.now() / 1000);
      const payload: Record<string, unknown> = {
        iss: clientId,
        sub: clientId,
        aud: issuer,
        jti: randomUUID(),
        iat: now,
        exp: now + 60,
        ...claims,
      };
      for (const [k, v] of Object.entries(payload)) if (v === undefined) delete payload[k];
      return new SignJWT(payload).setProtectedHeader({ alg: 'ES256', kid: key.kid }).sign(signer);
    };
    const unsigned = (issuer: string, clientId: string) => {
      const part = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
      const now = Math.floor(Date.now() / 1000);
      return `${part({ alg: 'none' })}.${part({ iss: clientId, sub: clientId, aud: issuer, jti: randomUUID(), exp: now + 60 })}.`;
    };
    /** A refresh with a token that is no token: the client is authenticated first, so the answer says how that went. */
    const present = async (issuer: string, clientAssertion: string) => {
      const meta = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as { token_endpoint: string };
      const res = await fetch(meta.token_endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: 'not-a-refresh-token',
          client_assertion_type: ASSERTION_TYPE,
          client_assertion: clientAssertion,
        }),
      });
      return ((await res.json()) as { error: string }).error;
    };
    const outcomes: Record<string, Record<string, string>> = {};
    for (const t of targets()) {
      const o: Record<string, string> = {};
      o.good = await present(t.issuer, await make(t.issuer, t.clientId));
      const once = await make(t.issuer, t.clientId);
      await present(t.issuer, once);
      o.replayed = await present(t.issuer, once);
      o['another key'] = await present(t.issuer, await make(t.issuer, t.clientId, {}, stranger));
      o['aud elsewhere'] = await present(t.issuer, await make(t.issuer, t.clientId, { aud: 'https://elsewhere.example' }));
      const past = Math.floor(Date.now() / 1000) - 600;
      o.expired = await present(t.issuer, await make(t.issuer, t.clientId, { iat: past - 60, exp: past }));
      o['no exp'] = await present(t.issuer, await make(t.issuer, t.clientId, { exp: undefined }));
      o['no jti'] = await present(t.issuer, await make(t.issuer, t.clientId, { jti: undefined }));
      o['sub not the client'] = await present(t.issuer, await make(t.issuer, t.clientId, { sub: 'someone-else' }));
      o['alg none'] = await present(t.issuer, unsigned(t.issuer, t.clientId));
      outcomes[t.which] = o;
    }
    expect(outcomes['authcli-server']).toEqual({
      // Authenticated: the refresh token is what is wrong.
      good: 'invalid_grant',
      replayed: 'invalid_client',
      'another key': 'invalid_client',
      'aud elsewhere': 'invalid_client',
      expired: 'invalid_client',
      'no exp': 'invalid_client',
      'no jti': 'invalid_client',
      'sub not the client': 'invalid_client',
      'alg none': 'invalid_client',
    });
    expect(outcomes['node-oidc-provider']).toEqual(outcomes['authcli-server']);
  });

  it('authcli-server apps: --jwks FILE, apps list --json, --client-secret to go back to a secret, --jwks-uri to keys again', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'authcli-jwks-')), 'jwks.json');
    writeFileSync(file, JSON.stringify({ keys: [key.publicJwk] }));
    const add = await serverCommand(
      ['apps', 'add', '--name', 'Inline keys', '--kind', 'confidential', '--scope', 'openid', '--grant', 'device_code', '--jwks', file],
      server.env,
    );
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toMatch(/token_endpoint_auth_method: private_key_jwt/);
    expect(add.stdout).not.toMatch(/client_secret/);
    const id = /client_id:\s+(\S+)/.exec(add.stdout)![1]!;
    const listed = () =>
      serverCommand(['apps', 'list', '--json'], server.env).then(
        (r) => (JSON.parse(r.stdout) as Record<string, unknown>[]).find((a) => a.client_id === id)!,
      );
    expect(await listed()).toMatchObject({ token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [key.publicJwk] } });

    const secret = await serverCommand(['apps', 'update', id, '--client-secret', '--json'], server.env);
    expect(secret.code, secret.stderr).toBe(0);
    const updated = JSON.parse(secret.stdout) as Record<string, string>;
    expect(updated).toMatchObject({ token_endpoint_auth_method: 'client_secret_basic' });
    expect(updated.client_secret).toMatch(/^[\w-]{43}$/);
    expect(updated).not.toHaveProperty('jwks');

    const back = await serverCommand(['apps', 'update', id, '--jwks-uri', rp.jwksUri, '--assertion-alg', 'ES256', '--json'], server.env);
    expect(back.code, back.stderr).toBe(0);
    expect(JSON.parse(back.stdout)).toMatchObject({
      token_endpoint_auth_method: 'private_key_jwt',
      jwks_uri: rp.jwksUri,
      token_endpoint_auth_signing_alg: 'ES256',
    });
    // Clear refusals, one line each.
    const refusals: [string[], RegExp][] = [
      [['apps', 'update', id, '--jwks', '/no/such/file.json'], /cannot read --jwks \/no\/such\/file.json/],
      [['apps', 'update', id, '--jwks-uri', 'ftp://keys.example/jwks'], /jwks_uri must be an http or https URL/],
      [['apps', 'update', id, '--jwks-uri', rp.jwksUri, '--client-secret'], /not both/],
      [['apps', 'update', id, '--assertion-alg', 'HS256', '--jwks-uri', rp.jwksUri], /must be one of PS256, ES256, EdDSA, RS256/],
      [['apps', 'add', '--name', 'P', '--kind', 'public', '--scope', 'openid', '--grant', 'device_code', '--jwks', file], /confidential/],
    ];
    for (const [args, message] of refusals) {
      const r = await serverCommand(args, server.env);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr).toMatch(message);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });
});

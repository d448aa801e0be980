import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorize,
  basic,
  decideOnDevicePage,
  deviceAuthorization,
  dialects,
  poll,
  seedApp,
  seedUser,
  signedInBrowser,
  startServer,
  tokenRequest,
  type TestServer,
} from './helpers.js';

/**
 * What AUTHCLI_FAPI2 changes beyond client assertions (private-key-jwt.test.ts): DPoP proofs signed RS256 are
 * refused and not advertised (FAPI 2.0 Security Profile §5.4.1), and a confidential client's refresh token is not
 * rotated (§5.3.2.1), while a public client's still is (RFC 9700 §4.14.2). The plan's modules themselves run in
 * test/conformance-fapi2-op*.e2e.test.ts.
 */
describe.each(dialects())('AUTHCLI_FAPI2: DPoP algorithms and refresh rotation (%s)', (dialect) => {
  let server: TestServer;
  let conf: { id: string; secret: string };
  const redirectUri = 'https://app.example/callback';

  beforeAll(async () => {
    server = await startServer(dialect, { fapi2: true, dpopNonce: false });
    await seedUser(server, 'alice', {});
    const c = await seedApp(server, {
      name: 'Conf',
      kind: 'confidential',
      callbackUrls: [redirectUri],
      scopes: ['openid', 'offline_access'],
    });
    conf = { id: c.app.clientId, secret: c.clientSecret! };
  });
  afterAll(async () => server.close());

  async function proof(alg: 'RS256' | 'PS256'): Promise<string> {
    const { privateKey, publicKey } = await generateKeyPair(alg === 'RS256' ? 'RS256' : 'PS256');
    const claims = {
      htm: 'POST',
      htu: `${server.url}/oauth/token`,
      iat: Math.floor(server.clock.now() / 1000),
      jti: randomBytes(16).toString('base64url'),
    };
    return new SignJWT(claims).setProtectedHeader({ alg, typ: 'dpop+jwt', jwk: await exportJWK(publicKey) }).sign(privateKey);
  }

  /** A code of the confidential client, exchanged with client_secret_basic and the given DPoP proof. */
  async function confidentialLogin(dpop?: string) {
    const { callback, verifier } = await authorize(server, await signedInBrowser(server), {
      clientId: conf.id,
      redirectUri,
      scope: 'openid offline_access',
    });
    const fields = {
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code')!,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    };
    return tokenRequest(server, fields, { authorization: basic(conf.id, conf.secret), ...(dpop && { dpop }) });
  }

  it('§5.4.1 a DPoP proof signed RS256 is invalid_dpop_proof; PS256 binds the tokens; discovery lists no RS256', async () => {
    const refused = await confidentialLogin(await proof('RS256'));
    expect([refused.status, refused.json.error]).toEqual([400, 'invalid_dpop_proof']);
    expect(refused.json.error_description).toBe('the DPoP proof alg must be one of ES256, PS256, EdDSA, Ed25519 (RFC 9449 section 4.3)');
    const bound = await confidentialLogin(await proof('PS256'));
    expect([bound.status, bound.json.token_type]).toEqual([200, 'DPoP']);
    const doc = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(doc.dpop_signing_alg_values_supported).toEqual(['ES256', 'PS256', 'EdDSA', 'Ed25519']);
  });

  it('§5.3.2.1 a confidential client refreshes with the same refresh token, which keeps working; a public one rotates', async () => {
    const t = await confidentialLogin();
    expect(t.status).toBe(200);
    const refresh = (token: string) =>
      tokenRequest(server, { grant_type: 'refresh_token', refresh_token: token }, { authorization: basic(conf.id, conf.secret) });
    for (let i = 0; i < 3; i++) {
      const r = await refresh(t.json.refresh_token);
      expect(r.status).toBe(200);
      expect(r.json.refresh_token).toBeUndefined();
      expect(r.json.access_token).toBeTruthy();
    }
    // Not rotated, still ended: many refreshes at once all work (no reuse to detect), and a revocation (RFC 7009)
    // ends it for every one of them; another client cannot use it.
    const parallel = await Promise.all(Array.from({ length: 10 }, () => refresh(t.json.refresh_token)));
    expect(parallel.map((r) => r.status)).toEqual(Array(10).fill(200));
    const other = await seedApp(server, { name: 'Other', kind: 'confidential', callbackUrls: [redirectUri], scopes: ['openid'] });
    const stolen = await tokenRequest(
      server,
      { grant_type: 'refresh_token', refresh_token: t.json.refresh_token },
      { authorization: basic(other.app.clientId, other.clientSecret!) },
    );
    expect([stolen.status, stolen.json.error]).toEqual([400, 'invalid_grant']);
    const revoked = await fetch(`${server.url}/oauth/revoke`, {
      method: 'POST',
      headers: { authorization: basic(conf.id, conf.secret), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: t.json.refresh_token, token_type_hint: 'refresh_token' }),
    });
    expect(revoked.status).toBe(200);
    const after = await refresh(t.json.refresh_token);
    expect([after.status, after.json.error]).toEqual([400, 'invalid_grant']);
    // The built-in public application (a device login): rotated, as without FAPI 2.0.
    const d = (await deviceAuthorization(server, 'authcli', 'openid')).json;
    await decideOnDevicePage(await signedInBrowser(server), d.user_code, 'approve');
    const device = (await poll(server, 'authcli', d.device_code)).json as { refresh_token: string };
    const rotated = await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: device.refresh_token, client_id: 'authcli' });
    expect(rotated.status).toBe(200);
    expect(rotated.json.refresh_token).toBeTruthy();
    expect(rotated.json.refresh_token).not.toBe(device.refresh_token);
  });
});

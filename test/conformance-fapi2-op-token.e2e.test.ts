import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { DpopKey, type FapiClient } from '@authcli/test-support/fapi2-client';
import { checkClientError, checkEndpointError, expectSecret } from '@authcli/test-support/fapi2-checks';
import type { Fapi2Harness, Flow } from '@authcli/test-support/fapi2-harness';
import { type Fapi2Setup, startFapi2Server } from '@authcli/test-support/fapi2-server';

/**
 * The FAPI 2.0 Security Profile server plan's token endpoint modules: client authentication (private_key_jwt),
 * holder of key, the code's binding and single use, PKCE at the token endpoint, refresh tokens. Variants, the
 * modules not applicable and the conventions: conformance-fapi2-op.e2e.test.ts.
 */

let setup: Fapi2Setup;
beforeAll(async () => {
  setup = await startFapi2Server();
});
afterAll(async () => setup?.server.stop());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * Until the clock is past `epochSeconds`'s second: an iat of its own for the next ID token. Under a second, as the
 * token of that iat was issued before this is asked (the suite waits a whole second).
 */
const untilAfterSecond = (epochSeconds: number) => sleep(Math.max(0, (epochSeconds + 1) * 1000 - Date.now() + 5));

describe.each(['openid_connect', 'plain_oauth'] as const)('FAPI 2.0 Security Profile, %s: the token endpoint', (variant) => {
  const openid = variant === 'openid_connect';
  const v = () => setup.variant(variant);

  /** A flow to the callback, its code not yet redeemed. */
  async function signedIn(h: Fapi2Harness, client: FapiClient) {
    const flow = await h.authorize(client);
    expect(flow.callback?.searchParams.get('code'), flow.par.text).toBeTruthy();
    return flow;
  }

  it('fapi2-security-profile-final-ensure-client-id-in-token-endpoint', async () => {
    const { h, c1, c2 } = v();
    // Client 1's code; client_id and an assertion of client 2, signed with client 1's key: invalid_client or invalid_grant.
    const flow = await signedIn(h, c1);
    const fields = {
      grant_type: 'authorization_code',
      code: flow.callback!.searchParams.get('code')!,
      redirect_uri: c1.redirectUri,
      code_verifier: flow.verifier,
      client_id: c2.client_id,
    };
    const res = await h.token(c1, fields, { dpop: await DpopKey.create('ES256'), as: { ...c2, key: c1.key } });
    checkClientError(res, ['invalid_client', 'invalid_grant']);
  });

  it('fapi2-security-profile-final-ensure-holder-of-key-required', async () => {
    const { h, c1 } = v();
    // The code exchanged with the client's assertion and no DPoP proof: 4xx JSON, and with DPoP as the holder of
    // key mechanism invalid_request, invalid_grant or invalid_dpop_proof with 400 (ValidateTokenEndpointResponseWithDpop).
    const flow = await signedIn(h, c1);
    const res = await h.exchange(flow, undefined);
    checkEndpointError(res, ['invalid_request', 'invalid_grant', 'invalid_dpop_proof'], [400]);
  });

  it('fapi2-security-profile-final-ensure-authorization-code-is-bound-to-client', async () => {
    const { h, c1, c2 } = v();
    // Client 1's code redeemed by client 2, properly authenticated: 400 invalid_grant.
    const flow = await signedIn(h, c1);
    const res = await h.token(
      c2,
      {
        grant_type: 'authorization_code',
        code: flow.callback!.searchParams.get('code')!,
        redirect_uri: c1.redirectUri,
        code_verifier: flow.verifier,
      },
      { dpop: await DpopKey.create('ES256') },
    );
    checkEndpointError(res, ['invalid_grant'], [400]);
  });

  it('fapi2-security-profile-final-attempt-reuse-authorization-code-after-one-second', async () => {
    const { h, c1 } = v();
    const flow = await signedIn(h, c1);
    const { accessToken, key } = await h.complete(flow);
    // The suite waits a second for servers that let a code be replayed within a grace period; this server lets
    // none (the code is consumed by its first exchange), so the replay is made at once, a new assertion with it.
    const again = await h.exchange(flow, key);
    checkEndpointError(again, ['invalid_grant'], [400]);
    // The first exchange's access token should then be revoked (EnsureHttpStatusCodeIs4xx, a warning).
    if (openid) {
      const res = await h.resource(accessToken, key);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
    } else {
      expect((await h.introspect(c1, accessToken)).body).toEqual({ active: false });
    }
  });

  it('fapi2-security-profile-final-ensure-token-endpoint-fails-with-expired-auth-code', async () => {
    const { h, c1 } = v();
    // The suite waits 62 s for the code's lifetime (at most 60 s, FAPI 2.0 SP §5.3.2.1-11) to pass; the code is
    // expired through the store instead, as the time would leave it: 400 invalid_grant.
    const flow = await signedIn(h, c1);
    await setup.expire('authorization_codes', flow.callback!.searchParams.get('code')!);
    const res = await h.exchange(flow, await DpopKey.create('ES256'));
    checkEndpointError(res, ['invalid_grant'], [400]);
  });

  it('fapi2-security-profile-final-ensure-signed-client-assertion-with-RS256-fails', async () => {
    const { h, c1 } = v();
    // The client's key is RSA (PS256), so the module runs: the assertion signed RS256 with it is invalid_client.
    expect(c1.key.alg).toBe('PS256');
    const flow = await signedIn(h, c1);
    const res = await h.exchange(flow, await DpopKey.create('ES256'), { assertion: { alg: 'RS256' } });
    checkClientError(res);
    // Refused for its algorithm: the registered key (no `alg`) would verify an RS256 signature.
    expect(res.body.error_description).toMatch(/alg must be one of PS256, ES256, EdDSA$/);
  });

  it('fapi2-security-profile-final-ensure-client-assertion-in-token-endpoint', async () => {
    const { h, c1 } = v();
    // client_id alone, no assertion: invalid_client or invalid_request.
    const flow = await signedIn(h, c1);
    const res = await h.exchange(flow, await DpopKey.create('ES256'), { auth: 'client_id' });
    checkClientError(res, ['invalid_client', 'invalid_request']);
  });

  for (const [name, claims] of [
    [
      'fapi2-security-profile-final-ensure-client-assertion-with-exp-is-5-minutes-in-past-fails',
      () => ({ exp: Math.floor(Date.now() / 1000) - 300 }),
    ],
    ['fapi2-security-profile-final-ensure-client-assertion-with-wrong-aud-fails', () => ({ aud: 'https://not-this-server.example/' })],
    ['fapi2-security-profile-final-ensure-client-assertion-with-no-sub-fails', () => ({ sub: undefined })],
  ] as const) {
    it(name, async () => {
      const { h, c1 } = v();
      const flow = await signedIn(h, c1);
      const res = await h.exchange(flow, await DpopKey.create('ES256'), { assertion: { claims: claims() } });
      checkClientError(res, ['invalid_client', 'invalid_request']);
    });
  }

  it('fapi2-security-profile-final-ensure-pkce-code-verifier-required', async () => {
    const { h, c1 } = v();
    const flow = await signedIn(h, c1);
    checkEndpointError(await h.exchange(flow, await DpopKey.create('ES256'), { verifier: null }), ['invalid_grant'], [400]);
  });

  it('fapi2-security-profile-final-incorrect-pkce-code-verifier-rejected', async () => {
    const { h, c1 } = v();
    const flow = await signedIn(h, c1);
    const other = 'x'.repeat(20) + Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('base64url');
    checkEndpointError(await h.exchange(flow, await DpopKey.create('ES256'), { verifier: other }), ['invalid_grant'], [400]);
  });

  it('fapi2-security-profile-final-refresh-token', async () => {
    const { h, c1, c2 } = v();
    const refreshWith = (client: FapiClient, token: string, dpop: DpopKey | undefined, auth: 'assertion' | 'none' = 'assertion') =>
      // The suite's second client refreshes without `scope`: the grant's whole scope (RFC 6749 §6).
      h.token(client, { grant_type: 'refresh_token', refresh_token: token, ...(client === c1 && { scope: client.scope }) }, { dpop, auth });

    // Each client: the flow with offline_access (prompt=consent: AddPromptConsent...IfScopeContainsOfflineAccess).
    const first: { client: FapiClient; refresh: string; accessToken: string; key: DpopKey }[] = [];
    for (const client of [c1, c2]) {
      const flow = await h.authorize(client, { edit: (p) => (p.prompt = 'consent') });
      const { tokens, idToken, accessToken } = await h.complete(flow);
      const refresh = tokens.body.refresh_token as string;
      // EnsureServerConfigurationSupportsRefreshToken (a warning), EnsureRefreshTokenContainsAllowedCharactersOnly
      expect(setup.meta.grant_types_supported).toContain('refresh_token');
      expect(refresh).toMatch(/^[\x20-\x7E]+$/);
      // RefreshTokenRequestSteps: a second later, a new DPoP key (a confidential client's refresh token is not bound
      // to its key, RFC 9449 §5), the client's assertion.
      // Only an ID token is compared for its iat (CompareIdTokenClaims): plain_oauth has none to wait for.
      if (openid) await untilAfterSecond(idToken!.iat as number);
      const newKey = await DpopKey.create('ES256');
      const refreshed = await refreshWith(client, refresh, newKey);
      expect(refreshed.status, refreshed.text).toBe(200);
      expect(refreshed.headers.get('content-type')).toMatch(/^application\/json/);
      expect(refreshed.headers.get('cache-control')).toMatch(/no-store/);
      expect(String(refreshed.body.token_type).toLowerCase()).toBe('dpop');
      expectSecret(refreshed.body.access_token, 'access_token');
      expect(refreshed.body.access_token).not.toBe(accessToken);
      expect(decodeJwt(refreshed.body.access_token as string).cnf).toEqual({ jkt: newKey.jkt });
      expect(refreshed.body.expires_in as number).toBeGreaterThan(0);
      if (refreshed.body.refresh_token !== undefined) expectSecret(refreshed.body.refresh_token, 'refresh_token');
      // FAPI 2.0 SP §5.3.2.1: not rotated, so the suite's "previous token after 30 s" step is skipped (it would
      // have to succeed); the refresh token keeps working.
      expect(refreshed.body.refresh_token).toBeUndefined();
      if (openid) {
        // CompareIdTokenClaims (OIDC Core §12.2): same iss, sub, aud, auth_time, azp; a new iat
        const second = await h.checkIdToken(refreshed.body.id_token as string, { client, params: {} as Record<string, string> } as Flow);
        for (const claim of ['iss', 'sub', 'aud', 'auth_time', 'azp'] as const) expect(second[claim]).toEqual(idToken![claim]);
        expect(second.iat).not.toBe(idToken!.iat);
      } else {
        expect(refreshed.body.id_token).toBeUndefined();
      }
      first.push({ client, refresh, accessToken: refreshed.body.access_token as string, key: newKey });
    }

    const [one, two] = first as [(typeof first)[0], (typeof first)[0]];
    // Client 1 only: without client authentication (400 or 401: invalid_client, invalid_grant or invalid_request)...
    const bare = await refreshWith(c1, one.refresh, await DpopKey.create('ES256'), 'none');
    checkEndpointError(bare, ['invalid_client', 'invalid_grant', 'invalid_request'], [400, 401]);
    // ...and without a DPoP proof: 400 invalid_request, invalid_grant or invalid_dpop_proof.
    checkEndpointError(await refreshWith(c1, one.refresh, undefined), ['invalid_request', 'invalid_grant', 'invalid_dpop_proof'], [400]);
    // switchToClient1AndTryClient2AccessToken: client 2's access token with client 1's key is a 4xx.
    if (openid) {
      const res = await h.resource(two.accessToken, one.key);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
    }
    // RefreshTokenRequestExpectingErrorSteps: client 2's refresh token with client 1: 400 invalid_grant.
    checkEndpointError(await refreshWith(c1, two.refresh, one.key), ['invalid_grant'], [400]);
    // The failed attempts ended nothing: client 1's refresh token still works.
    expect((await refreshWith(c1, one.refresh, one.key)).status).toBe(200);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oauth from 'oauth4webapi';
import { decodeJwt } from 'jose';
import { addApp, addUsers } from '@authcli/test-support/seed';
import { startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';
import { approveInBrowser, Browser, hidden, signInFields } from '@authcli/test-support/http';

const PASSWORD = 'e2e password 1';
const REDIRECT = 'http://127.0.0.1:9/cb';
const insecure = { [oauth.allowInsecureRequests]: true };

/**
 * DPoP (RFC 9449) end to end, https://www.rfc-editor.org/rfc/rfc9449, with
 * a third-party client (oauth4webapi's DPoP support: proofs, `dpop_jkt`,
 * nonce tracking) as the independent implementation, against a started
 * server process over loopback with its defaults (server nonces required at
 * the token endpoint).
 */
describe('DPoP with oauth4webapi against a started authcli-server process', () => {
  let server: ServerProcess;
  let as: oauth.AuthorizationServer;
  let pub: oauth.Client;

  beforeAll(async () => {
    server = await startServerProcess();
    await addUsers(server.env, [{ username: 'alice', password: PASSWORD }]);
    const added = await addApp(server.env, {
      name: 'DPoP RP',
      kind: 'public',
      callbackUrls: [REDIRECT],
      scopes: ['openid', 'profile', 'offline_access'],
    });
    pub = { client_id: added.client_id };
    const issuer = new URL(server.issuer);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...insecure }));
  });
  afterAll(async () => server?.stop());

  /** Runs a token request, once more when the server asks for its nonce (§8): oauth4webapi keeps the nonce it was given. */
  async function withNonceRetry<T>(request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (err) {
      if (!oauth.isDPoPNonceError(err)) throw err;
      return request();
    }
  }

  /** A refresh by oauth4webapi with `DPoP`'s proofs (the nonce retry included). */
  const refresh = (client: oauth.Client, token: string, DPoP: oauth.DPoPHandle) =>
    withNonceRetry(async () =>
      oauth.processRefreshTokenResponse(
        as,
        client,
        await oauth.refreshTokenGrantRequest(as, client, oauth.None(), token, { DPoP, ...insecure }),
      ),
    );

  /** Userinfo by oauth4webapi with the DPoP scheme and a proof (`ath`), checked against the ID token's `sub`. */
  const userinfo = async (client: oauth.Client, tokens: oauth.TokenEndpointResponse, DPoP: oauth.DPoPHandle) => {
    const sub = oauth.getValidatedIdTokenClaims(tokens)!.sub;
    return oauth.processUserInfoResponse(
      as,
      client,
      sub,
      await oauth.userInfoRequest(as, client, tokens.access_token, { DPoP, ...insecure }),
    );
  };

  it('rfc9449 §5.1 discovery advertises dpop_signing_alg_values_supported', () => {
    expect(as.dpop_signing_alg_values_supported).toEqual(['ES256', 'PS256', 'RS256', 'EdDSA', 'Ed25519']);
  });

  it('rfc9449 §5, §7.1, §10 code flow with dpop_jkt, a refresh and userinfo; the tokens are useless without the key', async () => {
    const DPoP = oauth.DPoP(pub, await oauth.generateKeyPair('ES256'));
    const jkt = await DPoP.calculateThumbprint();
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: pub.client_id,
      redirect_uri: REDIRECT,
      scope: 'openid profile offline_access',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      dpop_jkt: jkt,
    }).toString();
    const callback = new URL(await approveInBrowser(new Browser(server.issuer), url.href, 'alice', PASSWORD));
    const params = oauth.validateAuthResponse(as, pub, callback, state);

    const tokens = await withNonceRetry(async () =>
      oauth.processAuthorizationCodeResponse(
        as,
        pub,
        await oauth.authorizationCodeGrantRequest(as, pub, oauth.None(), params, REDIRECT, verifier, { DPoP, ...insecure }),
      ),
    );
    expect(tokens.token_type).toBe('dpop');
    expect(decodeJwt(tokens.access_token).cnf).toEqual({ jkt });

    // §7.1: userinfo with the DPoP scheme and a proof (ath), as oauth4webapi sends it.
    expect((await userinfo(pub, tokens, DPoP)).sub).toBeTruthy();

    // §5: the refresh token is bound to the key; oauth4webapi refreshes with a proof.
    const refreshed = await refresh(pub, tokens.refresh_token!, DPoP);
    expect(refreshed.token_type).toBe('dpop');
    expect(decodeJwt(refreshed.access_token).cnf).toEqual({ jkt });

    // A thief with the tokens but not the key: the access token as Bearer, the refresh token with a key of its own.
    const stolen = await fetch(as.userinfo_endpoint!, { headers: { authorization: `Bearer ${refreshed.access_token}` } });
    expect(stolen.status).toBe(401);
    expect(stolen.headers.get('www-authenticate')).toMatch(/^DPoP algs="[^"]+", error="invalid_token"/);
    const thief = oauth.DPoP(pub, await oauth.generateKeyPair('ES256'));
    await expect(refresh(pub, refreshed.refresh_token!, thief)).rejects.toMatchObject({ error: 'invalid_grant' });
    // The owner's refresh still works: the thief's attempt ended nothing.
    expect((await refresh(pub, refreshed.refresh_token!, DPoP)).token_type).toBe('dpop');
  });

  it('rfc9449 §5 device flow: the proof of the redeeming poll binds the tokens; userinfo with DPoP', async () => {
    const device: oauth.Client = { client_id: 'authcli' };
    const DPoP = oauth.DPoP(device, await oauth.generateKeyPair('EdDSA'));
    const jkt = await DPoP.calculateThumbprint();
    const auth = await oauth.processDeviceAuthorizationResponse(
      as,
      device,
      await oauth.deviceAuthorizationRequest(as, device, oauth.None(), new URLSearchParams({ scope: 'openid profile' }), insecure),
    );

    // The person approves on the second screen.
    const browser = new Browser(server.issuer);
    const signin = await browser.get('/signin');
    await browser.postForm('/signin', signInFields(signin.text, 'alice', PASSWORD));
    const entry = await browser.get('/device');
    const confirm = await browser.postForm('/device', { _csrf: hidden(entry.text, '_csrf'), user_code: auth.user_code });
    expect(confirm.status).toBe(200);
    await browser.postForm('/device/decision', {
      _csrf: hidden(confirm.text, '_csrf'),
      user_code: hidden(confirm.text, 'user_code'),
      // The box a person ticks: their device shows this code.
      code_confirmed: hidden(confirm.text, 'code_confirmed'),
      decision: 'approve',
    });

    const tokens = await withNonceRetry(async () =>
      oauth.processDeviceCodeResponse(
        as,
        device,
        await oauth.deviceCodeGrantRequest(as, device, oauth.None(), auth.device_code, { DPoP, ...insecure }),
      ),
    );
    expect(tokens.token_type).toBe('dpop');
    expect(decodeJwt(tokens.access_token).cnf).toEqual({ jkt });
    expect((await userinfo(device, tokens, DPoP)).sub).toBeTruthy();
    // Without a proof the bound refresh token is refused.
    const bare = await oauth.refreshTokenGrantRequest(as, device, oauth.None(), tokens.refresh_token!, insecure);
    await expect(oauth.processRefreshTokenResponse(as, device, bare)).rejects.toMatchObject({ error: 'invalid_dpop_proof' });
  });
});

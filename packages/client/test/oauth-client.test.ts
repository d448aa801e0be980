import { describe, expect, it } from 'vitest';
import { AuthcliError } from '../src/errors.js';
import type { ClientSettings } from '../src/config.js';
import type { Transport } from '../src/http.js';
import { validateCallback } from '../src/oauth/authorization.js';
import { OAuthClient } from '../src/oauth/client.js';
import type { ServerMetadata } from '../src/oauth/discovery.js';
import { ProtocolError } from '../src/oauth/errors.js';
import { basic, deviceCodes, response, scripted } from './support/scripted.js';

const ISS = 'https://id.example';
const meta: ServerMetadata = {
  issuer: ISS,
  token_endpoint: `${ISS}/token`,
  device_authorization_endpoint: `${ISS}/device`,
  pushed_authorization_request_endpoint: `${ISS}/par`,
  authorization_endpoint: `${ISS}/authorize`,
  revocation_endpoint: `${ISS}/revoke`,
};
const PUBLIC: ClientSettings = { issuer: ISS, clientId: 'authcli', clientSecret: undefined };
const CONFIDENTIAL: ClientSettings = { issuer: ISS, clientId: 'build-bot', clientSecret: 's3cret' };
const SCOPE = 'openid profile offline_access';

const client = (transport: Transport, settings = PUBLIC, tokenTransport?: Transport) =>
  new OAuthClient({ meta, settings, transport, tokenTransport });

const tokens = { access_token: 'at-1', token_type: 'Bearer', expires_in: 300, refresh_token: 'rt-1' };
const oauthError = (status: number, error: string, error_description?: string) => response(status, { error, error_description });

/** What a request ended with: the ProtocolError's facts and words. */
async function failure(p: Promise<unknown>) {
  const err = await p.then(
    () => {
      throw new Error('the request succeeded');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProtocolError);
  const { code, message, hint, endpoint, error, description, status } = err as ProtocolError;
  return { code, message, hint, endpoint, error, description, status };
}

const validated = validateCallback(new URLSearchParams({ code: 'code-1', state: 'st', iss: ISS }), {
  state: 'st',
  issuer: ISS,
  issRequired: true,
});

describe('rfc6749 §2.3 client authentication, in one place', () => {
  it('a public client sends its id in the form and no Authorization header', () => {
    expect(client(scripted()).authenticate({ scope: 'openid' })).toEqual({ headers: {}, form: { scope: 'openid', client_id: 'authcli' } });
  });

  it('§2.3.1 a confidential client uses HTTP Basic with the id and secret form-urlencoded first, and no client_id in the form', () => {
    const auth = client(scripted(), { issuer: ISS, clientId: 'a b:c', clientSecret: 'p%ss wörd' }).authenticate({ scope: 'openid' });
    expect(auth.form).toEqual({ scope: 'openid' });
    const decoded = Buffer.from(auth.headers.authorization!.replace(/^Basic /, ''), 'base64').toString('utf8');
    expect(decoded).toBe('a+b%3Ac:p%25ss+w%C3%B6rd');
  });
});

describe('rfc8628 §3.1-3.2 device authorization', () => {
  const codes = deviceCodes(ISS);

  it('POSTs the scope with the client id to the device authorization endpoint; the answer comes back typed', async () => {
    const transport = scripted(response(200, codes));
    expect(await client(transport).deviceAuthorization(SCOPE)).toEqual(codes);
    expect(transport.sent).toEqual([
      { url: `${ISS}/device`, init: { method: 'POST', headers: {}, form: { scope: SCOPE, client_id: 'authcli' } } },
    ]);
  });

  it('a confidential client authenticates with Basic', async () => {
    const transport = scripted(response(200, codes));
    await client(transport, CONFIDENTIAL).deviceAuthorization(SCOPE);
    expect(transport.sent[0]!.init).toEqual({
      method: 'POST',
      headers: { authorization: basic('build-bot', 's3cret') },
      form: { scope: SCOPE },
    });
  });

  it('an answer without the codes, or with fields of the wrong type, is a protocol error', async () => {
    for (const body of [{ device_code: 'dc' }, { ...codes, expires_in: '600s' }, { ...codes, interval: 'soon' }, 'not json', null]) {
      expect(await failure(client(scripted(response(200, body))).deviceAuthorization(SCOPE))).toMatchObject({
        code: 'protocol',
        message: 'the device authorization response is incomplete',
        endpoint: 'device_authorization',
      });
    }
  });

  it('invalid_client: the server’s words, the client id and where it is set; the secret as a public client may need one', async () => {
    const refused = await failure(client(scripted(oauthError(401, 'invalid_client', 'unknown client'))).deviceAuthorization(SCOPE));
    expect(refused).toEqual({
      code: 'invalid_client',
      message: 'the server refused this client for the device flow (invalid_client: unknown client)',
      hint: 'Check the client id (authcli: --client-id, AUTHCLI_CLIENT_ID or config.json) and, for a confidential client, its secret.',
      endpoint: 'device_authorization',
      error: 'invalid_client',
      description: 'unknown client',
      status: 401,
    });
  });

  it('invalid_client for a confidential client: the id and the secret, and where each is set', async () => {
    const refused = await failure(client(scripted(oauthError(401, 'invalid_client')), CONFIDENTIAL).deviceAuthorization(SCOPE));
    expect(refused.hint).toBe(
      'Check the client id (build-bot: --client-id, AUTHCLI_CLIENT_ID or config.json) and its secret (--client-secret-stdin or AUTHCLI_CLIENT_SECRET).',
    );
  });

  it('unauthorized_client: the client exists but may not use the device flow; ask the operator, nothing about the secret', async () => {
    const refused = await failure(
      client(
        scripted(oauthError(400, 'unauthorized_client', 'this application may not use the device authorization grant')),
        CONFIDENTIAL,
      ).deviceAuthorization(SCOPE),
    );
    expect(refused.code).toBe('invalid_client');
    expect(refused.message).toBe(
      'the server refused this client for the device flow (unauthorized_client: this application may not use the device authorization grant)',
    );
    expect(refused.hint).toBe(
      "Client build-bot exists but may not use the device flow: ask the server's operator to allow the urn:ietf:params:oauth:grant-type:device_code grant for it, or sign in with `authcli login --browser`.",
    );
    expect(refused.hint).not.toMatch(/secret/);
  });

  it('invalid_scope: the scope the server named, and the --scope without it', async () => {
    const refused = await failure(
      client(
        scripted(oauthError(400, 'invalid_scope', 'the offline_access scope is not allowed for this application')),
      ).deviceAuthorization(SCOPE),
    );
    expect(refused).toMatchObject({
      code: 'protocol',
      message: 'device authorization failed: invalid_scope: the offline_access scope is not allowed for this application',
      hint: 'Ask without offline_access: --scope "openid profile" (or ask the server\'s operator to allow it for client authcli).',
    });
  });

  it('invalid_scope that names no scope asked for: the scopes asked for, and --scope', async () => {
    const refused = await failure(client(scripted(oauthError(400, 'invalid_scope'))).deviceAuthorization(SCOPE));
    expect(refused.hint).toBe(
      `The scopes asked for were "${SCOPE}": pass --scope with those client authcli may have, or ask the server's operator to allow them.`,
    );
  });

  it('a 4xx without an OAuth error says its status', async () => {
    expect(await failure(client(scripted(response(404, '<h1>Not found</h1>'))).deviceAuthorization(SCOPE))).toMatchObject({
      code: 'protocol',
      message: 'device authorization failed: HTTP 404',
      hint: undefined,
      status: 404,
    });
  });

  it('a server without a device authorization endpoint: the discovery error, with the browser flow to try', async () => {
    const transport = scripted();
    const noDevice = new OAuthClient({ meta: { ...meta, device_authorization_endpoint: undefined }, settings: PUBLIC, transport });
    expect(await failure(noDevice.deviceAuthorization(SCOPE))).toMatchObject({
      code: 'discovery',
      message: 'https://id.example does not offer the device flow; try `authcli login --browser`',
    });
    expect(transport.sent).toEqual([]);
  });
});

describe('rfc8628 §3.4-3.5 one device token poll, classified', () => {
  const poll = (...answers: Parameters<typeof scripted>) => client(scripted(), PUBLIC, scripted(...answers)).pollDeviceToken('dc');

  it('sends the device_code grant with the client id through the token transport (DPoP when the sign-in uses it)', async () => {
    const plain = scripted();
    const token = scripted(response(200, tokens));
    await client(plain, PUBLIC, token).pollDeviceToken('dc');
    expect(plain.sent).toEqual([]);
    expect(token.sent).toEqual([
      {
        url: `${ISS}/token`,
        init: {
          method: 'POST',
          headers: {},
          form: { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: 'dc', client_id: 'authcli' },
        },
      },
    ]);
  });

  it('tokens, authorization_pending, slow_down, 429, and no answer or a 5xx as transient', async () => {
    expect(await poll(response(200, tokens))).toEqual({ kind: 'tokens', tokens });
    expect(await poll(oauthError(400, 'authorization_pending'))).toEqual({ kind: 'authorization_pending' });
    expect(await poll(oauthError(400, 'slow_down'))).toEqual({ kind: 'slow_down' });
    expect(await poll(response(429, 'too many'))).toEqual({ kind: 'rate_limited' });
    expect(await poll('network')).toMatchObject({ kind: 'transient', cause: { code: 'network' } });
    expect(await poll(response(503, 'busy'))).toMatchObject({ kind: 'transient', cause: { status: 503 } });
  });

  it('terminal answers are failures with their wording: access_denied, expired_token, invalid_client, a malformed success, a bare 400', async () => {
    const failed = async (answer: Parameters<typeof scripted>[0]) => {
      const result = await poll(answer);
      expect(result.kind).toBe('failed');
      const { code, message, hint } = (result as { error: ProtocolError }).error;
      return { code, message, hint };
    };
    expect(await failed(oauthError(400, 'access_denied'))).toEqual({
      code: 'access_denied',
      message: 'the sign-in was denied in the browser',
      hint: undefined,
    });
    expect(await failed(oauthError(400, 'expired_token'))).toEqual({
      code: 'expired_token',
      message: 'the code expired before the sign-in was approved; run `authcli login` again',
      hint: undefined,
    });
    expect(await failed(oauthError(401, 'invalid_client', 'client authentication failed'))).toMatchObject({
      code: 'invalid_client',
      message: 'the server refused this client for the device flow (invalid_client: client authentication failed)',
      hint: expect.stringMatching(/^Check the client id \(authcli: --client-id/),
    });
    expect(await failed(oauthError(400, 'invalid_grant', 'unknown device code'))).toEqual({
      code: 'protocol',
      message: 'the device sign-in failed: invalid_grant: unknown device code',
      hint: 'Run `authcli login` again.',
    });
    expect(await failed(oauthError(400, 'unsupported_grant_type'))).toEqual({
      code: 'protocol',
      message: 'the device sign-in failed: unsupported_grant_type',
      hint: 'https://id.example does not offer the device flow (the urn:ietf:params:oauth:grant-type:device_code grant): sign in with `authcli login --browser`.',
    });
    expect(await failed(response(200, { token_type: 'Bearer' }))).toMatchObject({
      code: 'protocol',
      message: 'the token endpoint answered without an access token',
    });
    expect(await failed(response(400, ''))).toMatchObject({ code: 'protocol', message: 'the device sign-in failed: HTTP 400' });
  });
});

describe('rfc9126 pushed authorization requests', () => {
  const params = { response_type: 'code', client_id: 'build-bot', scope: SCOPE, redirect_uri: 'http://127.0.0.1:5000/callback' };

  it('§2.1 every parameter, with Basic and client_id in the form; §2.2 the request_uri of a 201', async () => {
    const transport = scripted(response(201, { request_uri: 'urn:ietf:params:oauth:request_uri:x', expires_in: 60 }));
    expect(await client(transport, CONFIDENTIAL).pushAuthorizationRequest(params)).toBe('urn:ietf:params:oauth:request_uri:x');
    expect(transport.sent).toEqual([
      { url: `${ISS}/par`, init: { method: 'POST', headers: { authorization: basic('build-bot', 's3cret') }, form: params } },
    ]);
  });

  it('a success without a request_uri is a protocol failure; the browser is not opened', async () => {
    expect(await failure(client(scripted(response(201, { expires_in: 60 }))).pushAuthorizationRequest(params))).toMatchObject({
      code: 'authorization_request',
      message: 'the server answered the pushed authorization request without a request_uri; the browser was not opened',
    });
  });

  it('an unregistered redirect URI: the loopback callback to register', async () => {
    const refused = await failure(
      client(scripted(oauthError(400, 'invalid_request', 'redirect_uri is not registered'))).pushAuthorizationRequest(params),
    );
    expect(refused).toMatchObject({
      code: 'authorization_request',
      message:
        'the server refused the pushed authorization request (invalid_request: redirect_uri is not registered); the browser was not opened',
      hint: 'Check that the server has http://127.0.0.1/callback (any port) registered as a redirect URI for client authcli.',
    });
  });

  it('unauthorized_client: the code flow is not allowed for the client; the device flow is the other way', async () => {
    const refused = await failure(client(scripted(oauthError(400, 'unauthorized_client'))).pushAuthorizationRequest(params));
    expect(refused.hint).toBe(
      "Client authcli exists but may not use the browser sign-in: ask the server's operator to allow the authorization_code grant for it, or sign in with the device flow (`authcli login`).",
    );
  });
});

describe('rfc6749 §4.1.3 code exchange with the PKCE verifier (rfc7636 §4.5)', () => {
  it('sends the code, the redirect URI and the verifier through the token transport; a DPoP token type is accepted', async () => {
    const token = scripted(response(200, { ...tokens, token_type: 'DPoP' }));
    expect(await client(scripted(), PUBLIC, token).exchangeCode(validated, 'http://127.0.0.1:5000/callback', 'verifier-1')).toMatchObject({
      token_type: 'DPoP',
    });
    expect(token.sent[0]).toEqual({
      url: `${ISS}/token`,
      init: {
        method: 'POST',
        headers: {},
        form: {
          grant_type: 'authorization_code',
          code: 'code-1',
          redirect_uri: 'http://127.0.0.1:5000/callback',
          code_verifier: 'verifier-1',
          client_id: 'authcli',
        },
      },
    });
  });

  it('invalid_grant: the exchange failed, with the server’s reason and what to do', async () => {
    const refused = await failure(
      client(scripted(oauthError(400, 'invalid_grant', 'the code is invalid'))).exchangeCode(validated, 'http://127.0.0.1:1/callback', 'v'),
    );
    expect(refused).toMatchObject({
      code: 'protocol',
      message: 'the code exchange failed: invalid_grant: the code is invalid',
      hint: 'The code was used already or has expired; run `authcli login --browser` again.',
    });
  });

  it('a token response without an access token, with an unknown token type, or with fields of the wrong type', async () => {
    const exchange = (body: unknown) =>
      failure(client(scripted(response(200, body))).exchangeCode(validated, 'http://127.0.0.1:1/callback', 'v'));
    expect((await exchange({ token_type: 'Bearer' })).message).toBe('the token endpoint answered without an access token');
    expect((await exchange('<html>')).message).toBe('the token endpoint answered without an access token');
    expect((await exchange({ ...tokens, token_type: 'mac' })).message).toBe('unsupported token_type mac');
    expect((await exchange({ ...tokens, refresh_token: 7 })).message).toBe(
      'the token endpoint answered with a refresh_token that is not a string',
    );
    expect((await exchange({ ...tokens, expires_in: 'soon' })).message).toBe(
      'the token endpoint answered with an expires_in that is not a number',
    );
  });

  it('a lifetime sent as a string of digits is taken as the number it is', async () => {
    const answer = await client(scripted(response(200, { ...tokens, expires_in: '300' }))).exchangeCode(
      validated,
      'http://127.0.0.1:1/callback',
      'v',
    );
    expect(answer.expires_in).toBe(300);
  });
});

describe('rfc6749 §6 refresh', () => {
  it('sends the refresh token with Basic for a confidential client', async () => {
    const token = scripted(response(200, tokens));
    await client(scripted(), CONFIDENTIAL, token).refresh('rt-0');
    expect(token.sent[0]!.init).toEqual({
      method: 'POST',
      headers: { authorization: basic('build-bot', 's3cret') },
      form: { grant_type: 'refresh_token', refresh_token: 'rt-0' },
    });
  });

  it('invalid_grant: the sign-in has ended, run authcli login (one line, no hint)', async () => {
    expect(await failure(client(scripted(oauthError(400, 'invalid_grant', 'grant revoked'))).refresh('rt'))).toMatchObject({
      code: 'signed_out',
      message: 'the sign-in to https://id.example has ended (grant revoked); run `authcli login`',
      hint: undefined,
      error: 'invalid_grant',
    });
  });

  it('invalid_grant for a sign-in of another profile: names the profile, and the login for it', async () => {
    const profile = { ...PUBLIC, profile: 'work', slot: `${ISS}#work` };
    expect((await failure(client(scripted(oauthError(400, 'invalid_grant')), profile).refresh('rt'))).message).toBe(
      'the sign-in to https://id.example (profile work) has ended (invalid_grant); run `authcli login --profile work`',
    );
  });

  it('unauthorized_client: the client may not refresh; the operator can allow it', async () => {
    const refused = await failure(client(scripted(oauthError(400, 'unauthorized_client'))).refresh('rt'));
    expect(refused).toMatchObject({
      code: 'invalid_client',
      message: 'the server refused this client for refreshing (unauthorized_client)',
    });
    expect(refused.hint).toBe(
      "Client authcli exists but may not renew sign-ins: ask the server's operator to allow the refresh_token grant for it, or run `authcli login` whenever the token expires.",
    );
  });

  it('any other refusal: refreshing failed, with the reason', async () => {
    expect(await failure(client(scripted(oauthError(400, 'invalid_dpop_proof', 'bad proof'))).refresh('rt'))).toMatchObject({
      code: 'protocol',
      message: 'refreshing failed: invalid_dpop_proof: bad proof',
      error: 'invalid_dpop_proof',
    });
  });
});

describe('rfc7009 revocation', () => {
  it('§2.1 sends the token and its type hint through the token transport; 200 is done', async () => {
    const token = scripted(response(200, ''));
    expect(await client(scripted(), PUBLIC, token).revoke('rt-1', 'refresh_token')).toBe('revoked');
    expect(token.sent[0]).toEqual({
      url: `${ISS}/revoke`,
      init: { method: 'POST', headers: {}, form: { token: 'rt-1', token_type_hint: 'refresh_token', client_id: 'authcli' } },
    });
  });

  it('a server without a revocation endpoint: unsupported, nothing sent', async () => {
    const transport = scripted();
    const none = new OAuthClient({ meta: { ...meta, revocation_endpoint: undefined }, settings: PUBLIC, transport });
    expect(await none.revoke('rt', 'refresh_token')).toBe('unsupported');
    expect(transport.sent).toEqual([]);
  });

  it('a refusal says why', async () => {
    expect(await failure(client(scripted(oauthError(400, 'unsupported_token_type'))).revoke('rt', 'refresh_token'))).toMatchObject({
      code: 'protocol',
      message: 'the server refused to revoke it (unsupported_token_type)',
    });
    expect((await failure(client(scripted(response(403, ''))).revoke('rt', 'refresh_token'))).message).toBe(
      'the server refused to revoke it (HTTP 403)',
    );
  });
});

describe('the one error type', () => {
  it('is a AuthcliError, so the error boundary prints it as one line with its hint', async () => {
    const err = await client(scripted(oauthError(401, 'invalid_client')))
      .refresh('rt')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthcliError);
    expect(err).toBeInstanceOf(ProtocolError);
  });
});

import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpTransport } from '../src/http.js';
import { OAuthClient } from '../src/oauth/client.js';
import { discover, fetchJwks } from '../src/oauth/discovery.js';
import { ProtocolError } from '../src/oauth/errors.js';
import { fetchUserinfo } from '../src/oauth/userinfo.js';
import { response, scripted } from './support/scripted.js';

const ISS = 'https://id.example';
const doc = { issuer: ISS, token_endpoint: `${ISS}/token`, jwks_uri: `${ISS}/jwks`, userinfo_endpoint: `${ISS}/userinfo` };

describe('discovery (OIDC Discovery §4, RFC 8414 §3)', () => {
  it('GETs the OpenID configuration first', async () => {
    const transport = scripted(response(200, doc));
    expect(await discover(ISS, transport)).toEqual(doc);
    expect(transport.sent).toEqual([{ url: `${ISS}/.well-known/openid-configuration`, init: { method: 'GET' } }]);
  });

  it('falls back to the RFC 8414 document on a 404', async () => {
    const transport = scripted(response(404, 'not found'), response(200, doc));
    expect(await discover(ISS, transport)).toEqual(doc);
    expect(transport.sent.map((s) => s.url)).toEqual([
      `${ISS}/.well-known/openid-configuration`,
      `${ISS}/.well-known/oauth-authorization-server`,
    ]);
  });

  it('what is not a discovery document is a discovery error that says what answered', async () => {
    const fails = (...answers: Parameters<typeof scripted>) => discover(ISS, scripted(...answers)).catch((e: unknown) => e);
    expect(await fails(response(403, 'forbidden'))).toMatchObject({
      code: 'discovery',
      message: `${ISS}/.well-known/openid-configuration answered 403; is ${ISS} an OAuth server?`,
    });
    expect(await fails(response(200, '<html>a web page</html>'))).toMatchObject({
      message: `${ISS}/.well-known/openid-configuration answered 200; is ${ISS} an OAuth server?`,
    });
    expect(await fails(response(200, { issuer: ISS }))).toMatchObject({ code: 'discovery', message: `${ISS} publishes no token endpoint` });
    expect(await fails(response(404, ''), response(404, ''))).toMatchObject({
      code: 'discovery',
      message: `${ISS} publishes no discovery document`,
    });
  });
});

describe('the key set (jwks_uri)', () => {
  it('GETs the keys', async () => {
    const keys = { keys: [{ kty: 'EC', crv: 'P-256', x: 'x', y: 'y' }] };
    const transport = scripted(response(200, keys));
    expect(await fetchJwks(doc, transport)).toEqual(keys);
    expect(transport.sent).toEqual([{ url: `${ISS}/jwks`, init: { method: 'GET' } }]);
  });

  it('no jwks_uri, a refusal or a body without keys: an ID token error (nothing is stored unverified)', async () => {
    await expect(fetchJwks({ ...doc, jwks_uri: undefined }, scripted())).rejects.toMatchObject({
      code: 'id_token',
      message: 'the server sent an ID token but publishes no jwks_uri to verify it',
    });
    await expect(fetchJwks(doc, scripted(response(404, 'x')))).rejects.toMatchObject({
      code: 'id_token',
      message: `cannot load the issuer's keys from ${ISS}/jwks (HTTP 404)`,
    });
    await expect(fetchJwks(doc, scripted(response(200, { keys: 'none' })))).rejects.toMatchObject({ code: 'id_token' });
  });
});

describe('oidc core §5.3 userinfo', () => {
  it('sends the access token as Bearer and returns the claims', async () => {
    const transport = scripted(response(200, { sub: 'u1', preferred_username: 'alice', email: 7 }));
    expect(await fetchUserinfo(doc, transport, { accessToken: 'at' }, 'u1')).toEqual({
      sub: 'u1',
      preferred_username: 'alice',
      email: undefined,
      name: undefined,
    });
    expect(transport.sent).toEqual([{ url: `${ISS}/userinfo`, init: { method: 'GET', headers: { authorization: 'Bearer at' } } }]);
  });

  it('a DPoP-bound token goes through the resource transport, which authorizes the request itself', async () => {
    const plain = scripted();
    const resource = scripted(response(200, { sub: 'u1' }));
    await fetchUserinfo(doc, plain, { accessToken: 'at', resourceTransport: resource });
    expect(plain.sent).toEqual([]);
    expect(resource.sent).toEqual([{ url: `${ISS}/userinfo`, init: { method: 'GET' } }]);
  });

  it('§5.3.2 claims about another subject, an answer without sub, and an RFC 6750 challenge are refused', async () => {
    await expect(fetchUserinfo(doc, scripted(response(200, { sub: 'u2' })), { accessToken: 'at' }, 'u1')).rejects.toMatchObject({
      message: 'the userinfo is about another user than the ID token',
    });
    await expect(fetchUserinfo(doc, scripted(response(200, { name: 'x' })), { accessToken: 'at' })).rejects.toMatchObject({
      message: 'the userinfo endpoint answered without a subject',
    });
    const challenged = response(401, '', { 'www-authenticate': 'Bearer error="invalid_token", error_description="token expired"' });
    await expect(fetchUserinfo(doc, scripted(challenged), { accessToken: 'at' })).rejects.toMatchObject({
      endpoint: 'userinfo',
      error: 'invalid_token',
      message: 'the userinfo request failed: invalid_token: token expired',
    });
  });
});

describe('over the real transport: a 5xx is the server’s failure, never the client’s', () => {
  let server: Server;
  let origin: string;
  beforeAll(async () => {
    server = createServer((_req, res) =>
      res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'temporarily_unavailable' })),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(() => server.close());

  const client = () =>
    new OAuthClient({
      meta: { issuer: origin, token_endpoint: `${origin}/token`, device_authorization_endpoint: `${origin}/device` },
      settings: { issuer: origin, clientId: 'authcli', clientSecret: undefined },
      transport: httpTransport,
    });

  it('a request answered 503 fails as a network error with the status and the retry hint, not as a ProtocolError', async () => {
    const err = await client()
      .deviceAuthorization('openid')
      .catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(ProtocolError);
    expect(err).toMatchObject({
      code: 'network',
      message: `${origin} answered HTTP 503 Service Unavailable (temporarily_unavailable)`,
      hint: 'The server or a gateway before it is unavailable; try again in a moment.',
    });
  });

  it('a device token poll answered 503 is transient: the flow waits and polls again', async () => {
    expect(await client().pollDeviceToken('dc')).toMatchObject({ kind: 'transient', cause: { code: 'network' } });
  });
});

/**
 * What the private_key_jwt tests share: client key pairs, client assertions signed as a client library signs
 * them (RFC 7523 §3, oauth4webapi's claims), and a client's jwks_uri on a loopback HTTP server of the test's own
 * that counts the requests it gets and answers as the test tells it (a JWK Set, silence, too much, not JSON).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { onTestFinished } from 'vitest';
import type { ClientKeys } from '../src/store/store.js';
import { registerApplication } from '../src/oauth/registration.js';
import type { TestServer } from './helpers.js';

export const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** A client's key pair: the private key it signs with and its public JWK (with `kid`) as registered. */
export interface ClientKey {
  alg: string;
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

export async function clientKey(alg: 'ES256' | 'PS256' | 'RS256' | 'EdDSA', kid = `${alg}-${randomUUID()}`): Promise<ClientKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { alg, kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, use: 'sig' } };
}

export const jwksOf = (...keys: ClientKey[]) => ({ keys: keys.map((k) => k.publicJwk) });

/**
 * A client assertion as oauth4webapi makes one (iss = sub = client_id, aud = the issuer, exp 60 s on, iat,
 * nbf, a fresh jti), at the server's clock; `claims` replaces or (undefined) removes claims, `header` adds to
 * the protected header.
 */
export async function assertion(
  server: TestServer,
  clientId: string,
  key: ClientKey,
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
): Promise<string> {
  const now = Math.floor(server.clock.now() / 1000);
  const payload: Record<string, unknown> = {
    iss: clientId,
    sub: clientId,
    aud: server.url,
    jti: randomUUID(),
    iat: now,
    nbf: now,
    exp: now + 60,
    ...claims,
  };
  for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name];
  return new SignJWT(payload).setProtectedHeader({ alg: key.alg, kid: key.kid, ...header }).sign(key.privateKey);
}

/** An unsigned JWT (`alg: none`) or any header and claims with a made-up signature. */
export function forged(header: Record<string, unknown>, claims: Record<string, unknown>, signature = ''): string {
  const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  return `${part(header)}.${part(claims)}.${signature}`;
}

/** The form fields of private_key_jwt. */
export const assertionFields = (clientAssertion: string, clientId?: string) => ({
  client_assertion_type: ASSERTION_TYPE,
  client_assertion: clientAssertion,
  ...(clientId !== undefined && { client_id: clientId }),
});

/** Registers a confidential private_key_jwt application as the operator would (`apps add --jwks` or `--jwks-uri`). */
export async function seedKeyApp(server: TestServer, clientKeys: ClientKeys, name = 'Backend with keys') {
  const { app, clientSecret } = await registerApplication(
    server.store,
    {
      name,
      kind: 'confidential',
      callbackUrls: ['https://app.example/callback'],
      scopes: ['openid', 'profile', 'offline_access'],
      grantTypes: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
      clientKeys,
    },
    server.clock.now(),
  );
  if (clientSecret !== undefined) throw new Error('an application with keys got a secret');
  return app.clientId;
}

/** What the jwks_uri server answers. */
export type JwksAnswer =
  | { kind: 'json'; body: unknown; headers?: Record<string, string> }
  | { kind: 'raw'; body: string; status?: number; headers?: Record<string, string> }
  | { kind: 'hang' };

/** A client's jwks_uri on a loopback port, closed when the test finishes. */
export async function jwksServer(answer: JwksAnswer): Promise<{
  url: string;
  port: number;
  requests: () => number;
  connections: () => number;
  answer: (a: JwksAnswer) => void;
}> {
  let current = answer;
  let requests = 0;
  let connections = 0;
  const hanging: ServerResponse[] = [];
  const server: Server = createServer((_req, res) => {
    requests++;
    const a = current;
    if (a.kind === 'hang') {
      hanging.push(res);
      return;
    }
    const body = a.kind === 'json' ? JSON.stringify(a.body) : a.body;
    res.writeHead(a.kind === 'raw' ? (a.status ?? 200) : 200, { 'content-type': 'application/json', ...a.headers }).end(body);
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  onTestFinished(async () => {
    for (const res of hanging) res.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return {
    url: `http://127.0.0.1:${port}/jwks`,
    port,
    requests: () => requests,
    connections: () => connections,
    answer: (a) => {
      current = a;
    },
  };
}

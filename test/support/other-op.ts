/// <reference path="./types/oidc-provider.d.ts" />
import type { Server } from 'node:http';
import Provider from 'oidc-provider';
import { freePort } from './http.js';

/**
 * Another standard OpenID Connect server, not written here: panva's
 * node-oidc-provider, with its built-in development sign-in pages (any
 * login and password), a public native client for the CLI, PKCE and the
 * device flow enabled.
 */
export async function startOtherProvider(): Promise<{ issuer: string; close: () => Promise<void> }> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'authcli',
        application_type: 'native',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
        response_types: ['code'],
        redirect_uris: ['http://127.0.0.1/callback'],
      },
    ],
    features: { devInteractions: { enabled: true }, deviceFlow: { enabled: true }, revocation: { enabled: true } },
    scopes: ['openid', 'profile', 'offline_access'],
    claims: { openid: ['sub'], profile: ['preferred_username'] },
    findAccount: async (_ctx: unknown, id: string) => ({ accountId: id, claims: async () => ({ sub: id, preferred_username: id }) }),
  });
  const server: Server = provider.listen(port, '127.0.0.1') as unknown as Server;
  await new Promise<void>((resolve) => (server.listening ? resolve() : server.once('listening', () => resolve())));
  return { issuer, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

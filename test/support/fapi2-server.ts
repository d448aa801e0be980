/**
 * A server set up as a FAPI 2.0 deployment for the Security Profile's server plan (fapi2-security-profile-final-
 * test-plan, variants private_key_jwt + DPoP, unsigned requests, plain responses): AUTHCLI_FAPI2=on, a user with
 * every standard claim, and the plan's two clients (client and client2 of its configuration): confidential,
 * private_key_jwt with an inline JWK Set (the first an RSA key for PS256, so the RS256 module runs; the second
 * ES256), DPoP and pushed requests required, ES256 ID tokens; the second client's redirect URI carries the
 * query the suite adds (AddRedirectUriQuerySuffix).
 */
import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import { withStore } from '@authcli/server';
import { type FapiClient, signingKey } from './fapi2-client.js';
import { Fapi2Harness, type Variant } from './fapi2-harness.js';
import { addApp, addUsers } from './seed.js';
import { serverCommand, startServerProcess, type ServerProcess } from './server-process.js';
import { testRows } from '@authcli/server/testing';

export const USER = { username: 'fapi-user', password: 'fapi2 conformance password' };
/** A user who never consents: the consent page is always there for user-rejects-authentication to refuse. */
export const REJECTER = { username: 'fapi-rejecter', password: 'fapi2 rejecting password' };
/** Redirect URIs nobody listens on: the browser stops at the redirect, which is what the tests read. */
export const REDIRECT_1 = 'http://127.0.0.1:9/fapi2/callback';
export const REDIRECT_2 = 'http://127.0.0.1:9/fapi2/callback2?dummy1=lorem&dummy2=ipsum';

/** Every OIDC Core §5.1 claim (EnsureIdentityClaimsContainRequestedClaims asks for all of them). */
export const CLAIMS = {
  name: 'Jane Q. Public',
  given_name: 'Jane',
  family_name: 'Public',
  middle_name: 'Quinn',
  nickname: 'JQ',
  profile: 'https://people.example/jane',
  picture: 'https://people.example/jane.png',
  website: 'https://jane.example',
  gender: 'female',
  birthdate: '1990-04-01',
  zoneinfo: 'Europe/Paris',
  locale: 'fr-FR',
  email: 'jane@people.example',
  email_verified: true,
  phone_number: '+33155550123',
  phone_number_verified: true,
  address: {
    formatted: '1 rue de la Paix\n75002 Paris\nFrance',
    street_address: '1 rue de la Paix',
    locality: 'Paris',
    postal_code: '75002',
    country: 'France',
  },
};

/** client.scope of the suite's configuration, per variant: plain_oauth may not ask for openid (FAPI2ProfileBehavior). */
export const SCOPES: Record<Variant, string> = {
  openid_connect: 'openid profile email address phone offline_access',
  plain_oauth: 'profile email offline_access',
};

export interface Fapi2Setup {
  server: ServerProcess;
  meta: Record<string, string>;
  clients: [FapiClient, FapiClient];
  /** The two clients with a variant's scope, and a harness for it. */
  variant(v: Variant): { h: Fapi2Harness; c1: FapiClient; c2: FapiClient };
  /**
   * Seeds an expired state through the store, as time passing would leave it (no sleep), after checking the
   * lifetime the suite's wait would have checked (a pushed request's against the PAR answer's `expires_in`).
   */
  expire(table: 'authorization_codes' | 'pushed_requests', secret: string, expiresIn?: number): Promise<void>;
}

function withoutAlg(jwk: Record<string, unknown>): Record<string, unknown> {
  const { alg: _alg, ...rest } = jwk;
  return rest;
}

export async function startFapi2Server(env: Record<string, string> = {}): Promise<Fapi2Setup> {
  const server = await startServerProcess({ env: { AUTHCLI_FAPI2: 'on', ...env } });
  await addUsers(server.env, [USER, REJECTER]);
  const claims = await serverCommand(['users', 'update', USER.username, '--claims-json', '-'], server.env, JSON.stringify(CLAIMS));
  expect(claims.code, claims.stderr).toBe(0);
  const keys = await Promise.all([signingKey('PS256'), signingKey('ES256')]);
  const clients = (await Promise.all(
    keys.map(async (key, i) => {
      const redirectUri = i === 0 ? REDIRECT_1 : REDIRECT_2;
      const { client_id } = await addApp(server.env, {
        name: `FAPI 2.0 client ${i + 1}`,
        kind: 'confidential',
        callbackUrls: [redirectUri],
        scopes: SCOPES.openid_connect.split(' '),
        idTokenAlg: 'ES256',
        requireDpop: true,
        requirePushedAuthorizationRequests: true,
        // Without `alg`, as the suite's configured JWK Sets usually are: a key of the set then matches an assertion
        // of any algorithm its type allows, so the RS256 module is refused for the algorithm, not for no key.
        clientKeys: { jwks: { keys: [withoutAlg(key.publicJwk)] } },
      });
      return { client_id, key, redirectUri, scope: SCOPES.openid_connect };
    }),
  )) as [FapiClient, FapiClient];
  const meta = (await (await fetch(`${server.issuer}/.well-known/openid-configuration`)).json()) as Record<string, string>;
  return {
    server,
    meta,
    clients,
    variant(v) {
      const [c1, c2] = clients.map((c) => ({ ...c, scope: SCOPES[v] }));
      return { h: new Fapi2Harness(server.issuer, meta, v, USER), c1: c1!, c2: c2! };
    },
    async expire(table, secret, expiresIn) {
      const hash = createHash('sha256').update(secret).digest('hex');
      const past = Date.now() - 1000;
      const changed = await withStore(server.env.DATABASE_URL!, async (store) => {
        const rows = testRows(store);
        // What the suite's wait checks: a code lives at most 60 s (WaitFor62Seconds, FAPI2-SP-FINAL-5.3.2.1-11), a
        // request_uri as long as the PAR answer's expires_in said (it waits that long).
        if (table === 'authorization_codes') {
          const [code] = await rows.select('authorization_codes', { code_hash: hash });
          expect(Number(code!.expires_at) - Number(code!.created_at)).toBeLessThanOrEqual(60_000);
          return rows.update('authorization_codes', { code_hash: hash }, { expires_at: past });
        }
        const [pushed] = await rows.select('pushed_requests', { request_uri_hash: hash });
        expect(Number(pushed!.expires_at) - Number(pushed!.created_at)).toBe((expiresIn ?? Number.NaN) * 1000);
        return rows.update('pushed_requests', { request_uri_hash: hash }, { expires_at: past, opened_at: null });
      });
      expect(changed, `${table} row to expire`).toBe(1);
    },
  };
}

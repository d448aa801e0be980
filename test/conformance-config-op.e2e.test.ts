import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importJWK, type JWK } from 'jose';
import { startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

/**
 * The OpenID Foundation's Config OP plan (`oidcc-config-certification-test-plan`): its one module,
 * `oidcc-discovery-endpoint-verification`, condition by condition (conformance-suite OIDCCDiscoveryEndpoint
 * Verification: the CheckDiscEndpoint* and OIDCCCheckDiscEndpoint* conditions, FetchServerKeys,
 * ValidateServerJWKs, EnsureServerJwksDoesNotContainPrivateOrSymmetricKeys), failures and warnings alike,
 * against a started server with dynamic registration on (so registration_endpoint is checked too).
 *
 * CheckDiscEndpointAllEndpointsAreHttps is met through the issuer: the server takes an http issuer only on
 * loopback, as here, and every endpoint it publishes is on its issuer's origin, so an https issuer (a real
 * deployment) makes every endpoint https; that is what is checked.
 */
describe('OpenID Connect Config OP plan (oidcc-config-certification-test-plan)', () => {
  let server: ServerProcess;
  let discoveryUrl: string;
  let res: Response;
  let meta: Record<string, unknown>;

  beforeAll(async () => {
    server = await startServerProcess({ env: { AUTHCLI_REGISTRATION: 'open' } });
    discoveryUrl = `${server.issuer}/.well-known/openid-configuration`;
    res = await fetch(discoveryUrl);
    meta = (await res.clone().json()) as Record<string, unknown>;
  });
  afterAll(async () => server?.stop());

  const array = (name: string) => {
    const value = meta[name];
    expect(Array.isArray(value), `${name} is an array`).toBe(true);
    expect((value as unknown[]).length, `${name} is not empty`).toBeGreaterThan(0);
    return value as string[];
  };

  it('oidcc-discovery-endpoint-verification: 200 JSON at the discovery URL, about this issuer', () => {
    // EnsureDiscoveryEndpointResponseStatusCodeIs200, CheckDiscoveryEndpointReturnedJsonContentType
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json\b/);
    // CheckDiscEndpointDiscoveryUrl, CheckDiscEndpointIssuer (OIDC Discovery §4.3)
    expect(`${meta.issuer as string}/.well-known/openid-configuration`).toBe(discoveryUrl);
    expect(meta.issuer).toBe(server.issuer);
  });

  it('oidcc-discovery-endpoint-verification: response, subject and grant types, signing algorithms, scopes, claims', () => {
    // OIDCCCheckDiscEndpointResponseTypesSupported (static client: code), CheckDiscEndpointSubjectTypesSupported
    expect(array('response_types_supported')).toContain('code');
    const subjects = array('subject_types_supported');
    expect(subjects.every((s) => s === 'public' || s === 'pairwise')).toBe(true);
    // OIDCCCheckDiscEndpointIdTokenSigningAlgValuesSupported: RS256 among them, and never none for this plan
    const algs = array('id_token_signing_alg_values_supported');
    expect(algs).toContain('RS256');
    expect(algs).not.toContain('none');
    // OIDCCCheckDiscEndpointUserinfoSigningAlgValuesSupported, when present
    if (meta.userinfo_signing_alg_values_supported !== undefined) expect(array('userinfo_signing_alg_values_supported')).toContain('RS256');
    // OIDCCCheckDiscEndpointGrantTypesSupported: a non-empty array when present
    if (meta.grant_types_supported !== undefined) expect(array('grant_types_supported')).toContain('authorization_code');
    // CheckDiscEndpointScopesSupportedContainsOpenId; OIDCCCheckDiscEndpointClaimsSupported (a warning when absent)
    expect(array('scopes_supported')).toContain('openid');
    expect(array('claims_supported')).toEqual(expect.arrayContaining(['sub', 'iss']));
    // CheckDiscEndpointClaimsParameterSupported, CheckDiscEndpointRequest(Uri)ParameterSupported: booleans when present
    for (const flag of ['claims_parameter_supported', 'request_parameter_supported', 'request_uri_parameter_supported']) {
      if (meta[flag] !== undefined) expect(typeof meta[flag], flag).toBe('boolean');
    }
    // CheckDiscEndpointRequestObjectSigningAlgValuesSupportedIncludesRS256: only when present (it is not: no request objects)
    if (meta.request_object_signing_alg_values_supported !== undefined)
      expect(array('request_object_signing_alg_values_supported')).toContain('RS256');
  });

  it('oidcc-discovery-endpoint-verification: every endpoint an absolute URL on the issuer (https with an https issuer)', () => {
    // CheckDiscEndpointAuthorizationEndpoint, CheckDiscEndpointTokenEndpoint, CheckDiscEndpointUserinfoEndpoint,
    // CheckDiscEndpointRegistrationEndpoint, CheckJwksUri, CheckDiscEndpointAllEndpointsAreHttps
    for (const name of ['authorization_endpoint', 'token_endpoint', 'userinfo_endpoint', 'registration_endpoint', 'jwks_uri']) {
      expect(typeof meta[name], name).toBe('string');
    }
    const endpoints = Object.entries(meta).filter(
      ([name, value]) => (name.endsWith('_endpoint') || name === 'jwks_uri') && typeof value === 'string',
    );
    expect(endpoints.length).toBeGreaterThanOrEqual(8);
    for (const [name, value] of endpoints) {
      const url = new URL(value as string);
      expect(url.origin, name).toBe(new URL(server.issuer).origin);
      expect(url.hash, name).toBe('');
    }
  });

  it('oidcc-discovery-endpoint-verification: the server keys are valid public keys, none private or symmetric', async () => {
    // FetchServerKeys, ValidateServerJWKs, EnsureServerJwksDoesNotContainPrivateOrSymmetricKeys (RFC 7518 §6.3.2.1)
    const keysRes = await fetch(meta.jwks_uri as string);
    expect(keysRes.status).toBe(200);
    const { keys } = (await keysRes.json()) as { keys: JWK[] };
    expect(keys.length).toBeGreaterThan(0);
    expect(new Set(keys.map((k) => k.kid)).size).toBe(keys.length);
    for (const key of keys) {
      expect(key.kid, 'every key has a kid').toEqual(expect.any(String));
      expect(key.kty).not.toBe('oct');
      for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k']) expect(key, `${key.kid} has no ${secret}`).not.toHaveProperty(secret);
      expect(['sig', undefined]).toContain(key.use);
      await importJWK(key, key.alg ?? (key.kty === 'RSA' ? 'RS256' : 'ES256'));
    }
    expect(keys.some((k) => k.kty === 'RSA')).toBe(true);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alphanumeric, DpopKey } from '@authcli/test-support/fapi2-client';
import { checkCallbackError, checkEndpointError } from '@authcli/test-support/fapi2-checks';
import { FAPI2_ALGS, type Flow } from '@authcli/test-support/fapi2-harness';
import { CLAIMS, type Fapi2Setup, REJECTER, startFapi2Server } from '@authcli/test-support/fapi2-server';
import { METADATA_NAMES } from '@authcli/test-support/fapi2-metadata';
import { ID_TOKEN_CLAIMS, OIDC_STANDARD_CLAIMS } from '@authcli/test-support/suite-oracle';

/**
 * The OpenID Foundation's FAPI 2.0 Security Profile (Final) server plan, `fapi2-security-profile-final-test-plan`
 * (conformance-suite net.openid.conformance.fapi2spfinal.FAPI2SPFinalTestPlan: FAPI2MessageSigningFinalTestPlan's
 * modules less the request-object ones), for fapi_profile=plain_fapi, client_auth_type=private_key_jwt,
 * sender_constrain=dpop, fapi_request_method=unsigned, fapi_response_mode=plain_response, under openid=openid_connect
 * and openid=plain_oauth, against a started server set up as a FAPI 2.0 deployment (test/support/fapi2-server.ts).
 * Each test is named after its module (@PublishTestModule testName) and checks what the module's conditions
 * check, failures and warnings alike, so a pass here is a pass with no warning there. The plan is in three files:
 * this one (discovery, the flow and the authorization request), conformance-fapi2-op-token.e2e.test.ts (the
 * token endpoint, client assertions, PKCE, refresh) and conformance-fapi2-op-dpop-par.e2e.test.ts (DPoP, PAR).
 *
 * Not applicable to these variants, each by its own @VariantNotApplicable or by the plan:
 * - fapi2-security-profile-final-ensure-registered-redirect-uri: not for plain_fapi (the tolerate module instead).
 * - fapi2-security-profile-final-australia-connectid-ensure-invalid-purpose-fails: connectid_au only.
 * - fapi2-security-profile-final-australia-connectid-test-claims-parameter-idtoken-identity-claims: connectid_au only.
 * - fapi2-security-profile-final-ensure-server-handles-non-matching-intent-id: openbanking_uk only.
 * - fapi2-security-profile-final-test-essential-acr-sca-claim: openbanking_uk only.
 * - fapi2-security-profile-final-brazil-ensure-bad-payment-signature-fails: openbanking_brazil only.
 * - the sixteen request-object modules FAPI2SPFinalTestPlan removes (multiple aud, without exp/nbf, expired, bad
 *   aud, exp/nbf over 60 (and ConnectID's 10/15), nbf 8 s ahead, RS256, alg none, invalid signature, matching key,
 *   unsigned at PAR fails, request_uri in the PAR request): signed requests only (fapi_request_method=signed_non_repudiation).
 * Under plain_oauth, besides those the modules mark not applicable to it (without-nonce, 64-char nonce, other scope
 * order, claims parameter, different nonce, long nonce: nonces and claims are OpenID Connect's), the two modules that
 * examine only the resource server (dpop-negative-tests, access-token-type-header-case-sensitivity) are not run
 * here: the suite does run them under plain_oauth, against the deployment's own protected resource, which is not
 * this server (whose userinfo needs the openid scope, which a plain_oauth client never asks for); they run under
 * openid_connect against userinfo. Where a plain_oauth module calls the resource as one step, the client asks this
 * server's introspection instead whether the token is active and bound to its DPoP key (Fapi2Harness.checkResource):
 * what is checked under plain_oauth is the authorization server's side of each module.
 *
 * TLS (EnsureTLS12RequireBCP195Ciphers, DisallowTLS10/11 and the cipher checks of happy-flow and
 * holder-of-key-required) is the deployment's TLS terminator's, not the server's: the server speaks plain HTTP on
 * loopback behind it (docs/deployment.md), and so do these tests. The https checks of discovery are met through
 * the issuer: every endpoint is on the issuer's origin.
 *
 * Every test makes its own pushes, sign-ins and codes: none depends on another's, in any order.
 */

let setup: Fapi2Setup;
beforeAll(async () => {
  setup = await startFapi2Server();
});
afterAll(async () => setup?.server.stop());

describe.each(['openid_connect', 'plain_oauth'] as const)('FAPI 2.0 Security Profile, %s: discovery, the flow, the request', (variant) => {
  const openid = variant === 'openid_connect';
  const v = () => setup.variant(variant);

  const complete = (flow: Flow, dpop?: DpopKey) => v().h.complete(flow, dpop);

  it('fapi2-security-profile-final-discovery-end-point-verification', async () => {
    const path = openid ? '/.well-known/openid-configuration' : '/.well-known/oauth-authorization-server';
    const res = await fetch(`${setup.server.issuer}${path}`);
    // EnsureDiscoveryEndpointResponseStatusCodeIs200, CheckDiscoveryEndpointReturnedJsonContentType
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const meta = (await res.json()) as Record<string, unknown>;
    // Check(Oauth)DiscEndpointDiscoveryUrl, Check(Oauth)DiscEndpointIssuer, CheckDiscEndpointIssuerIsValidUrl
    expect(meta.issuer).toBe(setup.server.issuer);
    expect(new URL(meta.issuer as string).href.replace(/\/$/, '')).toBe(setup.server.issuer);
    // CheckForUnexpectedParametersInServerMetadata (a warning), ValidateServerMetadataAgainstSchema
    expect(Object.keys(meta).filter((k) => !METADATA_NAMES.has(k))).toEqual([]);
    for (const [name, value] of Object.entries(meta)) {
      if (name.endsWith('_supported') && typeof value !== 'boolean') expect(Array.isArray(value), name).toBe(true);
      if (name.endsWith('_endpoint') || name === 'jwks_uri') expect(new URL(value as string).origin, name).toBe(setup.server.issuer);
    }
    // CheckDiscEndpointResponseTypeCodeSupported, EnsureAuthorizationResponseIssParameterSupportedIsTrue (RFC 9207)
    expect(meta.response_types_supported).toContain('code');
    expect(meta.authorization_response_iss_parameter_supported).toBe(true);
    // CheckDiscEndpointPARSupported (https through the issuer), CheckDiscRequirePushedAuthorizationRequestsIsABoolean
    expect(meta.pushed_authorization_request_endpoint).toBe(`${setup.server.issuer}/oauth/par`);
    expect(typeof meta.require_pushed_authorization_requests).toBe('boolean');
    // FAPI2CheckDpopSigningAlgValuesSupported: one FAPI 2.0 algorithm at least; with AUTHCLI_FAPI2 no other
    expect((meta.dpop_signing_alg_values_supported as string[]).filter((a) => FAPI2_ALGS.includes(a)).length).toBeGreaterThan(0);
    expect(meta.dpop_signing_alg_values_supported).not.toContain('RS256');
    // FAPI2CheckDiscEndpointIdTokenSigningAlgValuesSupported (openid), ...TokenEndpointAuthSigningAlgValuesSupported
    if (openid) expect((meta.id_token_signing_alg_values_supported as string[]).some((a) => FAPI2_ALGS.includes(a))).toBe(true);
    expect(meta.token_endpoint_auth_signing_alg_values_supported).toEqual(['PS256', 'ES256', 'EdDSA']);
    // CheckDiscEndpointTokenEndpointAuthMethodsSupportedContainsPrivateKeyOrTlsClient, EnsureServerConfigurationSupportsPrivateKeyJwt
    expect(meta.token_endpoint_auth_methods_supported).toContain('private_key_jwt');
    // FAPI2CheckDiscEndpointUserinfoSigningAlgValuesSupported: only when present
    if (meta.userinfo_signing_alg_values_supported !== undefined)
      expect((meta.userinfo_signing_alg_values_supported as string[]).some((a) => FAPI2_ALGS.includes(a))).toBe(true);
    // CheckDiscEndpointTokenEndpoint, CheckDiscEndpointAuthorizationEndpoint, CheckJwksUri (openid)
    expect(meta.token_endpoint).toBe(`${setup.server.issuer}/oauth/token`);
    expect(meta.authorization_endpoint).toBe(`${setup.server.issuer}/oauth/authorize`);
    if (openid) expect(meta.jwks_uri).toBe(`${setup.server.issuer}/oauth/jwks`);
    // EnsureServerConfigurationSupportsCodeChallengeMethodS256, CheckDiscEndpointScopesSupportedSyntax
    expect(meta.code_challenge_methods_supported).toContain('S256');
    for (const s of meta.scopes_supported as string[]) expect(s).toMatch(/^[\x21\x23-\x5B\x5D-\x7E]+$/);
    // CheckDiscEndpointLocalesSyntax / ...CanonicalCasing: none published
    expect(meta.ui_locales_supported).toBeUndefined();
    expect(meta.claims_locales_supported).toBeUndefined();
    // PlainFAPIDiscoveryEndpointChecks: CheckDiscEndpointGrantTypesSupportedContainsAuthorizationCode
    expect(meta.grant_types_supported).toContain('authorization_code');
    if (openid) {
      // OidcDiscoveryEndpointChecks: CheckDiscEndpointScopesSupportedContainsOpenId, CheckDiscEndpointSubjectTypesSupported
      expect(meta.scopes_supported).toContain('openid');
      expect((meta.subject_types_supported as string[]).every((s) => s === 'public' || s === 'pairwise')).toBe(true);
    }
  });

  it('fapi2-security-profile-final-happy-flow', async () => {
    const { h, c1, c2 } = v();
    // The first client: a normal flow; then the resource with the extra requests of performAdditionalResourceEndpointTests.
    const flow1 = await h.authorize(c1);
    const first = await complete(flow1);
    const at1 = first.tokens.body.access_token as string;
    if (openid) {
      // EnsureIdTokenDoesNotContainNonRequestedClaims (a warning)
      h.expectOnlyRequestedIdTokenClaims(first.idToken!, []);
      // DisallowAccessTokenInQuery: the token only in the query is 400, 401 or 414
      const url = `${setup.meta.userinfo_endpoint}?access_token=${at1}`;
      const inQuery = await fetch(url, { headers: { dpop: await first.key.proof('GET', setup.meta.userinfo_endpoint!) } });
      expect([400, 401, 414]).toContain(inQuery.status);
      // SetUtf8JsonAcceptHeadersForResourceEndpointRequest, SetPermissiveAcceptHeaderForResourceEndpointRequest: 200 either way
      for (const accept of ['application/json; charset=UTF-8', '*/*']) {
        const res = await h.resource(at1, first.key, { headers: { accept, 'x-fapi-customer-ip-address': '2001:db8::1' } });
        expect(res.status, accept).toBe(200);
      }
    }
    // The second client: a 128-character state, a 43-character nonce, dpop_jkt alone in the push (RFC 9449 §10.1,
    // no DPoP header), its redirect URI with a query, the authorization URL's parameters in reverse order.
    const key2 = await DpopKey.create('ES256');
    const flow2 = await h.authorize(c2, { edit: (p) => (p.dpop_jkt = key2.jkt), redirect: 'reordered' }, true);
    const second = await complete(flow2, key2);
    if (openid) {
      // switchToClient1AndTryClient2AccessToken: client 2's token with client 1's DPoP key is a 4xx (RFC 9449 §7.1)
      const stolen = await h.resource(second.tokens.body.access_token as string, first.key);
      expect(stolen.status).toBeGreaterThanOrEqual(400);
      expect(stolen.status).toBeLessThan(500);
    }
  });

  it('fapi2-security-profile-final-user-rejects-authentication', async () => {
    const { h, c1, c2 } = v();
    // Both clients, a 128-character state, the user denies: access_denied with the state (OIDC Core §3.1.2.6)
    const flow1 = await h.authorize(c1, { decision: 'deny', user: REJECTER }, true);
    checkCallbackError(flow1, ['access_denied']);
    const flow2 = await h.authorize(c2, { decision: 'deny', user: REJECTER }, true);
    checkCallbackError(flow2, ['access_denied'], true);
    // CheckMatchingCallbackParameters: the second client's redirect URI query comes back
    expect(flow2.callback!.searchParams.get('dummy1')).toBe('lorem');
    expect(flow2.callback!.searchParams.get('dummy2')).toBe('ipsum');
  });

  it('fapi2-security-profile-final-ensure-authorization-request-without-state-success', async () => {
    const { h, c1 } = v();
    // No state in the push: a code comes back without state (VerifyNoStateInAuthorizationResponse)
    const flow = await h.authorize(c1, { edit: (p) => delete p.state });
    expect(flow.callback!.searchParams.has('state')).toBe(false);
    await complete(flow);
  });

  it('fapi2-security-profile-final-state-only-outside-request-object-not-used', async () => {
    const { h, c1 } = v();
    // The push has no state; a state only in the authorization URL is not used: no state comes back.
    const flow = await h.authorize(c1, { edit: (p) => delete p.state, extra: { state: alphanumeric(32) } });
    expect(flow.callback!.searchParams.has('state')).toBe(false);
    await complete(flow);
  });

  it('fapi2-security-profile-final-ensure-different-state-inside-and-outside-request-object', async () => {
    const { h, c1 } = v();
    // Another state in the authorization URL than the pushed one: the pushed one comes back (the outside one ignored).
    const flow = await h.authorize(c1, { extra: { state: alphanumeric(32) } });
    await complete(flow);
  });

  it('fapi2-security-profile-final-ensure-authorization-request-with-long-state', async () => {
    const { h, c1 } = v();
    // A 1000-character state is returned exactly (WarningAboutRejectingLongState: refusing it would be a warning).
    const flow = await h.authorize(c1, { edit: (p) => (p.state = alphanumeric(1000)) });
    await complete(flow);
  });

  it('fapi2-security-profile-final-ensure-request-object-without-redirect-uri-fails', async () => {
    const { h, c1 } = v();
    // RemoveRedirectUriFromRequestObject: the push without redirect_uri is refused at the PAR endpoint
    // (EnsurePARInvalidRequestOrInvalidRequestObjectError); the browser never goes.
    const flow = await h.authorize(c1, { edit: (p) => delete p.redirect_uri });
    checkEndpointError(flow.par, ['invalid_request', 'invalid_request_object']);
    expect(flow.callback).toBeUndefined();
  });

  it('fapi2-security-profile-final-ensure-redirect-uri-in-authorization-request', async () => {
    const { h, c1 } = v();
    // No redirect_uri: the PAR endpoint's invalid_request is one of the outcomes the module allows.
    const flow = await h.authorize(c1, { edit: (p) => delete p.redirect_uri });
    checkEndpointError(flow.par, ['invalid_request', 'invalid_request_object']);
  });

  it('fapi2-security-profile-final-plain-fapi-tolerate-unregistered-redirect-uri', async () => {
    const { h, c1 } = v();
    // CreateBadRedirectUriByAppending: RFC 9126 §2.4 lets a server take it; this one refuses it at the PAR endpoint,
    // which the module accepts (EnsurePARInvalidRequestOrInvalidRequestObjectError), and nothing reaches the client.
    const flow = await h.authorize(c1, { edit: (p) => (p.redirect_uri = `${c1.redirectUri}/${alphanumeric(10)}`) });
    checkEndpointError(flow.par, ['invalid_request', 'invalid_request_object']);
  });

  it('fapi2-security-profile-final-ensure-unsigned-authorization-request-without-using-par-fails', async () => {
    const { h, c1 } = v();
    // BuildPlainRedirectToAuthorizationEndpoint: every parameter in the URL, no push: invalid_request at the client.
    const { params } = h.requestParams(c1);
    const url = new URL(setup.meta.authorization_endpoint!);
    url.search = new URLSearchParams(params).toString();
    const res = await fetch(url, { redirect: 'manual' });
    expect(res.status).toBe(303);
    const flow: Flow = { client: c1, params, verifier: '', par: undefined as never, callback: new URL(res.headers.get('location')!) };
    checkCallbackError(flow, ['invalid_request']);
  });

  for (const [name, responseType] of [
    ['fapi2-security-profile-final-ensure-response-type-code-idtoken-fails', 'code id_token'],
    ['fapi2-security-profile-final-ensure-response-type-token-fails', 'token'],
  ] as const) {
    it(name, async () => {
      const { h, c1 } = v();
      // Refused at the PAR endpoint: a 4xx (EnsureHttpStatusCodeIs4xx) and, short of a warning,
      // unsupported_response_type, invalid_request or unauthorized_client.
      const flow = await h.authorize(c1, { edit: (p) => (p.response_type = responseType) });
      checkEndpointError(flow.par, ['unsupported_response_type', 'invalid_request', 'unauthorized_client']);
    });
  }

  if (!openid) return;

  it('fapi2-security-profile-final-ensure-authorization-request-without-nonce-success', async () => {
    const { h, c1 } = v();
    const flow = await h.authorize(c1, { edit: (p) => delete p.nonce });
    const { idToken } = await complete(flow);
    expect(idToken!.nonce).toBeUndefined();
  });

  it('fapi2-security-profile-final-ensure-authorization-request-with-64-char-nonce-success', async () => {
    const { h, c1 } = v();
    const flow = await h.authorize(c1, { edit: (p) => (p.nonce = alphanumeric(64)) });
    expect((await complete(flow)).idToken!.nonce).toBe(flow.params.nonce);
  });

  it('fapi2-security-profile-final-ensure-authorization-request-with-long-nonce', async () => {
    const { h, c1 } = v();
    // 384 characters, returned exactly, neither truncated nor refused (refusing is a warning).
    const flow = await h.authorize(c1, { edit: (p) => (p.nonce = alphanumeric(384)) });
    expect((await complete(flow)).idToken!.nonce).toBe(flow.params.nonce);
  });

  it('fapi2-security-profile-final-ensure-different-nonce-inside-and-outside-request-object', async () => {
    const { h, c1 } = v();
    // AddIncorrectNonceToAuthorizationEndpointRequest: the ID token has the pushed nonce, not the URL's.
    const flow = await h.authorize(c1, { extra: { nonce: alphanumeric(32) } });
    expect((await complete(flow)).idToken!.nonce).toBe(flow.params.nonce);
  });

  it('fapi2-security-profile-final-ensure-other-scope-order-succeeds', async () => {
    const { h, c1 } = v();
    // ReverseScopeOrderInAuthorizationEndpointRequest (RFC 6749 §3.3: order does not matter)
    const flow = await h.authorize(c1, { edit: (p) => (p.scope = p.scope!.split(' ').reverse().join(' ')) });
    await complete(flow);
  });

  it('fapi2-security-profile-final-test-claims-parameter-identity-claims', async () => {
    const { h, c1 } = v();
    // AddAllSupportedStandardClaimsToAuthorizationEndpointRequestIdTokenAndUserinfoClaims (the standard claims of
    // claims_supported in both members, in the suite's several forms) and AddRandomLocationClaims (to be ignored).
    const standard = OIDC_STANDARD_CLAIMS;
    expect(setup.meta.claims_parameter_supported).toBe(true);
    const requested = standard.filter((c) => (setup.meta.claims_supported as unknown as string[]).includes(c));
    const forms = [null, { essential: true }, { essential: false }];
    const member = Object.fromEntries(requested.map((c, i) => [c, forms[i % forms.length]]));
    const claims = { id_token: member, userinfo: member, [alphanumeric(10)]: { [alphanumeric(10)]: null } };
    const flow = await h.authorize(c1, { edit: (p) => (p.claims = JSON.stringify(claims)) });
    const { tokens, idToken, key } = await complete(flow);
    const info = await h.resource(tokens.body.access_token as string, key);
    // EnsureHttpStatusCodeIs200, EnsureContentTypeJson, EnsureUserInfoContainsSub, VerifyUserInfoAndIdTokenInTokenEndpointSameSub
    expect(info.status).toBe(200);
    expect(info.headers.get('content-type')).toMatch(/^application\/json/);
    expect(info.body.sub).toBe(idToken!.sub);
    // EnsureIdentityClaimsContainRequestedClaims (a warning): the ID token and userinfo together have every one
    const identity = { ...idToken, ...info.body };
    expect(requested.filter((c) => !(c in identity))).toEqual([]);
    expect(info.body).toMatchObject({ name: CLAIMS.name, email: CLAIMS.email, address: CLAIMS.address });
    // CheckForUnexpectedClaimsInUserinfo / ...InIdToken (warnings): only known claims
    const known = new Set([...OIDC_STANDARD_CLAIMS, ...ID_TOKEN_CLAIMS]);
    expect(Object.keys(info.body).filter((c) => !known.has(c))).toEqual([]);
    expect(Object.keys(idToken!).filter((c) => !known.has(c))).toEqual([]);
    // EnsureUserInfoUpdatedAtValid / EnsureIdTokenUpdatedAtValid: a number of seconds when present
    for (const c of [info.body.updated_at, idToken!.updated_at]) if (c !== undefined) expect(Number.isInteger(c)).toBe(true);
  });
});

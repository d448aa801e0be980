import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alphanumeric, DpopKey, formPost, type ProofOptions } from '@authcli/test-support/fapi2-client';
import { checkClientError, checkEndpointError, checkParResponse } from '@authcli/test-support/fapi2-checks';
import { approveInBrowser, Browser } from '@authcli/test-support/http';
import { type Fapi2Setup, startFapi2Server, USER } from '@authcli/test-support/fapi2-server';

/**
 * The FAPI 2.0 Security Profile server plan's DPoP and PAR modules. Variants, the modules not applicable and the
 * conventions: conformance-fapi2-op.e2e.test.ts.
 */

let setup: Fapi2Setup;
beforeAll(async () => {
  setup = await startFapi2Server();
});
afterAll(async () => setup?.server.stop());

const now = () => Math.floor(Date.now() / 1000);

describe.each(['openid_connect', 'plain_oauth'] as const)('FAPI 2.0 Security Profile, %s: DPoP and PAR', (variant) => {
  const openid = variant === 'openid_connect';
  const v = () => setup.variant(variant);

  /** The flow with proofs changed at the token endpoint and the resource only through the key's own options. */
  it('fapi2-security-profile-final-check-dpop-proof-nbf-exp', async () => {
    const { h, c1 } = v();
    // SetDpopNbfToNow, SetDpopExpToFiveMinutesInFuture in the token and resource proofs: accepted.
    const key = await DpopKey.create('ES256');
    const withNbfExp = (p: ProofOptions = {}): ProofOptions => ({ ...p, claims: { nbf: now(), exp: now() + 300 } });
    const proof = key.proof.bind(key);
    key.proof = (htm, htu, options) => proof(htm, htu, withNbfExp(options));
    await h.complete(await h.authorize(c1), key);
  });

  for (const [name, shift] of [
    ['fapi2-security-profile-final-ensure-dpopproof-with-iat-10seconds-before-succeeds', -10],
    ['fapi2-security-profile-final-ensure-dpopproof-with-iat-10seconds-after-succeeds', 10],
  ] as const) {
    it(name, async () => {
      const { h, c1 } = v();
      // useDpopAuthCodeBinding: a proof at the PAR endpoint too; every proof's iat 10 s off (FAPI 2.0 SP §5.3.2.1-13).
      const key = await DpopKey.create('ES256');
      const proof = key.proof.bind(key);
      key.proof = (htm, htu, options = {}) => proof(htm, htu, { ...options, claims: { iat: now() + shift } });
      await h.complete(await h.authorize(c1, { parDpop: key }), key);
    });
  }

  it('fapi2-security-profile-final-ensure-mismatched-dpop-jkt-fails', async () => {
    const { h, c1 } = v();
    // dpop_jkt of one key, the PAR proof by another: invalid_request or invalid_dpop_proof (RFC 9449 §10.1).
    const [named, signing] = await Promise.all([DpopKey.create('ES256'), DpopKey.create('ES256')]);
    const flow = await h.authorize(c1, { parDpop: signing, edit: (p) => (p.dpop_jkt = named.jkt), pushOnly: true });
    checkEndpointError(flow.par, ['invalid_request', 'invalid_dpop_proof']);
  });

  it('fapi2-security-profile-final-ensure-token-endpoint-fails-with-mismatched-dpop-proof-jkt', async () => {
    const { h, c1 } = v();
    // The PAR proof by one key binds the code; the token request's proof by another: invalid_request, invalid_grant or invalid_dpop_proof.
    const flow = await h.authorize(c1, { parDpop: await DpopKey.create('ES256') });
    const res = await h.exchange(flow, await DpopKey.create('ES256'));
    checkEndpointError(res, ['invalid_request', 'invalid_grant', 'invalid_dpop_proof'], [400]);
  });

  it('fapi2-security-profile-final-ensure-token-endpoint-fails-with-mismatched-dpop-jkt', async () => {
    const { h, c1 } = v();
    // AddInvalidDpopJktToAuthorizationEndpointRequest: dpop_jkt of a key the client never uses; no PAR proof.
    const other = await DpopKey.create('ES256');
    const flow = await h.authorize(c1, { edit: (p) => (p.dpop_jkt = other.jkt) });
    const res = await h.exchange(flow, await DpopKey.create('ES256'));
    checkEndpointError(res, ['invalid_request', 'invalid_grant', 'invalid_dpop_proof'], [400]);
  });

  it('fapi2-security-profile-final-ensure-dpopproof-at-par-endpoint-binding-success', async () => {
    const { h, c1 } = v();
    const key = await DpopKey.create('ES256');
    await h.complete(await h.authorize(c1, { parDpop: key }), key);
  });

  it('fapi2-security-profile-final-ensure-dpop-auth-code-binding-success', async () => {
    const { h, c1 } = v();
    const key = await DpopKey.create('ES256');
    await h.complete(await h.authorize(c1, { parDpop: key, edit: (p) => (p.dpop_jkt = key.jkt) }), key);
  });

  it('fapi2-security-profile-final-par-ensure-reused-request-uri-prior-to-auth-completion-succeeds', async () => {
    const { h, c1 } = v();
    // The browser opens the request_uri (the sign-in page), the user does nothing, then it is opened again and
    // the user signs in: a code (an invalid_request_uri would be a warning).
    const flow = await h.authorize(c1, { pushOnly: true });
    checkParResponse(flow.par);
    flow.requestUri = flow.par.body.request_uri as string;
    flow.authorizationUrl = h.authorizationUrl(flow, {});
    const browser = new Browser(setup.server.issuer);
    const firstVisit = await browser.get(flow.authorizationUrl);
    expect([200, 302, 303]).toContain(firstVisit.status);
    flow.callback = new URL(await approveInBrowser(browser, flow.authorizationUrl, USER.username, USER.password));
    await h.complete(flow);
  });

  it('fapi2-security-profile-final-par-attempt-reuse-request_uri', async () => {
    const { h, c1 } = v();
    // After a completed flow the same request_uri is refused: an error page (ExpectInvalidRequestUriErrorPage) or
    // invalid_request_uri at the client; a second success would be a warning.
    const flow = await h.authorize(c1);
    await h.complete(flow);
    // In the same browser, still signed in, as the suite replays it: no sign-in page stands in for the refusal.
    const again = await flow.browser!.get(flow.authorizationUrl!);
    expect(again.status).toBe(400);
    expect(again.location).toBeNull();
    expect(again.text).toContain('invalid_request_uri');
  });

  it('fapi2-security-profile-final-par-attempt-to-use-expired-request_uri', async () => {
    const { h, c1 } = v();
    // The suite waits expires_in; the request is expired through the store instead: an error page or invalid_request_uri.
    const flow = await h.authorize(c1, { pushOnly: true });
    checkParResponse(flow.par);
    flow.requestUri = flow.par.body.request_uri as string;
    await setup.expire(
      'pushed_requests',
      flow.requestUri.slice('urn:ietf:params:oauth:request_uri:'.length),
      flow.par.body.expires_in as number,
    );
    const res = await new Browser(setup.server.issuer).get(h.authorizationUrl(flow, {}));
    expect(res.status).toBe(400);
    expect(res.location).toBeNull();
    expect(res.text).toContain('invalid_request_uri');
  });

  it('fapi2-security-profile-final-par-ensure-jwt-client-assertions-nbf-8-seconds-in-the-future-is-accepted', async () => {
    const { h, c1 } = v();
    // AddIatNbf8SecondsInTheFutureToClientAuthenticationAssertionClaims at the PAR endpoint: 201 (else a warning), and on.
    const flow = await h.authorize(c1, { assertion: { claims: { iat: now() + 8, nbf: now() + 8 } } });
    await h.complete(flow);
  });

  it('fapi2-security-profile-final-par-ensure-jwt-client-assertions-nbf-over-60-seconds-in-the-future-fails', async () => {
    const { h, c1 } = v();
    // iat, nbf and exp 62 s later: 400 or 401, invalid_client or invalid_request.
    const t = now() + 62;
    const flow = await h.authorize(c1, { pushOnly: true, assertion: { claims: { iat: t, nbf: t, exp: t + 60 } } });
    checkClientError(flow.par, ['invalid_client', 'invalid_request']);
  });

  it('fapi2-security-profile-final-par-attempt-to-use-request_uri-for-different-client', async () => {
    const { h, c1, c2 } = v();
    // Client 1's request_uri sent with client 2's client_id: an error page (invalid_request_uri) or such an error.
    const flow = await h.authorize(c1, { pushOnly: true });
    flow.requestUri = flow.par.body.request_uri as string;
    const res = await new Browser(setup.server.issuer).get(h.authorizationUrl(flow, { clientId: c2.client_id }));
    expect(res.status).toBe(400);
    expect(res.location).toBeNull();
    expect(res.text).toMatch(/invalid_request_uri|invalid_request/);
  });

  it('fapi2-security-profile-final-par-authorization-request-containing-request_uri-form-param', async () => {
    const { h, c1 } = v();
    // AddBadRequestUriToRequestParameters: invalid_request, invalid_request_object or request_uri_not_supported.
    const flow = await h.authorize(c1, {
      pushOnly: true,
      edit: (p) => (p.request_uri = `urn:ietf:params:oauth:request_uri:${alphanumeric(43)}`),
    });
    checkEndpointError(flow.par, ['invalid_request', 'invalid_request_object', 'request_uri_not_supported']);
  });

  it('fapi2-security-profile-final-par-attempt-invalid-http-method', async () => {
    const { h, c1 } = v();
    // PUT to the PAR endpoint: any 4xx or 5xx (EnsureParHTTPError).
    const { params } = h.requestParams(c1);
    const res = await fetch(formPost(setup.meta.pushed_authorization_request_endpoint!, params, {}, 'PUT'));
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(600);
  });

  for (const [name, edit] of [
    [
      'fapi2-security-profile-final-par-ensure-pkce-required',
      (p: Record<string, string>) => {
        delete p.code_challenge;
        delete p.code_challenge_method;
      },
    ],
    [
      'fapi2-security-profile-final-par-plain-pkce-rejected',
      (p: Record<string, string>) => {
        p.code_challenge = alphanumeric(43);
        p.code_challenge_method = 'plain';
      },
    ],
  ] as const) {
    it(name, async () => {
      const { h, c1 } = v();
      // Refused at the PAR endpoint with invalid_request (EnsurePARInvalidRequestError, RFC 7636 §4.4.1).
      const flow = await h.authorize(c1, { pushOnly: true, edit });
      checkEndpointError(flow.par, ['invalid_request']);
    });
  }

  it('fapi2-security-profile-final-par-without-duplicate-parameters', async () => {
    const { h, c1 } = v();
    // The authorization URL with client_id and request_uri only.
    await h.complete(await h.authorize(c1, { redirect: 'without-duplicates' }));
  });

  for (const [name, aud] of [
    ['fapi2-security-profile-final-par-test-array-as-audience-fails', (iss: string) => [iss, 'https://other.example/']],
    ['fapi2-security-profile-final-par-test-par-endpoint-url-as-audience-fails', () => setup.meta.pushed_authorization_request_endpoint],
    ['fapi2-security-profile-final-par-test-token-endpoint-url-as-audience-fails', () => setup.meta.token_endpoint],
  ] as const) {
    it(name, async () => {
      const { h, c1 } = v();
      // FAPI 2.0 SP §5.3.2.1-8: aud the issuer identifier alone: 400 or 401, invalid_client or invalid_request.
      const flow = await h.authorize(c1, { pushOnly: true, assertion: { claims: { aud: aud(setup.server.issuer) } } });
      checkClientError(flow.par, ['invalid_client', 'invalid_request']);
    });
  }

  if (!openid) return;

  it('fapi2-security-profile-final-access-token-type-header-case-sensitivity', async () => {
    const { h, c1 } = v();
    // SetAccessTokenTypeToInvertedCase: the scheme is case-insensitive (RFC 9110 §11.1): "dPoP <token>" works.
    const { tokens, key } = await h.complete(await h.authorize(c1));
    const inverted = [...String(tokens.body.token_type)].map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase())).join('');
    expect(inverted).not.toBe(tokens.body.token_type);
    const res = await h.resource(tokens.body.access_token as string, key, { scheme: inverted });
    expect(res.status, res.text).toBe(200);
  });

  it('fapi2-security-profile-final-dpop-negative-tests', async () => {
    const { h, c1 } = v();
    // A PS256 (RSA) DPoP key, so the RS256 case runs too.
    const key = await DpopKey.create('PS256');
    const { accessToken } = await h.complete(await h.authorize(c1), key);
    const call = (proof: ProofOptions = {}, options: { scheme?: string; headers?: Record<string, string>; noProof?: boolean } = {}) =>
      h.resource(accessToken, options.noProof ? undefined : key, { proof, ...options });
    const refused = async (what: string, proof: ProofOptions, options?: Parameters<typeof call>[1]) => {
      const res = await call(proof, options);
      expect([400, 401], `${what}: ${res.text}`).toContain(res.status);
    };
    const accepted = async (what: string, proof: ProofOptions, options?: Parameters<typeof call>[1]) => {
      const res = await call(proof, options);
      expect(res.status, `${what}: ${res.text}`).toBe(200);
    };
    const url = setup.meta.userinfo_endpoint!;
    const swapSegment = (i: number, f: (json: Record<string, unknown>) => void) => (proof: string) => {
      const parts = proof.split('.');
      const json = JSON.parse(Buffer.from(parts[i]!, 'base64url').toString()) as Record<string, unknown>;
      f(json);
      parts[i] = Buffer.from(JSON.stringify(json)).toString('base64url');
      return parts.join('.');
    };
    // "DPOP" as the header's name (header names are case-insensitive): accepted (only a warning otherwise).
    const ath = createHash('sha256').update(accessToken).digest('base64url');
    const proofs = [await key.proof('GET', url, { ath }), await key.proof('GET', url, { ath })];
    await accepted('upper-case header name', {}, { noProof: true, headers: { DPOP: await key.proof('GET', url, { ath }) } });
    // Two DPoP header lines, as the suite sends them: refused (RFC 9449 §4.3 (1)). fetch would join them into one
    // line ("a, b"), refused only as a malformed JWT; node:http sends each value of an array as a line of its own.
    const twice = await new Promise<{ status: number; challenge: string }>((resolve, reject) => {
      const req = httpRequest(url, { headers: { authorization: `DPoP ${accessToken}`, dpop: [proofs[0]!, proofs[1]!] } }, (r) => {
        r.resume();
        r.on('end', () => resolve({ status: r.statusCode!, challenge: String(r.headers['www-authenticate']) }));
      });
      req.on('error', reject);
      req.end();
    });
    expect([400, 401]).toContain(twice.status);
    expect(twice.challenge).toMatch(/exactly one DPoP header/);
    await refused('not a well-formed JWT', { after: (p) => p.split('.').slice(0, 2).join('.') });
    await refused('no typ', { header: { typ: undefined } });
    await refused('no alg', {
      after: swapSegment(0, (hd) => {
        hd.alg2 = hd.alg;
        delete hd.alg;
      }),
    });
    await refused('no jwk', { header: { jwk: undefined } });
    for (const claim of ['jti', 'htm', 'htu', 'iat', 'ath']) await refused(`no ${claim}`, { claims: { [claim]: undefined } });
    await refused('wrong typ', { header: { typ: 'dpop+jwt+wrongyousee' } });
    await refused('RS256 (FAPI 2.0 SP §5.4)', { alg: 'RS256' });
    await refused('alg none', {
      after: (p) => `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'dpop+jwt' })).toString('base64url')}.${p.split('.')[1]}.`,
    });
    await refused('invalid signature', { after: (p) => `${p.slice(0, -6)}${p.slice(-6) === 'AAAAAA' ? 'BBBBBB' : 'AAAAAA'}` });
    await refused('private key in jwk', { header: { jwk: (({ kid: _k, ...jwk }) => jwk)(key.key.privateJwk) } });
    await refused('htm PUT', { claims: { htm: 'PUT' } });
    await accepted('htu with query and fragment', {
      claims: { htu: `${url}?allthedoorsonthisspaceshiphavebeen#programmedtohaveacheeryandsunnydisposition` },
    });
    await accepted('htu without query', { claims: { htu: url } });
    await refused('htu another URL', { claims: { htu: `${url}ohnonotagain` } });
    await refused('iat an hour ahead', { claims: { iat: now() + 3600 } });
    await refused('iat an hour ago', { claims: { iat: now() - 3600 } });
    const jti = alphanumeric(15);
    await accepted('first use of a jti', { claims: { jti } });
    await refused('second use of the jti (a warning)', { claims: { jti } });
    await refused('ath of another token', { ath: `${'Ag'.repeat(21)}A` });
    const otherKey = await DpopKey.create('PS256');
    const otherProof = await otherKey.proof('GET', url, { ath });
    await refused('signed with another key', {}, { noProof: true, headers: { dpop: otherProof } });
    await accepted('unknown header and claims', { header: { tx_id: now() + 3600 }, claims: { tx_id_key: now() + 3600 } });
    // RFC 3986 §6.2.2, §6.2.3 normalization (warnings): scheme and host in upper case; the default port (DpopHtuWithPort
    // adds it only to a URL without a port, which this one has, so the htu is the URL itself).
    const u = new URL(url);
    await accepted('htu scheme and host upper case', {
      claims: { htu: url.replace(u.protocol, u.protocol.toUpperCase()).replace(u.hostname, u.hostname.toUpperCase()) },
    });
    // On loopback (127.0.0.1 with a port) both are the URL itself: the normalization of a default port and of an
    // upper-case host name is checked in packages/server/test/dpop.test.ts (htu normalization).
    await accepted('htu with its port', { claims: { htu: `${u.protocol}//${u.hostname}:${u.port}${u.pathname}` } });
    await refused('no DPoP proof', {}, { noProof: true });
    await refused('no proof, Bearer scheme', {}, { noProof: true, scheme: 'Bearer' });
    // The final sanity check: a correct proof still works, so the refusals were the proofs'.
    await accepted('a correct proof', {});
  });
});

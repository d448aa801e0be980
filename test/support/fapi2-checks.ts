/**
 * The checks the FAPI 2.0 server plan's conditions make of what comes back from the PAR endpoint, the
 * authorization endpoint (at the redirect URI) and the token endpoint, shared by the plan's test files.
 */
import { expect } from 'vitest';
import type { Answer } from './fapi2-client.js';
import type { Flow } from './fapi2-harness.js';
import { entropyBits } from './suite-oracle.js';

/** RFC 6749 §5.2 error_description: the suite fails anything outside this set and warns on tab, CR, LF. */
const ERROR_DESCRIPTION = /^[\x20-\x21\x23-\x5B\x5D-\x7E]+$/;

/** EnsureMinimum*Length (128 bits of bytes) and EnsureMinimum*Entropy (96 bits, the suite's slop for 128). */
export function expectSecret(value: unknown, what: string): void {
  expect(typeof value, what).toBe('string');
  expect(Buffer.byteLength(value as string) * 8, `${what} length`).toBeGreaterThanOrEqual(128);
  expect(entropyBits(value as string), `${what} entropy`).toBeGreaterThanOrEqual(96);
}

/** processParResponse: 201, a request_uri of 96 bits' entropy, expires_in within 5 s and a year, JSON. */
export function checkParResponse(par: Answer): void {
  expect(par.status, par.text).toBe(201);
  expect(par.headers.get('content-type')).toMatch(/^application\/json/);
  expect(par.body.error).toBeUndefined();
  expect(typeof par.body.request_uri).toBe('string');
  expect(entropyBits(par.body.request_uri as string)).toBeGreaterThanOrEqual(96);
  expect(par.body.expires_in as number).toBeGreaterThanOrEqual(5);
  expect(par.body.expires_in as number).toBeLessThan(365 * 24 * 3600);
}

/**
 * onAuthorizationCallbackResponse: the redirect URI's own query kept (CheckMatchingCallbackParameters), nothing in
 * the fragment, no error, only the expected parameters (ValidateSuccessfulAuthCodeFlowResponseFromAuthorizationEndpoint,
 * a warning), state as sent, iss the issuer (RFC 9207), a code of 128 bits and 96 bits' entropy.
 */
export function checkCallback(flow: Flow, issuer: string): string {
  const cb = flow.callback!;
  expect(cb.hash).toBe('');
  const registered = new URL(flow.client.redirectUri);
  expect(cb.origin + cb.pathname).toBe(registered.origin + registered.pathname);
  for (const [k, v] of registered.searchParams) expect(cb.searchParams.get(k)).toBe(v);
  expect(cb.searchParams.get('error'), cb.searchParams.get('error_description') ?? '').toBeNull();
  const allowed = ['code', 'state', 'id_token', 'session_state', 'iss', 'dummy1', 'dummy2'];
  expect([...cb.searchParams.keys()].filter((k) => !allowed.includes(k))).toEqual([]);
  expect(cb.searchParams.get('state')).toBe(flow.params.state ?? null);
  expect(cb.searchParams.get('iss')).toBe(issuer);
  const code = cb.searchParams.get('code');
  expectSecret(code, 'code');
  return code!;
}

/**
 * An error at the redirect URI: state as sent, `error` one of `errors`, only the expected parameters
 * (CheckForUnexpectedParametersInErrorResponseFromAuthorizationEndpoint, a warning), iss, no code anywhere.
 */
export function checkCallbackError(flow: Flow, errors: readonly string[], dummies = false): void {
  const cb = flow.callback!;
  expect(cb.hash).toBe('');
  expect(errors).toContain(cb.searchParams.get('error'));
  expect(cb.searchParams.get('code')).toBeNull();
  if (flow.params.state !== undefined) expect(cb.searchParams.get('state')).toBe(flow.params.state);
  const allowed = ['error', 'error_description', 'error_uri', 'state', 'session_state', 'iss', ...(dummies ? ['dummy1', 'dummy2'] : [])];
  expect([...cb.searchParams.keys()].filter((k) => !allowed.includes(k))).toEqual([]);
  const description = cb.searchParams.get('error_description');
  if (description !== null) expect(description).toMatch(ERROR_DESCRIPTION);
}

/**
 * A token or PAR endpoint error: JSON (CheckTokenEndpointReturnedJsonContentType), `error` one of `errors` with its
 * status among `statuses`, error_description and error_uri well-formed (ValidateError*FromTokenEndpointResponseError,
 * CheckErrorDescription...ContainsCRLFTAB).
 */
export function checkEndpointError(a: Answer, errors: readonly string[], statuses: readonly number[] = [400]): void {
  expect(statuses, a.text).toContain(a.status);
  expect(a.headers.get('content-type')).toMatch(/^application\/json/);
  expect(errors, a.text).toContain(a.body.error);
  expect(a.body.error as string).toMatch(/^[\x20-\x21\x23-\x5B\x5D-\x7E]+$/);
  if (a.body.error_description !== undefined) expect(a.body.error_description).toMatch(ERROR_DESCRIPTION);
  if (a.body.error_uri !== undefined) expect(() => new URL(a.body.error_uri as string)).not.toThrow();
}

/** CheckTokenEndpointHttpStatusIs400Allowing401ForInvalidClientError with the errors a module accepts. */
export function checkClientError(a: Answer, errors: readonly string[] = ['invalid_client']): void {
  checkEndpointError(a, errors, a.body.error === 'invalid_client' ? [400, 401] : [400]);
}

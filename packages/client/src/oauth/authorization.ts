// The authorization request of the code flow (RFC 6749 §4.1.1 with PKCE, RFC 7636) and the check of its
// answer at the redirect URI (§4.1.2, RFC 9207): what the browser is sent with, and what may come back.
import { challengeS256, generateNonce, generateState, generateVerifier, timingSafeEqualString } from '@authcli/pkce';
import { ProtocolError } from './errors.js';

/** One authorization request: the parameters to send (pushed or in the URL) and the secrets kept for its answer. */
export interface AuthorizationRequest {
  params: Record<string, string>;
  state: string;
  nonce: string;
  /** The PKCE code verifier (RFC 7636 §4.1), sent only with the code exchange. */
  verifier: string;
  redirectUri: string;
}

/** A new request with its own state, nonce and S256 challenge; `dpopJkt` binds the code to a DPoP key (RFC 9449 §10). */
export async function authorizationRequest(
  clientId: string,
  opts: { redirectUri: string; scope: string; dpopJkt?: string | undefined },
): Promise<AuthorizationRequest> {
  const verifier = generateVerifier();
  const state = generateState();
  const nonce = generateNonce();
  const params: Record<string, string> = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: opts.redirectUri,
    scope: opts.scope,
    state,
    nonce,
    code_challenge: await challengeS256(verifier),
    code_challenge_method: 'S256',
    ...(opts.dpopJkt && { dpop_jkt: opts.dpopJkt }),
  };
  return { params, state, nonce, verifier, redirectUri: opts.redirectUri };
}

declare const validated: unique symbol;

/**
 * An authorization response that passed the state and iss checks. Only
 * {@link validateCallback} produces one, and only one of these can be
 * exchanged for tokens.
 */
export type ValidatedCallback = { readonly code: string } & { readonly [validated]: true };

export interface CallbackExpectations {
  state: string;
  issuer: string;
  /** True when the server advertises authorization_response_iss_parameter_supported (RFC 9207 §3). */
  issRequired: boolean;
  /** The client and the scope asked for, for the hints of an error answer. */
  clientId?: string | undefined;
  scope?: string | undefined;
}

/**
 * Checks an authorization response (RFC 6749 §4.1.2, §10.12; RFC 9207 §2.4):
 * exactly one state equal to ours; iss equal to the issuer when the server
 * sends it (required when it advertises it); then either an error or a code.
 */
export function validateCallback(query: URLSearchParams, expect: CallbackExpectations): ValidatedCallback {
  const who = { issuer: expect.issuer, clientId: expect.clientId };
  const refuse = (problem: string) => new ProtocolError({ endpoint: 'callback', problem }, who);
  const one = (name: string): string | undefined => {
    const all = query.getAll(name);
    if (all.length > 1) throw refuse(`the callback repeats ${name}`);
    return all[0];
  };
  const state = one('state');
  if (state === undefined || !timingSafeEqualString(state, expect.state)) {
    throw refuse('the callback state does not match this sign-in (possible CSRF); nothing was exchanged');
  }
  const iss = one('iss');
  if (iss === undefined ? expect.issRequired : iss !== expect.issuer) {
    throw refuse(`the callback comes from ${iss ?? 'an unnamed issuer'}, not ${expect.issuer} (RFC 9207); nothing was exchanged`);
  }
  const error = one('error');
  if (error !== undefined) {
    throw new ProtocolError({ endpoint: 'callback', error, description: one('error_description'), scope: expect.scope }, who);
  }
  const code = one('code');
  if (!code) throw refuse('the callback carries neither a code nor an error');
  return { code } as ValidatedCallback;
}

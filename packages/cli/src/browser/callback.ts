import { timingSafeEqualString } from '@authcli/pkce';
import { CliError } from '../errors.js';

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
}

/**
 * Checks an authorization response (RFC 6749 §4.1.2, §10.12; RFC 9207 §2.4):
 * exactly one state equal to ours; iss equal to the issuer when the server
 * sends it (required when it advertises it); then either an error or a code.
 */
export function validateCallback(query: URLSearchParams, expect: CallbackExpectations): ValidatedCallback {
  const one = (name: string): string | undefined => {
    const all = query.getAll(name);
    if (all.length > 1) throw new CliError('callback', `the callback repeats ${name}`);
    return all[0];
  };
  const state = one('state');
  if (state === undefined || !timingSafeEqualString(state, expect.state)) {
    throw new CliError('callback', 'the callback state does not match this sign-in (possible CSRF); nothing was exchanged');
  }
  const iss = one('iss');
  if (iss === undefined ? expect.issRequired : iss !== expect.issuer) {
    throw new CliError(
      'callback',
      `the callback comes from ${iss ?? 'an unnamed issuer'}, not ${expect.issuer} (RFC 9207); nothing was exchanged`,
    );
  }
  const error = one('error');
  if (error !== undefined) {
    const description = one('error_description');
    if (error === 'access_denied') throw new CliError('access_denied', 'you denied the sign-in in the browser');
    throw new CliError('callback', `the server returned ${error}${description ? `: ${description}` : ''}`);
  }
  const code = one('code');
  if (!code) throw new CliError('callback', 'the callback carries neither a code nor an error');
  return { code } as ValidatedCallback;
}

/** Why a sign-in or a token request failed in a way a person can act on; callers switch on `code`, never on the message. */
export type AuthcliErrorCode =
  | 'config'
  | 'usage'
  | 'network'
  | 'discovery'
  | 'access_denied'
  | 'expired_token'
  | 'invalid_client'
  | 'authorization_request'
  | 'protocol'
  | 'id_token'
  | 'callback'
  | 'timeout'
  | 'cancelled'
  /** The user answered no (e.g. to replacing a sign-in); exit 1. */
  | 'declined'
  | 'signed_out'
  | 'storage'
  | 'no_browser'
  /** `authcli api`: the resource answered, with a status other than 2xx. */
  | 'http_status';

/**
 * The one error @authcli/client throws for what a person can act on: `code` (an OAuth error the server sent,
 * or a local one) for programs, `message` a sentence for people, `hint` what to check or do next. Anything
 * else thrown is a bug. authcli's CLI prints `message` and `hint` on one line and exits 1.
 */
export class AuthcliError extends Error {
  override name = 'AuthcliError';
  /** What to check or do next, e.g. "Is the server running?"; printed after the message. */
  readonly hint: string | undefined;
  constructor(
    readonly code: AuthcliErrorCode,
    message: string,
    options?: { cause?: unknown; hint?: string | undefined },
  ) {
    super(message, options);
    this.hint = options?.hint;
  }
}

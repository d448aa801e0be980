/** Why a command failed in a way the user can act on; callers switch on `code`, never on the message. */
export type CliErrorCode =
  | 'config'
  | 'network'
  | 'discovery'
  | 'access_denied'
  | 'expired_token'
  | 'invalid_client'
  | 'protocol'
  | 'id_token'
  | 'callback'
  | 'timeout'
  | 'cancelled'
  | 'signed_out'
  | 'storage'
  | 'no_browser';

/** An expected failure: the CLI prints its message on one line and exits 1. */
export class CliError extends Error {
  override name = 'CliError';
  constructor(
    readonly code: CliErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

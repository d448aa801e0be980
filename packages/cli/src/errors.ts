/** Why a command failed in a way the user can act on; callers switch on `code`, never on the message. */
export type CliErrorCode =
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

/** An expected failure: the CLI prints its message (and hint) on one line and exits 1. */
export class CliError extends Error {
  override name = 'CliError';
  /** What to check or do next, e.g. "Is the server running?"; printed after the message. */
  readonly hint: string | undefined;
  constructor(
    readonly code: CliErrorCode,
    message: string,
    options?: { cause?: unknown; hint?: string | undefined },
  ) {
    super(message, options);
    this.hint = options?.hint;
  }
}

/** "message. Hint" as one sentence pair, without doubling the full stop. */
function withHint(message: string, hint: string | undefined): string {
  if (!hint) return message;
  return `${message}${/[.!?]$/.test(message) ? '' : '.'} ${hint}`;
}

/**
 * The one formatter for failures (gh's model: one line a person can act on,
 * the detail on request). A CliError is `authcli: <message>. <hint>`;
 * anything else is a bug and says so. No final newline: the caller's
 * output says it as a line. With `debug`, the whole error follows:
 * stack, `code`, and the cause chain down to the system error (node's
 * inspector prints `[cause]` and AggregateError members).
 */
export async function formatError(err: unknown, opts: { debug: boolean }): Promise<string> {
  const line =
    err instanceof CliError
      ? withHint(err.message, err.hint)
      : withHint(
          `unexpected error: ${err instanceof Error ? err.message : String(err)}`,
          'This is a bug; please report it with the output of the same command run with --debug.',
        );
  if (!opts.debug) return `authcli: ${line}`;
  const { inspect } = await import('node:util');
  return `authcli: ${line}\n\n${inspect(err, { depth: 10, colors: false })}`;
}

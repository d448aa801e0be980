import { AuthcliError } from '@authcli/client/internal/errors.js';

// The library's error under the name the CLI's modules have always used for it (packages/client/src/errors.ts).
export { AuthcliError as CliError, type AuthcliErrorCode as CliErrorCode } from '@authcli/client/internal/errors.js';

/** "message. Hint" as one sentence pair, without doubling the full stop. */
function withHint(message: string, hint: string | undefined): string {
  if (!hint) return message;
  return `${message}${/[.!?]$/.test(message) ? '' : '.'} ${hint}`;
}

/**
 * The one formatter for failures (gh's model: one line a person can act on,
 * the detail on request). An AuthcliError is `authcli: <message>. <hint>`;
 * anything else is a bug and says so. No final newline: the caller's
 * output says it as a line. With `debug`, the whole error follows:
 * stack, `code`, and the cause chain down to the system error (node's
 * inspector prints `[cause]` and AggregateError members).
 */
export async function formatError(err: unknown, opts: { debug: boolean }): Promise<string> {
  const line =
    err instanceof AuthcliError
      ? withHint(err.message, err.hint)
      : withHint(
          `unexpected error: ${err instanceof Error ? err.message : String(err)}`,
          'This is a bug; please report it with the output of the same command run with --debug.',
        );
  if (!opts.debug) return `authcli: ${line}`;
  const { inspect } = await import('node:util');
  return `authcli: ${line}\n\n${inspect(err, { depth: 10, colors: false })}`;
}

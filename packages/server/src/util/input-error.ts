/**
 * What a person or operator typed is not acceptable (a username, a callback
 * URL, a backup path): the message says what to change, and callers show it
 * as it is (a CLI line, a form error), never as a server fault.
 */
export class InputError extends Error {
  override name = 'InputError';

  /** `field`: which input the message is about, when callers answer differently per field (RFC 7591 §3.2.2). */
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

// The library's sentences are authcli's (`run \`authcli login\``, "another authcli process", its flags): the CLI
// prints them as they are. A tool that embeds the library has its own name, its own options and its own way to
// sign in again, so its public functions (index.ts) say them in the tool's words, here, in one place.
import { AuthcliError } from './errors.js';

export interface ToolWords {
  /** The tool's name, as people know it. */
  name: string;
  /** What a person does to sign in again, as a clause: "sign in again", "run `deploy login`". */
  signInAgain: string;
}

/** Each rule: what authcli says, and the tool's words for it (a function: `$` in a tool's words is just a `$`). */
const RULES: [RegExp, (w: ToolWords, group: string) => string][] = [
  [/run `authcli login[^`]*`( again)?/g, (w) => w.signInAgain],
  [/use `authcli login` \(device flow\)/g, () => 'use the device flow'],
  [/try `authcli login --browser`/g, () => 'try the browser flow'],
  [/try `authcli login`/g, () => 'try the device flow'],
  [/another authcli process/g, (w) => `another ${w.name} process`],
  [/pass --timeout SECONDS/g, () => 'allow the sign-in a longer timeoutMs'],
  [/, or use --storage file/g, () => ", or use storage 'file'"],
  [/; pick another with --port/g, () => '; pick another port'],
  [/; use --issuer /g, () => '; use the issuer '],
  [/ \(--issuer, AUTHCLI_ISSUER or config\.json\)/g, () => ''],
  [/: --client-id, AUTHCLI_CLIENT_ID or config\.json\)/g, () => ')'],
  [/ \(--client-secret-stdin or AUTHCLI_CLIENT_SECRET\)/g, () => ''],
  [/: --scope "([^"]*)"/g, (_, scope) => `: ask for "${scope}"`],
  [/pass --scope with those/g, () => 'ask for those'],
  [/… Ctrl-C to cancel/g, () => '…'],
];

/** A sentence of the library in the tool's words. */
export function inToolWords(text: string, words: ToolWords): string {
  return RULES.reduce(
    (t, [pattern, replace]) =>
      t.replace(pattern, (_match: string, group: unknown) => replace(words, typeof group === 'string' ? group : '')),
    text,
  );
}

/**
 * An AuthcliError in the tool's words, the same error (its class, `code` and fields stay: a ProtocolError keeps
 * `error` and `status`); a hint that names an authcli command is dropped. Anything else is returned as it is.
 */
export function errorInToolWords(err: unknown, words: ToolWords): unknown {
  if (!(err instanceof AuthcliError)) return err;
  const message = inToolWords(err.message, words);
  const hint = err.hint && !/`authcli[ `]/.test(err.hint) ? inToolWords(err.hint, words) : undefined;
  if (message !== err.message) {
    if (err.stack) err.stack = err.stack.replace(err.message, message);
    err.message = message;
  }
  if (hint !== err.hint) Object.defineProperty(err, 'hint', { value: hint });
  return err;
}

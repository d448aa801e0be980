// The library's sentences are authcli's (`run \`authcli login\``, "another authcli process"): the CLI prints them
// as they are. A tool that embeds the library has its own name and its own way to sign in again, so its public
// functions (index.ts) say them in the tool's words, here, in one place.
import { AuthcliError } from './errors.js';

export interface ToolWords {
  /** The tool's name, as people know it. */
  name: string;
  /** What a person does to sign in again, as a clause: "sign in again", "run `deploy login`". */
  signInAgain: string;
}

const RULES: [RegExp, (w: ToolWords) => string][] = [
  [/run `authcli login[^`]*`/g, (w) => w.signInAgain],
  [/use `authcli login` \(device flow\)/g, () => 'use the device flow'],
  [/try `authcli login --browser`/g, () => 'try the browser flow'],
  [/try `authcli login`/g, () => 'try the device flow'],
  [/another authcli process/g, (w) => `another ${w.name} process`],
  [/pass --timeout SECONDS/g, () => 'allow the sign-in a longer timeout'],
  [/\bauthcli (has verified|did not sign in|could not complete)/g, (w) => `${w.name} $1`],
];

/** A sentence of the library in the tool's words. */
export function inToolWords(text: string, words: ToolWords): string {
  return RULES.reduce((t, [pattern, replace]) => t.replace(pattern, replace(words)), text);
}

/** An AuthcliError in the tool's words (a hint that names an authcli command is dropped); anything else as it is. */
export function errorInToolWords(err: unknown, words: ToolWords): unknown {
  if (!(err instanceof AuthcliError)) return err;
  const message = inToolWords(err.message, words);
  const hint = err.hint && !/`authcli[ `]/.test(err.hint) ? inToolWords(err.hint, words) : undefined;
  if (message === err.message && hint === err.hint) return err;
  const said = new AuthcliError(err.code, message, { cause: err.cause ?? err, hint });
  if (err.stack) said.stack = err.stack.replace(err.message, message);
  return said;
}

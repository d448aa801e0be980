// The `remove` commands delete for good (a user's passkeys, an application's secret, an API's scopes everywhere):
// on a terminal they ask first; a script says --yes, and without it and without a terminal nothing is removed.
import { createInterface } from 'node:readline';
import { InputError } from '../util/input-error.js';
import { printable } from './output.js';

type In = NodeJS.ReadableStream & { isTTY?: boolean | undefined };
type Out = NodeJS.WritableStream & { isTTY?: boolean | undefined };

/** `y` or `yes`, any case; anything else (Enter, `n`, end of input) keeps it. */
export function acceptsRemoval(answer: string | undefined): boolean {
  return /^\s*y(es)?\s*$/i.test(answer ?? '');
}

/** One line typed after `prompt` (written to `output`); undefined when the input ends first. */
function ask(prompt: string, input: In, output: Out): Promise<string | undefined> {
  const rl = createInterface({ input, output, terminal: false });
  return new Promise<string | undefined>((resolve) => {
    let answered = false;
    rl.once('close', () => {
      if (!answered) resolve(undefined);
    });
    rl.question(prompt, (line) => {
      answered = true;
      resolve(line);
    });
  }).finally(() => rl.close());
}

/**
 * Before a removal of `what` ("user alice"): with `yes`, nothing is asked. A person at a terminal (stdin and
 * stderr are TTYs) is told what goes with it and asked; only y or yes removes. Without a terminal the command
 * refuses, naming --yes: a script that meant it says so, and one that did not removes nothing.
 */
export async function confirmRemoval(o: {
  yes: boolean | undefined;
  what: string;
  consequences: string;
  stdin?: In;
  stderr?: Out;
}): Promise<void> {
  if (o.yes) return;
  const stdin = o.stdin ?? process.stdin;
  const stderr = o.stderr ?? process.stderr;
  if (stdin.isTTY !== true || stderr.isTTY !== true) {
    throw new InputError(`not removed: no terminal to ask whether to remove ${o.what} (${o.consequences}); pass --yes to remove it`);
  }
  stderr.write(`${printable(`Removing ${o.what}: ${o.consequences}. This cannot be undone.`)}\n`);
  if (!acceptsRemoval(await ask(`${printable(`Remove ${o.what}?`)} [y/N] `, stdin, stderr))) {
    throw new InputError(`kept ${o.what}`);
  }
}

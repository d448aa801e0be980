// `authcli login` on a profile that is already signed in to the issuer: say who is signed in, and on a terminal
// ask before replacing that sign-in. Decided before any request, so "no" costs nothing at the server.
import { createInterface } from 'node:readline';
import { DEFAULT_PROFILE, describeSlot, type ProfileSettings } from '@authcli/client/internal/config.js';
import { readSession } from '@authcli/client/internal/credentials.js';
import { CliError } from '../errors.js';
import type { Output } from '../output.js';
import { sessionState } from './status.js';

/** `go`: sign in, saying nothing; `notice`: say who is signed in, then sign in; `ask`: say it, and sign in only on yes. */
export type ReplaceDecision = 'go' | 'notice' | 'ask';

/**
 * Nothing to replace (signed out, or a sign-in that has expired for good), or `--force`: go. Otherwise a
 * person at a terminal (stdin and stderr are TTYs) is asked; a script is told on stderr and goes on, as
 * re-logins in scripts always did.
 */
export function replaceDecision(o: { signedIn: boolean; force: boolean; interactive: boolean }): ReplaceDecision {
  if (!o.signedIn || o.force) return 'go';
  return o.interactive ? 'ask' : 'notice';
}

/** `y` or `yes`, any case; anything else (Enter, `n`, end of input) keeps the current sign-in. */
export function acceptsReplace(answer: string | undefined): boolean {
  return /^\s*y(es)?\s*$/i.test(answer ?? '');
}

type In = NodeJS.ReadableStream & { isTTY?: boolean | undefined };
type Out = NodeJS.WritableStream & { isTTY?: boolean | undefined };

/** One line from `input` after the prompt; undefined when the input ends first. Ctrl-C (`signal`) cancels. */
function ask(prompt: string, input: In, output: Out, signal: AbortSignal | undefined): Promise<string | undefined> {
  const rl = createInterface({ input, output, terminal: false });
  return new Promise<string | undefined>((resolve, reject) => {
    let answered = false;
    const onAbort = () => reject(new CliError('cancelled', 'cancelled; kept the current sign-in'));
    rl.once('close', () => {
      signal?.removeEventListener('abort', onAbort);
      if (!answered) resolve(undefined);
    });
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    rl.question(prompt, (line) => {
      answered = true;
      signal?.removeEventListener('abort', onAbort);
      resolve(line);
    });
  }).finally(() => rl.close());
}

/**
 * Before a login: when the profile is signed in to this issuer, says so (user, issuer, profile) and that
 * signing in replaces it, and asks as {@link replaceDecision} says. Throws CliError('declined') on no. A
 * stored session that cannot be read (a locked keychain) asks nothing: the login says what it does.
 */
export async function confirmReplace(
  settings: ProfileSettings,
  opts: { force: boolean; out: Output; signal?: AbortSignal | undefined; stdin?: In; stderr?: Out; env?: NodeJS.ProcessEnv },
): Promise<void> {
  const stdin = opts.stdin ?? process.stdin;
  const stderr = opts.stderr ?? process.stderr;
  let current;
  try {
    current = await readSession(settings.slot, opts.env);
  } catch (err) {
    if (err instanceof CliError && err.code === 'storage') return;
    throw err;
  }
  const state = sessionState(current, Date.now());
  const decision = replaceDecision({
    signedIn: state === 'valid' || state === 'renewable',
    force: opts.force,
    interactive: stdin.isTTY === true && stderr.isTTY === true,
  });
  if (decision === 'go' || !current) return;
  const who = current.username ?? current.subject ?? 'an unnamed user';
  const profile = settings.profile === DEFAULT_PROFILE ? '' : ` on profile ${settings.profile}`;
  opts.out.say(`Signed in to ${settings.issuer} as ${who}${profile}; signing in again replaces that sign-in.`);
  if (decision === 'notice') return;
  if (!acceptsReplace(await ask('Replace it? [y/N] ', stdin, stderr, opts.signal))) {
    throw new CliError('declined', `kept the current sign-in to ${describeSlot(settings.slot)} as ${who}`);
  }
}

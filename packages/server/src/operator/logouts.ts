import { type Command, Option } from 'commander';
import type { LogoutRow, LogoutState } from '../store/store.js';
import { printJson, printTable, say } from './output.js';
import { readStore } from './shared.js';

/** The states as the operator reads and filters them (`given-up` in the command line, `given_up` in JSON). */
const STATES: Record<string, LogoutState> = { pending: 'pending', delivered: 'delivered', 'given-up': 'given_up' };

/** Rows listed at most: the newest pending ones first (all of them when fewer), then the newest finished. */
const LIST_MAX = 500;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A row as `--json` prints it: what was to be said to whom and how its delivery went; never a token (none is kept). */
function view(r: LogoutRow) {
  return {
    id: r.id,
    state: r.state,
    client_id: r.client_id,
    sub: r.sub,
    sid: r.sid,
    attempts: r.attempts,
    created_at: iso(r.created_at),
    next_attempt_at: r.state === 'pending' ? iso(r.next_attempt_at) : null,
    give_up_at: iso(r.give_up_at),
    finished_at: iso(r.finished_at),
    last_error: r.last_error,
  };
}

/**
 * `authcli-server logouts [--state S] [--json]`: the back-channel logout outbox (oauth/backchannel-delivery.ts),
 * what is still to be delivered (and when it is tried next), what was delivered, and what was given up and why.
 */
export function logoutsCommand(cli: Command): void {
  cli
    .command('logouts')
    .description('back-channel logout tokens: pending (with the next try), delivered, given up (with why)')
    .addOption(new Option('--state <state>', 'only these').choices(Object.keys(STATES)))
    .option('--json', 'print JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (opts: { state?: string; json?: boolean; database?: string }) => {
      await readStore(opts.database, async (store) => {
        const rows = (await store.logoutOutbox.list(LIST_MAX, opts.state === undefined ? undefined : STATES[opts.state])).map(view);
        if (opts.json) {
          printJson(rows, 2);
          return;
        }
        if (rows.length === 0) {
          say(opts.state === undefined ? 'no back-channel logouts' : `no ${opts.state} back-channel logouts`);
          return;
        }
        printTable(
          ['STATE', 'CLIENT', 'ATTEMPTS', 'CREATED', 'NEXT TRY / ENDED', 'LAST ERROR'],
          rows.map((r) => [
            r.state === 'given_up' ? 'given up' : r.state,
            r.client_id,
            String(r.attempts),
            r.created_at!,
            (r.state === 'pending' ? r.next_attempt_at : r.finished_at) ?? '',
            r.last_error ?? '',
          ]),
        );
      });
    });
}

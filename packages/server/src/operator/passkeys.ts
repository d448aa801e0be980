import type { Command } from 'commander';
import { InputError } from '../util/input-error.js';
import { printJson, printTable, reportDone, say } from './output.js';
import { operatorContext, readStore, withStore } from './shared.js';
import { audited } from '../admin/context.js';
import { tellApplicationsAndSay } from './backchannel.js';
import { confirmRemoval } from './confirm.js';

/** `authcli-server users passkeys <username>` and `users reset-passkeys <username>`. */
export function passkeyCommands(users: Command): void {
  users
    .command('passkeys <username>')
    .description("list a user's passkeys, oldest first")
    .option('--json', 'print JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (username: string, opts: { json?: boolean; database?: string }) => {
      await readStore(opts.database, async (store) => {
        const user = await store.users.findByUsername(username);
        if (!user) throw new InputError(`no user ${username}`);
        const rows = (await store.passkeys.listByUser(user.id)).map((p) => ({
          name: p.name,
          id: p.id,
          synced: p.backed_up === 1,
          added: new Date(Number(p.created_at)).toISOString(),
          last_used: p.last_used_at === null ? null : new Date(Number(p.last_used_at)).toISOString(),
        }));
        if (opts.json) {
          printJson(rows, 2);
          return;
        }
        if (rows.length === 0) {
          say(`${user.username} has no passkey`);
          return;
        }
        printTable(
          ['NAME', 'SYNCED', 'ADDED', 'LAST USED', 'CREDENTIAL ID'],
          rows.map((r) => [r.name, r.synced ? 'yes' : 'no', r.added, r.last_used ?? 'never', r.id]),
        );
      });
    });
  users
    .command('reset-passkeys <username>')
    .description('remove every passkey of a user (a lost device) and end the browser sessions signed in with one; the password still works')
    .option('-y, --yes', 'remove without asking (scripts: without a terminal, the command removes nothing unless given)')
    .option('--json', 'print {"username", "passkeys_removed", "sessions_ended"} as JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (username: string, opts: { yes?: boolean; json?: boolean; database?: string }) => {
      await withStore(opts.database, async (store, config) => {
        const user = await store.users.findByUsername(username);
        if (!user) throw new InputError(`no user ${username}`);
        // Nothing to remove asks nothing; passkeys are asked for, as a remove is.
        const held = (await store.passkeys.listByUser(user.id)).length;
        if (held > 0) {
          await confirmRemoval({
            yes: opts.yes,
            what: `the ${held} passkey${held === 1 ? '' : 's'} of ${user.username}`,
            consequences:
              'they sign in with their password until they add one again, and the browser sessions signed in with a passkey end',
          });
        }
        const { passkeys, sessions } = await store.changes(async () => {
          const removed = await store.passkeys.deleteAll(user.id);
          await audited(operatorContext(store, config), {
            action: 'passkey.reset',
            target: { type: 'user', id: user.id, name: user.username },
            detail: { passkeys: removed.passkeys, sessions_ended: removed.sessions.length },
          });
          return removed;
        });
        const n = sessions.length;
        const ended = n === 0 ? '' : `; ended ${n} browser session${n === 1 ? '' : 's'} signed in with one`;
        reportDone(
          opts.json,
          { username: user.username, passkeys_removed: passkeys, sessions_ended: n },
          `removed ${passkeys} passkey${passkeys === 1 ? '' : 's'} of ${user.username}${ended}`,
        );
        if (n > 0) await tellApplicationsAndSay(store, config, 'the passkeys are removed', (b) => b.sessionsEnded(user.id, sessions));
      });
    });
}

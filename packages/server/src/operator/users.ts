import { printJson, printTable, reportDone } from './output.js';
import { audited } from '../admin/context.js';
import { readFile } from 'node:fs/promises';
import { collect, newPassword, operatorContext, readAll, readStore, withStore } from './shared.js';
import { checkUsername } from '../oauth/accounts.js';
import { createUser, deleteUser, findUser, listUsers, resetPassword, updateUser } from '../admin/users.js';
import type { Command } from 'commander';
import { claimAssignment, claimRemoval, mergePatches, parseClaimsJson, standardClaims, type ClaimsPatch } from '../oauth/claims.js';
import { InputError } from '../util/input-error.js';
import { accountCounterKeys } from '../oauth/limits.js';
import { passkeyCommands } from './passkeys.js';
import { confirmRemoval } from './confirm.js';

/** `authcli-server users ...`: end users (add, list, reset-password, disable, enable, passkeys, reset-passkeys, unlock). */
export function usersCommand(cli: Command): void {
  const users = cli.command('users').description('manage end users');
  users
    .command('add <username>')
    .description('add a user (asks for the password, or reads it from stdin)')
    .option('--password-stdin', 'read the password from standard input')
    .option('--admin', 'make the user an administrator (sees every application)')
    .option('--name <name>', 'display name')
    .option('--email <email>', 'email address')
    .option('--json', 'print the user as JSON (as users list --json and the admin API give it)')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(
      async (
        username: string,
        opts: { passwordStdin?: boolean; admin?: boolean; name?: string; email?: string; json?: boolean; database?: string },
      ) => {
        await withStore(opts.database, async (store, config) => {
          // A name that cannot be had is said before the password is asked for.
          checkUsername(username);
          if (await store.users.findByUsername(username)) throw new InputError(`user ${username} already exists`);
          const password = await newPassword(opts.passwordStdin, `Password for ${username}: `);
          const user = await createUser(operatorContext(store, config), {
            username,
            password,
            admin: opts.admin ?? false,
            name: opts.name ?? null,
            email: opts.email ?? null,
          });
          reportDone(opts.json, { ...user }, `added user ${user.username}${opts.admin ? ' (admin)' : ''}`);
        });
      },
    );
  users
    .command('list')
    .description('list users, oldest first')
    .option('--json', 'print JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (opts: { json?: boolean; database?: string }) => {
      await readStore(opts.database, async (store) => {
        const rows = (await listUsers(store)).items.map(({ id: _id, ...rest }) => rest);
        if (opts.json) {
          printJson(rows, 2);
          return;
        }
        printTable(
          ['USERNAME', 'NAME', 'EMAIL', 'ADMIN', 'DISABLED', 'CONNECTORS', 'CREATED'],
          rows.map((r) => [
            r.username,
            r.name ?? '',
            r.email ?? '',
            r.admin ? 'yes' : 'no',
            r.disabled ? 'yes' : 'no',
            r.connectors.join(',') || '-',
            r.created,
          ]),
        );
      });
    });
  users
    .command('update <username>')
    .description(
      'set or remove standard claims (OpenID Connect Core §5.1); prints the claims the user then has. ' +
        'A changed email or phone number is unverified unless *_verified=true is given with it',
    )
    .option('--claim <NAME=VALUE>', 'set a claim (repeatable): name=Ada, email_verified=true, address.locality=Paris', collect, [])
    .option('--claims-json <file>', 'set claims from a JSON object (- for stdin); null removes a claim, address is merged by field')
    .option('--unset <NAME>', 'remove a claim, or one address field (address.region) (repeatable)', collect, [])
    .option('--json', 'print JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(
      async (username: string, opts: { claim: string[]; claimsJson?: string; unset: string[]; json?: boolean; database?: string }) => {
        const patches: ClaimsPatch[] = [];
        if (opts.claimsJson !== undefined) patches.push(parseClaimsJson(await readClaimsFile(opts.claimsJson)));
        patches.push(...opts.claim.map(claimAssignment), ...opts.unset.map(claimRemoval));
        if (patches.length === 0) throw new InputError('nothing to update: give --claim NAME=VALUE, --claims-json FILE or --unset NAME');
        await withStore(opts.database, async (store, config) => {
          await updateUser(operatorContext(store, config), username, { claims: mergePatches(patches) });
          const user = await findUser(store, username);
          const claims = standardClaims(user, ['profile', 'email', 'address', 'phone']);
          if (opts.json) {
            printJson(claims, 2);
            return;
          }
          // One line per value: a string as it is, unless it has several lines (an address); booleans and numbers as JSON.
          const show = (v: unknown) => (typeof v === 'string' && !/[\r\n]/.test(v) ? v : JSON.stringify(v));
          const rows = Object.entries(claims).flatMap(([name, value]) =>
            name === 'address'
              ? Object.entries(value as Record<string, string>).map(([field, v]) => [`address.${field}`, show(v)])
              : [[name, show(value)]],
          );
          printTable(['CLAIM', 'VALUE'], rows);
        });
      },
    );
  users
    .command('reset-password <username>')
    .description(
      "set a new password (asks for it, or reads it from stdin); ends the user's sessions and clears their failed sign-in counters",
    )
    .option('--password-stdin', 'read the password from standard input')
    .option('--revoke-tokens', "also end every application's access: the user's refresh and access tokens stop working")
    .option('--json', 'print what was done as JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (username: string, opts: { passwordStdin?: boolean; revokeTokens?: boolean; json?: boolean; database?: string }) => {
      await withStore(opts.database, async (store, config) => {
        await findUser(store, username);
        const password = await newPassword(opts.passwordStdin, `New password for ${username}: `);
        const ctx = operatorContext(store, config);
        const reset = await resetPassword(ctx, username, password, { revokeTokens: opts.revokeTokens ?? false });
        const ended = reset.sessionsEnded;
        const cleared = reset.countersCleared;
        reportDone(
          opts.json,
          { username: reset.username, sessions_ended: ended, counters_cleared: cleared, application_sign_ins_ended: reset.grantsRevoked },
          `reset the password of ${reset.username} (${ended} session${ended === 1 ? '' : 's'} ended, ${cleared} failed sign-in counter${cleared === 1 ? '' : 's'} cleared${opts.revokeTokens ? `, ${reset.grantsRevoked} application sign-in${reset.grantsRevoked === 1 ? '' : 's'} ended` : ''})`,
        );
        await ctx.tellApplications();
      });
    });
  users
    .command('disable <username>')
    .description(
      'disable a user: sign-in and token redemption are refused; applications with a back-channel logout URI are told (and waited for)',
    )
    .option('--json', 'print the user as JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (username: string, opts: { json?: boolean; database?: string }) => {
      await withStore(opts.database, async (store, config) => {
        const ctx = operatorContext(store, config);
        const user = await updateUser(ctx, username, { disabled: true });
        reportDone(opts.json, { ...user }, `disabled user ${username}`);
        await ctx.tellApplications();
      });
    });
  users
    .command('enable <username>')
    .description('enable a disabled user')
    .option('--json', 'print the user as JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (username: string, opts: { json?: boolean; database?: string }) => {
      await withStore(opts.database, async (store, config) => {
        const user = await updateUser(operatorContext(store, config), username, { disabled: false });
        reportDone(opts.json, { ...user }, `enabled user ${username}`);
      });
    });

  users
    .command('remove <username>')
    .description(
      "delete a user with their sessions, sign-ins, passkeys and connector links (their applications stay, the operator's); applications holding their sign-ins are told",
    )
    .option('-y, --yes', 'remove without asking (scripts: without a terminal, the command removes nothing unless given)')
    .option('--json', 'print {"username", "removed": true} as JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (username: string, opts: { yes?: boolean; json?: boolean; database?: string }) => {
      await withStore(opts.database, async (store, config) => {
        const ctx = operatorContext(store, config);
        const user = await findUser(store, username);
        const apps = new Set((await store.grants.holders(user.id, ctx.now)).map((h) => h.clientId)).size;
        const passkeys = (await store.passkeys.listByUser(user.id)).length;
        await confirmRemoval({
          yes: opts.yes,
          what: `user ${username}`,
          consequences: `their sign-ins at ${apps} application${apps === 1 ? '' : 's'} end (those with a back-channel logout URI are told), their ${passkeys} passkey${passkeys === 1 ? '' : 's'}, sessions and connector links are deleted`,
        });
        await deleteUser(ctx, username);
        reportDone(opts.json, { username, removed: true }, `removed user ${username}`);
        await ctx.tellApplications();
      });
    });
  passkeyCommands(users);
  users
    .command('unlock <username>')
    .description('clear the failed sign-in counters of a user (every client IP), so sign-in is not limited or slowed')
    .option('--connector <id>', "a name at this LDAP connector's form instead of this server's account (counted apart)")
    .option('--json', 'print {"username", "counters_cleared"} as JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (username: string, opts: { connector?: string; json?: boolean; database?: string }) => {
      await withStore(opts.database, async (store, config) => {
        const keys = accountCounterKeys(
          (await store.rateLimits.list()).map((r) => r.key),
          username,
          opts.connector,
        );
        const n = await store.changes(async () => {
          const cleared = await store.rateLimits.delete(keys);
          if (cleared > 0) {
            await audited(operatorContext(store, config), {
              action: 'limit.cleared',
              target: null,
              detail: { username, ...(opts.connector !== undefined && { connector: opts.connector }), counters: cleared },
            });
          }
          return cleared;
        });
        const who = opts.connector === undefined ? username : `${username} at ${opts.connector}`;
        reportDone(
          opts.json,
          { username, ...(opts.connector !== undefined && { connector: opts.connector }), counters_cleared: n },
          n ? `unlocked ${who} (${n} counter${n === 1 ? '' : 's'} cleared)` : `${who} had no failed sign-ins counted`,
        );
      });
    });
}

/** The `--claims-json` file, or standard input for `-`; a file that cannot be read is one line. */
async function readClaimsFile(file: string): Promise<string> {
  if (file === '-') return readAll(process.stdin);
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    throw new InputError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

import { printJson, printTable, reportDone } from './output.js';
import { operatorContext, readStore, withStore } from './shared.js';
import { audited } from '../admin/context.js';
import type { Command } from 'commander';
import { InputError } from '../util/input-error.js';
import { ipSubject } from '../http/client-ip.js';
import { describeCounter, ipCounterKeys } from '../oauth/limits.js';

/** `authcli-server limits ...`: the abuse-limit counters (list, clear-ip). */
export function limitsCommand(cli: Command): void {
  const limits = cli
    .command('limits')
    .description('see and clear abuse limits (failed sign-ins, user-code guesses, device authorizations)');
  limits
    .command('list')
    .description('counters in their current window, with their limits')
    .option('--json', 'print JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (opts: { json?: boolean; database?: string }) => {
      await readStore(opts.database, async (store, config) => {
        const now = Date.now();
        const rows = (await store.rateLimits.list()).flatMap((r) => {
          const info = describeCounter(r.key, config.limits);
          if (!info || r.window_start + info.limit.windowMs <= now) return [];
          const subject =
            (info.username !== undefined && info.connector !== undefined ? `${info.username} at ${info.connector}` : info.username) ??
            info.userId ??
            info.clientId ??
            '';
          return [
            {
              kind: info.kind,
              subject,
              ip: info.ip ?? '',
              count: r.count,
              limit: info.limit.limit,
              limited: r.count >= info.limit.limit,
              resets_at: new Date(r.window_start + info.limit.windowMs).toISOString(),
            },
          ];
        });
        if (opts.json) {
          printJson(rows, 2);
          return;
        }
        printTable(
          ['KIND', 'SUBJECT', 'IP', 'COUNT', 'LIMIT', 'RESETS AT'],
          rows.map((r) => [r.kind, r.subject, r.ip, String(r.count), String(r.limit), r.resets_at]),
        );
      });
    });
  limits
    .command('clear-ip <address>')
    .description(
      "clear a client IP's sign-in, user-code, client-registration and client-authentication counters (e.g. an office locked out of /device)",
    )
    .option('--json', 'print {"address", "counters_cleared"} as JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (address: string, opts: { json?: boolean; database?: string }) => {
      if (ipSubject(address) === undefined) throw new InputError(`${address} is not an IP address`);
      await withStore(opts.database, async (store, config) => {
        const n = await store.changes(async () => {
          const cleared = await store.rateLimits.delete(
            ipCounterKeys(
              (await store.rateLimits.list()).map((r) => r.key),
              address,
            ),
          );
          if (cleared > 0)
            await audited(operatorContext(store, config), { action: 'limit.cleared', detail: { address, counters: cleared } });
          return cleared;
        });
        reportDone(
          opts.json,
          { address, counters_cleared: n },
          n ? `cleared ${n} counter${n === 1 ? '' : 's'} of ${address}` : `${address} had nothing counted`,
        );
      });
    });
}

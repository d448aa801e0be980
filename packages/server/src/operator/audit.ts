import type { Command } from 'commander';
import { auditFilter, auditJson } from '../admin/audit.js';
import { AUDIT_PAGE_MAX } from '../config/audit-defaults.js';
import type { AuditEvent, Store } from '../store/store.js';
import { InputError } from '../util/input-error.js';
import { printJson, printTable, say, sayError } from './output.js';
import { readStore } from './shared.js';

interface AuditOptions {
  since?: string;
  until?: string;
  type?: string;
  actor?: string;
  target?: string;
  limit: string;
  json?: boolean;
  database?: string;
}

/** A user named by username stands for their sub (what rows record); anything else is taken as it is. */
async function idOf(store: Store, name: string | undefined): Promise<string | undefined> {
  if (name === undefined) return undefined;
  return (await store.users.findByUsername(name))?.id ?? name;
}

/** The newest `limit` rows that match, oldest first (read a page at a time). */
async function matching(store: Store, opts: AuditOptions, limit: number): Promise<AuditEvent[]> {
  const filter = auditFilter({ ...opts, actor: await idOf(store, opts.actor), target: await idOf(store, opts.target) }, Date.now());
  const rows: AuditEvent[] = [];
  for (let after: number | undefined; rows.length < limit; ) {
    const want = Math.min(AUDIT_PAGE_MAX, limit - rows.length);
    const page = await store.audit.list({ ...filter, order: 'desc', ...(after !== undefined && { after }), limit: want });
    rows.push(...page);
    if (page.length < want) break;
    after = Number(page.at(-1)!.seq);
  }
  return rows.reverse();
}

/** `who` of a row for people: the name when one was recorded, else the id. */
const who = (type: string | null, id: string | null, name: string | null) =>
  id === null ? '-' : type === 'operator' || type === 'system' || type === 'anonymous' ? id : (name ?? id);

/** What changed, on one line: `field: from -> to` for an update, the members otherwise. */
function changes(detail: string): string {
  const d = JSON.parse(detail) as Record<string, unknown>;
  const parts = Object.entries(d).map(([k, v]) => {
    if (v !== null && typeof v === 'object' && 'from' in v && 'to' in v) {
      return `${k}: ${JSON.stringify((v as { from: unknown }).from)} -> ${JSON.stringify((v as { to: unknown }).to)}`;
    }
    return `${k}=${JSON.stringify(v)}`;
  });
  const line = parts.join(', ');
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

/** `authcli-server audit`: read the audit trail, and check its hash chain (`audit verify`). */
export function auditCommand(cli: Command): void {
  const audit = cli
    .command('audit')
    .description('show the audit trail, oldest first: every change and security event (see docs/audit.md); audit verify checks it')
    .option('--since <when>', 'from this time on: an age (90m, 24h, 7d) or an ISO 8601 date or time')
    .option('--until <when>', 'before this time (the same forms)')
    .option('--type <action>', 'one action (user.created) or a kind of them (user, app, signin)')
    .option('--actor <who>', 'who did it: operator, a username, a client_id')
    .option('--target <what>', 'what it was done to: a username, a client_id, an API, a workload or connector id')
    .option('--limit <n>', 'the newest this many that match', '100')
    .option('--json', 'print a JSON array, each row with its hashes')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (opts: AuditOptions) => {
      const limit = Number(opts.limit);
      if (!/^\d{1,6}$/.test(opts.limit) || limit < 1) throw new InputError('--limit must be a whole number from 1');
      await readStore(opts.database, async (store) => {
        const rows = await matching(store, opts, limit);
        if (opts.json) {
          printJson(rows.map(auditJson), 2);
          return;
        }
        printTable(
          ['SEQ', 'TIME', 'ACTOR', 'ACTION', 'TARGET', 'ADDRESS', 'CHANGES'],
          rows.map((r) => [
            String(r.seq),
            new Date(Number(r.at)).toISOString(),
            who(r.actor_type, r.actor, r.actor_name),
            r.action,
            who(r.target_type, r.target, r.target_name),
            r.address ?? '-',
            changes(r.detail),
          ]),
        );
      });
    });
  audit
    .command('verify')
    .description("check the audit trail's hash chain; exits 1 naming the first row that does not chain")
    .option('--json', 'print the verdict as JSON: {"ok", "rows", "first", "last"} or {"ok": false, "seq", "reason"}')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (_own: { json?: boolean; database?: string }, command: Command) => {
      // `audit` has --json and --database of its own: given after `verify`, Commander hands them to it.
      const opts = command.optsWithGlobals() as { json?: boolean; database?: string };
      await readStore(opts.database, async (store) => {
        const verdict = await store.audit.verify();
        if (!verdict.ok) process.exitCode = 1;
        if (opts.json) {
          printJson(verdict, 2);
          return;
        }
        if (verdict.ok) {
          say(
            verdict.rows === 0
              ? 'the audit trail is empty'
              : `the audit trail is intact: rows ${verdict.first} to ${verdict.last} (${verdict.rows} row${verdict.rows === 1 ? '' : 's'}) chain`,
          );
          return;
        }
        sayError(`authcli-server: the audit trail does not chain at row ${verdict.seq}: ${verdict.reason}`);
        process.exitCode = 1;
      });
    });
}

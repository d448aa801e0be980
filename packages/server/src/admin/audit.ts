import type { AuditEvent, AuditFilter, Store } from '../store/store.js';
import { InputError } from '../util/input-error.js';
import type { Page, PageRequest } from './context.js';

const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * A time as `authcli-server audit --since` and GET /admin/v1/audit take it: an age (`90m`, `24h`, `7d`,
 * counted back from `now`), an ISO 8601 date (`2026-11-29`, midnight UTC) or date and time.
 * @throws InputError
 */
export function parseTime(value: string, now: number, what = 'since'): number {
  const v = value.trim();
  const age = /^(\d{1,6})([mhd])$/.exec(v);
  if (age) return now - Number(age[1]) * UNIT_MS[age[2]!]!;
  if (/^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(v)) {
    const t = Date.parse(v.length === 10 ? `${v}T00:00:00Z` : v);
    if (Number.isFinite(t)) return t;
  }
  throw new InputError(`${what} must be an age (90m, 24h, 7d) or an ISO 8601 date or time (2026-11-29, 2026-11-29T08:00:00Z)`);
}

/** An audit row as the admin API answers it and `audit --json` prints it (one JSON object per line). */
export function auditJson(r: AuditEvent) {
  return {
    seq: Number(r.seq),
    at: new Date(Number(r.at)).toISOString(),
    actor: { type: r.actor_type, id: r.actor, name: r.actor_name },
    action: r.action,
    target: r.target === null ? null : { type: r.target_type, id: r.target, name: r.target_name },
    address: r.address,
    detail: JSON.parse(r.detail) as Record<string, unknown>,
    hash: r.hash,
    prev_hash: r.prev_hash,
  };
}

/** The filters of a listing, as typed (strings), read. */
export function auditFilter(
  q: {
    since?: string | undefined;
    until?: string | undefined;
    type?: string | undefined;
    actor?: string | undefined;
    target?: string | undefined;
  },
  now: number,
): AuditFilter {
  return {
    ...(q.since !== undefined && { since: parseTime(q.since, now) }),
    ...(q.until !== undefined && { until: parseTime(q.until, now, 'until') }),
    ...(q.type !== undefined && { type: q.type }),
    ...(q.actor !== undefined && { actor: q.actor }),
    ...(q.target !== undefined && { target: q.target }),
  };
}

/** A page of audit rows, newest first (the cursor is the last row's seq). */
export async function auditPage(store: Store, filter: AuditFilter, page: PageRequest): Promise<Page<AuditEvent>> {
  let after: number | undefined;
  if (page.after !== undefined) {
    if (!/^\d{1,15}$/.test(page.after)) throw new InputError('after must be the next cursor of the page before');
    after = Number(page.after);
  }
  const rows = await store.audit.list({ ...filter, order: 'desc', ...(after !== undefined && { after }), limit: page.limit + 1 });
  const items = rows.slice(0, page.limit);
  return { items, next: rows.length > page.limit ? String(items.at(-1)!.seq) : undefined };
}

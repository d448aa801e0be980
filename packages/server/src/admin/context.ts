import type { ServerConfig } from '../config/config.js';
import type { BackchannelLogout } from '../oauth/backchannel-logout.js';
import type { Actor, NewAuditEvent, Store } from '../store/store.js';

/**
 * What an administrative operation (admin/users.ts, admin/apps.ts, ...) runs
 * with: the store and configuration, who asks and from where (the audit
 * row's actor and address), the time, and how to tell applications of the
 * sign-ins it ended. The operator CLI and the admin API each build one and
 * call the same operations: one code path, one set of checks, one audit
 * row per change.
 */
export interface AdminContext {
  store: Store;
  config: ServerConfig;
  actor: Actor;
  /** The client address of the request (the admin API); null for the operator CLI. */
  address: string | null;
  now: number;
  /**
   * Tells applications that sign-ins ended (OpenID Connect Back-Channel
   * Logout): the server queues logout tokens for its delivery; the operator
   * CLI sends them at once and says what came of it.
   */
  logout(ended: (backchannel: BackchannelLogout) => Promise<string[]>): Promise<void>;
}

/** Who records a change, from where, when: an operation's context, or a page's (the dashboard, the account page). */
export type Recorder = Pick<AdminContext, 'store' | 'actor' | 'address' | 'now'>;

/** The audit row of a change `ctx` makes: its actor, address and time. */
export function audited(ctx: Recorder, e: Omit<NewAuditEvent, 'at' | 'actor' | 'address'>): Promise<unknown> {
  return ctx.store.audit.append({ ...e, at: ctx.now, actor: ctx.actor, address: ctx.address });
}

/**
 * The fields of `after` that differ from `before`, each as `{from, to}`
 * (compared as JSON): what an update's audit row records.
 */
export function changedFields(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): Record<string, { from: unknown; to: unknown }> {
  const changed: Record<string, { from: unknown; to: unknown }> = {};
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (JSON.stringify(before[key]) !== JSON.stringify(after[key])) changed[key] = { from: before[key] ?? null, to: after[key] ?? null };
  }
  return changed;
}

/** A page of a list: at most `limit` items after the cursor `after` (an opaque position the previous page gave). */
export interface PageRequest {
  limit: number;
  after?: string | undefined;
}

export interface Page<T> {
  items: T[];
  /** The cursor of the next page; undefined on the last. */
  next: string | undefined;
}

/**
 * A page of `all` in the order of `key` (a stable, unique key: a username in lower case, a client_id):
 * the items whose key sorts after the cursor, so a page stays right when items before it are added or removed.
 */
export function pageOf<T>(all: readonly T[], key: (item: T) => string, page: PageRequest): Page<T> {
  const after = page.after;
  const sorted = [...all].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  const rest = after === undefined ? sorted : sorted.filter((item) => key(item) > after);
  const items = rest.slice(0, page.limit);
  return { items, next: rest.length > page.limit ? key(items.at(-1)!) : undefined };
}

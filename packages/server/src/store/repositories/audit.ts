import type { Selectable } from 'kysely';
import { AUDIT_PAGE_MAX } from '../../config/audit-defaults.js';
import { sha256Hex } from '../../util/crypto.js';
import type { AmbientEngine } from '../ambient.js';
import { AUDIT_GENESIS } from '../migrations/0023_audit.js';
import type { ActorType, AuditEventsTable } from './audit-tables.js';

export type { ActorType } from './audit-tables.js';
export type AuditEvent = Selectable<AuditEventsTable>;

/** Who did it: the operator CLI, a user (by sub), an application (by client_id), nobody known, or the server itself. */
export interface Actor {
  type: ActorType;
  id: string;
  name?: string | null;
}

export const OPERATOR: Actor = { type: 'operator', id: 'operator', name: null };
export const SYSTEM: Actor = { type: 'system', id: 'system', name: null };
export const ANONYMOUS: Actor = { type: 'anonymous', id: 'anonymous', name: null };

/** What an audit row says; the store gives it its place in the chain. */
export interface NewAuditEvent {
  at: number;
  actor: Actor;
  action: string;
  target?: { type: string; id: string; name?: string | null } | null;
  address?: string | null;
  /** What changed (never a secret): JSON-serialisable. */
  detail?: Record<string, unknown>;
}

export interface AuditFilter {
  /** At or after (epoch ms). */
  since?: number;
  /** Before (epoch ms). */
  until?: number;
  /** An action (`user.created`), or the part before its dot (`user`: every user event). */
  type?: string;
  actor?: string;
  target?: string;
  /** Only these actions. */
  actions?: readonly string[];
  /** Rows past this `seq` in the order asked for (the cursor of a page). */
  after?: number;
  order?: 'asc' | 'desc';
  /** At most this many (capped at {@link AUDIT_PAGE_MAX} and one more, to tell whether a page has a next). */
  limit?: number;
}

/** The chain checked: intact from `first` to `last`, or broken at `seq` (the first row that does not chain), with why. */
export type AuditVerdict =
  | { ok: true; rows: number; first: number | null; last: number | null }
  | { ok: false; seq: number; reason: string; rows: number };

/** The bytes a row's hash covers: the previous row's hash, then every other column in a fixed order. */
export function auditHash(prevHash: string, r: Omit<AuditEvent, 'hash' | 'prev_hash'>): string {
  const fields = [r.seq, r.at, r.actor_type, r.actor, r.actor_name, r.action, r.target_type, r.target, r.target_name, r.address, r.detail];
  return sha256Hex(`${prevHash}\n${JSON.stringify(fields)}`);
}

/**
 * The audit trail: rows appended in the transaction of the change they
 * record (joining the store's ambient transaction, store.changes), each
 * chained to the one before by its hash.
 */
export class KyselyAudit {
  private readonly sinks: ((row: AuditEvent) => void)[] = [];

  constructor(private readonly engine: AmbientEngine) {}

  /** Calls `sink` with every row this process appends, once its transaction committed (AUTHCLI_AUDIT_LOG). */
  ship(sink: (row: AuditEvent) => void): void {
    this.sinks.push(sink);
  }

  /**
   * Appends a row: inside store.changes, in its transaction; else in one of its own. Shipped once committed. The head row's update
   * comes first, so appenders on several instances take turns and each sees the hash the one before wrote.
   */
  append(e: NewAuditEvent): Promise<AuditEvent> {
    return this.engine.within(async () => {
      const trx = this.engine.db;
      const head = await trx
        .updateTable('audit_head')
        .set((eb) => ({ seq: eb('seq', '+', 1) }))
        .where('id', '=', 1)
        .returning(['seq', 'hash'])
        .executeTakeFirstOrThrow();
      const fields = {
        seq: Number(head.seq),
        at: e.at,
        actor_type: e.actor.type,
        actor: e.actor.id,
        actor_name: e.actor.name ?? null,
        action: e.action,
        target_type: e.target?.type ?? null,
        target: e.target?.id ?? null,
        target_name: e.target?.name ?? null,
        address: e.address ?? null,
        detail: JSON.stringify(e.detail ?? {}),
      };
      const row: AuditEvent = { ...fields, prev_hash: head.hash, hash: auditHash(head.hash, fields) };
      await trx.updateTable('audit_head').set({ hash: row.hash }).where('id', '=', 1).execute();
      await trx.insertInto('audit_events').values(row).execute();
      if (this.sinks.length > 0) {
        this.engine.afterCommit(() => {
          for (const sink of this.sinks) sink(row);
        });
      }
      return row;
    });
  }

  list(f: AuditFilter = {}): Promise<AuditEvent[]> {
    const order = f.order ?? 'asc';
    let q = this.engine.db.selectFrom('audit_events').selectAll();
    if (f.since !== undefined) q = q.where('at', '>=', f.since);
    if (f.until !== undefined) q = q.where('at', '<', f.until);
    if (f.type !== undefined) {
      const type = f.type;
      q = type.includes('.')
        ? q.where('action', '=', type)
        : q.where((eb) => eb.or([eb('action', '=', type), eb('action', 'like', `${type.replace(/[\\%_]/g, '')}.%`)]));
    }
    if (f.actor !== undefined) q = q.where('actor', '=', f.actor);
    if (f.actions !== undefined) q = q.where('action', 'in', f.actions.length > 0 ? [...f.actions] : ['']);
    if (f.target !== undefined) q = q.where('target', '=', f.target);
    if (f.after !== undefined) q = q.where('seq', order === 'asc' ? '>' : '<', f.after);
    return q
      .orderBy('seq', order)
      .limit(Math.min(f.limit ?? AUDIT_PAGE_MAX, AUDIT_PAGE_MAX + 1))
      .execute();
  }

  /**
   * Checks the chain from the oldest row kept to the head: every row's hash is
   * its own, every `prev_hash` is the hash of the row before, the rows before
   * the oldest were removed by retention (its newest `audit.pruned` row says
   * up to which row, and with which hash), and the newest row is the head.
   */
  async verify(): Promise<AuditVerdict> {
    const head = await this.engine.db.selectFrom('audit_head').select(['seq', 'hash']).where('id', '=', 1).executeTakeFirstOrThrow();
    // Rows appended while this reads (a running server) come after the head read here: the chain is checked up to it.
    const headSeq = Number(head.seq);
    let prev: { seq: number; hash: string } | undefined;
    let rows = 0;
    let first: number | null = null;
    for (let after = 0; ; ) {
      const page = await this.engine.db
        .selectFrom('audit_events')
        .selectAll()
        .where('seq', '>', after)
        .where('seq', '<=', headSeq)
        .orderBy('seq', 'asc')
        .limit(AUDIT_PAGE_MAX)
        .execute();
      for (const r of page) {
        const seq = Number(r.seq);
        const broken = (reason: string): AuditVerdict => ({ ok: false, seq, reason, rows });
        if (prev === undefined) {
          first = seq;
          const start = await this.start(seq);
          if (start !== r.prev_hash) {
            return broken(
              seq === 1
                ? 'the first row does not start the chain'
                : `rows before ${seq} are missing: no audit.pruned row names them, or it names another hash`,
            );
          }
        } else if (seq !== prev.seq + 1) {
          return broken(`rows ${prev.seq + 1} to ${seq - 1} are missing`);
        } else if (r.prev_hash !== prev.hash) {
          return broken(`row ${prev.seq} was changed: this row chains to another hash`);
        }
        if (auditHash(r.prev_hash, r) !== r.hash) return broken('its content does not match its hash: it was changed');
        prev = { seq, hash: r.hash };
        rows++;
      }
      if (page.length < AUDIT_PAGE_MAX) break;
      after = Number(page[page.length - 1]!.seq);
    }
    const lastSeq = prev?.seq ?? 0;
    if (lastSeq < headSeq) return { ok: false, seq: lastSeq + 1, reason: `rows ${lastSeq + 1} to ${headSeq} are missing`, rows };
    // Rows past the head while the head has not moved: not a live append (a row and the head that names it commit
    // together), but a head set back.
    const now = await this.engine.db.selectFrom('audit_head').select('seq').where('id', '=', 1).executeTakeFirstOrThrow();
    if (Number(now.seq) === headSeq) {
      const beyond = await this.engine.db.selectFrom('audit_events').select('seq').where('seq', '>', headSeq).limit(1).executeTakeFirst();
      if (beyond) return { ok: false, seq: Number(beyond.seq), reason: 'the head names an older row than this one: it was set back', rows };
    }
    if (prev && prev.hash !== head.hash) return { ok: false, seq: prev.seq, reason: 'the newest row does not match the head', rows };
    return { ok: true, rows, first, last: prev?.seq ?? null };
  }

  /** The `prev_hash` the oldest row kept must have: the genesis for row 1, else what the newest audit.pruned row recorded. */
  private async start(firstSeq: number): Promise<string | undefined> {
    if (firstSeq === 1) return AUDIT_GENESIS;
    const pruned = await this.engine.db
      .selectFrom('audit_events')
      .select('detail')
      .where('action', '=', 'audit.pruned')
      .orderBy('seq', 'desc')
      .limit(1)
      .executeTakeFirst();
    if (!pruned) return undefined;
    const d = JSON.parse(pruned.detail) as { through_seq?: unknown; through_hash?: unknown };
    return d.through_seq === firstSeq - 1 && typeof d.through_hash === 'string' ? d.through_hash : undefined;
  }

  /**
   * Retention: deletes the rows older than `before`, and appends an
   * `audit.pruned` row naming the last one deleted and its hash, so that
   * verify can tell retention from tampering. Returns how many were deleted.
   */
  async prune(before: number, at: number): Promise<number> {
    return this.engine.within(async () => {
      const last = await this.engine.db
        .selectFrom('audit_events')
        .select(['seq', 'hash'])
        .where('at', '<', before)
        .orderBy('seq', 'desc')
        .limit(1)
        .executeTakeFirst();
      if (!last) return 0;
      const through = Number(last.seq);
      const deleted = await this.engine.db.deleteFrom('audit_events').where('seq', '<=', through).executeTakeFirst();
      const rows = Number(deleted.numDeletedRows);
      await this.append({
        at,
        actor: SYSTEM,
        action: 'audit.pruned',
        target: { type: 'audit', id: 'audit' },
        detail: { through_seq: through, through_hash: last.hash, rows, before: new Date(before).toISOString() },
      });
      return rows;
    });
  }
}

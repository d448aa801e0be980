/** Who made a change or caused an event (DESIGN "Administration API and audit"). */
export type ActorType = 'operator' | 'user' | 'client' | 'anonymous' | 'system';

/**
 * The audit trail (oauth/audit.ts): one row per change and per security event, in the order `seq` gives them,
 * each row's `hash` the SHA-256 of the row and the `prev_hash` of the row before it (a hash chain; see
 * store/repositories/audit.ts for the exact bytes). Never a secret, never a password hash.
 */
export interface AuditEventsTable {
  /** 1, 2, 3 ...: the chain's order, with no gaps (retention removes only the oldest rows, and says so). */
  seq: number;
  at: number;
  actor_type: ActorType;
  /** `operator`, a user's sub, a client_id, `anonymous` or `system`. */
  actor: string;
  /** The actor's name when it was recorded (a username, an application's name), for people reading the trail. */
  actor_name: string | null;
  /** What happened, e.g. `user.created`, `app.updated`, `signin.failed` (the events table in docs/audit.md). */
  action: string;
  /** `user`, `app`, `resource`, `workload`, `connector`, `audit`; null for an event about nothing in particular. */
  target_type: string | null;
  /** The target's stable id: a user's sub, a client_id, a resource's URI, a workload's or connector's id. */
  target: string | null;
  /** The target's name when it was recorded (a username, an application's name). */
  target_name: string | null;
  /** The client address of the request that made the change (as clientAddress gives it); null for the operator CLI. */
  address: string | null;
  /** What changed, as JSON: field -> new value, or {from, to} for an update. */
  detail: string;
  prev_hash: string;
  hash: string;
}

/** The newest row of the chain (one row, id 1): appending updates it first, which orders concurrent appenders. */
export interface AuditHeadTable {
  id: number;
  seq: number;
  hash: string;
}

import { WORKLOAD_CACHE_MS } from '../../config/defaults.js';
import type { Engine } from '../engine.js';
import { isUniqueViolation, StoreError } from '../errors.js';
import { SingleUseRecords } from './single-use.js';

// ---- tables (store/schema.ts Database) ----

/** A CI workload's trust policy (oauth/workloads.ts). */
export interface WorkloadsTable {
  id: string;
  issuer: string;
  audience: string;
  subject: string;
  /** JSON object: claim name -> pattern. */
  claims: string;
  client_id: string;
  /** Space-separated API scopes its tokens may have. */
  scope: string;
  token_lifetime_s: number;
  created_at: number;
}

/** The CI tokens exchanged: SHA-256 of issuer and `jti`, until the token's `exp`. */
export interface SubjectTokensTable {
  jti_hash: string;
  expires_at: number;
}

/** A trust policy: which CI tokens may become which application's tokens, with which scopes, for how long. */
export interface Workload {
  readonly id: string;
  /** The CI provider's issuer (`iss`), whose discovery and JWKS verify its tokens. */
  readonly issuer: string;
  /** The audience its tokens must name (`aud`). */
  readonly audience: string;
  /** A pattern the token's `sub` must match (`*`: any run of characters). */
  readonly subject: string;
  /** Patterns other claims must match, by claim name. */
  readonly claims: Readonly<Record<string, string>>;
  readonly clientId: string;
  readonly scopes: readonly string[];
  readonly tokenLifetimeSeconds: number;
  readonly createdAt: number;
}

export interface Workloads {
  /** Every policy, by id; a copy read within WORKLOAD_CACHE_MS answers (another instance's changes show within it). */
  list(): Promise<readonly Workload[]>;
  /** @throws StoreError duplicate */
  create(workload: Omit<Workload, 'createdAt'>, now: number): Promise<Workload>;
  /** @throws StoreError not_found */
  remove(id: string): Promise<void>;
  /** Records a CI token's use (`jtiHash`: SHA-256 of its issuer and jti) until `expiresAt`; false when it was used already. */
  useSubjectToken(jtiHash: string, expiresAt: number): Promise<boolean>;
}

const toWorkload = (r: WorkloadsTable): Workload =>
  Object.freeze({
    id: r.id,
    issuer: r.issuer,
    audience: r.audience,
    subject: r.subject,
    claims: Object.freeze(JSON.parse(r.claims) as Record<string, string>),
    clientId: r.client_id,
    scopes: Object.freeze(r.scope.split(' ').filter(Boolean)),
    tokenLifetimeSeconds: Number(r.token_lifetime_s),
    createdAt: Number(r.created_at),
  });

/** {@link Workloads} on Kysely, with a per-instance copy of the (small) list. */
export class KyselyWorkloads implements Workloads {
  private cached: { list: readonly Workload[]; at: number } | undefined;
  private readonly subjectTokens: SingleUseRecords;

  constructor(
    private readonly engine: Engine,
    private readonly cacheClock: () => number = () => performance.now(),
  ) {
    this.subjectTokens = new SingleUseRecords(engine, 'subject_tokens', 'subject_token_use');
  }

  async list(): Promise<readonly Workload[]> {
    const now = this.cacheClock();
    // Inside a change's transaction: its own view, never cached (it may roll back).
    if (!this.engine.inside && this.cached && now - this.cached.at < WORKLOAD_CACHE_MS) return this.cached.list;
    const rows = await this.engine.db.selectFrom('workloads').selectAll().orderBy('id').execute();
    const list = Object.freeze(rows.map(toWorkload));
    if (this.engine.inside) {
      this.engine.afterCommit?.(() => {
        this.cached = undefined;
      });
    } else this.cached = { list, at: now };
    return list;
  }

  async create(w: Omit<Workload, 'createdAt'>, now: number): Promise<Workload> {
    try {
      await this.engine.db
        .insertInto('workloads')
        .values({
          id: w.id,
          issuer: w.issuer,
          audience: w.audience,
          subject: w.subject,
          claims: JSON.stringify(w.claims),
          client_id: w.clientId,
          scope: w.scopes.join(' '),
          token_lifetime_s: w.tokenLifetimeSeconds,
          created_at: now,
        })
        .execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw new StoreError('duplicate', `a workload ${w.id} already exists`);
      throw err;
    }
    this.cached = undefined;
    return (await this.list()).find((x) => x.id === w.id)!;
  }

  async remove(id: string): Promise<void> {
    const r = await this.engine.db.deleteFrom('workloads').where('id', '=', id).executeTakeFirst();
    this.cached = undefined;
    this.engine.afterCommit?.(() => {
      this.cached = undefined;
    });
    if (Number(r.numDeletedRows) === 0) throw new StoreError('not_found', `no workload ${id} (see workloads list)`);
  }

  useSubjectToken(jtiHash: string, expiresAt: number): Promise<boolean> {
    return this.subjectTokens.use(jtiHash, expiresAt);
  }
}

import type { CompiledQuery, Kysely, QueryResult } from 'kysely';

/**
 * A query Kysely builds and compiles once, then runs with fresh parameter
 * values: the hot paths (client lookup, device polls, code redemption) skip
 * rebuilding and recompiling the same statement on every request. Parameters
 * are named by passing sentinels at build time; each sentinel's positions in
 * the compiled parameter list are filled at run time.
 */
export class Prepared<P extends string, R> {
  private compiled: CompiledQuery | undefined;
  private slots: (P | undefined)[] = [];

  constructor(
    private readonly names: readonly P[],
    private readonly build: (db: Kysely<any>, p: Record<P, any>) => { compile(): CompiledQuery },
  ) {}

  /** Runs on `db` (the store's Kysely instance or a transaction of it). */
  async execute(db: Kysely<any>, values: Record<P, unknown>): Promise<QueryResult<R>> {
    if (!this.compiled) {
      const sentinels = Object.fromEntries(this.names.map((n) => [n, `\u0000param:${n}\u0000`])) as Record<P, string>;
      this.compiled = this.build(db, sentinels).compile();
      this.slots = this.compiled.parameters.map((v) => this.names.find((n) => sentinels[n] === v));
    }
    const template = this.compiled;
    const parameters = template.parameters.map((v, i) => {
      const slot = this.slots[i];
      return slot === undefined ? v : values[slot];
    });
    return db.executeQuery<R>({ ...template, parameters });
  }
}

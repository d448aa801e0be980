import type { Engine } from '../engine.js';

/** The scope sets each user approved for each application (OpenID Connect Core 1.0 §3.1.2.4), so the consent page is asked once. */
export interface Consents {
  /** Records that the user approved exactly this scope set for the application. Idempotent. */
  add(userId: string, clientId: string, scopes: string[], now: number): Promise<void>;
  /** True when some approved scope set of this user and application covers every requested scope. */
  covers(userId: string, clientId: string, scopes: string[]): Promise<boolean>;
  /** The applications the user approved: per application, every scope approved and the first approval. */
  forUser(userId: string): Promise<{ clientId: string; scopes: string[]; since: number }[]>;
  /** Forgets what the user approved for the application: its next request asks again. How many sets it forgot. */
  remove(userId: string, clientId: string): Promise<number>;
}

/** {@link Consents} on Kysely. */
export class KyselyConsents implements Consents {
  constructor(private readonly engine: Engine) {}

  async add(userId: string, clientId: string, scopes: string[], now: number): Promise<void> {
    const scope = [...new Set(scopes)].sort().join(' ');
    await this.engine.db
      .insertInto('consents')
      .values({ user_id: userId, client_id: clientId, scope, created_at: now })
      .onConflict((oc) => oc.columns(['user_id', 'client_id', 'scope']).doNothing())
      .execute();
  }

  async covers(userId: string, clientId: string, scopes: string[]): Promise<boolean> {
    const rows = await this.engine.db
      .selectFrom('consents')
      .select('scope')
      .where('user_id', '=', userId)
      .where('client_id', '=', clientId)
      .execute();
    return rows.some((r) => {
      const granted = new Set(r.scope.split(' '));
      return scopes.every((s) => granted.has(s));
    });
  }

  async forUser(userId: string): Promise<{ clientId: string; scopes: string[]; since: number }[]> {
    const rows = await this.engine.db
      .selectFrom('consents')
      .select(['client_id', 'scope', 'created_at'])
      .where('user_id', '=', userId)
      .execute();
    const byClient = new Map<string, { clientId: string; scopes: string[]; since: number }>();
    for (const r of rows) {
      const c = byClient.get(r.client_id) ?? { clientId: r.client_id, scopes: [], since: Number(r.created_at) };
      byClient.set(r.client_id, c);
      c.since = Math.min(c.since, Number(r.created_at));
      for (const s of r.scope.split(' ')) if (s && !c.scopes.includes(s)) c.scopes.push(s);
    }
    return [...byClient.values()];
  }

  async remove(userId: string, clientId: string): Promise<number> {
    const r = await this.engine.db
      .deleteFrom('consents')
      .where('user_id', '=', userId)
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}

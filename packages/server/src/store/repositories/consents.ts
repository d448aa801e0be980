import type { Engine } from '../engine.js';

/** The scope sets each user approved for each application (OpenID Connect Core 1.0 §3.1.2.4), so the consent page is asked once. */
export interface Consents {
  /** Records that the user approved exactly this scope set for the application. Idempotent. */
  add(userId: string, clientId: string, scopes: string[], now: number): Promise<void>;
  /** True when some approved scope set of this user and application covers every requested scope. */
  covers(userId: string, clientId: string, scopes: string[]): Promise<boolean>;
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
}

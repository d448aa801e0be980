import type { Engine } from '../engine.js';

/** Instance-wide values kept in the store (when it was bootstrapped, generated secrets). */
export interface Settings {
  /**
   * The value stored under `key`, creating it from `make()` if absent. When
   * several instances race, all of them read back the one value that won.
   */
  getOrCreate(key: string, make: () => string): Promise<string>;
  set(key: string, value: string): Promise<void>;
  /** The value stored under `key`, if any. */
  get(key: string): Promise<string | undefined>;
}

/** {@link Settings} on Kysely. */
export class KyselySettings implements Settings {
  constructor(private readonly engine: Engine) {}

  async getOrCreate(key: string, make: () => string): Promise<string> {
    await this.engine.db
      .insertInto('settings')
      .values({ key, value: make() })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    const row = await this.engine.db.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirstOrThrow();
    return row.value;
  }

  async get(key: string): Promise<string | undefined> {
    const row = await this.engine.db.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirst();
    return row?.value;
  }

  async set(key: string, value: string): Promise<void> {
    await this.engine.db
      .insertInto('settings')
      .values({ key, value })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
      .execute();
  }
}

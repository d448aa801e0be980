import type { Engine } from '../engine.js';
import { isUniqueViolation, StoreError } from '../errors.js';
import type { ConnectorStatesTable, ConnectorsTable, NewUser } from '../schema.js';

export type ConnectorRow = ConnectorsTable;
export type ConnectorState = ConnectorStatesTable;

/** Upstream identity providers, the accounts linked through them, and their round trips' single-use state. */
export interface Connectors {
  list(): Promise<ConnectorRow[]>;
  get(id: string): Promise<ConnectorRow | undefined>;
  /** @throws StoreError `duplicate` when the id is taken. */
  create(row: ConnectorRow): Promise<void>;
  /** Removes a connector and its links (the users stay, and can no longer sign in through it); false when unknown. */
  delete(id: string): Promise<boolean>;
  /** The user an upstream account is linked to. */
  linkedUser(connectorId: string, subject: string): Promise<string | undefined>;
  /**
   * Links an upstream account to a user, unless it is linked already (to anyone): the user it is linked to
   * now, this one when the link was made here. One statement, so parallel first sign-ins agree.
   */
  link(connectorId: string, subject: string, userId: string, now: number): Promise<string>;
  /**
   * A first sign-in through a connector: the user `user` is made and linked to (connector, subject) in one
   * transaction, unless the account is linked already (to anyone: parallel first sign-ins make one user). The
   * id of the user it is linked to. @throws StoreError `duplicate` when `user`'s username is taken.
   */
  provision(connectorId: string, subject: string, user: NewUser, now: number): Promise<string>;
  /** Removes this user's link through a connector; false when there was none. */
  unlink(connectorId: string, userId: string): Promise<boolean>;
  /** The connectors a user is linked through, and how many users each connector has. */
  linksOf(userId: string): Promise<{ connectorId: string; subject: string }[]>;
  userCounts(): Promise<Record<string, number>>;
  addState(state: ConnectorState): Promise<void>;
  /** Uses a round trip's state up: the row if it was live and of this browser, once. */
  takeState(stateHash: string, browserHash: string, now: number): Promise<ConnectorState | undefined>;
}

/** {@link Connectors} on Kysely. */
export class KyselyConnectors implements Connectors {
  constructor(private readonly engine: Engine) {}

  list(): Promise<ConnectorRow[]> {
    return this.engine.db.selectFrom('connectors').selectAll().orderBy('created_at').orderBy('id').execute();
  }

  get(id: string): Promise<ConnectorRow | undefined> {
    return this.engine.db.selectFrom('connectors').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async create(row: ConnectorRow): Promise<void> {
    try {
      await this.engine.db.insertInto('connectors').values(row).execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw new StoreError('duplicate', `a connector with the id ${row.id} exists already`);
      throw err;
    }
  }

  async delete(id: string): Promise<boolean> {
    return this.engine.transaction(async (trx) => {
      await trx.deleteFrom('connector_states').where('connector_id', '=', id).execute();
      await trx.deleteFrom('federated_identities').where('connector_id', '=', id).execute();
      const r = await trx.deleteFrom('connectors').where('id', '=', id).executeTakeFirst();
      return Number(r.numDeletedRows) === 1;
    });
  }

  async linkedUser(connectorId: string, subject: string): Promise<string | undefined> {
    const row = await this.engine.db
      .selectFrom('federated_identities')
      .select('user_id')
      .where('connector_id', '=', connectorId)
      .where('subject', '=', subject)
      .executeTakeFirst();
    return row?.user_id;
  }

  async link(connectorId: string, subject: string, userId: string, now: number): Promise<string> {
    await this.engine.db
      .insertInto('federated_identities')
      .values({ connector_id: connectorId, subject, user_id: userId, created_at: now })
      .onConflict((oc) => oc.columns(['connector_id', 'subject']).doNothing())
      .execute();
    return (await this.linkedUser(connectorId, subject))!;
  }

  async provision(connectorId: string, subject: string, user: NewUser, now: number): Promise<string> {
    try {
      return await this.engine.transaction(async (trx) => {
        const existing = await trx
          .selectFrom('federated_identities')
          .select('user_id')
          .where('connector_id', '=', connectorId)
          .where('subject', '=', subject)
          .executeTakeFirst();
        if (existing) return existing.user_id;
        await trx.insertInto('users').values(user).execute();
        await trx
          .insertInto('federated_identities')
          .values({ connector_id: connectorId, subject, user_id: user.id, created_at: now })
          .execute();
        return user.id;
      });
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      // Linked meanwhile by a parallel first sign-in: that user. Otherwise the username was taken.
      const linked = await this.linkedUser(connectorId, subject);
      if (linked) return linked;
      throw new StoreError('duplicate', `user ${user.username} already exists`);
    }
  }

  async unlink(connectorId: string, userId: string): Promise<boolean> {
    const r = await this.engine.db
      .deleteFrom('federated_identities')
      .where('connector_id', '=', connectorId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  async linksOf(userId: string): Promise<{ connectorId: string; subject: string }[]> {
    const rows = await this.engine.db
      .selectFrom('federated_identities')
      .select(['connector_id', 'subject'])
      .where('user_id', '=', userId)
      .orderBy('connector_id')
      .execute();
    return rows.map((r) => ({ connectorId: r.connector_id, subject: r.subject }));
  }

  async userCounts(): Promise<Record<string, number>> {
    const rows = await this.engine.db
      .selectFrom('federated_identities')
      .select((eb) => ['connector_id', eb.fn.countAll<number>().as('n')])
      .groupBy('connector_id')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.connector_id, Number(r.n)]));
  }

  async addState(state: ConnectorState): Promise<void> {
    await this.engine.db.insertInto('connector_states').values(state).execute();
  }

  takeState(stateHash: string, browserHash: string, now: number): Promise<ConnectorState | undefined> {
    return this.engine.db
      .deleteFrom('connector_states')
      .where('state_hash', '=', stateHash)
      .where('browser_hash', '=', browserHash)
      .where('expires_at', '>', now)
      .returningAll()
      .executeTakeFirst();
  }
}

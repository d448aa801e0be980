import { RESOURCE_CACHE_MS } from '../../config/defaults.js';
import type { Engine } from '../engine.js';
import { isUniqueViolation, StoreError } from '../errors.js';

// ---- tables (store/schema.ts Database) ----

/** A team's API (RFC 8707 resource): its identifier is its tokens' `aud` (oauth/resources.ts). */
export interface ResourcesTable {
  id: string;
  name: string;
  created_at: number;
  updated_at: number;
}

/** A resource's scopes: a name unique across resources, what it allows (consent pages show it), its place in the list. */
export interface ResourceScopesTable {
  name: string;
  resource_id: string;
  description: string;
  position: number;
}

/** One of a resource's scopes: its name (unique across resources) and what it allows, as consent pages say it. */
export interface ResourceScope {
  readonly name: string;
  readonly description: string;
}

/** A team's API (RFC 8707 resource): its identifier (the `aud` of its tokens), its name, its scopes in order. */
export interface Resource {
  readonly id: string;
  readonly name: string;
  readonly scopes: readonly ResourceScope[];
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** Every resource, and the indexes a request looks things up by. */
export interface ResourceCatalog {
  readonly list: readonly Resource[];
  /** A resource by its identifier. */
  readonly byId: ReadonlyMap<string, Resource>;
  /** The resource a scope belongs to, by scope name. */
  readonly byScope: ReadonlyMap<string, Resource>;
}

export interface Resources {
  /** Every resource, ordered by identifier; a copy read within RESOURCE_CACHE_MS answers (another instance's changes show within it). */
  catalog(): Promise<ResourceCatalog>;
  /** @throws StoreError duplicate (the id, or a scope name another resource has) */
  create(resource: { id: string; name: string; scopes: readonly ResourceScope[] }, now: number): Promise<Resource>;
  /**
   * Changes the name and replaces the scopes (what is undefined stays); scopes it no longer has are taken from
   * every application's allowed scopes in the same transaction.
   * @throws StoreError not_found, duplicate
   */
  update(id: string, patch: { name?: string; scopes?: readonly ResourceScope[] }, now: number): Promise<Resource>;
  /** Removes a resource, its scopes, and those scopes from every application's allowed scopes. @throws StoreError not_found */
  remove(id: string, now: number): Promise<void>;
}

const EMPTY: ResourceCatalog = { list: [], byId: new Map(), byScope: new Map() };

/** {@link Resources} on Kysely, with a per-instance copy of the whole (small) catalog. */
export class KyselyResources implements Resources {
  private cached: { catalog: ResourceCatalog; at: number } | undefined;

  constructor(
    private readonly engine: Engine,
    private readonly cacheClock: () => number = () => performance.now(),
  ) {}

  async catalog(): Promise<ResourceCatalog> {
    // Inside a change's transaction: its own view, never cached (it may roll back).
    if (this.engine.inside) return this.read();
    const now = this.cacheClock();
    if (this.cached && now - this.cached.at < RESOURCE_CACHE_MS) return this.cached.catalog;
    const catalog = await this.read();
    this.cached = { catalog, at: now };
    return catalog;
  }

  private async read(): Promise<ResourceCatalog> {
    const db = this.engine.db;
    const rows = await db.selectFrom('resources').selectAll().orderBy('id').execute();
    if (rows.length === 0) return EMPTY;
    const scopes = await db.selectFrom('resource_scopes').selectAll().orderBy('resource_id').orderBy('position').execute();
    const list = rows.map(
      (r): Resource =>
        Object.freeze({
          id: r.id,
          name: r.name,
          createdAt: Number(r.created_at),
          updatedAt: Number(r.updated_at),
          scopes: Object.freeze(
            scopes.filter((s) => s.resource_id === r.id).map((s) => Object.freeze({ name: s.name, description: s.description })),
          ),
        }),
    );
    const byId = new Map(list.map((r) => [r.id, r]));
    const byScope = new Map(list.flatMap((r) => r.scopes.map((s) => [s.name, r] as const)));
    return { list, byId, byScope };
  }

  async create(resource: { id: string; name: string; scopes: readonly ResourceScope[] }, now: number): Promise<Resource> {
    try {
      await this.engine.transaction(async (trx) => {
        await trx.insertInto('resources').values({ id: resource.id, name: resource.name, created_at: now, updated_at: now }).execute();
        if (resource.scopes.length > 0) {
          await trx
            .insertInto('resource_scopes')
            .values(
              resource.scopes.map((s, position) => ({ name: s.name, resource_id: resource.id, description: s.description, position })),
            )
            .execute();
        }
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw await this.duplicate(resource.id, resource.scopes);
      throw err;
    }
    return this.fresh(resource.id);
  }

  async update(id: string, patch: { name?: string; scopes?: readonly ResourceScope[] }, now: number): Promise<Resource> {
    try {
      await this.engine.transaction(async (trx) => {
        const r = await trx
          .updateTable('resources')
          .set({ ...(patch.name !== undefined && { name: patch.name }), updated_at: now })
          .where('id', '=', id)
          .executeTakeFirst();
        if (Number(r.numUpdatedRows) === 0) throw new StoreError('not_found', `no resource ${id} (see resources list)`);
        if (patch.scopes === undefined) return;
        const before = await trx.selectFrom('resource_scopes').select('name').where('resource_id', '=', id).execute();
        const kept = new Set(patch.scopes.map((s) => s.name));
        await trx.deleteFrom('resource_scopes').where('resource_id', '=', id).execute();
        if (patch.scopes.length > 0) {
          await trx
            .insertInto('resource_scopes')
            .values(patch.scopes.map((s, position) => ({ name: s.name, resource_id: id, description: s.description, position })))
            .execute();
        }
        await withdrawScopes(
          trx,
          before.map((s) => s.name).filter((name) => !kept.has(name)),
          now,
        );
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw await this.duplicate(undefined, patch.scopes ?? [], id);
      throw err;
    }
    return this.fresh(id);
  }

  async remove(id: string, now: number): Promise<void> {
    await this.engine.transaction(async (trx) => {
      const scopes = await trx.selectFrom('resource_scopes').select('name').where('resource_id', '=', id).execute();
      await trx.deleteFrom('resource_scopes').where('resource_id', '=', id).execute();
      const r = await trx.deleteFrom('resources').where('id', '=', id).executeTakeFirst();
      if (Number(r.numDeletedRows) === 0) throw new StoreError('not_found', `no resource ${id} (see resources list)`);
      await withdrawScopes(
        trx,
        scopes.map((s) => s.name),
        now,
      );
    });
    this.forget();
  }

  /** Drops the cached catalog, now and once the change commits (a read in between kept the old one). */
  private forget(): void {
    this.cached = undefined;
    this.engine.afterCommit?.(() => {
      this.cached = undefined;
    });
  }

  /** The resource as the store has it now, past the cache (after changing it). */
  private async fresh(id: string): Promise<Resource> {
    this.forget();
    const found = (await this.catalog()).byId.get(id);
    if (!found) throw new StoreError('not_found', `no resource ${id}`);
    return found;
  }

  /** Which name a unique violation was about: the identifier, or a scope another resource has. */
  private async duplicate(id: string | undefined, scopes: readonly ResourceScope[], self?: string): Promise<StoreError> {
    this.cached = undefined;
    const catalog = await this.catalog();
    if (id !== undefined && catalog.byId.has(id)) return new StoreError('duplicate', `a resource ${id} already exists`);
    for (const s of scopes) {
      const owner = catalog.byScope.get(s.name);
      if (owner && owner.id !== self) return new StoreError('duplicate', `the scope ${s.name} belongs to the resource ${owner.id}`);
    }
    return new StoreError('duplicate', 'a resource or scope of that name already exists');
  }
}

/** Takes scopes a resource no longer has from every application allowed them: none is left allowed a scope that names nothing. */
async function withdrawScopes(
  trx: Parameters<Parameters<Engine['transaction']>[0]>[0],
  names: readonly string[],
  now: number,
): Promise<void> {
  if (names.length === 0) return;
  const gone = new Set(names);
  const apps = await trx.selectFrom('applications').select(['client_id', 'scopes']).execute();
  for (const app of apps) {
    const scopes = app.scopes.split(' ').filter(Boolean);
    const left = scopes.filter((s) => !gone.has(s));
    if (left.length === scopes.length) continue;
    await trx
      .updateTable('applications')
      .set({ scopes: left.join(' '), updated_at: now })
      .where('client_id', '=', app.client_id)
      .execute();
  }
}

import { validateResource } from '../oauth/resources.js';
import { type Resource, type ResourceScope, StoreError, type Store } from '../store/store.js';
import { type AdminContext, audited, changedFields } from './context.js';

/** A resource as `resources list --json` prints it and the admin API answers it. */
export function resourceJson(r: Resource) {
  return {
    id: r.id,
    name: r.name,
    scopes: r.scopes.map((s) => ({ name: s.name, description: s.description })),
    created_at: new Date(r.createdAt).toISOString(),
    updated_at: new Date(r.updatedAt).toISOString(),
  };
}

const target = (r: Pick<Resource, 'id' | 'name'>) => ({ type: 'resource', id: r.id, name: r.name });
const audible = (r: Resource) => ({ name: r.name, scopes: r.scopes.map((s) => `${s.name}=${s.description}`) });

export async function findResource(store: Store, id: string): Promise<Resource> {
  const r = (await store.resources.catalog()).byId.get(id);
  if (!r) throw new StoreError('not_found', `no resource ${id} (see resources list)`);
  return r;
}

/** Defines an API (RFC 8707 resource) with its scopes. */
export async function createResource(
  ctx: AdminContext,
  input: { id: string; name: string; scopes: readonly ResourceScope[] },
): Promise<Resource> {
  const checked = validateResource(input);
  return ctx.store.changes(async () => {
    const created = await ctx.store.resources.create(checked, ctx.now);
    await audited(ctx, { action: 'resource.created', target: target(created), detail: audible(created) });
    return created;
  });
}

/** Changes an API's name or scopes (scopes given replace them all; those left out are taken from every application). */
export async function updateResource(
  ctx: AdminContext,
  id: string,
  patch: { name?: string | undefined; scopes?: readonly ResourceScope[] | undefined },
): Promise<Resource> {
  return ctx.store.changes(async () => {
    const current = await findResource(ctx.store, id);
    const input = validateResource({ id, name: patch.name ?? current.name, scopes: patch.scopes ?? current.scopes });
    const updated = await ctx.store.resources.update(
      id,
      { ...(patch.name !== undefined && { name: input.name }), ...(patch.scopes !== undefined && { scopes: input.scopes }) },
      ctx.now,
    );
    const detail = changedFields(audible(current), audible(updated));
    if (Object.keys(detail).length > 0) await audited(ctx, { action: 'resource.updated', target: target(updated), detail });
    return updated;
  });
}

/** Removes an API: its tokens can no longer be had, and its scopes are taken from every application. */
export async function removeResource(ctx: AdminContext, id: string): Promise<void> {
  await ctx.store.changes(async () => {
    const current = await findResource(ctx.store, id);
    await ctx.store.resources.remove(id, ctx.now);
    await audited(ctx, { action: 'resource.removed', target: target(current), detail: audible(current) });
  });
}

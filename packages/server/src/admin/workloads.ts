import { TOKEN_EXCHANGE_GRANT_TYPE } from '@authcli/protocol';
import { WORKLOAD_TOKEN_LIFETIME_S } from '../config/workload-defaults.js';
import { validateWorkload } from '../oauth/workloads.js';
import { StoreError, type Workload } from '../store/store.js';
import { InputError } from '../util/input-error.js';
import { type AdminContext, audited } from './context.js';

/** A policy as `workloads list --json` prints it and the admin API answers it. */
export function workloadJson(w: Workload) {
  return {
    id: w.id,
    issuer: w.issuer,
    audience: w.audience,
    subject: w.subject,
    claims: w.claims,
    app: w.clientId,
    scope: w.scopes.join(' '),
    token_lifetime: w.tokenLifetimeSeconds,
    created_at: new Date(w.createdAt).toISOString(),
  };
}

export interface NewWorkload {
  id: string;
  issuer: string;
  audience: string;
  subject: string;
  /** Other claims the CI token must match, as `name=pattern`. */
  claims: readonly string[];
  app: string;
  scopes: readonly string[];
  tokenLifetimeSeconds?: number | undefined;
}

/**
 * Adds a trust policy (RFC 8693): the CI tokens of `issuer` for `audience` whose claims match become
 * tokens of `app` with `scopes` (API scopes it is allowed, the application allowed token exchange).
 */
export async function createWorkload(ctx: AdminContext, input: NewWorkload): Promise<Workload> {
  const fields = validateWorkload({
    id: input.id,
    issuer: input.issuer,
    audience: input.audience,
    subject: input.subject,
    claims: [...input.claims],
  });
  const scopes = [...input.scopes];
  return ctx.store.changes(async () => {
    const app = await ctx.store.applications.get(input.app);
    if (!app) throw new StoreError('not_found', `no application ${input.app} (see apps list)`);
    if (!app.grantTypes.includes(TOKEN_EXCHANGE_GRANT_TYPE)) {
      throw new InputError(
        `the application ${input.app} is not allowed token exchange: apps update ${input.app} --grant ${TOKEN_EXCHANGE_GRANT_TYPE} ...`,
      );
    }
    const { byScope } = await ctx.store.resources.catalog();
    if (scopes.length === 0) throw new InputError('--scope names at least one API scope');
    for (const s of scopes) {
      if (!byScope.has(s)) throw new InputError(`${s} is no API's scope (see resources list): a CI job's token is for an API`);
      if (!app.scopes.includes(s)) throw new InputError(`the application ${input.app} is not allowed the scope ${s} (apps update --scope)`);
    }
    const created = await ctx.store.workloads.create(
      { ...fields, clientId: app.clientId, scopes, tokenLifetimeSeconds: input.tokenLifetimeSeconds ?? WORKLOAD_TOKEN_LIFETIME_S },
      ctx.now,
    );
    const { id: _id, created_at: _at, ...detail } = workloadJson(created);
    await audited(ctx, { action: 'workload.created', target: { type: 'workload', id: created.id }, detail });
    return created;
  });
}

/** Removes a trust policy: its CI jobs can no longer exchange their tokens (tokens issued live until they expire). */
export async function removeWorkload(ctx: AdminContext, id: string): Promise<void> {
  await ctx.store.changes(async () => {
    const current = (await ctx.store.workloads.list()).find((w) => w.id === id);
    await ctx.store.workloads.remove(id);
    const { id: _id, created_at: _at, ...detail } = current ? workloadJson(current) : { id, created_at: '' };
    await audited(ctx, { action: 'workload.removed', target: { type: 'workload', id }, detail });
  });
}

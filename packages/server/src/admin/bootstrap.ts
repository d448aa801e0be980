import type { FastifyBaseLogger } from 'fastify';
import { BUILTIN_CLIENT_ID } from '../oauth/registration.js';
import { SYSTEM, type Store } from '../store/store.js';
import { recordAppUpdate } from './apps.js';
import { audited } from './context.js';
import { ADMIN_READ, ADMIN_WRITE, adminResourceId } from './auth.js';

/** The setting that records for which issuer the admin API's resource was made (so a removal is respected). */
const MARKER = 'admin_api_resource';

/**
 * The admin API as a resource (RFC 8707) of this issuer, `{issuer}/admin/v1`
 * with the scopes `admin:read` and `admin:write`, made on the first start
 * with this issuer, and those scopes allowed to the built-in `authcli`
 * application, so an administrator's `authcli login --scope admin:write`
 * gets a token for it. Made once per issuer: an operator who removes it or
 * takes the scopes from `authcli` is not overruled at the next start.
 */
export async function ensureAdminResource(store: Store, issuer: string, now: number, log?: FastifyBaseLogger): Promise<void> {
  const id = adminResourceId(issuer);
  if ((await store.settings.getOrCreate(MARKER, () => '')) === id) return;
  const recorder = { store, actor: SYSTEM, address: null, now };
  // Everything is read inside the transaction, so nothing is cached at start: an API an operator adds from
  // another process right after is seen at once.
  const made = await store.changes(async () => {
    const owner = (await store.resources.catalog()).byScope.get(ADMIN_WRITE);
    if (owner && owner.id !== id) {
      // Another issuer's: its scopes cannot be had twice (scope names are unique across resources).
      log?.warn(`the admin API's scopes belong to ${owner.id}, not ${id}: remove it (resources remove) and restart to move them`);
      return false;
    }
    if (!(await store.resources.catalog()).byId.has(id)) {
      const resource = await store.resources.create(
        {
          id,
          name: 'authcli-server administration API',
          scopes: [
            { name: ADMIN_READ, description: 'See the users, applications and audit trail of this server' },
            { name: ADMIN_WRITE, description: 'Add, change and delete users and applications of this server' },
          ],
        },
        now,
      );
      await audited(recorder, {
        action: 'resource.created',
        target: { type: 'resource', id, name: resource.name },
        detail: { name: resource.name, scopes: resource.scopes.map((s) => `${s.name}=${s.description}`) },
      });
    }
    const cli = await store.applications.get(BUILTIN_CLIENT_ID);
    if (cli && !cli.scopes.includes(ADMIN_WRITE)) {
      const updated = await store.applications.update(BUILTIN_CLIENT_ID, { scopes: [...cli.scopes, ADMIN_READ, ADMIN_WRITE] }, now);
      await recordAppUpdate(recorder, cli, updated);
    }
    return true;
  });
  if (!made) return;
  await store.settings.set(MARKER, id);
}

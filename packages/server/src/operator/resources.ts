import type { Command } from 'commander';
import { parseScopeArgument, validateResource } from '../oauth/resources.js';
import { type Resource, StoreError } from '../store/store.js';
import { printJson, printTable, say, sayError } from './output.js';
import { collect, withStore } from './shared.js';

const SCOPE_HELP =
  'a scope of the API as NAME=DESCRIPTION (the description is shown on consent pages), e.g. "deploy:write=Deploy to production" (repeatable)';

/** A resource as `resources list --json` prints it. */
function resourceJson(r: Resource) {
  return {
    id: r.id,
    name: r.name,
    scopes: r.scopes.map((s) => ({ name: s.name, description: s.description })),
    created_at: new Date(r.createdAt).toISOString(),
    updated_at: new Date(r.updatedAt).toISOString(),
  };
}

/** `authcli-server resources ...`: the team's APIs (RFC 8707 resources), whose identifiers are their tokens' `aud`. */
export function resourcesCommand(cli: Command): void {
  const resources = cli
    .command('resources')
    .description("the team's APIs: their identifiers (the tokens' aud) and scopes, which applications may then be allowed");
  resources
    .command('add')
    .description('define an API')
    .requiredOption('--id <url>', "the API's identifier, an absolute URL (RFC 8707), e.g. https://api.example.com: the aud of its tokens")
    .requiredOption('--name <name>', 'its name, shown on consent pages above its scopes')
    .option('--scope <name=description>', SCOPE_HELP, collect, [])
    .option('--json', 'print the resource as JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (opts: { id: string; name: string; scope: string[]; json?: boolean; database?: string }) => {
      const input = validateResource({ id: opts.id, name: opts.name, scopes: opts.scope.map(parseScopeArgument) });
      await withStore(opts.database, async (store) => {
        const created = await store.resources.create(input, Date.now());
        if (opts.json) printJson(resourceJson(created), 2);
        else {
          say(
            `Added ${created.name} (${created.id}) with ${created.scopes.length === 1 ? 'scope' : 'scopes'} ${created.scopes.map((s) => s.name).join(' ')}`,
          );
          sayError(
            `Allow an application its scopes with: authcli-server apps update CLIENT_ID --scope "openid ${created.scopes[0]!.name}"`,
          );
        }
      });
    });
  resources
    .command('update')
    .description("change an API's name or scopes (what is not given stays; scopes given replace them all)")
    .argument('<id>', "the API's identifier")
    .option('--name <name>', 'its name, shown on consent pages')
    .option('--scope <name=description>', `${SCOPE_HELP}; scopes left out are taken from every application allowed them`, collect)
    .option('--json', 'print the resource as JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (id: string, opts: { name?: string; scope?: string[]; json?: boolean; database?: string }) => {
      await withStore(opts.database, async (store) => {
        const current = (await store.resources.catalog()).byId.get(id);
        if (!current) throw new StoreError('not_found', `no resource ${id} (see resources list)`);
        const input = validateResource({
          id,
          name: opts.name ?? current.name,
          scopes: opts.scope ? opts.scope.map(parseScopeArgument) : current.scopes,
        });
        const updated = await store.resources.update(
          id,
          { ...(opts.name !== undefined && { name: input.name }), ...(opts.scope !== undefined && { scopes: input.scopes }) },
          Date.now(),
        );
        if (opts.json) printJson(resourceJson(updated), 2);
        else sayError(`Updated ${updated.name} (${updated.id})`);
      });
    });
  resources
    .command('remove')
    .description('remove an API: its tokens can no longer be had, and its scopes are taken from every application')
    .argument('<id>', "the API's identifier")
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (id: string, opts: { database?: string }) => {
      await withStore(opts.database, async (store) => {
        await store.resources.remove(id, Date.now());
        sayError(`Removed ${id}`);
      });
    });
  resources
    .command('list')
    .description('list the APIs and their scopes')
    .option('--json', 'print JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (opts: { json?: boolean; database?: string }) => {
      await withStore(opts.database, async (store) => {
        const { list } = await store.resources.catalog();
        if (opts.json) {
          printJson(list.map(resourceJson), 2);
          return;
        }
        printTable(
          ['ID', 'NAME', 'SCOPES'],
          list.map((r) => [r.id, r.name, r.scopes.map((s) => s.name).join(' ')]),
        );
      });
    });
}

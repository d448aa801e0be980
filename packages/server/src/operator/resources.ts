import type { Command } from 'commander';
import { parseScopeArgument } from '../oauth/resources.js';
import { createResource, findResource, removeResource, resourceJson, updateResource } from '../admin/resources.js';
import { confirmRemoval } from './confirm.js';
import { printJson, printTable, say, sayError } from './output.js';
import { collect, operatorContext, readStore, withStore } from './shared.js';

const SCOPE_HELP =
  'a scope of the API as NAME=DESCRIPTION (the description is shown on consent pages), e.g. "deploy:write=Deploy to production" (repeatable)';

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
      await withStore(opts.database, async (store, config) => {
        const created = await createResource(operatorContext(store, config), {
          id: opts.id,
          name: opts.name,
          scopes: opts.scope.map(parseScopeArgument),
        });
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
      await withStore(opts.database, async (store, config) => {
        const updated = await updateResource(operatorContext(store, config), id, {
          name: opts.name,
          scopes: opts.scope?.map(parseScopeArgument),
        });
        if (opts.json) printJson(resourceJson(updated), 2);
        else sayError(`Updated ${updated.name} (${updated.id})`);
      });
    });
  resources
    .command('remove')
    .description('remove an API: its tokens can no longer be had, and its scopes are taken from every application')
    .argument('<id>', "the API's identifier")
    .option('-y, --yes', 'remove without asking (scripts: without a terminal, the command removes nothing unless given)')
    .option('--json', 'print {"id", "removed": true} as JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (id: string, opts: { yes?: boolean; json?: boolean; database?: string }) => {
      await withStore(opts.database, async (store, config) => {
        await findResource(store, id);
        await confirmRemoval({
          yes: opts.yes,
          what: `API ${id}`,
          consequences: 'its tokens can no longer be had, and its scopes are taken from every application',
        });
        await removeResource(operatorContext(store, config), id);
        if (opts.json) printJson({ id, removed: true }, 2);
        else sayError(`Removed ${id}`);
      });
    });
  resources
    .command('list')
    .description('list the APIs and their scopes')
    .option('--json', 'print JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (opts: { json?: boolean; database?: string }) => {
      await readStore(opts.database, async (store) => {
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

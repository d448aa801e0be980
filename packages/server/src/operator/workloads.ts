import type { Command } from 'commander';
import { WORKLOAD_TOKEN_LIFETIME_S } from '../config/workload-defaults.js';
import { parseLifetime } from '../oauth/workloads.js';
import { createWorkload, removeWorkload, workloadJson } from '../admin/workloads.js';
import { printJson, printTable, say, sayError } from './output.js';
import { collect, operatorContext, readStore, withStore } from './shared.js';
import { confirmRemoval } from './confirm.js';
import { InputError } from '../util/input-error.js';

/** `authcli-server workloads ...`: the trust policies under which CI jobs exchange their OIDC tokens (RFC 8693). */
export function workloadsCommand(cli: Command): void {
  const workloads = cli
    .command('workloads')
    .description("CI jobs signed in without a secret: trust policies matching a CI provider's OIDC tokens (RFC 8693)");
  workloads
    .command('add')
    .description('trust the CI jobs whose tokens match: they exchange them for the application’s tokens')
    .requiredOption('--id <id>', 'a name for the policy, e.g. deploy-main')
    .requiredOption('--issuer <url>', "the CI provider's issuer, e.g. https://token.actions.githubusercontent.com or https://gitlab.com")
    .requiredOption('--audience <aud>', "the audience its tokens must name (GitHub Actions: the job's `audience`; GitLab: id_tokens' aud)")
    .requiredOption(
      '--subject <pattern>',
      'the sub they must have; * matches any run of characters, e.g. repo:my-org/my-repo:ref:refs/heads/main',
    )
    .option('--claim <name=pattern>', 'another claim they must match, e.g. repository_owner=my-org (repeatable)', collect, [])
    .requiredOption('--app <client_id>', 'the application the tokens are for (allowed the token-exchange grant and the scopes)')
    .requiredOption('--scope <scopes>', 'the API scopes they may have, space-separated')
    .option('--token-lifetime <duration>', `how long each token lives, e.g. 10m (1 min to 1 h; default ${WORKLOAD_TOKEN_LIFETIME_S / 60}m)`)
    .option('--json', 'print the policy as JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(
      async (opts: {
        id: string;
        issuer: string;
        audience: string;
        subject: string;
        claim: string[];
        app: string;
        scope: string;
        tokenLifetime?: string;
        json?: boolean;
        database?: string;
      }) => {
        const tokenLifetimeSeconds = opts.tokenLifetime === undefined ? undefined : parseLifetime(opts.tokenLifetime);
        await withStore(opts.database, async (store, config) => {
          const created = await createWorkload(operatorContext(store, config), {
            id: opts.id,
            issuer: opts.issuer,
            audience: opts.audience,
            subject: opts.subject,
            claims: opts.claim,
            app: opts.app,
            scopes: opts.scope.split(/\s+/).filter(Boolean),
            tokenLifetimeSeconds,
          });
          if (opts.json) printJson(workloadJson(created), 2);
          else
            say(
              `Added workload ${created.id}: tokens of ${created.issuer} for ${created.audience} whose sub matches ${created.subject} become ${created.clientId}'s, with ${created.scopes.join(' ')}`,
            );
        });
      },
    );
  workloads
    .command('list')
    .description('list the trust policies')
    .option('--json', 'print JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (opts: { json?: boolean; database?: string }) => {
      await readStore(opts.database, async (store) => {
        const list = await store.workloads.list();
        if (opts.json) {
          printJson(list.map(workloadJson), 2);
          return;
        }
        printTable(
          ['ID', 'ISSUER', 'AUDIENCE', 'SUBJECT', 'APP', 'SCOPE'],
          list.map((w) => [w.id, w.issuer, w.audience, w.subject, w.clientId, w.scopes.join(' ')]),
        );
      });
    });
  workloads
    .command('remove')
    .description('remove a trust policy: its CI jobs can no longer exchange their tokens (tokens issued live until they expire)')
    .argument('<id>', 'the policy')
    .option('-y, --yes', 'remove without asking (scripts: without a terminal, the command removes nothing unless given)')
    .option('--json', 'print {"id", "removed": true} as JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (id: string, opts: { yes?: boolean; json?: boolean; database?: string }) => {
      await withStore(opts.database, async (store, config) => {
        if (!(await store.workloads.list()).some((w) => w.id === id)) throw new InputError(`no workload ${id} (see workloads list)`);
        await confirmRemoval({
          yes: opts.yes,
          what: `workload ${id}`,
          consequences: 'its CI jobs can no longer exchange their tokens (tokens issued live until they expire)',
        });
        await removeWorkload(operatorContext(store, config), id);
        if (opts.json) printJson({ id, removed: true }, 2);
        else sayError(`Removed workload ${id}`);
      });
    });
}

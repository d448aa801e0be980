import type { Command } from 'commander';
import { TOKEN_EXCHANGE_GRANT_TYPE } from '@authcli/protocol';
import { WORKLOAD_TOKEN_LIFETIME_S } from '../config/workload-defaults.js';
import { parseLifetime, validateWorkload } from '../oauth/workloads.js';
import { StoreError, type Workload } from '../store/store.js';
import { InputError } from '../util/input-error.js';
import { printJson, printTable, say, sayError } from './output.js';
import { collect, withStore } from './shared.js';

/** A policy as `workloads list --json` prints it. */
function workloadJson(w: Workload) {
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
        const fields = validateWorkload({
          id: opts.id,
          issuer: opts.issuer,
          audience: opts.audience,
          subject: opts.subject,
          claims: opts.claim,
        });
        const tokenLifetimeSeconds = opts.tokenLifetime === undefined ? WORKLOAD_TOKEN_LIFETIME_S : parseLifetime(opts.tokenLifetime);
        const scopes = opts.scope.split(/\s+/).filter(Boolean);
        await withStore(opts.database, async (store) => {
          const app = await store.applications.get(opts.app);
          if (!app) throw new StoreError('not_found', `no application ${opts.app} (see apps list)`);
          if (!app.grantTypes.includes(TOKEN_EXCHANGE_GRANT_TYPE)) {
            throw new InputError(
              `the application ${opts.app} is not allowed token exchange: apps update ${opts.app} --grant ${TOKEN_EXCHANGE_GRANT_TYPE} ...`,
            );
          }
          const { byScope } = await store.resources.catalog();
          if (scopes.length === 0) throw new InputError('--scope names at least one API scope');
          for (const s of scopes) {
            if (!byScope.has(s)) throw new InputError(`${s} is no API's scope (see resources list): a CI job's token is for an API`);
            if (!app.scopes.includes(s))
              throw new InputError(`the application ${opts.app} is not allowed the scope ${s} (apps update --scope)`);
          }
          const created = await store.workloads.create({ ...fields, clientId: app.clientId, scopes, tokenLifetimeSeconds }, Date.now());
          if (opts.json) printJson(workloadJson(created), 2);
          else
            say(
              `Added workload ${created.id}: tokens of ${created.issuer} for ${created.audience} whose sub matches ${created.subject} become ${app.clientId}'s, with ${scopes.join(' ')}`,
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
      await withStore(opts.database, async (store) => {
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
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (id: string, opts: { database?: string }) => {
      await withStore(opts.database, async (store) => {
        await store.workloads.remove(id);
        sayError(`Removed workload ${id}`);
      });
    });
}

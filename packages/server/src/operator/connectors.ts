import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { githubEndpoints, parseGithubOrgRule } from '../connectors/github.js';
import { ldapSettingsProblem } from '../connectors/ldap.js';
import { type Connector, connectorOf, emailDomain, rowOf } from '../connectors/registry.js';
import { normalizeIssuer } from '../config/config.js';
import type { ServerConfig } from '../config/config.js';
import type { Store } from '../store/store.js';
import { InputError } from '../util/input-error.js';
import { printJson, printTable, say } from './output.js';
import { collect, readAll, withStore } from './shared.js';

/** The secret a connector is given on standard input (never on the command line, where `ps` shows it). */
async function secretFromStdin(flag: boolean | undefined, name: string): Promise<string> {
  if (!flag) throw new InputError(`give the ${name} on standard input with --${name.replace(/ /g, '-')}-stdin`);
  const secret = (await readAll(process.stdin)).replace(/\r?\n$/, '');
  if (!secret) throw new InputError(`the ${name} on standard input is empty`);
  return secret;
}

/** Stores a new connector and says where the upstream must send people back to. */
async function add(store: Store, config: ServerConfig, connector: Connector): Promise<void> {
  await store.connectors.create(rowOf(connector, Date.now(), config.keyEncryptionKey));
  say(`added the connector ${connector.id} (${connector.type}): "Continue with ${connector.name}" on the sign-in page`);
  if (connector.type !== 'ldap') say(`its redirect URI, to register at the upstream: ${config.issuer}/connectors/${connector.id}/callback`);
}

const common = (c: Command) =>
  c
    .requiredOption('--id <id>', 'the connector id: lower-case letters, digits and -; part of its redirect URI')
    .requiredOption('--name <name>', 'shown on the sign-in page as "Continue with NAME"')
    .option('--database <url>', 'database (env DATABASE_URL)');

/** `authcli-server connectors ...`: upstream identity providers (add oidc|github|ldap, list, remove). */
export function connectorsCommand(cli: Command): void {
  const connectors = cli.command('connectors').description('sign-in through identity providers people already have (OIDC, GitHub, LDAP)');
  const addCommand = connectors.command('add').description('add a connector');

  common(addCommand.command('oidc').description('an OpenID Connect provider, by its issuer'))
    .requiredOption('--issuer <url>', "the provider's issuer URL (https; http only on this machine)")
    .requiredOption('--client-id <id>', 'the client id registered at the provider')
    .option('--client-secret-stdin', 'read the client secret from standard input')
    .option('--scope <scopes>', 'scopes to ask for', 'openid email profile')
    .option('--allowed-email-domain <domain>', 'let in only verified emails of this domain (repeatable)', collect, [])
    .option(
      '--trust-upstream-acr',
      "count the provider's acr phr (a phishing-resistant sign-in there) as this server's, for step-up and --require-acr phr applications (off by default)",
    )
    .action(
      async (opts: {
        id: string;
        name: string;
        issuer: string;
        clientId: string;
        clientSecretStdin?: boolean;
        scope: string;
        allowedEmailDomain: string[];
        trustUpstreamAcr?: boolean;
        database?: string;
      }) => {
        const secret = await secretFromStdin(opts.clientSecretStdin, 'client secret');
        let issuer: string;
        try {
          issuer = normalizeIssuer(opts.issuer);
        } catch (err) {
          throw new InputError(`--issuer: ${(err as Error).message}`);
        }
        const scopes = opts.scope.split(/\s+/).filter(Boolean);
        if (!scopes.includes('openid')) throw new InputError('--scope must include openid');
        await withStore(opts.database, (store, config) =>
          add(store, config, {
            id: opts.id,
            type: 'oidc',
            name: opts.name,
            secret,
            settings: {
              issuer,
              clientId: opts.clientId,
              scopes,
              allowedEmailDomains: opts.allowedEmailDomain.map(emailDomain),
              ...(opts.trustUpstreamAcr && { trustUpstreamAcr: true }),
            },
          }),
        );
      },
    );

  common(addCommand.command('github').description('GitHub or GitHub Enterprise (an OAuth app)'))
    .requiredOption('--client-id <id>', "the OAuth app's client id")
    .option('--client-secret-stdin', 'read the client secret from standard input')
    .option('--org <org[:team]>', 'let in only members of this organization (or team) (repeatable)', collect, [])
    .option('--api-base <url>', 'GitHub Enterprise: its API base, e.g. https://ghe.example.com/api/v3')
    .action(
      async (opts: {
        id: string;
        name: string;
        clientId: string;
        clientSecretStdin?: boolean;
        org: string[];
        apiBase?: string;
        database?: string;
      }) => {
        const secret = await secretFromStdin(opts.clientSecretStdin, 'client secret');
        const orgs = opts.org.map(parseGithubOrgRule);
        if (opts.apiBase !== undefined) githubEndpoints({ apiBase: opts.apiBase });
        await withStore(opts.database, (store, config) =>
          add(store, config, {
            id: opts.id,
            type: 'github',
            name: opts.name,
            secret,
            settings: { clientId: opts.clientId, orgs, ...(opts.apiBase !== undefined && { apiBase: opts.apiBase }) },
          }),
        );
      },
    );

  common(addCommand.command('ldap').description('an LDAP directory: the sign-in page takes its username and password'))
    .requiredOption('--url <url>', 'ldap://HOST[:PORT] (with --start-tls off this machine) or ldaps://HOST[:PORT]')
    .option('--start-tls', 'upgrade the connection with StartTLS before any bind')
    .requiredOption('--bind-dn <dn>', 'the service account that searches users')
    .option('--bind-password-stdin', "read the service account's password from standard input")
    .requiredOption('--user-base <dn>', 'where users are searched')
    .option('--user-filter <filter>', '{username} stands for the escaped username', '(uid={username})')
    .option('--group-base <dn>', 'where groups are searched (groupOfNames, posixGroup)')
    .option('--allowed-group <cn>', 'let in only members of this group (repeatable)', collect, [])
    .option('--ca-file <path>', "a CA certificate (PEM) to check the directory's certificate with, in place of the system's")
    .action(
      async (opts: {
        id: string;
        name: string;
        url: string;
        startTls?: boolean;
        bindDn: string;
        bindPasswordStdin?: boolean;
        userBase: string;
        userFilter: string;
        groupBase?: string;
        allowedGroup: string[];
        caFile?: string;
        database?: string;
      }) => {
        const secret = await secretFromStdin(opts.bindPasswordStdin, 'bind password');
        const caCertPem =
          opts.caFile === undefined
            ? undefined
            : await readFile(opts.caFile, 'utf8').catch(() => {
                throw new InputError(`cannot read ${opts.caFile}`);
              });
        const settings = {
          url: opts.url,
          startTls: opts.startTls === true,
          bindDn: opts.bindDn,
          userBase: opts.userBase,
          userFilter: opts.userFilter,
          ...(opts.groupBase !== undefined && { groupBase: opts.groupBase }),
          allowedGroups: opts.allowedGroup,
          ...(caCertPem !== undefined && { caCertPem }),
        };
        const problem = ldapSettingsProblem({ ...settings, bindPassword: secret });
        if (problem) throw new InputError(problem);
        await withStore(opts.database, (store, config) =>
          add(store, config, { id: opts.id, type: 'ldap', name: opts.name, secret, settings }),
        );
      },
    );

  connectors
    .command('list')
    .description('the connectors, oldest first, with how many people each has signed in')
    .option('--json', 'print JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (opts: { json?: boolean; database?: string }) => {
      await withStore(opts.database, async (store, config) => {
        const counts = await store.connectors.userCounts();
        const rows = (await store.connectors.list()).map((row) => {
          const c = connectorOf(row, config.keyEncryptionKey);
          const where = c.type === 'oidc' ? c.settings.issuer : c.type === 'ldap' ? c.settings.url : (c.settings.apiBase ?? 'github.com');
          return {
            id: c.id,
            type: c.type,
            name: c.name,
            upstream: where,
            users: counts[c.id] ?? 0,
            redirect_uri: c.type === 'ldap' ? null : `${config.issuer}/connectors/${c.id}/callback`,
            trust_upstream_acr: c.type === 'oidc' && c.settings.trustUpstreamAcr === true,
          };
        });
        if (opts.json) {
          printJson(rows, 2);
          return;
        }
        printTable(
          ['ID', 'TYPE', 'NAME', 'UPSTREAM', 'USERS'],
          rows.map((r) => [r.id, r.type, r.name, r.upstream, String(r.users)]),
        );
      });
    });

  connectors
    .command('remove <id>')
    .description('remove a connector: its button goes, its people can no longer sign in through it (their accounts stay)')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (id: string, opts: { database?: string }) => {
      await withStore(opts.database, async (store) => {
        if (!(await store.connectors.delete(id))) throw new InputError(`no connector ${id} (see connectors list)`);
        say(`removed the connector ${id}`);
      });
    });
}

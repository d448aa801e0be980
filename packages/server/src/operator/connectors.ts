import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { type ConnectorInput, connectorJson, createConnector, listConnectors, removeConnector } from '../admin/connectors.js';
import { InputError } from '../util/input-error.js';
import { printJson, printTable, reportDone, say } from './output.js';
import { collect, operatorContext, readAll, readStore, withStore } from './shared.js';
import { confirmRemoval } from './confirm.js';

/** The secret a connector is given on standard input (never on the command line, where `ps` shows it). */
async function secretFromStdin(flag: boolean | undefined, name: string): Promise<string> {
  if (!flag) throw new InputError(`give the ${name} on standard input with --${name.replace(/ /g, '-')}-stdin`);
  const secret = (await readAll(process.stdin)).replace(/\r?\n$/, '');
  if (!secret) throw new InputError(`the ${name} on standard input is empty`);
  return secret;
}

/** Adds a connector (connectorFromInput checks it) and says where the upstream must send people back to. */
async function add(database: string | undefined, json: boolean | undefined, input: ConnectorInput): Promise<void> {
  await withStore(database, async (store, config) => {
    const connector = await createConnector(operatorContext(store, config), input);
    if (json) {
      printJson(connectorJson(connector, 0, config.issuer), 2);
      return;
    }
    say(`added the connector ${connector.id} (${connector.type}): "Continue with ${connector.name}" on the sign-in page`);
    if (connector.type !== 'ldap') {
      say(`its redirect URI, to register at the upstream: ${config.issuer}/connectors/${connector.id}/callback`);
      // No server has started on this store yet: the address is what `start` would choose in this shell.
      if (config.issuerGuessed) {
        say(
          `  (a guess: no server has started on this store yet; it is right if the server will serve at ${config.issuer}, else set AUTHCLI_ISSUER)`,
        );
      }
    }
  });
}

const common = (c: Command) =>
  c
    .requiredOption('--id <id>', 'the connector id: lower-case letters, digits and -; part of its redirect URI')
    .requiredOption('--name <name>', 'shown on the sign-in page as "Continue with NAME"')
    .option('--json', 'print the connector as JSON (as connectors list --json gives it)')
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
        json?: boolean;
        database?: string;
      }) => {
        const secret = await secretFromStdin(opts.clientSecretStdin, 'client secret');
        await add(opts.database, opts.json, {
          type: 'oidc',
          id: opts.id,
          name: opts.name,
          secret,
          issuer: opts.issuer,
          clientId: opts.clientId,
          scopes: opts.scope.split(/\s+/).filter(Boolean),
          allowedEmailDomains: opts.allowedEmailDomain,
          trustUpstreamAcr: opts.trustUpstreamAcr,
        });
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
        json?: boolean;
        database?: string;
      }) => {
        const secret = await secretFromStdin(opts.clientSecretStdin, 'client secret');
        await add(opts.database, opts.json, {
          type: 'github',
          id: opts.id,
          name: opts.name,
          secret,
          clientId: opts.clientId,
          orgs: opts.org,
          apiBase: opts.apiBase,
        });
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
        json?: boolean;
        database?: string;
      }) => {
        const secret = await secretFromStdin(opts.bindPasswordStdin, 'bind password');
        const caCertPem =
          opts.caFile === undefined
            ? undefined
            : await readFile(opts.caFile, 'utf8').catch(() => {
                throw new InputError(`cannot read ${opts.caFile}`);
              });
        await add(opts.database, opts.json, {
          type: 'ldap',
          id: opts.id,
          name: opts.name,
          secret,
          url: opts.url,
          startTls: opts.startTls === true,
          bindDn: opts.bindDn,
          userBase: opts.userBase,
          userFilter: opts.userFilter,
          groupBase: opts.groupBase,
          allowedGroups: opts.allowedGroup,
          caCertPem,
        });
      },
    );

  connectors
    .command('list')
    .description('the connectors, oldest first, with how many people each has signed in')
    .option('--json', 'print JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (opts: { json?: boolean; database?: string }) => {
      await readStore(opts.database, async (store, config) => {
        const rows = await listConnectors(store, config.keyEncryptionKey, config.issuer);
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
    .option('-y, --yes', 'remove without asking (scripts: without a terminal, the command removes nothing unless given)')
    .option('--json', 'print {"id", "removed": true} as JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (id: string, opts: { yes?: boolean; json?: boolean; database?: string }) => {
      await withStore(opts.database, async (store, config) => {
        const row = (await store.connectors.list()).find((r) => r.id === id);
        if (!row) throw new InputError(`no connector ${id} (see connectors list)`);
        await confirmRemoval({
          yes: opts.yes,
          what: `connector ${id}`,
          consequences: 'its button goes from the sign-in page and its people can no longer sign in through it (their accounts stay)',
        });
        await removeConnector(operatorContext(store, config), id);
        reportDone(opts.json, { id, removed: true }, `removed the connector ${id}`);
      });
    });
}

import { collect, printTable, withStore } from './shared.js';
import { DEVICE_CODE_GRANT_TYPE } from '@authcli/protocol';
import { type Command, Option } from 'commander';
import { DEFAULT_GRANT_TYPES, registerApplication } from '../oauth/registration.js';
import type { Application } from '../store/store.js';

/** Who registered an application: a dashboard user, an operator (`apps add`, the built-in one), or the client itself (RFC 7591). */
function registeredBy(a: Application): 'dashboard' | 'operator' | 'client' {
  if (a.registrationTokenHash !== null) return 'client';
  return a.ownerId === null ? 'operator' : 'dashboard';
}

/** `authcli-server apps ...`: client applications (add, list). */
export function appsCommand(cli: Command): void {
  const apps = cli.command('apps').description('manage client applications');
  apps
    .command('add')
    .description('register an application')
    .requiredOption('--name <name>', 'application name shown on consent pages')
    .addOption(new Option('--kind <kind>', 'client type').choices(['public', 'confidential']).makeOptionMandatory())
    .option('--callback <url>', 'redirect URI (repeatable)', collect, [])
    .option('--post-logout-redirect-uri <url>', 'where RP-initiated logout may return to, exact match (repeatable)', collect, [])
    .requiredOption('--scope <scopes>', 'allowed scopes, space-separated, e.g. "openid profile"')
    .option(
      '--grant <type>',
      `allowed grant type (repeatable; replaces the default ${DEFAULT_GRANT_TYPES.join(' and ')}; with the offline_access scope, refresh_token must be among them)`,
      collect,
    )
    .addOption(new Option('--id-token-alg <alg>', 'ID token signature algorithm').choices(['RS256', 'ES256']).default('RS256'))
    .option('--json', 'print {"client_id", "client_secret"} as JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(
      async (opts: {
        name: string;
        kind: string;
        callback: string[];
        postLogoutRedirectUri: string[];
        scope: string;
        grant?: string[];
        idTokenAlg: string;
        json?: boolean;
        database?: string;
      }) => {
        await withStore(opts.database, async (store) => {
          const { app, clientSecret } = await registerApplication(
            store,
            {
              name: opts.name,
              kind: opts.kind,
              callbackUrls: opts.callback,
              postLogoutRedirectUris: opts.postLogoutRedirectUri,
              scopes: opts.scope.split(/\s+/).filter(Boolean),
              // `device_code` is accepted for the device grant's URN (RFC 8628 §3.4), as the dashboard and `apps list` show it.
              ...(opts.grant && {
                grantTypes: opts.grant.map((g) => (g === 'device_code' ? DEVICE_CODE_GRANT_TYPE : g)),
              }),
              idTokenAlg: opts.idTokenAlg,
            },
            Date.now(),
          );
          if (opts.json) {
            process.stdout.write(
              `${JSON.stringify(clientSecret ? { client_id: app.clientId, client_secret: clientSecret } : { client_id: app.clientId })}\n`,
            );
          } else {
            process.stdout.write(`client_id:     ${app.clientId}\n`);
            if (clientSecret) process.stdout.write(`client_secret: ${clientSecret}\n(shown once: store it now)\n`);
          }
        });
      },
    );
  apps
    .command('list')
    .description('list applications')
    .option('--json', 'print JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (opts: { json?: boolean; database?: string }) => {
      await withStore(opts.database, async (store) => {
        const list = await store.applications.list();
        if (opts.json) {
          const out = list.map((a) => ({
            client_id: a.clientId,
            name: a.name,
            kind: a.kind,
            callback_urls: a.callbackUrls,
            post_logout_redirect_uris: a.postLogoutRedirectUris,
            scopes: a.scopes,
            grant_types: a.grantTypes,
            id_token_signed_response_alg: a.idTokenAlg,
            registered_by: registeredBy(a),
          }));
          process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
          return;
        }
        printTable(
          ['CLIENT ID', 'KIND', 'REGISTERED BY', 'NAME', 'GRANTS', 'SCOPES', 'CALLBACKS'],
          list.map((a) => [
            a.clientId,
            a.kind,
            registeredBy(a),
            a.name,
            a.grantTypes.map((g) => (g.startsWith('urn:') ? 'device_code' : g)).join(','),
            a.scopes.join(' '),
            a.callbackUrls.join(' '),
          ]),
        );
      });
    });
}

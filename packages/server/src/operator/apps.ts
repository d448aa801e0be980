import { printJson, printTable, reportDone, say, sayError } from './output.js';
import { collect, operatorContext, readStore, withStore } from './shared.js';
import { createApp, deleteApp, findApp, registeredBy, updateApp } from '../admin/apps.js';
import { confirmRemoval } from './confirm.js';
import { DEVICE_CODE_GRANT_TYPE } from '@authcli/protocol';
import { type Command, Option } from 'commander';
import { DEFAULT_GRANT_TYPES } from '../oauth/registration.js';
import { INTROSPECTION_SCOPES, type Application } from '../store/store.js';
import { authMethodOf, keysMetadata } from '../oauth/client-keys.js';
import { parseDuration } from '../oauth/lifetimes.js';
import { InputError } from '../util/input-error.js';
import { ASSERTION_ALG_HELP, JWKS_HELP, JWKS_URI_HELP, type KeyOptions, keysOfOptions } from './app-keys.js';

const INTROSPECTION_HELP = 'whose tokens it may introspect (RFC 7662): own, owner (every application of the same dashboard user) or all';

/** The grant types as typed: `device_code` is accepted for the device grant's URN (RFC 8628 §3.4), as the dashboard and `apps list` show it. */
const grantTypesOf = (grants: string[]) => grants.map((g) => (g === 'device_code' ? DEVICE_CODE_GRANT_TYPE : g));

/** An application as `apps list --json` prints it (client metadata names where RFC 7591, 9449 and 9126 have them). */
function appJson(a: Application) {
  return {
    client_id: a.clientId,
    name: a.name,
    kind: a.kind,
    token_endpoint_auth_method: authMethodOf(a),
    ...keysMetadata(a.clientKeys),
    callback_urls: a.callbackUrls,
    post_logout_redirect_uris: a.postLogoutRedirectUris,
    scopes: a.scopes,
    grant_types: a.grantTypes,
    id_token_signed_response_alg: a.idTokenAlg,
    registered_by: registeredBy(a),
    introspection: a.introspection,
    dpop_bound_access_tokens: a.requireDpop,
    require_pushed_authorization_requests: a.requirePushedAuthorizationRequests,
    require_acr: a.requireAcr,
    backchannel_logout_uri: a.backchannelLogoutUri,
    backchannel_logout_session_required: a.backchannelLogoutSessionRequired,
    access_token_ttl: a.accessTokenTtl,
    refresh_token_ttl: a.refreshTokenTtl,
  };
}

const ACCESS_TTL_HELP = "its access tokens' lifetime: seconds, or 15m, 2h (default: the server's, AUTHCLI_ACCESS_TOKEN_TTL)";
const REFRESH_TTL_HELP =
  "how long its sign-ins (refresh tokens) last from when they began: seconds, or 12h, 7d (default: the server's, AUTHCLI_REFRESH_TOKEN_TTL)";
/** The lifetime flags' names, for messages. */
const LIFETIME_FLAGS = { access: '--access-token-ttl', refresh: '--refresh-token-ttl' };

/** A lifetime flag: undefined when not given, null for `default` (the server's), else its seconds. */
function lifetimeOf(text: string | undefined, flag: string): number | null | undefined {
  if (text === undefined) return undefined;
  if (text.trim() === 'default') return null;
  const seconds = parseDuration(text);
  if (seconds === undefined)
    throw new InputError(`${flag} takes seconds, or a number with s, m, h or d (15m, 30d), or default; got ${JSON.stringify(text)}`);
  return seconds;
}

const BACKCHANNEL_HELP = 'where logouts are posted (OpenID Connect Back-Channel Logout): https, or http on loopback';
const SESSION_REQUIRED_HELP = 'every logout token it gets names the session (sid)';

const REQUIRE_ACR_HELP =
  'the class every sign-in for it must meet: phr (a passkey); the code flow, PAR and device approvals step a password sign-in up';

/** `authcli-server apps ...`: client applications (add, update, list). */
export function appsCommand(cli: Command): void {
  const apps = cli.command('apps').description('manage client applications');
  apps
    .command('add')
    .description('register an application')
    .requiredOption('--name <name>', 'application name shown on consent pages')
    .addOption(new Option('--kind <kind>', 'client type').choices(['public', 'confidential']).makeOptionMandatory())
    .option('--callback <url>', 'redirect URI: https, loopback http, or a native app scheme com.example.app:/cb (repeatable)', collect, [])
    .option('--post-logout-redirect-uri <url>', 'where RP-initiated logout may return to, exact match (repeatable)', collect, [])
    .requiredOption('--scope <scopes>', 'allowed scopes, space-separated, e.g. "openid profile"')
    .option(
      '--grant <type>',
      `allowed grant type (repeatable; replaces the default ${DEFAULT_GRANT_TYPES.join(' and ')}; with the offline_access scope, refresh_token must be among them)`,
      collect,
    )
    .addOption(new Option('--id-token-alg <alg>', 'ID token signature algorithm').choices(['RS256', 'ES256']).default('RS256'))
    .addOption(new Option('--introspection <who>', INTROSPECTION_HELP).choices(INTROSPECTION_SCOPES).default('own'))
    .option('--require-dpop', 'every token request must carry a DPoP proof (RFC 9449)')
    .option('--require-par', 'authorization requests must be pushed first (RFC 9126)')
    .option('--require-acr <class>', REQUIRE_ACR_HELP)
    .option('--backchannel-logout-uri <url>', BACKCHANNEL_HELP)
    .option('--backchannel-logout-session-required', SESSION_REQUIRED_HELP)
    .option('--jwks-uri <url>', JWKS_URI_HELP)
    .option('--jwks <file>', JWKS_HELP)
    .option('--assertion-alg <alg>', ASSERTION_ALG_HELP)
    .option('--access-token-ttl <duration>', ACCESS_TTL_HELP)
    .option('--refresh-token-ttl <duration>', REFRESH_TTL_HELP)
    .option('--json', 'print {"client_id", "client_secret"} as JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(
      async (
        opts: {
          name: string;
          kind: string;
          callback: string[];
          postLogoutRedirectUri: string[];
          scope: string;
          grant?: string[];
          idTokenAlg: string;
          introspection: string;
          requireDpop?: boolean;
          requirePar?: boolean;
          requireAcr?: string;
          backchannelLogoutUri?: string;
          backchannelLogoutSessionRequired?: boolean;
          accessTokenTtl?: string;
          refreshTokenTtl?: string;
          json?: boolean;
          database?: string;
        } & KeyOptions,
      ) => {
        await withStore(opts.database, async (store, config) => {
          const clientKeys = await keysOfOptions(opts, config);
          const accessTokenTtl = lifetimeOf(opts.accessTokenTtl, LIFETIME_FLAGS.access);
          const refreshTokenTtl = lifetimeOf(opts.refreshTokenTtl, LIFETIME_FLAGS.refresh);
          const { app, clientSecret } = await createApp(
            operatorContext(store, config),
            {
              name: opts.name,
              kind: opts.kind,
              callbackUrls: opts.callback,
              postLogoutRedirectUris: opts.postLogoutRedirectUri,
              scopes: opts.scope.split(/\s+/).filter(Boolean),
              ...(opts.grant && { grantTypes: grantTypesOf(opts.grant) }),
              idTokenAlg: opts.idTokenAlg,
              introspection: opts.introspection,
              requireDpop: opts.requireDpop === true,
              requirePushedAuthorizationRequests: opts.requirePar === true,
              requireAcr: opts.requireAcr ?? null,
              backchannelLogoutUri: opts.backchannelLogoutUri ?? null,
              backchannelLogoutSessionRequired: opts.backchannelLogoutSessionRequired === true,
              ...(clientKeys && { clientKeys }),
              ...(accessTokenTtl !== undefined && { accessTokenTtl }),
              ...(refreshTokenTtl !== undefined && { refreshTokenTtl }),
            },
            LIFETIME_FLAGS,
          );
          if (opts.json) {
            printJson(clientSecret ? { client_id: app.clientId, client_secret: clientSecret } : { client_id: app.clientId });
          } else {
            say(`client_id:     ${app.clientId}`);
            if (clientSecret) {
              say(`client_secret: ${clientSecret}`);
              say('(shown once: store it now)');
            }
            if (clientKeys) say('token_endpoint_auth_method: private_key_jwt');
          }
        });
      },
    );
  apps
    .command('update')
    .description("change an application's settings (what is not given stays)")
    .argument('<client_id>', 'the application')
    .option('--name <name>', 'application name shown on consent pages')
    .option('--callback <url>', 'redirect URI (repeatable; replaces the registered ones)', collect)
    .option('--post-logout-redirect-uri <url>', 'post-logout redirect URI (repeatable; replaces the registered ones)', collect)
    .option('--scope <scopes>', 'allowed scopes, space-separated (replaces them)')
    .option('--grant <type>', 'allowed grant type (repeatable; replaces them)', collect)
    .addOption(new Option('--id-token-alg <alg>', 'ID token signature algorithm').choices(['RS256', 'ES256']))
    .addOption(new Option('--introspection <who>', INTROSPECTION_HELP).choices(INTROSPECTION_SCOPES))
    .option('--require-dpop', 'every token request must carry a DPoP proof (RFC 9449)')
    .option('--no-require-dpop', 'DPoP proofs are optional')
    .option('--require-par', 'authorization requests must be pushed first (RFC 9126)')
    .option('--no-require-par', 'authorization requests may be sent directly')
    .option('--require-acr <class>', `${REQUIRE_ACR_HELP}; none for any sign-in`)
    .option('--backchannel-logout-uri <url>', `${BACKCHANNEL_HELP}; none to stop telling it`)
    .option('--backchannel-logout-session-required', SESSION_REQUIRED_HELP)
    .option('--no-backchannel-logout-session-required', 'logout tokens may leave the session out')
    .option('--jwks-uri <url>', `${JWKS_URI_HELP}; its secret stops working`)
    .option('--jwks <file>', `${JWKS_HELP}; its secret stops working`)
    .option('--assertion-alg <alg>', ASSERTION_ALG_HELP)
    .option('--client-secret', 'authenticate with a new client secret, printed once, instead of keys (or rotate the secret)')
    .option('--access-token-ttl <duration>', `${ACCESS_TTL_HELP}; default for the server's again`)
    .option('--refresh-token-ttl <duration>', `${REFRESH_TTL_HELP}; default for the server's again`)
    .option('--json', 'print the application as `apps list --json` does')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(
      async (
        clientId: string,
        opts: {
          name?: string;
          callback?: string[];
          postLogoutRedirectUri?: string[];
          scope?: string;
          grant?: string[];
          idTokenAlg?: string;
          introspection?: string;
          requireDpop?: boolean;
          requirePar?: boolean;
          requireAcr?: string;
          backchannelLogoutUri?: string;
          backchannelLogoutSessionRequired?: boolean;
          clientSecret?: boolean;
          accessTokenTtl?: string;
          refreshTokenTtl?: string;
          json?: boolean;
          database?: string;
        } & KeyOptions,
      ) => {
        await withStore(opts.database, async (store, config) => {
          const lifetimes = {
            accessTokenTtl: lifetimeOf(opts.accessTokenTtl, LIFETIME_FLAGS.access),
            refreshTokenTtl: lifetimeOf(opts.refreshTokenTtl, LIFETIME_FLAGS.refresh),
          };
          const { app: updated, clientSecret } = await updateApp(
            operatorContext(store, config),
            clientId,
            {
              name: opts.name,
              callbackUrls: opts.callback,
              postLogoutRedirectUris: opts.postLogoutRedirectUri,
              scopes: opts.scope?.split(/\s+/).filter(Boolean),
              grantTypes: opts.grant && grantTypesOf(opts.grant),
              idTokenAlg: opts.idTokenAlg,
              introspection: opts.introspection,
              requireDpop: opts.requireDpop,
              requirePushedAuthorizationRequests: opts.requirePar,
              requireAcr: opts.requireAcr,
              backchannelLogoutUri: opts.backchannelLogoutUri === 'none' ? null : opts.backchannelLogoutUri,
              backchannelLogoutSessionRequired: opts.backchannelLogoutSessionRequired,
              clientKeys: await keysOfOptions(opts, config),
              newSecret: opts.clientSecret,
              ...lifetimes,
            },
            LIFETIME_FLAGS,
          );
          const secret = clientSecret === undefined ? undefined : { secret: clientSecret };
          if (opts.json) printJson({ ...appJson(updated), ...(secret && { client_secret: secret.secret }) }, 2);
          else sayError(`Updated ${updated.name} (${updated.clientId})`);
          if (secret && !opts.json) say(`client_secret: ${secret.secret}\n(shown once: store it now)`);
        });
      },
    );
  apps
    .command('list')
    .description('list applications')
    .option('--json', 'print JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (opts: { json?: boolean; database?: string }) => {
      await readStore(opts.database, async (store) => {
        const list = await store.applications.list();
        if (opts.json) {
          printJson(list.map(appJson), 2);
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
  apps
    .command('remove')
    .description('delete an application with its grants and tokens (its sign-ins end)')
    .argument('<client_id>', 'the application')
    .option('-y, --yes', 'remove without asking (scripts: without a terminal, the command removes nothing unless given)')
    .option('--json', 'print {"client_id", "removed": true} as JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (clientId: string, opts: { yes?: boolean; json?: boolean; database?: string }) => {
      await withStore(opts.database, async (store, config) => {
        const app = await findApp(store, clientId);
        await confirmRemoval({
          yes: opts.yes,
          what: `application ${app.name} (${clientId})`,
          consequences: 'its grants and tokens are deleted, so every sign-in to it ends, and its client id and credentials stop working',
        });
        await deleteApp(operatorContext(store, config), clientId);
        reportDone(opts.json, { client_id: clientId, removed: true }, `removed application ${clientId}`);
      });
    });
}

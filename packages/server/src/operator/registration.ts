import { printJson, printTable, reportDone, say } from './output.js';
import { operatorContext, readStore, warn, withStore } from './shared.js';
import { audited } from '../admin/context.js';
import type { Command } from 'commander';
import { INITIAL_ACCESS_TOKEN_TTL_SECONDS } from '../config/defaults.js';
import { createInitialAccessToken, initialAccessTokenState } from '../oauth/initial-access-tokens.js';
import { InputError } from '../util/input-error.js';

const iso = (ms: number | null) => (ms === null ? '' : new Date(ms).toISOString());

/**
 * `authcli-server registration token ...`: the initial access tokens (RFC 7591
 * §3) that AUTHCLI_REGISTRATION=token asks of a client that registers itself
 * (create, list, revoke). Each token registers one client.
 */
export function registrationCommand(cli: Command): void {
  const tokens = cli
    .command('registration')
    .description('dynamic client registration (RFC 7591): initial access tokens for AUTHCLI_REGISTRATION=token')
    .command('token')
    .description('initial access tokens: each registers one client at POST /oauth/register before it expires');
  tokens
    .command('create')
    .description('create an initial access token (shown once; only its SHA-256 is stored)')
    .option('--expires-in <seconds>', `lifetime in seconds (default ${INITIAL_ACCESS_TOKEN_TTL_SECONDS}, one day)`)
    .option('--json', 'print {"id", "token", "expires_at"} as JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (opts: { expiresIn?: string; json?: boolean; database?: string }) => {
      const raw = opts.expiresIn ?? String(INITIAL_ACCESS_TOKEN_TTL_SECONDS);
      if (!/^\d{1,10}$/.test(raw.trim()))
        throw new InputError(`--expires-in must be a whole number of seconds, got ${JSON.stringify(raw)}`);
      await withStore(opts.database, async (store, config) => {
        const created = await store.changes(async () => {
          const made = await createInitialAccessToken(store, Number(raw), Date.now());
          await audited(operatorContext(store, config), {
            action: 'registration_token.created',
            target: { type: 'registration_token', id: made.id },
            detail: { expires_at: iso(made.expiresAt) },
          });
          return made;
        });
        if (opts.json) {
          printJson({ id: created.id, token: created.token, expires_at: iso(created.expiresAt) });
        } else {
          say(`id:      ${created.id}`);
          say(`token:   ${created.token}`);
          say(`expires: ${iso(created.expiresAt)}`);
          say('(shown once: hand it to whoever registers the client; it registers one client)');
        }
        if (config.registration !== 'token') {
          warn(`AUTHCLI_REGISTRATION is ${config.registration} here: the server asks for initial access tokens only when it is token`);
        }
      });
    });
  tokens
    .command('list')
    .description('initial access tokens and what became of them (active, used, revoked, expired)')
    .option('--json', 'print JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (opts: { json?: boolean; database?: string }) => {
      await readStore(opts.database, async (store) => {
        const now = Date.now();
        const rows = (await store.initialAccessTokens.list()).map((t) => ({
          id: t.id,
          state: initialAccessTokenState(t, now),
          created_at: iso(t.createdAt),
          expires_at: iso(t.expiresAt),
          used_at: iso(t.usedAt),
          revoked_at: iso(t.revokedAt),
          client_id: t.clientId ?? '',
        }));
        if (opts.json) {
          printJson(rows, 2);
          return;
        }
        printTable(
          ['ID', 'STATE', 'CREATED', 'EXPIRES', 'CLIENT ID'],
          rows.map((r) => [r.id, r.state, r.created_at, r.expires_at, r.client_id]),
        );
      });
    });
  tokens
    .command('revoke <id>')
    .description('revoke an initial access token: it registers nothing from now on (a client it registered stays)')
    .option('--json', 'print {"id", "state", "client_id"} as JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (id: string, opts: { json?: boolean; database?: string }) => {
      await withStore(opts.database, async (store, config) => {
        const t = await store.changes(async () => {
          const revoked = await store.initialAccessTokens.revoke(id, Date.now());
          await audited(operatorContext(store, config), {
            action: 'registration_token.revoked',
            target: { type: 'registration_token', id },
            detail: {},
          });
          return revoked;
        });
        const state = initialAccessTokenState(t, Date.now());
        reportDone(
          opts.json,
          { id, state: 'revoked', client_id: t.clientId ?? null },
          state === 'used' ? `${id} was already used (client ${t.clientId}); revoked` : `revoked ${id}`,
        );
      });
    });
}

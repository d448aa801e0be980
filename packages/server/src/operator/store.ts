import { printJson, say } from './output.js';
import { operatorContext, warn, withStore } from './shared.js';
import { audited } from '../admin/context.js';
import type { Command } from 'commander';
import { loadConfig } from '../config/config.js';
import { isEncryptedPrivateJwk, UNENCRYPTED_KEYS_WARNING } from '../oauth/key-encryption.js';
import { rotateKeys } from '../oauth/keys.js';
import { backupStore } from '../store/backup.js';

/** `authcli-server backup <file>` and `keys rotate`: the store and its signing keys. */
export function storeCommands(cli: Command): void {
  cli
    .command('backup <file>')
    .description('copy the embedded SQLite store to a new file (0600) while the server runs; for PostgreSQL, use pg_dump')
    .option('--json', 'print {"path", "pages"} as JSON')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (file: string, opts: { json?: boolean; database?: string }) => {
      const config = loadConfig({ database: opts.database });
      const { path, pages, privateKeys } = await backupStore(config.databaseUrl, file);
      if (opts.json) printJson({ path, pages }, 2);
      else say(`backed up ${config.databaseUrl} to ${path} (${pages} pages)`);
      // What the copy holds decides, not this shell's environment: the server that wrote the keys may have a KEK.
      const plain = privateKeys.filter((k) => !isEncryptedPrivateJwk(k)).length;
      if (plain > 0) {
        warn(
          `the backup holds ${plain} private signing key${plain === 1 ? '' : 's'} unencrypted: keep it as safe as the database (AUTHCLI_KEY_ENCRYPTION_KEY encrypts them)`,
        );
      } else if (privateKeys.length > 0) {
        warn('the signing keys in the backup are encrypted: a server restored from it needs the same AUTHCLI_KEY_ENCRYPTION_KEY');
      }
    });

  cli
    .command('keys')
    .description('manage signing keys')
    .command('rotate')
    .description('create new signing keys; the previous ones stay in JWKS until their tokens expire')
    .option('--json', 'print the new keys as JSON: [{"kid", "alg"}]')
    .option('--database <url>', 'database (env DATABASE_URL)')
    .action(async (opts: { json?: boolean; database?: string }) => {
      await withStore(opts.database, async (store, config) => {
        const fresh = await rotateKeys(store, Date.now(), config.keyEncryptionKey, (made) =>
          audited(operatorContext(store, config), {
            action: 'keys.rotated',
            detail: { keys: made.map((k) => ({ kid: k.kid, alg: k.alg })) },
          }),
        );
        if (opts.json)
          printJson(
            fresh.map((k) => ({ kid: k.kid, alg: k.alg })),
            2,
          );
        else for (const k of fresh) say(`new ${k.alg} key ${k.kid} (signs in about a minute, once every instance has published it)`);
        if (!config.keyEncryptionKey) warn(UNENCRYPTED_KEYS_WARNING);
      });
    });
}

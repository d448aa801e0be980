import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUsers } from '@authcli/test-support/seed';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');
const fromServer = createRequire(join(root, 'packages/server/package.json'));

describe('authcli-server backup', () => {
  let server: ServerProcess;
  let dir: string;

  beforeAll(async () => {
    server = await startServerProcess();
    dir = mkdtempSync(join(tmpdir(), 'authcli-backup-'));
    await addUsers(server.env, [{ username: 'alice', password: 'backup test password' }]);
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('copies the running store to a new 0600 file that opens and holds the data', async () => {
    const target = join(dir, 'copy.db');
    const res = await serverCommand(['backup', target], { ...server.env, AUTHCLI_KEY_ENCRYPTION_KEY: '' });
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(new RegExp(`^backed up .* to ${target} \\(\\d+ pages\\)$`, 'm'));
    // The server runs without a key-encryption key: the copy's keys are plaintext, and the warning counts them.
    expect(res.stderr).toMatch(
      /^authcli-server: warning: the backup holds \d+ private signing keys? unencrypted: keep it as safe as the database/m,
    );
    expect(statSync(target).mode & 0o777).toBe(0o600);
    // One self-contained file: no write-ahead log or shared-memory file beside it.
    expect(readdirSync(dir).filter((f) => f.startsWith('copy.db'))).toEqual(['copy.db']);

    const Database = fromServer('better-sqlite3') as new (
      path: string,
      o: { readonly: boolean },
    ) => {
      prepare(sql: string): { all(): Record<string, unknown>[] };
      pragma(sql: string): unknown;
      close(): void;
    };
    const copy = new Database(target, { readonly: true });
    try {
      expect(copy.pragma('integrity_check')).toEqual([{ integrity_check: 'ok' }]);
      expect(copy.pragma('journal_mode')).toEqual([{ journal_mode: 'delete' }]);
      expect(copy.prepare('select username from users').all()).toEqual([{ username: 'alice' }]);
      expect(copy.prepare("select client_id from applications where client_id = 'authcli'").all()).toHaveLength(1);
      expect(copy.prepare('select count(*) as n from signing_keys').all()[0]!.n).toBeGreaterThan(0);
    } finally {
      copy.close();
    }
    // The copy is a store the server opens as it is.
    const listed = await serverCommand(['users', 'list', '--json'], { DATABASE_URL: target });
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { username: string }[]).map((u) => u.username)).toEqual(['alice']);
  });

  it('refuses to overwrite an existing file, and leaves it as it was', async () => {
    const target = join(dir, 'taken.db');
    expect((await serverCommand(['backup', target], server.env)).code).toBe(0);
    const before = readFileSync(target);
    const again = await serverCommand(['backup', target], server.env);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`authcli-server: ${target} exists: backup never overwrites; choose a new file name\n`);
    expect(readFileSync(target).equals(before)).toBe(true);
  });

  it('points to pg_dump for PostgreSQL, and writes nothing', async () => {
    const target = join(dir, 'pg.db');
    const res = await serverCommand(['backup', target], { DATABASE_URL: 'postgres://authcli@127.0.0.1:1/authcli' });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/^authcli-server: backup copies the embedded SQLite store; for PostgreSQL use pg_dump, e\.g\. pg_dump /);
    expect(existsSync(target)).toBe(false);
  });

  it('says what the copy holds, not what its own environment has: keys encrypted by the server need no warning, only its key-encryption key', async () => {
    const kek = randomBytes(32).toString('base64');
    const encrypted = await startServerProcess({ env: { AUTHCLI_KEY_ENCRYPTION_KEY: kek } });
    try {
      const target = join(dir, 'encrypted.db');
      // Run as a backup job usually is: without the server's key-encryption key in its environment.
      const res = await serverCommand(['backup', target], { DATABASE_URL: encrypted.env.DATABASE_URL, AUTHCLI_KEY_ENCRYPTION_KEY: '' });
      expect(res.code, res.stderr).toBe(0);
      expect(res.stderr).not.toMatch(/unencrypted/);
      expect(res.stderr).toBe(
        'authcli-server: warning: the signing keys in the backup are encrypted: a server restored from it needs the same AUTHCLI_KEY_ENCRYPTION_KEY\n',
      );
      // And the same job with the key in its environment still says so, whatever a plaintext store next door holds.
      const withKey = await serverCommand(['backup', join(dir, 'encrypted-2.db')], {
        DATABASE_URL: encrypted.env.DATABASE_URL,
        AUTHCLI_KEY_ENCRYPTION_KEY: kek,
      });
      expect(withKey.code, withKey.stderr).toBe(0);
      expect(withKey.stderr).not.toMatch(/unencrypted/);
      const plain = await serverCommand(['backup', join(dir, 'plain-with-key.db')], { ...server.env, AUTHCLI_KEY_ENCRYPTION_KEY: kek });
      expect(plain.code, plain.stderr).toBe(0);
      expect(plain.stderr).toMatch(/the backup holds \d+ private signing keys? unencrypted/);
    } finally {
      await encrypted.stop();
    }
  });
});

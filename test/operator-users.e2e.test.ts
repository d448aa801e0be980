import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '@authcli/test-support/cli-process';
import { dialects, execute, freshDatabase, type TestDatabase, undoMigrationsAfter0008 } from '@authcli/test-support/databases';
import { Browser, hidden } from '@authcli/test-support/http';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');
const PASSWORD = 'operator users password';
const NEW_PASSWORD = 'a brand new password';

const versionOf = (pkg: string) => (JSON.parse(readFileSync(join(root, pkg, 'package.json'), 'utf8')) as { version: string }).version;

describe('--version on both binaries', () => {
  it("prints package.json's version", async () => {
    const server = await serverCommand(['--version'], {});
    expect(server.code).toBe(0);
    expect(server.stdout.trim()).toBe(versionOf('packages/server'));
    const cli = await runCli(['--version'], {}).exit;
    expect(cli.code).toBe(0);
    expect(cli.stdout.trim()).toBe(versionOf('packages/cli'));
  });
});

describe('authcli-server users and apps, on a running server', () => {
  let server: ServerProcess;

  beforeAll(async () => {
    server = await startServerProcess();
    const alice = await serverCommand(
      ['users', 'add', 'Alice', '--password-stdin', '--admin', '--name', 'Alice Liddell', '--email', 'alice@example.com'],
      server.env,
      `${PASSWORD}\n`,
    );
    expect(alice.code, alice.stderr).toBe(0);
    const bob = await serverCommand(['users', 'add', 'bob', '--password-stdin'], server.env, `${PASSWORD}\n`);
    expect(bob.code, bob.stderr).toBe(0);
  });
  afterAll(async () => server?.stop());

  async function signIn(username: string, password: string): Promise<{ status: number; browser: Browser }> {
    const browser = new Browser(server.issuer);
    const page = await browser.get('/signin');
    return { status: (await browser.postForm('/signin', { _csrf: hidden(page.text, '_csrf'), username, password })).status, browser };
  }

  it('users list: a header row in text, an array in JSON', async () => {
    const text = await serverCommand(['users', 'list'], server.env);
    expect(text.code, text.stderr).toBe(0);
    const [header, ...rows] = text.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^USERNAME\s+NAME\s+EMAIL\s+ADMIN\s+DISABLED\s+CONNECTORS\s+CREATED$/);
    expect(rows[0]).toMatch(/^Alice\s+Alice Liddell\s+alice@example\.com\s+yes\s+no\s+-\s+\d{4}-\d\d-\d\dT/);
    expect(rows[1]).toMatch(/^bob\s+no\s+no\s+-\s+\d{4}-/);
    const json = JSON.parse((await serverCommand(['users', 'list', '--json'], server.env)).stdout) as Record<string, unknown>[];
    expect(json).toEqual([
      {
        username: 'Alice',
        name: 'Alice Liddell',
        email: 'alice@example.com',
        admin: true,
        disabled: false,
        connectors: [],
        created: expect.stringMatching(/Z$/),
      },
      { username: 'bob', name: null, email: null, admin: false, disabled: false, connectors: [], created: expect.stringMatching(/Z$/) },
    ]);
  });

  it('usernames are unique without regard to case, and sign-in finds them so', async () => {
    const dup = await serverCommand(['users', 'add', 'ALICE', '--password-stdin'], server.env, `${PASSWORD}\n`);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/already exists/);
    expect((await signIn('alice', PASSWORD)).status).toBe(303);
    expect((await signIn('ALICE', PASSWORD)).status).toBe(303);
  });

  it('users reset-password: the new password works, the old does not, sessions end and the lockout is lifted', async () => {
    const { status, browser } = await signIn('bob', PASSWORD);
    expect(status).toBe(303);
    expect((await browser.get('/dashboard')).status).toBe(200);
    for (let i = 0; i < 10; i++) expect((await signIn('bob', `wrong ${i}`)).status).toBe(401);
    expect((await signIn('bob', PASSWORD)).status).toBe(429);

    const short = await serverCommand(['users', 'reset-password', 'bob', '--password-stdin'], server.env, 'short\n');
    expect(short.code).toBe(1);
    expect(short.stderr).toMatch(/at least 8 characters/);
    const nobody = await serverCommand(['users', 'reset-password', 'carol', '--password-stdin'], server.env, `${NEW_PASSWORD}\n`);
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toMatch(/no user carol/);

    const reset = await serverCommand(['users', 'reset-password', 'BOB', '--password-stdin'], server.env, `${NEW_PASSWORD}\n`);
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stdout).toMatch(/^reset the password of bob \(1 session ended, \d+ failed sign-in counters? cleared\)$/m);
    // --revoke-tokens says how many application sign-ins it ended (bob has none here; account.test.ts has some).
    const again = await serverCommand(
      ['users', 'reset-password', 'bob', '--revoke-tokens', '--password-stdin'],
      server.env,
      `${NEW_PASSWORD}\n`,
    );
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(
      /^reset the password of bob \(0 sessions ended, 0 failed sign-in counters cleared, 0 application sign-ins ended\)$/m,
    );
    // The browser that signed in with the old password is signed out.
    expect((await browser.get('/dashboard')).status).not.toBe(200);
    expect((await signIn('bob', PASSWORD)).status).toBe(401);
    expect((await signIn('bob', NEW_PASSWORD)).status).toBe(303);
  });

  it('apps add refuses offline_access without the refresh grant; apps list has a header', async () => {
    const refused = await serverCommand(
      ['apps', 'add', '--name', 'Device only', '--kind', 'public', '--scope', 'openid offline_access', '--grant', 'device_code'],
      server.env,
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('the offline_access scope needs the refresh_token grant');
    const added = await serverCommand(
      [
        'apps',
        'add',
        '--name',
        'Device tool',
        '--kind',
        'public',
        '--scope',
        'openid offline_access',
        '--grant',
        'device_code',
        '--grant',
        'refresh_token',
      ],
      server.env,
    );
    expect(added.code, added.stderr).toBe(0);
    const help = await serverCommand(['apps', 'add', '--help'], server.env);
    expect(help.stdout).toMatch(/default\s+authorization_code and\s+refresh_token/);

    const list = await serverCommand(['apps', 'list'], server.env);
    expect(list.code, list.stderr).toBe(0);
    const [header, ...rows] = list.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^CLIENT ID\s+KIND\s+REGISTERED BY\s+NAME\s+GRANTS\s+SCOPES\s+CALLBACKS$/);
    expect(rows.some((r) => /^\S+\s+public\s+operator\s+Device tool\s+device_code,refresh_token\s+openid offline_access\s*$/.test(r))).toBe(
      true,
    );
    expect(rows.some((r) => r.includes('Device only'))).toBe(false);
  });
});

describe('authcli-server apps update', () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServerProcess();
  });
  afterAll(async () => server?.stop());

  const appsJson = async () =>
    JSON.parse((await serverCommand(['apps', 'list', '--json'], server.env)).stdout) as Record<string, unknown>[];

  it('changes only what is given, checks the whole application again, and apps list --json shows the settings', async () => {
    const added = await serverCommand(
      ['apps', 'add', '--name', 'Resource server', '--kind', 'confidential', '--scope', 'openid', '--grant', 'device_code', '--json'],
      server.env,
    );
    expect(added.code, added.stderr).toBe(0);
    const { client_id } = JSON.parse(added.stdout) as { client_id: string };
    const before = (await appsJson()).find((a) => a.client_id === client_id);
    expect(before).toMatchObject({ introspection: 'own', dpop_bound_access_tokens: false, require_pushed_authorization_requests: false });

    const updated = await serverCommand(
      ['apps', 'update', client_id, '--introspection', 'all', '--require-dpop', '--require-par', '--json'],
      server.env,
    );
    expect(updated.code, updated.stderr).toBe(0);
    expect(JSON.parse(updated.stdout)).toEqual({
      ...before,
      introspection: 'all',
      dpop_bound_access_tokens: true,
      require_pushed_authorization_requests: true,
    });
    const text = await serverCommand(['apps', 'update', client_id, '--no-require-par', '--name', 'RS'], server.env);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toBe('');
    expect(text.stderr).toBe(`Updated RS (${client_id})\n`);
    expect((await appsJson()).find((a) => a.client_id === client_id)).toMatchObject({
      name: 'RS',
      introspection: 'all',
      dpop_bound_access_tokens: true,
      require_pushed_authorization_requests: false,
      grant_types: ['urn:ietf:params:oauth:grant-type:device_code'],
    });

    // The same rules as apps add: nothing changes when they are broken.
    const broken = await serverCommand(['apps', 'update', client_id, '--scope', 'openid offline_access', '--no-require-dpop'], server.env);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain('the offline_access scope needs the refresh_token grant');
    expect((await appsJson()).find((a) => a.client_id === client_id)).toMatchObject({ scopes: ['openid'], dpop_bound_access_tokens: true });
    const code = await serverCommand(['apps', 'update', client_id, '--grant', 'authorization_code'], server.env);
    expect(code.code).toBe(1);
    expect(code.stderr).toContain('at least one callback URL is required');

    const unknown = await serverCommand(['apps', 'update', 'no-such-client', '--require-dpop'], server.env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim().split('\n')).toHaveLength(1);
    expect(unknown.stderr).toContain('no application no-such-client');
    // An older client ID that starts with "-" is given after "--" (new ones never start so).
    const dashed = await serverCommand(['apps', 'update', '--require-dpop', '--', '-AbC'], server.env);
    expect([dashed.code, dashed.stderr]).toEqual([1, 'authcli-server: no application -AbC (see apps list)\n']);
    const badChoice = await serverCommand(['apps', 'update', client_id, '--introspection', 'everyone'], server.env);
    expect(badChoice.code).not.toBe(0);
    expect(badChoice.stderr).toMatch(/own, owner, all/);
  });
});

describe.each(dialects())('migration 0004: usernames unique without regard to case (%s)', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase(dialect);
  });
  afterAll(async () => db?.cleanup());

  it('names the usernames that collide and refuses to go on, then applies once they are renamed', async () => {
    const env = { DATABASE_URL: db.url };
    // A command that changes something makes the store and migrates it (a listing command never makes one).
    expect((await serverCommand(['limits', 'clear-ip', '203.0.113.1'], env)).code).toBe(0);
    // Back to the schema before 0004 (and the migrations after it, 0005 to 0011), with the duplicates an earlier version allowed.
    await execute(db, dialect, 'drop index users_username_lower');
    await execute(db, dialect, 'alter table applications drop column post_logout_redirect_uris');
    await execute(db, dialect, 'alter table applications drop column registration_token_hash');
    await execute(db, dialect, 'alter table applications drop column registration_metadata');
    await execute(db, dialect, 'drop table initial_access_tokens');
    await execute(db, dialect, 'alter table authorization_codes drop column claims');
    await execute(db, dialect, 'alter table grants drop column claims');
    await execute(db, dialect, 'alter table users drop column claims');
    await execute(db, dialect, 'alter table users drop column claims_updated_at');
    await execute(db, dialect, 'alter table users add column name text');
    await execute(db, dialect, 'alter table users add column email text');
    await undoMigrationsAfter0008(db, dialect);
    await execute(
      db,
      dialect,
      "delete from kysely_migration where name in ('0004_username_case_insensitive', '0005_post_logout_redirect_uris', '0006_dynamic_client_registration', '0007_claims_request', '0008_user_claims')",
    );
    await execute(
      db,
      dialect,
      "insert into users (id, username, password_hash, is_admin, created_at) values ('1', 'Dana', 'x', 0, 1), ('2', 'dana', 'x', 0, 2), ('3', 'erin', 'x', 0, 3), ('4', 'ERIN', 'x', 0, 4), ('5', 'frank', 'x', 0, 5)",
    );

    const refused = await serverCommand(['users', 'list'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^authcli-server: migration 0004_username_case_insensitive failed: usernames that differ only in case .*: Dana, dana, ERIN, erin$/m,
    );
    // Nothing was merged or changed.
    expect((await db.query('select count(*) as n from users'))[0]!.n).toBe(dialect === 'postgres' ? '5' : 5);

    await execute(db, dialect, "update users set username = 'dana2' where id = '2'");
    await execute(db, dialect, "delete from users where id = '4'");
    const listed = await serverCommand(['users', 'list', '--json'], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { username: string }[]).map((u) => u.username)).toEqual(['Dana', 'dana2', 'erin', 'frank']);
    const dup = await serverCommand(['users', 'add', 'FRANK', '--password-stdin'], env, `${PASSWORD}\n`);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/already exists/);
  });
});

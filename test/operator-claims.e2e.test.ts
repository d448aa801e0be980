import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, execute, freshDatabase, type TestDatabase, undoMigrationsAfter0008 } from '@authcli/test-support/databases';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const PASSWORD = 'operator claims password';

describe.each(dialects())('authcli-server users update, on a running server (%s)', (dialect) => {
  let db: TestDatabase;
  let server: ServerProcess;
  const update = (args: string[], input?: string) => serverCommand(['users', 'update', ...args], server.env, input);
  const claimsOf = async (username: string) => {
    const r = await update([username, '--unset', 'nickname', '--json']);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };

  beforeAll(async () => {
    db = await freshDatabase(dialect);
    server = await startServerProcess({ database: db.url });
    // One user per test that writes claims: vitest shuffles test order in CI.
    for (const name of ['ada', 'grace', 'edsger', 'barbara']) {
      const added = await serverCommand(['users', 'add', name, '--password-stdin'], server.env, `${PASSWORD}\n`);
      expect(added.code, added.stderr).toBe(0);
    }
  });
  afterAll(async () => {
    await server?.stop();
    await db?.cleanup();
  });

  it('--claim sets typed values and address fields; the claims are printed as a table, or as JSON', async () => {
    const text = await update(['ada', '--claim', 'given_name=Ada', '--claim', 'email=ada@example.com', '--claim', 'email_verified=true']);
    expect(text.code, text.stderr).toBe(0);
    const [header, ...rows] = text.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^CLAIM\s+VALUE$/);
    expect(rows).toEqual([
      expect.stringMatching(/^given_name\s+Ada$/),
      expect.stringMatching(/^preferred_username\s+ada$/),
      expect.stringMatching(/^updated_at\s+\d{10}$/),
      expect.stringMatching(/^email\s+ada@example\.com$/),
      expect.stringMatching(/^email_verified\s+true$/),
    ]);
    const json = await update(['ada', '--claim', 'address.locality=London', '--claim', 'locale=en-gb', '--json']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({
      given_name: 'Ada',
      preferred_username: 'ada',
      locale: 'en-GB',
      updated_at: expect.any(Number),
      email: 'ada@example.com',
      email_verified: true,
      address: { locality: 'London' },
    });
  });

  it('--claims-json - reads a JSON object from stdin (address merged by field, null removes); --unset removes', async () => {
    const patch = { family_name: 'Hopper', address: { country: 'USA', region: 'VA' }, phone_number: '+12025550123' };
    const r = await update(['grace', '--claims-json', '-', '--json'], JSON.stringify(patch));
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ ...patch, phone_number_verified: false });
    const unset = await update(
      ['grace', '--unset', 'address.region', '--unset', 'phone_number', '--claims-json', '-', '--json'],
      '{"nickname":"amazing grace"}',
    );
    expect(unset.code, unset.stderr).toBe(0);
    const after = JSON.parse(unset.stdout) as Record<string, unknown>;
    expect(after).toMatchObject({ family_name: 'Hopper', nickname: 'amazing grace', address: { country: 'USA' } });
    expect(after).not.toHaveProperty('phone_number');
    expect(after).not.toHaveProperty('phone_number_verified');
    const file = join(mkdtempSync(join(tmpdir(), 'authcli-claims-')), 'claims.json');
    writeFileSync(file, '{"address": null, "website": "https://grace.example"}');
    const fromFile = await update(['grace', '--claims-json', file, '--json']);
    expect(JSON.parse(fromFile.stdout)).toEqual({
      family_name: 'Hopper',
      nickname: 'amazing grace',
      website: 'https://grace.example',
      preferred_username: 'grace',
      updated_at: expect.any(Number),
    });
  });

  it('errors are one line, exit 1, and change nothing', async () => {
    const before = await claimsOf('ada');
    const cases: [string[], RegExp, string?][] = [
      [['nobody', '--claim', 'name=X'], /^authcli-server: no user nobody$/],
      [
        ['ada', '--claim', 'shoe_size=44'],
        /^authcli-server: unknown claim shoe_size \(the claims that can be set: name, given_name, .*address\)$/,
      ],
      [['ada', '--claim', 'sub=x'], /^authcli-server: sub is the user id and cannot be set$/],
      [['ada', '--unset', 'updated_at'], /^authcli-server: updated_at is kept by the server and cannot be set$/],
      // One good claim with one bad one: nothing is written.
      [['ada', '--claim', 'nickname=Countess', '--claim', 'birthdate=1815-02-30'], /^authcli-server: birthdate must be YYYY-MM-DD/],
      [['ada', '--claim', 'email_verified=yes'], /^authcli-server: email_verified must be true or false \(got yes\)$/],
      [['ada', '--claim', 'website=javascript:alert(1)'], /^authcli-server: website must be an absolute http or https URL$/],
      [['ada', '--claim', `name=${'x'.repeat(300)}`], /^authcli-server: name is longer than 256 characters$/],
      [['ada', '--claim', 'address.city=Paris'], /^authcli-server: unknown address field city/],
      [['ada', '--claim', 'name=a\u0007b'], /^authcli-server: name must not contain control characters$/],
      [['ada', '--claims-json', '-'], /^authcli-server: the claims are not JSON/, '{"name":'],
      [['ada', '--claims-json', '-'], /^authcli-server: the claims JSON must be an object$/, '"Ada"'],
      [['ada', '--claims-json', '/no/such/file.json'], /^authcli-server: cannot read \/no\/such\/file\.json: ENOENT$/],
      [['ada'], /^authcli-server: nothing to update/],
    ];
    for (const [args, message, input] of cases) {
      const r = await update(args, input);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr.trimEnd().split('\n'), args.join(' ')).toEqual([expect.stringMatching(message)]);
      expect(r.stdout).toBe('');
    }
    expect(await claimsOf('ada')).toEqual(before);
  });

  it('5 processes updating different claims of one user at once: all 5 are kept', async () => {
    const claims = [
      'given_name=Edsger',
      'family_name=Dijkstra',
      'nickname=EWD',
      'zoneinfo=Europe/Amsterdam',
      'website=https://ewd.example',
    ];
    const runs = await Promise.all(claims.map((c) => update(['edsger', '--claim', c])));
    for (const r of runs) expect(r.code, r.stderr).toBe(0);
    const r = await update(['edsger', '--unset', 'middle_name', '--json']);
    expect(JSON.parse(r.stdout)).toMatchObject({
      given_name: 'Edsger',
      family_name: 'Dijkstra',
      nickname: 'EWD',
      zoneinfo: 'Europe/Amsterdam',
      website: 'https://ewd.example',
    });
  });

  it('users list shows the name and email claims', async () => {
    await update(['barbara', '--claim', 'name=Barbara Liskov', '--claim', 'email=barbara@example.com']);
    const listed = JSON.parse((await serverCommand(['users', 'list', '--json'], server.env)).stdout) as Record<string, unknown>[];
    expect(listed.find((u) => u.username === 'barbara')).toMatchObject({ name: 'Barbara Liskov', email: 'barbara@example.com' });
  });
});

describe.each(dialects())('migration 0008: name and email move into the claims (%s)', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase(dialect);
  });
  afterAll(async () => db?.cleanup());

  it('keeps every name and email, as claims with updated_at = created_at; an empty one is no claim', async () => {
    const env = { DATABASE_URL: db.url };
    // A command that changes something makes the store and migrates it (a listing command never makes one).
    expect((await serverCommand(['limits', 'clear-ip', '203.0.113.1'], env)).code).toBe(0);
    // Back to the schema before 0008, with users an earlier version added.
    await execute(db, dialect, 'alter table users drop column claims');
    await execute(db, dialect, 'alter table users drop column claims_updated_at');
    await execute(db, dialect, 'alter table users add column name text');
    await execute(db, dialect, 'alter table users add column email text');
    await undoMigrationsAfter0008(db, dialect);
    await execute(db, dialect, "delete from kysely_migration where name in ('0008_user_claims')");
    await execute(
      db,
      dialect,
      "insert into users (id, username, password_hash, name, email, is_admin, created_at) values ('1', 'both', 'x', 'Both Names', 'both@example.com', 0, 1700000000000), ('2', 'nameonly', 'x', 'Only Name', null, 0, 1700000001000), ('3', 'neither', 'x', null, null, 0, 3), ('4', 'empty', 'x', '', '  ', 0, 4)",
    );

    const listed = await serverCommand(['users', 'list', '--json'], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as Record<string, unknown>[]).map((u) => [u.username, u.name, u.email])).toEqual([
      ['neither', null, null],
      ['empty', null, null],
      ['both', 'Both Names', 'both@example.com'],
      ['nameonly', 'Only Name', null],
    ]);
    const rows = await db.query('select username, claims, claims_updated_at from users order by username');
    expect(
      rows.map((r) => [r.username, JSON.parse(r.claims as string), r.claims_updated_at === null ? null : Number(r.claims_updated_at)]),
    ).toEqual([
      ['both', { email: 'both@example.com', email_verified: false, name: 'Both Names' }, 1700000000000],
      ['empty', {}, null],
      ['nameonly', { name: 'Only Name' }, 1700000001000],
      ['neither', {}, null],
    ]);
    const columns = await db.query(
      dialect === 'postgres'
        ? "select column_name as name from information_schema.columns where table_name = 'users' and table_schema = current_schema()"
        : "select name from pragma_table_info('users')",
    );
    expect(columns.map((c) => c.name)).not.toContain('name');
    expect(columns.map((c) => c.name)).not.toContain('email');
    const shown = await serverCommand(['users', 'update', 'both', '--unset', 'nickname', '--json'], env);
    expect(JSON.parse(shown.stdout)).toEqual({
      name: 'Both Names',
      preferred_username: 'both',
      updated_at: 1700000000,
      email: 'both@example.com',
      email_verified: false,
    });
  });
});

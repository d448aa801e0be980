import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, tempConfigHome } from '@authcli/test-support/cli-process';
import { dialects, execute, freshDatabase, type TestDatabase } from '@authcli/test-support/databases';
import { approveInBrowser, Browser } from '@authcli/test-support/http';
import { addApp, addUsers } from '@authcli/test-support/seed';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const PASSWORD = 'admin api e2e password';
type Json = Record<string, unknown>;

/**
 * The admin API as the issue's "done when" has it, with real processes: a server, the operator CLI beside
 * it on the same database, an application with client credentials for admin:read and admin:write, and an
 * administrator signed in with `authcli login --scope admin:write` calling it with `authcli api`.
 */
for (const dialect of dialects()) {
  describe(`admin API and audit trail, end to end (${dialect})`, () => {
    let db: TestDatabase;
    let server: ServerProcess;
    let env: { DATABASE_URL: string; AUTHCLI_AUDIT_LOG: string };
    let logFile: string;
    const operator = (...args: string[]) => serverCommand(args, env);

    beforeAll(async () => {
      db = await freshDatabase(dialect);
      logFile = join(mkdtempSync(join(tmpdir(), 'authcli-audit-')), 'audit.jsonl');
      env = { DATABASE_URL: db.url, AUTHCLI_AUDIT_LOG: logFile };
      server = await startServerProcess({ database: db.url, env: { AUTHCLI_AUDIT_LOG: logFile } });
      await addUsers(server.env, [{ username: 'root', password: PASSWORD, admin: true }]);
    });
    afterAll(async () => {
      await server?.stop();
      await db?.cleanup();
    });

    /** A token by client credentials for an application allowed `scope`. */
    async function machineToken(name: string, scope: string) {
      const app = await addApp(server.env, { name, kind: 'confidential', scopes: scope.split(' '), grantTypes: ['client_credentials'] });
      const res = await fetch(`${server.issuer}/oauth/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${app.client_id}:${app.client_secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope }).toString(),
      });
      expect(res.status).toBe(200);
      return { clientId: app.client_id, token: ((await res.json()) as { access_token: string }).access_token };
    }
    const call = async (token: string, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${server.issuer}/admin/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      return { status: res.status, json: (text ? JSON.parse(text) : {}) as Json };
    };

    it('changes through the API and the operator CLI see each other at once, each audited with its actor; verify catches an edit', async () => {
      const reader = await machineToken('Inventory', 'admin:read');
      const writer = await machineToken('Provisioner', 'admin:write');
      expect((await call(reader.token, 'GET', '/users')).status).toBe(200);
      expect((await call(reader.token, 'POST', '/users', { username: 'dora', password: PASSWORD })).status).toBe(403);

      expect((await call(writer.token, 'POST', '/users', { username: 'dora', password: PASSWORD })).status).toBe(201);
      const listed = await operator('users', 'list', '--json');
      expect((JSON.parse(listed.stdout) as Json[]).map((u) => u.username)).toContain('dora');
      expect((await call(writer.token, 'PATCH', '/users/dora', { name: 'Dora D' })).status).toBe(200);
      const app = await call(writer.token, 'POST', '/apps', {
        name: 'Wiki',
        kind: 'confidential',
        redirect_uris: ['https://wiki.example/cb'],
        scope: 'openid',
      });
      expect(app.status).toBe(201);
      const clientId = app.json.client_id as string;
      const apps = JSON.parse((await operator('apps', 'list', '--json')).stdout) as Json[];
      expect(apps.find((a) => a.client_id === clientId)).toBeDefined();
      expect(JSON.stringify(apps)).not.toContain(app.json.client_secret as string);
      expect((await call(writer.token, 'DELETE', `/apps/${clientId}`)).status).toBe(204);
      expect((await call(writer.token, 'DELETE', '/users/dora')).status).toBe(204);
      // The operator's own change, beside the server.
      const added = await serverCommand(['users', 'add', 'eric', '--password-stdin'], env, `${PASSWORD}\n`);
      expect(added.code, added.stderr).toBe(0);
      // And the API sees the operator's change at once.
      expect((await call(reader.token, 'GET', '/users/eric')).status).toBe(200);

      const trail = JSON.parse((await operator('audit', '--json', '--since', '1h')).stdout) as Json[];
      // This test's changes (the other test of the suite may have run first: its own are left out).
      const mine = trail.filter((r) => ['dora', 'Wiki', 'eric'].includes((r.target as Json | null)?.name as string));
      expect(mine.map((r) => [r.action, (r.actor as Json).type, (r.actor as Json).id])).toEqual([
        ['user.created', 'client', writer.clientId],
        ['user.updated', 'client', writer.clientId],
        ['app.created', 'client', writer.clientId],
        ['app.deleted', 'client', writer.clientId],
        ['user.deleted', 'client', writer.clientId],
        ['user.created', 'operator', 'operator'],
      ]);
      expect(JSON.stringify(trail)).not.toContain(PASSWORD);
      const text = await operator('audit', '--actor', 'operator');
      expect(text.stdout.split('\n')[0]).toMatch(/^SEQ\s+TIME\s+ACTOR\s+ACTION\s+TARGET\s+ADDRESS\s+CHANGES/);
      expect(text.stdout).toMatch(/operator\s+user\.created\s+eric/);
      // The log shipper's file has every row both processes appended, in order.
      const shipped = readFileSync(logFile, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Json);
      const seqs = shipped.map((r) => r.seq as number).sort((a, b) => a - b);
      expect(seqs).toEqual(trail.map((r) => r.seq));

      const intact = await operator('audit', 'verify');
      expect([intact.code, intact.stdout]).toEqual([0, expect.stringMatching(/^the audit trail is intact: rows 1 to \d+/)]);
      const victim = mine[1]!.seq as number;
      await execute(db, dialect, `update audit_events set detail = '{"name":{"from":null,"to":"Mallory"}}' where seq = ${victim}`);
      const broken = await operator('audit', 'verify');
      expect(broken.code).toBe(1);
      expect(broken.stderr).toBe(
        `authcli-server: the audit trail does not chain at row ${victim}: its content does not match its hash: it was changed\n`,
      );
      // Put back (the suite's other tests verify the same trail, in any order): intact again.
      await execute(db, dialect, `update audit_events set detail = '${JSON.stringify(mine[1]!.detail)}' where seq = ${victim}`);
      expect((await operator('audit', 'verify')).code).toBe(0);
    });

    it('every operator command that changes something takes --json, and is audited with the operator as actor', async () => {
      const json = async (...args: string[]) => {
        const r = await operator(...args, '--json');
        expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
        return JSON.parse(r.stdout) as Json;
      };
      const added = await serverCommand(['users', 'add', 'gina', '--password-stdin', '--json'], env, `${PASSWORD}\n`);
      expect(JSON.parse(added.stdout)).toMatchObject({ username: 'gina', admin: false, disabled: false });
      expect(await json('users', 'disable', 'gina')).toMatchObject({ username: 'gina', disabled: true });
      expect(await json('users', 'enable', 'gina')).toMatchObject({ username: 'gina', disabled: false });
      expect(await json('users', 'unlock', 'gina')).toEqual({ username: 'gina', counters_cleared: 0 });
      const reset = await serverCommand(['users', 'reset-password', 'gina', '--password-stdin', '--json'], env, 'another long password\n');
      expect(JSON.parse(reset.stdout)).toEqual({ username: 'gina', sessions_ended: 0, counters_cleared: 0, application_sign_ins_ended: 0 });
      expect(await json('users', 'reset-passkeys', 'gina')).toEqual({ username: 'gina', passkeys_removed: 0, sessions_ended: 0 });
      const app = await json('apps', 'add', '--name', 'Temp', '--kind', 'public', '--callback', 'http://127.0.0.1/cb', '--scope', 'openid');
      expect(await json('apps', 'remove', app.client_id as string, '--yes')).toEqual({ client_id: app.client_id, removed: true });
      await json('resources', 'add', '--id', 'https://temp.example', '--name', 'Temp API', '--scope', 'temp:do');
      expect(await json('resources', 'remove', 'https://temp.example', '--yes')).toEqual({ id: 'https://temp.example', removed: true });
      expect(await json('limits', 'clear-ip', '192.0.2.1')).toEqual({ address: '192.0.2.1', counters_cleared: 0 });
      const keys = (await json('keys', 'rotate')) as unknown as Json[];
      expect(keys.map((k) => k.alg).sort()).toEqual(['ES256', 'RS256']);
      const token = await json('registration', 'token', 'create');
      expect(await json('registration', 'token', 'revoke', token.id as string)).toMatchObject({ id: token.id, state: 'revoked' });
      expect(await json('users', 'remove', 'gina', '--yes')).toEqual({ username: 'gina', removed: true });
      const verdict = await json('audit', 'verify');
      expect(verdict).toMatchObject({ ok: true, first: 1 });
      const rows = JSON.parse((await operator('audit', '--json', '--actor', 'operator', '--limit', '500')).stdout) as Json[];
      expect(rows.map((r) => r.action)).toEqual(
        expect.arrayContaining([
          'user.created',
          'user.updated',
          'user.password_reset',
          'passkey.reset',
          'app.created',
          'app.deleted',
          'resource.created',
          'resource.removed',
          'keys.rotated',
          'registration_token.created',
          'registration_token.revoked',
          'user.deleted',
        ]),
      );
      for (const r of rows) expect(r.actor).toEqual({ type: 'operator', id: 'operator', name: null });
      expect(JSON.stringify(rows)).not.toContain(token.token as string);
      expect(JSON.stringify(rows)).not.toContain('another long password');
    });

    it("an administrator's authcli api /admin/v1/users works with the CLI's own sign-in", async () => {
      const home = tempConfigHome();
      const cliEnv = { XDG_CONFIG_HOME: home, AUTHCLI_ISSUER: server.issuer };
      const login = runCli(['login', '--browser', '--no-open', '--scope', 'openid admin:write'], cliEnv);
      const [, url] = await login.waitFor(/^\s+(http:\/\/\S+\/oauth\/authorize\?\S+)$/m);
      await fetch(await approveInBrowser(new Browser(server.issuer), url!, 'root', PASSWORD));
      expect((await login.exit).code).toBe(0);
      const listed = await runCli(['api', '/admin/v1/users'], cliEnv).exit;
      expect(listed.code, listed.stderr).toBe(0);
      expect((JSON.parse(listed.stdout) as { items: Json[] }).items.map((u) => u.username)).toContain('root');
      const made = await runCli(
        ['api', '-X', 'POST', '/admin/v1/users', '-d', '@-'],
        cliEnv,
        JSON.stringify({ username: 'fay', password: PASSWORD }),
      ).exit;
      expect(made.code, made.stderr).toBe(0);
      const row = JSON.parse((await operator('audit', '--json', '--type', 'user.created', '--target', 'fay')).stdout) as Json[];
      expect(row).toHaveLength(1);
      expect(row[0]!.actor).toMatchObject({ type: 'user', name: 'root' });
    });
  });
}

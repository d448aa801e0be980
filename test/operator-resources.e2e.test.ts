import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dialects, freshDatabase, type TestDatabase } from '@authcli/test-support/databases';
import { serverCommand } from '@authcli/test-support/server-process';

const API = 'https://deploy.example.com';

/**
 * `authcli-server resources add|list|update|remove` and applications allowed an API's scopes, as an operator
 * types them, on both engines.
 */
for (const dialect of dialects()) {
  describe(`authcli-server resources (${dialect})`, () => {
    // A database of its own per test: the suite runs its tests in a shuffled order.
    let db: TestDatabase;
    let env: { DATABASE_URL: string };
    const run = (...args: string[]) => serverCommand(args, env);

    beforeEach(async () => {
      db = await freshDatabase(dialect);
      env = { DATABASE_URL: db.url };
    });
    afterEach(async () => db?.cleanup());

    it('an API scope is unknown to apps add until the API is defined; then an application may be allowed it', async () => {
      const before = await run(
        'apps',
        'add',
        '--name',
        'Deployer',
        '--kind',
        'public',
        '--callback',
        'http://127.0.0.1/callback',
        '--scope',
        'openid deploy:write',
      );
      expect(before.code).toBe(1);
      expect(before.stderr).toContain('unknown scope deploy:write');
      expect(before.stderr).toContain('resources add');

      const added = await run(
        'resources',
        'add',
        '--id',
        API,
        '--name',
        'Deploy API',
        '--scope',
        'deploy:write=Deploy to production',
        '--scope',
        'deploy:read=See deployments',
      );
      expect(added.code, added.stderr).toBe(0);
      expect(added.stdout).toContain('Added Deploy API (https://deploy.example.com) with scopes deploy:write deploy:read');

      const app = await run(
        'apps',
        'add',
        '--name',
        'Deployer',
        '--kind',
        'public',
        '--callback',
        'http://127.0.0.1/callback',
        '--scope',
        'openid deploy:write',
        '--json',
      );
      expect(app.code, app.stderr).toBe(0);
      const clientId = (JSON.parse(app.stdout) as { client_id: string }).client_id;

      const list = await run('resources', 'list', '--json');
      expect(JSON.parse(list.stdout)).toEqual([
        expect.objectContaining({
          id: API,
          name: 'Deploy API',
          scopes: [
            { name: 'deploy:write', description: 'Deploy to production' },
            { name: 'deploy:read', description: 'See deployments' },
          ],
        }),
      ]);
      const table = await run('resources', 'list');
      expect(table.stdout).toMatch(/ID\s+NAME\s+SCOPES\nhttps:\/\/deploy\.example\.com\s+Deploy API\s+deploy:write deploy:read/);

      // Updating the scopes replaces them; a scope left out is taken from the applications allowed it.
      const updated = await run('resources', 'update', API, '--scope', 'deploy:read=See deployments', '--name', 'Deploys', '--json');
      expect(updated.code, updated.stderr).toBe(0);
      expect(JSON.parse(updated.stdout)).toMatchObject({ name: 'Deploys', scopes: [{ name: 'deploy:read' }] });
      const apps = JSON.parse((await run('apps', 'list', '--json')).stdout) as { client_id: string; scopes: string[] }[];
      expect(apps.find((a) => a.client_id === clientId)?.scopes).toEqual(['openid']);

      // Without a terminal to ask, and without --yes, nothing is removed.
      const unasked = await run('resources', 'remove', API);
      expect(unasked.code).toBe(1);
      expect(unasked.stderr).toContain(`not removed: no terminal to ask whether to remove API ${API}`);
      expect(JSON.parse((await run('resources', 'list', '--json')).stdout)).toHaveLength(1);
      expect((await run('resources', 'remove', API, '--yes')).code).toBe(0);
      expect(JSON.parse((await run('resources', 'list', '--json')).stdout)).toEqual([]);
    });

    it('bad input: one clear line and exit 1, nothing written', async () => {
      const cases: [string[], RegExp][] = [
        [['resources', 'add', '--id', 'api.example.com', '--name', 'X', '--scope', 'x:y'], /not an absolute URI/],
        [['resources', 'add', '--id', 'https://x.example/#f', '--name', 'X', '--scope', 'x:y'], /no fragment/],
        [['resources', 'add', '--id', 'https://x.example', '--name', 'X'], /at least one scope/],
        [['resources', 'add', '--id', 'https://x.example', '--name', 'X', '--scope', 'profile=Your profile'], /OpenID Connect scope/],
        [['resources', 'update', 'https://nobody.example', '--name', 'Y'], /no resource https:\/\/nobody\.example/],
        [['resources', 'remove', 'https://nobody.example'], /no resource/],
      ];
      for (const [args, message] of cases) {
        const r = await run(...args);
        expect(r.code, args.join(' ')).toBe(1);
        expect(r.stderr.trim().split('\n')[0], args.join(' ')).toMatch(message);
      }
      expect((await run('resources', 'add', '--id', 'https://a.example', '--name', 'A', '--scope', 'shared:x')).code).toBe(0);
      const stolen = await run('resources', 'add', '--id', 'https://b.example', '--name', 'B', '--scope', 'shared:x');
      expect(stolen.code).toBe(1);
      expect(stolen.stderr).toContain('the scope shared:x belongs to the resource https://a.example');
      expect(JSON.parse((await run('resources', 'list', '--json')).stdout).map((r: { id: string }) => r.id)).toEqual(['https://a.example']);
    });
    it('workloads add|list|remove: a CI trust policy for an application allowed token exchange and an API scope', async () => {
      const TE = 'urn:ietf:params:oauth:grant-type:token-exchange';
      expect((await run('resources', 'add', '--id', API, '--name', 'Deploy', '--scope', 'deploy:write=Deploy')).code).toBe(0);
      const app = await run('apps', 'add', '--name', 'CI', '--kind', 'public', '--grant', TE, '--scope', 'deploy:write', '--json');
      expect(app.code, app.stderr).toBe(0);
      const clientId = (JSON.parse(app.stdout) as { client_id: string }).client_id;
      const policy = [
        '--id',
        'deploy-main',
        '--issuer',
        'https://token.actions.githubusercontent.com',
        '--audience',
        'https://auth.example/ci',
        '--subject',
        'repo:acme/deploy:ref:refs/heads/main',
        '--claim',
        'repository_owner=acme',
        '--app',
        clientId,
        '--scope',
        'deploy:write',
      ];
      const added = await run('workloads', 'add', ...policy, '--token-lifetime', '5m', '--json');
      expect(added.code, added.stderr).toBe(0);
      expect(JSON.parse(added.stdout)).toMatchObject({
        id: 'deploy-main',
        issuer: 'https://token.actions.githubusercontent.com',
        claims: { repository_owner: 'acme' },
        app: clientId,
        scope: 'deploy:write',
        token_lifetime: 300,
      });
      expect((await run('workloads', 'list')).stdout).toMatch(/deploy-main\s+https:\/\/token\.actions\.githubusercontent\.com/);
      const bad: [string[], RegExp][] = [
        [policy.map((a) => (a === 'https://token.actions.githubusercontent.com' ? 'http://ci.example' : a)), /https/],
        [policy.map((a) => (a === 'repo:acme/deploy:ref:refs/heads/main' ? '*' : a)), /not every subject/],
        [policy.map((a) => (a === 'repo:acme/deploy:ref:refs/heads/main' ? '*:*' : a)), /not every subject/],
        [policy.map((a) => (a === 'deploy:write' ? 'openid' : a)), /no API's scope/],
        [[...policy, '--token-lifetime', '2d'], /--token-lifetime/],
        [policy.map((a) => (a === clientId ? 'authcli' : a)), /not allowed token exchange/],
      ];
      for (const [args, message] of bad) {
        const r = await run('workloads', 'add', ...args.map((a) => (a === 'deploy-main' ? 'other' : a)));
        expect(r.code, args.join(' ')).toBe(1);
        expect(r.stderr, args.join(' ')).toMatch(message);
      }
      const again = await run('workloads', 'add', ...policy);
      expect(again.stderr).toContain('a workload deploy-main already exists');
      expect((await run('workloads', 'remove', 'deploy-main')).stderr).toContain('pass --yes to remove it');
      expect((await run('workloads', 'remove', 'deploy-main', '-y')).code).toBe(0);
      expect((await run('workloads', 'remove', 'deploy-main', '--yes')).stderr).toContain('no workload deploy-main');
      expect(JSON.parse((await run('workloads', 'list', '--json')).stdout)).toEqual([]);
    });
  });
}

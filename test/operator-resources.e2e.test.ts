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

      expect((await run('resources', 'remove', API)).code).toBe(0);
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
  });
}

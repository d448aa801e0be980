import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, tempConfigHome } from '@authcli/test-support/cli-process';
import { approveInBrowser, Browser, freePort } from '@authcli/test-support/http';
import { addUsers } from '@authcli/test-support/seed';
import { startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';
import { tunnelProxy } from '@authcli/test-support/tunnel-proxy';

const PASSWORD = 'cli issuer hints e2e password';

describe('authcli says when the issuer is probably not the one meant', () => {
  let server: ServerProcess;
  /** The server's port, under each name a loopback server answers to. */
  let port: string;

  beforeAll(async () => {
    server = await startServerProcess();
    port = new URL(server.issuer).port;
    await addUsers(server.env, [
      { username: 'alice', password: PASSWORD },
      { username: 'bob', password: PASSWORD },
    ]);
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** No AUTHCLI_ISSUER: each profile finds its issuer in --issuer, config.json or its last sign-in, else the default. */
  const cli = (home: string, args: string[], env: Record<string, string> = {}) => runCli(args, { XDG_CONFIG_HOME: home, ...env }).exit;

  async function signIn(home: string, user: string, args: string[]) {
    const run = runCli(['login', '--browser', '--no-open', '--json', ...args], { XDG_CONFIG_HOME: home });
    const [, url] = await run.waitFor(/^\s+(http:\/\/\S+\/oauth\/authorize\?\S+)$/m);
    await fetch(await approveInBrowser(new Browser(server.issuer), url!, user, PASSWORD));
    const done = await run.exit;
    expect(done.code, done.stderr).toBe(0);
    return done;
  }

  /** profiles.json as `login` leaves it: these profiles signed in at the server before. */
  function remembered(home: string, profiles: string[]): void {
    mkdirSync(join(home, 'authcli'), { recursive: true });
    const entries = Object.fromEntries(profiles.map((p) => [p, { issuer: server.issuer, client_id: 'authcli' }]));
    writeFileSync(join(home, 'authcli', 'profiles.json'), JSON.stringify({ version: 1, profiles: entries }), { mode: 0o600 });
  }

  const notice = (profile: string, others: string) =>
    `Profile ${profile} has no issuer: using http://localhost:8080 (the default), but ${others} ${server.issuer}; pass --issuer ${server.issuer} to use it.\n`;

  it('a new profile without --issuer: login says it falls back to the default and which --issuer the other profiles use; with it, silence', async () => {
    const home = tempConfigHome();
    remembered(home, ['default', 'work']);
    // The login goes to http://localhost:8080: through a proxy that holds every request, so no server there is asked.
    const proxy = await tunnelProxy({ hold: /./ });
    try {
      const run = runCli(['login', '--profile', 'new', '--browser', '--no-open'], {
        XDG_CONFIG_HOME: home,
        HTTP_PROXY: proxy.url,
        http_proxy: proxy.url,
      });
      await run.waitFor(/has no issuer/);
      run.child.kill();
      expect((await run.exit).stderr.split('\n')[0]).toBe(notice('new', 'profiles default and work use').trimEnd());
    } finally {
      await proxy.close();
    }
    // The suggested issuer signs in, and says nothing about it; the profile then remembers it.
    const done = await signIn(home, 'alice', ['--profile', 'new', '--issuer', server.issuer]);
    expect(done.stderr).not.toMatch(/has no issuer/);
    expect(JSON.parse(done.stdout)).toMatchObject({ profile: 'new', issuer: server.issuer, username: 'alice' });
    const token = await cli(home, ['token', '--profile', 'new']);
    expect([token.code, token.stderr]).toEqual([0, '']);
  });

  it('token, api, status and logout on a profile at the default while the others are elsewhere: the same line, then what they always said', async () => {
    const home = tempConfigHome();
    remembered(home, ['default', 'work']);
    const said = notice('other', 'profiles default and work use');
    const token = await cli(home, ['token', '--profile', 'other']);
    expect([token.code, token.stdout]).toEqual([1, '']);
    expect(token.stderr).toBe(
      `${said}authcli: not signed in to http://localhost:8080 (profile other); run \`authcli login --profile other\`\n`,
    );
    const api = await cli(home, ['api', '/oauth/userinfo', '--profile', 'other']);
    expect([api.code, api.stderr]).toEqual([1, token.stderr]);
    const status = await cli(home, ['status', '--profile', 'other']);
    expect([status.code, status.stderr]).toEqual([1, said]);
    expect(status.stdout).toMatch(/^Not signed in to http:\/\/localhost:8080 \(profile other\)\. /);
    const logout = await cli(home, ['logout', '--profile', 'other']);
    expect([logout.code, logout.stderr, logout.stdout]).toEqual([0, said, 'Not signed in to http://localhost:8080 (profile other).\n']);
    // The default profile, when it has no issuer of its own, is told the same.
    const only = tempConfigHome();
    remembered(only, ['work']);
    expect((await cli(only, ['status', '--json'])).stderr).toBe(notice('default', 'profile work uses'));
  });

  it('no such line when the issuer was named (--issuer, AUTHCLI_ISSUER, config.json) or there is no other profile', async () => {
    const plain = 'authcli: not signed in to http://localhost:8080 (profile other); run `authcli login --profile other`\n';
    const alone = tempConfigHome();
    expect((await cli(alone, ['token', '--profile', 'other'])).stderr).toBe(plain);
    const home = tempConfigHome();
    remembered(home, ['default', 'work']);
    expect((await cli(home, ['token', '--profile', 'other', '--issuer', 'http://localhost:8080'])).stderr).toBe(plain);
    expect((await cli(home, ['token', '--profile', 'other'], { AUTHCLI_ISSUER: 'http://localhost:8080/' })).stderr).toBe(plain);
    expect((await cli(home, ['status', '--profile', 'other', '--issuer', 'http://localhost:8080'])).stderr).toBe('');
    writeFileSync(join(home, 'authcli', 'config.json'), JSON.stringify({ profiles: { other: { issuer: 'http://localhost:8080' } } }));
    expect((await cli(home, ['token', '--profile', 'other'])).stderr).toBe(plain);
  });

  it('token at another loopback name of the server names the sign-in there and its --issuer; any other issuer is just "not signed in"', async () => {
    const home = tempConfigHome();
    await signIn(home, 'bob', ['--issuer', server.issuer]);
    for (const asked of [`http://localhost:${port}`, `http://[::1]:${port}`]) {
      const expected = `authcli: not signed in to ${asked}; you are signed in to ${server.issuer} (the same server by another name?): use --issuer ${server.issuer}\n`;
      const token = await cli(home, ['token', '--issuer', asked]);
      expect([token.code, token.stdout, token.stderr], asked).toEqual([1, '', expected]);
      const api = await cli(home, ['api', '/oauth/userinfo', '--issuer', asked]);
      expect([api.code, api.stderr], asked).toEqual([1, expected]);
    }
    // What it says to use works.
    const used = await cli(home, ['token', '--issuer', server.issuer]);
    expect([used.code, used.stderr]).toEqual([0, '']);
    // Another port, a host that is not loopback, another profile: nothing stored there is the same sign-in.
    const elsewhere = `http://localhost:${await freePort()}`;
    for (const [args, named] of [
      [['--issuer', elsewhere], elsewhere],
      [['--issuer', 'https://authcli-test.invalid'], 'https://authcli-test.invalid'],
    ] as const) {
      const token = await cli(home, ['token', ...args]);
      expect([token.code, token.stderr]).toEqual([1, `authcli: not signed in to ${named}; run \`authcli login\`\n`]);
    }
    const work = await cli(home, ['token', '--profile', 'work', '--issuer', `http://localhost:${port}`]);
    expect(work.stderr).toBe(`authcli: not signed in to http://localhost:${port} (profile work); run \`authcli login --profile work\`\n`);
  });
});

import { userinfoOf } from './cli-dpop-key.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, tempConfigHome, type CliRun } from '@authcli/test-support/cli-process';
import { freshDatabase, type TestDatabase } from '@authcli/test-support/databases';
import { approveInBrowser, Browser } from '@authcli/test-support/http';
import { credentialsPath, expireStoredToken } from '@authcli/test-support/credentials';
import { runInTerminal } from '@authcli/test-support/pty';
import { addUsers } from '@authcli/test-support/seed';
import { startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';
import { tunnelProxy } from '@authcli/test-support/tunnel-proxy';

const PASSWORD = 'cli profiles e2e password';
/** A user or two of its own per test: the grants a test counts at the server are its own, whatever ran before. */
const USERS = [
  'alice',
  'bob',
  'carol',
  'dave',
  'erin',
  'frank',
  'grace',
  'heidi',
  'ivan',
  'judy',
  'mallory',
  'niaj',
  'olivia',
  'peggy',
  'trent',
];

describe('authcli profiles: several accounts, each with its own sign-in', () => {
  let server: ServerProcess;
  let db: TestDatabase;

  beforeAll(async () => {
    db = await freshDatabase('sqlite');
    // Access tokens outlive every test: the CLI takes one for expired only when a test says so (expireStoredToken).
    server = await startServerProcess({ database: db.url, env: { AUTHCLI_ACCESS_TOKEN_TTL: '300' } });
    await addUsers(
      server.env,
      USERS.map((username) => ({ username, password: PASSWORD })),
    );
  });
  afterAll(async () => {
    await server?.stop();
    await db?.cleanup();
  });

  /** No AUTHCLI_ISSUER: a profile finds its issuer in --issuer, config.json or its last sign-in. */
  const envFor = (home: string, extra: Record<string, string> = {}) => ({ XDG_CONFIG_HOME: home, ...extra });
  const slot = (profile: string) => `${server.issuer}#${profile}`;

  async function startLogin(home: string, user: string, args: string[], env: Record<string, string> = {}) {
    const run = runCli(['login', '--browser', '--no-open', '--json', ...args], envFor(home, env));
    const [, url] = await run.waitFor(/^\s+(http:\/\/\S+\/oauth\/authorize\?\S+)$/m);
    return { run, callback: await approveInBrowser(new Browser(server.issuer), url!, user, PASSWORD) };
  }

  async function signIn(home: string, user: string, args: string[], env: Record<string, string> = {}) {
    const { run, callback } = await startLogin(home, user, args, env);
    await fetch(callback);
    const done = await run.exit;
    expect(done.code, done.stderr).toBe(0);
    return done;
  }

  const cli = (home: string, args: string[], env: Record<string, string> = {}) => runCli(args, envFor(home, env)).exit;

  /** The user's sign-ins at the server, oldest first: revoked or not, refresh tokens issued and used. */
  async function grantsOf(user: string): Promise<{ revoked: boolean; issued: number; used: number }[]> {
    const rows = await db.query(
      `select g.revoked_at,
        (select count(*) from refresh_tokens r where r.grant_id = g.id) as issued,
        (select count(*) from refresh_tokens r where r.grant_id = g.id and r.used_at is not null) as used
       from grants g join users u on u.id = g.user_id where u.username = '${user}' order by g.created_at`,
    );
    return rows.map((r) => ({ revoked: r.revoked_at !== null, issued: Number(r.issued), used: Number(r.used) }));
  }

  /** `authcli token` on the profile, checked at the server's userinfo; the `sub` it answers for. */
  async function subjectOf(home: string, profile: string, env: Record<string, string> = {}): Promise<string> {
    const token = await cli(home, ['token', '--profile', profile], env);
    expect(token.code, token.stderr).toBe(0);
    const info = await userinfoOf(server.issuer, token.stdout.trim(), home, slot(profile));
    expect(info.status).toBe(200);
    return info.claims!.sub as string;
  }

  it('alice and bob on two profiles of one issuer: their own tokens, the issuer remembered; logout of one leaves the other', async () => {
    const home = tempConfigHome();
    // a is bound to a DPoP key (kept under its slot), b is Bearer.
    const a = await signIn(home, 'alice', ['--profile', 'a', '--issuer', server.issuer, '--dpop']);
    expect(JSON.parse(a.stdout)).toMatchObject({ profile: 'a', issuer: server.issuer, username: 'alice', token_type: 'DPoP' });
    await signIn(home, 'bob', ['--issuer', server.issuer], { AUTHCLI_PROFILE: 'b' });

    // No --issuer from here on: each profile signs in where it last did.
    const [alice, bob] = [await subjectOf(home, 'a'), await subjectOf(home, 'b', { AUTHCLI_PROFILE: 'ignored-by-the-flag' })];
    expect(alice).not.toBe(bob);
    const statusA = JSON.parse((await cli(home, ['status', '--json', '--profile', 'a'])).stdout);
    expect(statusA).toMatchObject({ signed_in: true, profile: 'a', issuer: server.issuer, username: 'alice', subject: alice });
    const statusB = await cli(home, ['status'], { AUTHCLI_PROFILE: 'b' });
    expect(statusB.stdout).toMatch(new RegExp(`^Signed in to ${server.issuer} as bob \\(subject ${bob}\\)\\n  profile:      b\\n`));
    // Stored apart, the default profile untouched (and, with no issuer of its own, at the built-in default).
    const file = JSON.parse(readFileSync(credentialsPath(home), 'utf8'));
    expect(Object.keys(file.sessions).sort()).toEqual([slot('a'), slot('b')]);
    const keys = JSON.parse(readFileSync(join(home, 'authcli', 'dpop-keys.json'), 'utf8'));
    expect(Object.keys(keys.keys)).toEqual([slot('a')]);
    // `authcli api` takes the profile's sign-in as `token` does (a with a proof of its key).
    for (const [profile, sub] of [
      ['a', alice],
      ['b', bob],
    ]) {
      const api = await cli(home, ['api', '/oauth/userinfo', '--profile', profile!]);
      expect(api.code, api.stderr).toBe(0);
      expect(JSON.parse(api.stdout).sub).toBe(sub);
    }
    // The default profile has no issuer of its own: at the built-in default, said with the issuer a and b use.
    const none = await cli(home, ['token']);
    expect(none.code).toBe(1);
    expect(none.stderr).toBe(
      `Profile default has no issuer: using http://localhost:8080 (the default), but profiles a and b use ${server.issuer}; pass --issuer ${server.issuer} to use it.\n` +
        'authcli: not signed in to http://localhost:8080; run `authcli login`\n',
    );

    const listed = await cli(home, ['profiles', '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({
        profile: 'a',
        issuer: server.issuer,
        client_id: 'authcli',
        username: 'alice',
        subject: alice,
        state: 'valid',
      }),
      expect.objectContaining({
        profile: 'b',
        issuer: server.issuer,
        username: 'bob',
        state: 'valid',
        storage: { kind: 'file', path: credentialsPath(home) },
      }),
    ]);
    const table = (await cli(home, ['profiles'])).stdout.split('\n');
    expect(table[0]).toMatch(/^PROFILE +ISSUER +CLIENT +USER +STATUS +STORED$/);
    expect(table[1]).toMatch(new RegExp(`^a +${server.issuer} +authcli +alice +valid +file$`));
    expect(table[2]).toMatch(new RegExp(`^b +${server.issuer} +authcli +bob +valid +file$`));
    expect(table[1]!.indexOf(server.issuer)).toBe(table[0]!.indexOf('ISSUER'));

    const logout = await cli(home, ['logout', '--profile', 'a']);
    expect(logout.code, logout.stderr).toBe(0);
    expect(logout.stdout).toBe(`Signed out of ${server.issuer} (profile a).\n`);
    expect((await grantsOf('alice')).map((g) => g.revoked)).toEqual([true]);
    expect((await grantsOf('bob')).map((g) => g.revoked)).toEqual([false]);
    const gone = await cli(home, ['token', '--profile', 'a']);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toBe(`authcli: not signed in to ${server.issuer} (profile a); run \`authcli login --profile a\`\n`);
    expect(await subjectOf(home, 'b')).toBe(bob);
    // b renews through the full path, at the issuer it remembers.
    expireStoredToken(home, slot('b'));
    expect(await subjectOf(home, 'b')).toBe(bob);
    expect(await grantsOf('bob')).toEqual([{ revoked: false, issued: 2, used: 1 }]);
    expect(
      JSON.parse((await cli(home, ['profiles', '--json'])).stdout).map((r: { profile: string; state: string }) => [r.profile, r.state]),
    ).toEqual([
      ['a', 'signed_out'],
      ['b', 'valid'],
    ]);
  });

  it('--profile and --storage before or after the command name: the same sign-in, the cached token still through the fast path', async () => {
    const home = tempConfigHome();
    await signIn(home, 'trent', ['--profile', 'w', '--issuer', server.issuer]);
    const after = await cli(home, ['token', '--profile', 'w']);
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+\n$/);
    for (const args of [
      ['--profile', 'w', 'token'],
      ['--profile=w', 'token'],
      ['--storage', 'file', '--profile', 'w', 'token'],
      ['--profile', 'w', 'token', '--storage', 'file'],
    ]) {
      const before = await cli(home, args);
      expect(before, args.join(' ')).toMatchObject({ code: 0, stdout: after.stdout });
    }
    // Before the command name it is still answered by dist/token-fast.cjs, without Node's ESM loader.
    const fast = await cli(home, ['--profile', 'w', 'token'], { NODE_DEBUG: 'module,esm' });
    expect(fast.stderr).toContain('dist/token-fast.cjs');
    expect(fast.stderr).not.toMatch(/^ESM \d+:/m);
    // Given both before and after, the one after the command name wins (it is closer to the command).
    expect((await cli(home, ['--profile', 'nobody', 'token', '--profile', 'w'])).stdout).toBe(after.stdout);
    expect(JSON.parse((await cli(home, ['--profile', 'w', 'status', '--json'])).stdout)).toMatchObject({ signed_in: true, profile: 'w' });
    const api = await cli(home, ['--profile', 'w', 'api', '/oauth/userinfo']);
    expect(api.code, api.stderr).toBe(0);
    // A command that has no such option says so, as for any unknown option.
    const remove = await cli(home, ['--profile', 'w', 'profiles', 'remove', 'w']);
    expect(remove.code).not.toBe(0);
    expect(remove.stderr).toBe('authcli: profiles remove takes no --profile option. See `authcli profiles remove --help`.\n');
    const bad = await cli(home, ['--profile', 'not a name', 'token']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/^authcli: .*profile/);
    expect((await cli(home, ['--profile', 'w', 'logout'])).code).toBe(0);
    expect((await cli(home, ['--profile', 'w', 'token'])).stderr).toMatch(/not signed in .*\(profile w\)/);
  });

  it('logins and refreshes of several profiles at once, and of one profile at once, lose nothing and send no refresh token twice', async () => {
    const home = tempConfigHome();
    await signIn(home, 'carol', ['--profile', 'p1', '--issuer', server.issuer, '--dpop']);
    await signIn(home, 'dave', ['--profile', 'p2', '--issuer', server.issuer]);
    expireStoredToken(home, slot('p1'));
    expireStoredToken(home, slot('p2'));
    // Three logins wait for their callbacks: two profiles new to this folder, and two at once on a third.
    const logins: { run: CliRun; callback: string }[] = [];
    for (const [user, profile] of [
      ['erin', 'p3'],
      ['frank', 'p4'],
      ['grace', 'p5'],
      ['grace', 'p5'],
    ] as const) {
      logins.push(await startLogin(home, user, ['--profile', profile, '--issuer', server.issuer, ...(profile === 'p3' ? ['--dpop'] : [])]));
    }
    // Everything lands together: four callbacks, and four `authcli token` on each expired profile.
    const tokens = ['p1', 'p2'].flatMap((profile) => Array.from({ length: 4 }, () => cli(home, ['token', '--profile', profile])));
    const [done, printed] = await Promise.all([
      Promise.all(
        logins.map(async (l) => {
          await fetch(l.callback);
          return l.run.exit;
        }),
      ),
      Promise.all(tokens),
    ]);
    for (const d of [...done, ...printed]) expect(d.code, d.stderr).toBe(0);
    // Each profile's parallel refreshes made one refresh: all four print the token it stored.
    expect(new Set(printed.slice(0, 4).map((p) => p.stdout)).size).toBe(1);
    expect(new Set(printed.slice(4).map((p) => p.stdout)).size).toBe(1);
    for (const user of ['carol', 'dave']) expect(await grantsOf(user), user).toEqual([{ revoked: false, issued: 2, used: 1 }]);
    // Every profile is stored and remembered; of the two logins on p5, the one stored last is the live one.
    const file = JSON.parse(readFileSync(credentialsPath(home), 'utf8'));
    expect(Object.keys(file.sessions).sort()).toEqual(['p1', 'p2', 'p3', 'p4', 'p5'].map(slot));
    const index = JSON.parse(readFileSync(join(home, 'authcli', 'profiles.json'), 'utf8'));
    expect(Object.keys(index.profiles).sort()).toEqual(['p1', 'p2', 'p3', 'p4', 'p5']);
    expect((await grantsOf('grace')).filter((g) => !g.revoked)).toHaveLength(1);
    const subjects = await Promise.all(['p1', 'p2', 'p3', 'p4', 'p5'].map((p) => subjectOf(home, p)));
    expect(new Set(subjects).size).toBe(5);
    // The stored refresh tokens are the live ones: each profile renews once more.
    for (const p of ['p1', 'p3', 'p5']) expireStoredToken(home, slot(p));
    await Promise.all(['p1', 'p3', 'p5'].map((p) => subjectOf(home, p)));
    expect(await grantsOf('carol')).toEqual([{ revoked: false, issued: 3, used: 2 }]);
    expect(await grantsOf('erin')).toEqual([{ revoked: false, issued: 2, used: 1 }]);
    expect((await grantsOf('grace')).filter((g) => !g.revoked)).toEqual([{ revoked: false, issued: 2, used: 1 }]);
  });

  it('a login on a signed-in profile, not on a terminal: says who is signed in and that it replaces it, then does; --force says nothing', async () => {
    const home = tempConfigHome();
    await signIn(home, 'heidi', ['--profile', 'work', '--issuer', server.issuer]);
    const again = await signIn(home, 'ivan', ['--profile', 'work']);
    expect(again.stderr).toContain(`Signed in to ${server.issuer} as heidi on profile work; signing in again replaces that sign-in.\n`);
    expect(again.stderr).not.toMatch(/Replace it\?/);
    expect(JSON.parse(again.stdout)).toMatchObject({ profile: 'work', username: 'ivan' });
    // The replaced sign-in is revoked at the server, as on every re-login.
    expect((await grantsOf('heidi')).map((g) => g.revoked)).toEqual([true]);
    const forced = await signIn(home, 'ivan', ['--profile', 'work', '--force']);
    expect(forced.stderr).not.toMatch(/replaces that sign-in/);
    // Another profile replaces nothing: no notice.
    const other = await signIn(home, 'heidi', ['--profile', 'home', '--issuer', server.issuer]);
    expect(other.stderr).not.toMatch(/replaces that sign-in/);
  });

  it('on a terminal, login asks before replacing the sign-in: no (or Ctrl-C) keeps it without a request, yes signs in', async () => {
    const home = tempConfigHome();
    await signIn(home, 'judy', ['--profile', 'work', '--issuer', server.issuer]);
    // Every request of the CLI goes through the proxy: what it forwarded is what reached the server.
    const proxy = await tunnelProxy();
    try {
      const env = envFor(home, { HTTP_PROXY: proxy.url, http_proxy: proxy.url });
      const args = ['login', '--profile', 'work', '--browser', '--no-open'];
      const no = runInTerminal(args, env);
      await no.waitFor(/Replace it\? \[y\/N\] $/);
      expect(no.screen()).toContain(`Signed in to ${server.issuer} as judy on profile work; signing in again replaces that sign-in.\r\n`);
      no.type('n\r');
      expect(await no.exit).toBe(1);
      expect(no.screen()).toContain(`authcli: kept the current sign-in to ${server.issuer} (profile work) as judy`);
      const cancelled = runInTerminal(args, env);
      await cancelled.waitFor(/Replace it\?/);
      cancelled.type('\x03');
      expect(await cancelled.exit).toBe(130);
      expect(proxy.answers()).toBe('');

      const yes = runInTerminal(args, env);
      await yes.waitFor(/Replace it\?/);
      yes.type('y\r');
      const [, url] = await yes.waitFor(/(http:\/\/\S+\/oauth\/authorize\?[^\s\x1b]+)/);
      await fetch(await approveInBrowser(new Browser(server.issuer), url!, 'mallory', PASSWORD));
      expect(await yes.exit).toBe(0);
      expect(proxy.answers()).not.toBe('');
    } finally {
      await proxy.close();
    }
    expect(JSON.parse((await cli(home, ['status', '--json', '--profile', 'work'])).stdout)).toMatchObject({ username: 'mallory' });
  });

  it('profile names are checked: a clear usage error for the flag, a config error for AUTHCLI_PROFILE, on every command', async () => {
    const home = tempConfigHome();
    for (const command of [['login', '--browser', '--no-open'], ['status'], ['token'], ['logout'], ['token', '--json']]) {
      const flag = await cli(home, [...command, '--profile', 'my work']);
      expect(flag.code, command.join(' ')).toBe(1);
      expect(flag.stdout).toBe('');
      expect(flag.stderr).toBe(
        `authcli: invalid profile name "my work": a profile name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit\n`,
      );
      const fromEnv = await cli(home, command, { AUTHCLI_PROFILE: '../x' });
      expect(fromEnv.code, command.join(' ')).toBe(1);
      expect(fromEnv.stderr).toMatch(/^authcli: AUTHCLI_PROFILE must be a profile name, not "\.\.\/x"/);
    }
  });

  it('where a profile signs in: --issuer > AUTHCLI_ISSUER > config.json profiles.<NAME> > its last sign-in > config.json > default', async () => {
    const home = tempConfigHome();
    const issuerOf = async (args: string[], env: Record<string, string> = {}) =>
      JSON.parse((await cli(home, ['status', '--json', ...args], env)).stdout).issuer as string;
    expect(await issuerOf(['--profile', 'w'])).toBe('http://localhost:8080');
    mkdirSync(join(home, 'authcli'), { recursive: true });
    const config = (value: unknown) => writeFileSync(join(home, 'authcli', 'config.json'), JSON.stringify(value));
    config({ issuer: 'https://top.example' });
    expect(await issuerOf(['--profile', 'w'])).toBe('https://top.example');
    await signIn(home, 'niaj', ['--profile', 'w', '--issuer', server.issuer]);
    expect(await issuerOf(['--profile', 'w'])).toBe(server.issuer);
    expect(await issuerOf([])).toBe('https://top.example');
    config({ issuer: 'https://top.example', profiles: { w: { issuer: 'https://section.example' } } });
    expect(await issuerOf(['--profile', 'w'])).toBe('https://section.example');
    expect(await issuerOf(['--profile', 'w'], { AUTHCLI_ISSUER: 'https://env.example' })).toBe('https://env.example');
    expect(await issuerOf(['--profile', 'w', '--issuer', 'https://flag.example'], { AUTHCLI_ISSUER: 'https://env.example' })).toBe(
      'https://flag.example',
    );
    // The fast path of `token` finds the same: the section's issuer, where w has no sign-in.
    const token = await cli(home, ['token', '--profile', 'w']);
    expect(token.code).toBe(1);
    expect(token.stderr).toBe('authcli: not signed in to https://section.example (profile w); run `authcli login --profile w`\n');
  });

  it('status: the expiry in the local time zone (TZ) with its name, ISO UTC in --json', async () => {
    const home = tempConfigHome();
    await signIn(home, 'olivia', ['--issuer', server.issuer]);
    const json = JSON.parse((await cli(home, ['status', '--json'])).stdout) as { expires_at: string; profile: string };
    expect(json.profile).toBe('default');
    expect(json.expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // The expiry as a clock in that zone shows it (seconds dropped), worked out from the UTC one.
    const shifted = (minutes: number) =>
      new Date(Date.parse(json.expires_at) + minutes * 60_000).toISOString().replace('T', ' ').slice(0, 16);
    const statusIn = async (tz: string) => (await cli(home, ['status'], { TZ: tz })).stdout;
    expect(await statusIn('UTC')).toContain(`  access token: valid, expires ${shifted(0)} UTC (in `);
    expect(await statusIn('Asia/Kolkata')).toContain(`  access token: valid, expires ${shifted(330)} GMT+5:30 (in `);
    const berlin = (await statusIn('Europe/Berlin')).match(/ {2}access token: valid, expires (\S+ \S+) GMT\+([12]) \(in \d+ min\)\n/);
    expect(berlin).not.toBeNull();
    expect(berlin![1]).toBe(shifted(60 * Number(berlin![2])));
    // The default profile is not named.
    expect((await cli(home, ['status'])).stdout).not.toMatch(/^ {2}profile:/m);
  });

  it('profiles remove: refused while the profile is signed in (the logout said), forgets it once signed out; removals at once keep every other profile', async () => {
    const home = tempConfigHome();
    await signIn(home, 'peggy', ['--profile', 'travel', '--issuer', server.issuer]);
    const refused = await cli(home, ['profiles', 'remove', 'travel']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `authcli: profile travel is signed in to ${server.issuer}. Sign out first: \`authcli logout --profile travel\`.\n`,
    );
    expect((await cli(home, ['logout', '--profile', 'travel'])).code).toBe(0);
    const removed = await cli(home, ['profiles', 'remove', 'travel']);
    expect([removed.code, removed.stdout, removed.stderr]).toEqual([0, '', 'Forgot profile travel.\n']);
    expect(JSON.parse((await cli(home, ['profiles', '--json'])).stdout)).toEqual([]);
    const again = await cli(home, ['profiles', 'remove', 'travel']);
    expect([again.code, again.stderr]).toEqual([1, 'authcli: no profile travel. `authcli profiles` lists them.\n']);
    expect((await cli(home, ['profiles', 'remove', 'no good'])).code).toBe(1);

    // Eight profiles remembered; six removed by six processes at once: the two others stay, nothing else is lost.
    const names = ['r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'stay1', 'stay2'];
    const remembered = Object.fromEntries(names.map((n) => [n, { issuer: server.issuer, client_id: 'authcli' }]));
    writeFileSync(join(home, 'authcli', 'profiles.json'), JSON.stringify({ version: 1, profiles: remembered }), { mode: 0o600 });
    const runs = await Promise.all(names.slice(0, 6).map((n) => cli(home, ['profiles', 'remove', n])));
    expect(runs.map((r) => r.code)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(Object.keys(JSON.parse(readFileSync(join(home, 'authcli', 'profiles.json'), 'utf8')).profiles)).toEqual(['stay1', 'stay2']);
    // One defined in config.json is the user's file to edit.
    writeFileSync(join(home, 'authcli', 'config.json'), JSON.stringify({ profiles: { stay1: { issuer: server.issuer } } }));
    const configured = await cli(home, ['profiles', 'remove', 'stay1']);
    expect([configured.code, configured.stderr]).toEqual([
      1,
      'authcli: profile stay1 is defined in config.json (its last sign-in is forgotten). Remove it from "profiles" in config.json.\n',
    ]);
  });

  it('credentials.json as the CLI wrote it before profiles: the default profile signs in with it, other profiles do not see it', async () => {
    const home = tempConfigHome();
    mkdirSync(join(home, 'authcli'), { mode: 0o700 });
    const claims = Buffer.from(JSON.stringify({ sub: 'old', exp: Math.floor(Date.now() / 1000) + 3600 })).toString('base64url');
    const accessToken = `eyJhbGciOiJFUzI1NiJ9.${claims}.c2ln`;
    const session = {
      client_id: 'authcli',
      access_token: accessToken,
      token_type: 'Bearer',
      expires_at: Date.now() + 3_600_000,
      scope: 'openid profile offline_access',
      refresh_token: 'old-refresh-token',
      subject: 'old',
      username: 'olduser',
      obtained_at: Date.now(),
    };
    writeFileSync(credentialsPath(home), JSON.stringify({ version: 1, sessions: { [server.issuer]: session } }), { mode: 0o600 });
    const env = { AUTHCLI_ISSUER: server.issuer };
    for (const args of [['token'], ['token', '--profile', 'default'], ['token', '--json']]) {
      const token = await cli(home, args, env);
      expect(token.code, token.stderr).toBe(0);
      expect(token.stdout).toContain(accessToken);
    }
    expect(JSON.parse((await cli(home, ['status', '--json'], env)).stdout)).toMatchObject({
      signed_in: true,
      profile: 'default',
      username: 'olduser',
    });
    expect((await cli(home, ['token', '--profile', 'other'], env)).code).toBe(1);
    expect(JSON.parse((await cli(home, ['profiles', '--json'])).stdout)).toEqual([
      expect.objectContaining({ profile: 'default', issuer: server.issuer, username: 'olduser', state: 'valid' }),
    ]);
    const out = await cli(home, ['logout', '--local'], env);
    expect(out.stdout).toBe(`Signed out of ${server.issuer} on this machine.\n`);
  });
});

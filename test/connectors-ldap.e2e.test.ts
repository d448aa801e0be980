import { afterAll, beforeAll, expect, it } from 'vitest';
import { Browser, hidden } from '@authcli/test-support/http';
import { dialects, freshDatabase, type TestDatabase } from '@authcli/test-support/databases';
import { addUsers } from '@authcli/test-support/seed';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';
import { DIRECTORY, HAS_SLAPD, SLAPD, type Slapd, startSlapd } from '@authcli/test-support/slapd';
import { describeWith } from '@authcli/test-support/tools';

/**
 * An LDAP connector in a real authcli-server against a real OpenLDAP (slapd): "Continue with NAME" leads to a
 * form that checks the directory's password; a wrong password shows the form again, a person outside the
 * allowed group is refused, a paused or stopped directory is answered with a clear page within 15 s while
 * local accounts keep signing in, and the connector recovers without a restart.
 */
const describeLdap = describeWith('slapd', HAS_SLAPD, `${SLAPD} is missing`);

describeLdap.each(dialects())('an LDAP connector: a real slapd behind a real server (%s)', (dialect) => {
  let server: ServerProcess;
  let slapd: Slapd;
  let db: TestDatabase;

  beforeAll(async () => {
    slapd = await startSlapd();
    db = await freshDatabase(dialect);
    server = await startServerProcess({ database: db.url });
    const added = await serverCommand(
      [
        'connectors',
        'add',
        'ldap',
        '--id',
        'directory',
        '--name',
        'Company Directory',
        '--url',
        slapd.url,
        '--bind-dn',
        DIRECTORY.serviceDn,
        '--bind-password-stdin',
        '--user-base',
        DIRECTORY.userBase,
        '--group-base',
        DIRECTORY.groupBase,
        '--allowed-group',
        'engineers',
      ],
      server.env,
      `${DIRECTORY.servicePassword}\n`,
    );
    expect(added.code, added.stderr).toBe(0);
    await addUsers(server.env, [{ username: 'local', password: 'local password 1' }]);
  });
  afterAll(async () => {
    await server?.stop();
    await slapd?.stop();
    await db?.cleanup();
  });

  /** The directory's form, reached from the sign-in page's "Continue with Company Directory". */
  async function directoryForm(b: Browser): Promise<string> {
    const signin = await b.get('/signin');
    const href = /href="(\/connectors\/directory\/signin[^"]*)"[^>]*>Continue with Company Directory</.exec(signin.text)?.[1];
    expect(href).toBeDefined();
    const form = await b.get(href!.replace(/&amp;/g, '&'));
    expect(form.status).toBe(200);
    return form.text;
  }
  const post = async (b: Browser, username: string, password: string) => {
    const form = await directoryForm(b);
    return b.postForm('/connectors/directory/signin', { _csrf: hidden(form, '_csrf'), username, password });
  };
  const signedInAs = async (b: Browser) => {
    const account = await b.get('/account');
    return account.status === 200 ? /Signed in as <strong>([^<]+)</.exec(account.text)?.[1] : undefined;
  };

  it('the directory password signs alice in, as the same user every time; a wrong one shows the form again', async () => {
    const b = new Browser(server.issuer);
    const wrong = await post(b, 'alice', 'not her password');
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('Invalid username or password.');
    expect(wrong.text).toContain('name="password"');
    const ok = await post(b, 'alice', DIRECTORY.users.alice.password);
    expect(ok.status).toBe(303);
    expect(await signedInAs(b)).toBe('alice');
    const again = new Browser(server.issuer);
    expect((await post(again, 'alice', DIRECTORY.users.alice.password)).status).toBe(303);
    const listed = JSON.parse((await serverCommand(['connectors', 'list', '--json'], server.env)).stdout) as { users: number }[];
    expect(listed[0]!.users).toBe(1);
    // Listed with its connector; a local account with none.
    const users = JSON.parse((await serverCommand(['users', 'list', '--json'], server.env)).stdout) as {
      username: string;
      connectors: string[];
    }[];
    expect(users.find((u) => u.username === 'alice')?.connectors).toEqual(['directory']);
    expect(users.find((u) => u.username === 'local')?.connectors).toEqual([]);
  });

  it('a local account links its directory account on /account (the directory checks the password), then signs in through it; unlinked, it no longer does', async () => {
    const added = await serverCommand(
      [
        'connectors',
        'add',
        'ldap',
        '--id',
        'dir2',
        '--name',
        'Second Directory',
        '--url',
        slapd.url,
        '--bind-dn',
        DIRECTORY.serviceDn,
        '--bind-password-stdin',
        '--user-base',
        DIRECTORY.userBase,
      ],
      server.env,
      `${DIRECTORY.servicePassword}\n`,
    );
    expect(added.code, added.stderr).toBe(0);
    await addUsers(server.env, [{ username: 'lee', password: 'local password 2' }]);
    const b = new Browser(server.issuer);
    const page = await b.get('/signin');
    expect((await b.postForm('/signin', { _csrf: hidden(page.text, '_csrf'), username: 'lee', password: 'local password 2' })).status).toBe(
      303,
    );
    const account = await b.get('/account');
    expect(account.text).toContain('Link Second Directory');
    const csrf = hidden(account.text, '_csrf');
    const wrong = await b.postForm('/connectors/dir2/link', { _csrf: csrf, username: 'carol', password: 'not hers' });
    expect(wrong.status).toBe(401);
    const linked = await b.postForm('/connectors/dir2/link', { _csrf: csrf, username: 'carol', password: DIRECTORY.users.carol.password });
    expect(linked.status).toBe(303);
    expect(linked.location).toBe('/account#connectors');
    const other = new Browser(server.issuer);
    const form = await other.get('/connectors/dir2/signin');
    const signedIn = await other.postForm('/connectors/dir2/signin', {
      _csrf: hidden(form.text, '_csrf'),
      username: 'carol',
      password: DIRECTORY.users.carol.password,
    });
    expect(signedIn.status).toBe(303);
    expect(await signedInAs(other)).toBe('lee');
    // Unlinked (lee signed in a moment ago): the directory account then signs in as a user of its own.
    const unlinked = await b.postForm('/connectors/dir2/unlink', { _csrf: hidden((await b.get('/account')).text, '_csrf') });
    expect(unlinked.status).toBe(303);
    const third = new Browser(server.issuer);
    const form3 = await third.get('/connectors/dir2/signin');
    await third.postForm('/connectors/dir2/signin', {
      _csrf: hidden(form3.text, '_csrf'),
      username: 'carol',
      password: DIRECTORY.users.carol.password,
    });
    expect(await signedInAs(third)).toBe('carol');
  });

  it("a directory name and a local account of the same name are counted apart: guessing one's password never locks out the other", async () => {
    // A server of its own with a small per-account budget, on the same directory.
    const own = await startServerProcess({ env: { AUTHCLI_LIMITS: 'signin-account-ip=3/15m,signin-account=3/15m' } });
    try {
      const added = await serverCommand(
        ['connectors', 'add', 'ldap', '--id', 'directory', '--name', 'Company Directory', '--url', slapd.url].concat([
          '--bind-dn',
          DIRECTORY.serviceDn,
          '--bind-password-stdin',
          '--user-base',
          DIRECTORY.userBase,
        ]),
        own.env,
        `${DIRECTORY.servicePassword}\n`,
      );
      expect(added.code, added.stderr).toBe(0);
      await addUsers(own.env, [
        { username: 'alice', password: 'local alice password' },
        { username: 'carol', password: 'local carol password' },
      ]);
      const directory = async (username: string, password: string) => {
        const b = new Browser(own.issuer);
        const form = await b.get('/connectors/directory/signin');
        return (await b.postForm('/connectors/directory/signin', { _csrf: hidden(form.text, '_csrf'), username, password })).status;
      };
      const local = async (username: string, password: string) => {
        const b = new Browser(own.issuer);
        const form = await b.get('/signin');
        return (await b.postForm('/signin', { _csrf: hidden(form.text, '_csrf'), username, password })).status;
      };
      // The directory's alice guessed until her budget is spent: the local alice still signs in, from the same address.
      for (let i = 0; i < 3; i++) expect(await directory('alice', `guess ${i}`)).toBe(401);
      expect(await directory('alice', 'guess 3')).toBe(429);
      expect(await local('alice', 'local alice password')).toBe(303);
      // And the other way round: the local carol guessed, the directory's carol signs in.
      for (let i = 0; i < 3; i++) expect(await local('carol', `guess ${i}`)).toBe(401);
      expect(await local('carol', 'guess 3')).toBe(429);
      expect(await directory('carol', DIRECTORY.users.carol.password)).toBe(303);
      // The operator unlocks the directory's alice by naming the connector; the local counters are not touched.
      const listed = await serverCommand(['limits', 'list', '--json'], own.env);
      expect(JSON.parse(listed.stdout)).toEqual(
        expect.arrayContaining([expect.objectContaining({ kind: 'signin-account-ip', subject: 'alice at directory', limited: true })]),
      );
      const unlocked = await serverCommand(['users', 'unlock', 'alice', '--connector', 'directory'], own.env);
      expect(unlocked.stdout.trim()).toMatch(/^unlocked alice at directory \(\d+ counters? cleared\)$/);
      expect(await directory('alice', DIRECTORY.users.alice.password)).toBe(303);
      expect(await local('carol', 'local carol password')).toBe(429);
    } finally {
      await own.stop();
    }
  });

  it('bob is outside the allowed group: refused with a page that says he may not use the service, and not which groups may', async () => {
    const b = new Browser(server.issuer);
    const refused = await post(b, 'bob', DIRECTORY.users.bob.password);
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('Not allowed');
    // That the person may not use this service, and nothing of which groups may: that is for the operator's log.
    expect(refused.text).toContain('your account may not use this service');
    expect(refused.text).not.toContain('engineers');
    expect(await signedInAs(b)).toBeUndefined();
  });

  it('the directory paused: a clear page within 15 s, local accounts keep signing in, and it recovers without a restart', async () => {
    await slapd.pause();
    try {
      const b = new Browser(server.issuer);
      const started = performance.now();
      const down = await post(b, 'alice', DIRECTORY.users.alice.password);
      const ms = performance.now() - started;
      expect(down.status).toBe(503);
      expect(down.text).toContain('Company Directory cannot be used right now');
      expect(ms).toBeLessThan(15_000);
      // A local account meanwhile.
      const local = new Browser(server.issuer);
      const page = await local.get('/signin');
      expect(
        (await local.postForm('/signin', { _csrf: hidden(page.text, '_csrf'), username: 'local', password: 'local password 1' })).status,
      ).toBe(303);
    } finally {
      slapd.resume();
    }
    const back = new Browser(server.issuer);
    expect((await post(back, 'alice', DIRECTORY.users.alice.password)).status).toBe(303);
  });
});

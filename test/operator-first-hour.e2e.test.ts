// The operator's first hour (issue 41): commands that know the issuer the server serves at, and that say which
// store they used and never make one by only reading.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '@authcli/test-support/http';
import { SERVER_BIN, serverCommand, waitUntilReady } from '@authcli/test-support/server-process';
import { runInTerminal } from '@authcli/test-support/pty';
import { withStore } from '@authcli/server';
import { passwordMatches } from '@authcli/server/testing';

const addConnector = (env: NodeJS.ProcessEnv, id: string) =>
  serverCommand(
    [
      'connectors',
      'add',
      'oidc',
      '--id',
      id,
      '--name',
      'Corp SSO',
      '--issuer',
      'https://sso.corp.example',
      '--client-id',
      'authcli',
      '--client-secret-stdin',
    ],
    env,
    'upstream secret\n',
  );

describe("the operator's first hour", () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });

  function folder(): string {
    const dir = mkdtempSync(join(tmpdir(), 'authcli-first-hour-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  }

  it('a listing command in a folder without a store says so and makes none; one run without a named store says which it used', async () => {
    // Run in a folder of its own with no DATABASE_URL: the store is ./data/authcli.db there.
    const dir = folder();
    const database = join(dir, 'data', 'authcli.db');
    for (const args of [['users', 'list'], ['apps', 'list'], ['audit'], ['resources', 'list', '--json']]) {
      const listed = await serverCommand(args, {}, undefined, dir);
      expect(listed.code, args.join(' ')).toBe(1);
      expect(listed.stderr).toContain(`no store at ${database}`);
      expect(listed.stdout).toBe('');
    }
    expect(existsSync(database)).toBe(false);
    // A change makes the store, and says where: run from another folder, the operator sees it is not the server's.
    const added = await serverCommand(['users', 'add', 'ada', '--password-stdin'], {}, 'a long enough password\n', dir);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stderr).toContain(`authcli-server: store: SQLite ${database}`);
    const listed = await serverCommand(['users', 'list', '--json'], {}, undefined, dir);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stderr).toBe(`authcli-server: store: SQLite ${database}\n`);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ username: 'ada' })]);
    // A store named with DATABASE_URL (or --database) is the operator's own word: nothing more is said.
    const named = await serverCommand(['users', 'list', '--json'], { DATABASE_URL: database });
    expect(named.stderr).toBe('');
  });

  it('connector redirect URIs: a guess said as one before the server ever started, then the issuer `start --port P` serves at, whatever PORT says', async () => {
    const dir = folder();
    const env = { DATABASE_URL: join(dir, 'authcli.db') };
    const before = await addConnector(env, 'early');
    expect(before.code, before.stderr).toBe(0);
    expect(before.stdout).toContain('its redirect URI, to register at the upstream: http://localhost:8080/connectors/early/callback');
    expect(before.stdout).toContain('a guess: no server has started on this store yet');

    // Started with --port and no AUTHCLI_ISSUER: its issuer is http://localhost:<port>.
    const port = await freePort();
    let out = '';
    const server: ChildProcess = spawn(process.execPath, [SERVER_BIN, 'start', '--port', String(port)], {
      env: { ...process.env, ...env, HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    server.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    cleanup.push(async () => {
      if (server.exitCode !== null) return;
      const exited = new Promise((r) => server.once('exit', r));
      server.kill('SIGTERM');
      await exited;
    });
    await waitUntilReady(`http://127.0.0.1:${port}`, server, () => out);

    // This shell has no PORT: the command names the issuer the server serves at.
    const after = await addConnector(env, 'corp');
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout).toContain(`its redirect URI, to register at the upstream: http://localhost:${port}/connectors/corp/callback`);
    expect(after.stdout).not.toContain('a guess');
    const listed = await serverCommand(['connectors', 'list', '--json'], env);
    expect(JSON.parse(listed.stdout)).toEqual(
      expect.arrayContaining([expect.objectContaining({ id: 'corp', redirect_uri: `http://localhost:${port}/connectors/corp/callback` })]),
    );
    // AUTHCLI_ISSUER, when it is set, is the operator's word.
    const named = await addConnector({ ...env, AUTHCLI_ISSUER: 'https://id.example.com' }, 'named');
    expect(named.stdout).toContain('https://id.example.com/connectors/named/callback');
  });

  it('remove on a terminal says what goes and asks: Enter or n keeps it, y removes it', async () => {
    const env = { DATABASE_URL: join(folder(), 'authcli.db') };
    expect((await serverCommand(['users', 'add', 'ada', '--password-stdin'], env, 'a long enough password\n')).code).toBe(0);
    const users = async () =>
      (JSON.parse((await serverCommand(['users', 'list', '--json'], env)).stdout) as { username: string }[]).map((u) => u.username);
    for (const answer of ['\r', 'n\r', 'yess\r']) {
      const kept = runInTerminal(['users', 'remove', 'ada'], env, { bin: SERVER_BIN });
      await kept.waitFor(/Remove user ada\? \[y\/N\] /);
      expect(kept.screen()).toContain(
        'Removing user ada: their sign-ins at 0 applications end (those with a back-channel logout URI are told), their 0 passkeys, sessions and connector links are deleted. This cannot be undone.',
      );
      kept.type(answer);
      expect(await kept.exit, JSON.stringify(answer)).toBe(1);
      expect(kept.screen()).toContain('authcli-server: kept user ada');
      expect(await users()).toEqual(['ada']);
    }
    const removed = runInTerminal(['users', 'remove', 'ada'], env, { bin: SERVER_BIN });
    await removed.waitFor(/\[y\/N\] /);
    removed.type('Y\r');
    expect(await removed.exit).toBe(0);
    expect(removed.screen()).toContain('removed user ada');
    expect(await users()).toEqual([]);
  });

  it('users add on a terminal: a refused password is asked again with the reason, then typed twice; a name taken is said first', async () => {
    const database = join(folder(), 'authcli.db');
    const env = { DATABASE_URL: database };
    const add = runInTerminal(['users', 'add', 'bea'], env, { bin: SERVER_BIN });
    // The n-th prompt (the hidden prompt draws itself with cursor escapes, so prompts are counted).
    const nth = (text: string, n: number) => new RegExp(`(${text}[\\s\\S]*){${n}}`);
    await add.waitFor(nth('Password for bea: ', 1));
    add.type('short\r');
    await add.waitFor(/password must be at least 8 characters; try again[\s\S]*Password for bea: /);
    add.type('a long enough password\r');
    await add.waitFor(nth('Again, to confirm: ', 1));
    add.type('a long enough passwrod\r');
    await add.waitFor(/the two passwords differ; try again[\s\S]*Password for bea: /);
    add.type('the kept password\r');
    await add.waitFor(nth('Again, to confirm: ', 2));
    add.type('the kept password\r');
    expect(await add.exit, add.screen()).toBe(0);
    expect(add.screen()).toContain('added user bea');
    expect(add.screen()).not.toContain('kept password');
    const hash = await withStore(database, async (store) => (await store.users.findByUsername('bea'))!.password_hash);
    expect(passwordMatches('the kept password', hash)).toBe(true);
    expect(passwordMatches('a long enough password', hash)).toBe(false);

    // Three refusals: nothing is added.
    const given = runInTerminal(['users', 'add', 'cal'], env, { bin: SERVER_BIN });
    for (let i = 0; i < 3; i++) {
      await given.waitFor(nth('Password for cal: ', i + 1));
      given.type('x\r');
    }
    expect(await given.exit).toBe(1);
    expect(given.screen()).toContain('authcli-server: no password set: 3 tries');
    // A name already taken, or not a username, is said before any password is asked for (no terminal needed).
    const taken = await serverCommand(['users', 'add', 'bea'], env);
    expect(taken.code).toBe(1);
    expect(taken.stderr.trim().split('\n').at(-1)).toBe('authcli-server: user bea already exists');
    const bad = await serverCommand(['users', 'add', 'no spaces'], env);
    expect(bad.stderr).toContain('username must be 1-64 characters');
    // Longer than the sign-in form takes, a password could never be used.
    const long = await serverCommand(['users', 'add', 'dan', '--password-stdin'], env, `${'p'.repeat(1025)}\n`);
    expect(long.stderr.trim().split('\n').at(-1)).toBe('authcli-server: password must be at most 1024 characters');
    const users = JSON.parse((await serverCommand(['users', 'list', '--json'], env)).stdout) as { username: string }[];
    expect(users.map((u) => u.username)).toEqual(['bea']);
  });
});

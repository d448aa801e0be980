import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, tempConfigHome, type CliRun } from '@authcli/test-support/cli-process';
import { approveInBrowser, Browser } from '@authcli/test-support/http';
import { startSecretService, type SecretService } from '@authcli/test-support/secret-service';
import { expireStoredToken } from '@authcli/test-support/credentials';
import { addUsers } from '@authcli/test-support/seed';
import { startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const PASSWORD = 'keychain e2e password';

describe('credential storage: the Secret Service (gnome-keyring) and the file fallback', () => {
  let server: ServerProcess;

  beforeAll(async () => {
    server = await startServerProcess();
    await addUsers(server.env, [
      { username: 'alice', password: PASSWORD },
      { username: 'bob', password: PASSWORD },
    ]);
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** A Secret Service of the test's own, stopped after it. */
  async function secretService(): Promise<SecretService> {
    const ss = await startSecretService();
    onTestFinished(() => ss.stop());
    return ss;
  }

  const account = () => `${server.issuer} authcli`;
  const credentialsFile = (home: string) => join(home, 'authcli', 'credentials.json');
  const noticeMarker = (home: string) => join(home, 'authcli', 'storage-notice');

  /** `authcli login --browser`; `between` runs after the authorization URL is printed and before the user approves. */
  async function login(
    env: Record<string, string>,
    args: string[] = [],
    between?: () => Promise<void>,
    user = 'alice',
  ): Promise<Awaited<CliRun['exit']>> {
    const run = runCli(['login', '--browser', '--no-open', ...args], env);
    const [, url] = await run.waitFor(/^\s+(http:\/\/\S+\/oauth\/authorize\?\S+)$/m);
    await between?.();
    const callback = await approveInBrowser(new Browser(server.issuer), url!, user, PASSWORD);
    await fetch(callback);
    const done = await run.exit;
    expect(done.code, done.stderr).toBe(0);
    return done;
  }

  async function tokenWorks(env: Record<string, string>, args: string[] = []): Promise<string> {
    const token = await runCli(['token', ...args], env).exit;
    expect(token.code, token.stderr).toBe(0);
    const accessToken = token.stdout.trim();
    // A plain login is Bearer (RFC 6750): the token works as `Authorization: Bearer $(authcli token)`.
    const info = await fetch(`${server.issuer}/oauth/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } });
    expect(info.status).toBe(200);
    return accessToken;
  }

  /** A keychain secret whose access token has expired, so the next `authcli token` refreshes and writes the session back. */
  const expired = (secret: string) => JSON.stringify({ ...JSON.parse(secret), expires_at: Date.now() - 1000 });

  it('with a Secret Service: login stores in the keychain and writes no file; status, token and refresh use it; logout removes it', async () => {
    const ss = await secretService();
    const home = tempConfigHome();
    const env = { XDG_CONFIG_HOME: home, AUTHCLI_ISSUER: server.issuer, ...ss.env };
    const done = await login(env);
    expect(done.stderr).not.toMatch(/keychain|credentials are kept/i);

    // In gnome-keyring under service `authcli`, account `<issuer> <client_id>`, read back by libsecret's secret-tool.
    const stored = JSON.parse((await ss.lookup(account()))!);
    expect(stored).toMatchObject({ client_id: 'authcli', username: 'alice' });
    expect(stored.refresh_token).toBeTruthy();
    expect(existsSync(credentialsFile(home))).toBe(false);
    expect(existsSync(noticeMarker(home))).toBe(false);

    const status = await runCli(['status'], env).exit;
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('stored in:    keychain (Secret Service)');
    const json = JSON.parse((await runCli(['status', '--json'], env).exit).stdout);
    expect(json).toMatchObject({ signed_in: true, username: 'alice', storage: { kind: 'keychain', name: 'Secret Service' } });

    // A valid access token comes straight from the keychain.
    expect(await tokenWorks(env)).toBe(stored.access_token);

    // Expired: `token` refreshes and stores the rotated refresh token back in the keychain.
    await ss.store(account(), expired(JSON.stringify(stored)));
    const fresh = await tokenWorks(env);
    expect(fresh).not.toBe(stored.access_token);
    const rotated = JSON.parse((await ss.lookup(account()))!);
    expect(rotated.access_token).toBe(fresh);
    expect(rotated.refresh_token).not.toBe(stored.refresh_token);
    expect(existsSync(credentialsFile(home))).toBe(false);

    const logout = await runCli(['logout'], env).exit;
    expect(logout.code, logout.stderr).toBe(0);
    expect(await ss.lookup(account())).toBeUndefined();
    const after = await runCli(['status'], env).exit;
    expect(after.code).toBe(1);
    expect(after.stdout).toContain('Not signed in');
  });

  it('profiles in the keychain: an entry per profile (account `<issuer>#<profile> <client_id>`), its own DPoP key; logout of one leaves the other', async () => {
    const ss = await secretService();
    const home = tempConfigHome();
    const env = { XDG_CONFIG_HOME: home, AUTHCLI_ISSUER: server.issuer, ...ss.env };
    await login(env);
    await login(env, ['--profile', 'work', '--dpop'], undefined, 'bob');
    const workAccount = `${server.issuer}#work authcli`;
    const [alice, bob] = [JSON.parse((await ss.lookup(account()))!), JSON.parse((await ss.lookup(workAccount))!)];
    expect(alice).toMatchObject({ username: 'alice', token_type: 'Bearer' });
    expect(bob).toMatchObject({ username: 'bob', token_type: 'DPoP' });
    // The bound sign-in's DPoP key beside it, under the profile's slot.
    expect(await ss.lookup(`${server.issuer}#work ${bob.dpop_jkt}`, 'authcli-dpop')).toBeTruthy();
    expect(await ss.lookup(`${server.issuer} ${bob.dpop_jkt}`, 'authcli-dpop')).toBeUndefined();
    expect(existsSync(credentialsFile(home))).toBe(false);

    /** Userinfo through `authcli api` on the profile: the bound token with a proof by the key in the keychain. */
    const whoami = async (args: string[] = []) => {
      const api = await runCli(['api', '/oauth/userinfo', ...args], env).exit;
      expect(api.code, api.stderr).toBe(0);
      return JSON.parse(api.stdout).preferred_username as string;
    };
    expect(await whoami(['--profile', 'work'])).toBe('bob');
    expect(await whoami()).toBe('alice');
    expect(await tokenWorks(env)).toBe(alice.access_token);
    const listed = JSON.parse((await runCli(['profiles', '--json'], env).exit).stdout);
    const keychain = { kind: 'keychain', name: 'Secret Service' };
    expect(listed).toEqual([
      expect.objectContaining({ profile: 'default', username: 'alice', state: 'valid', storage: keychain }),
      expect.objectContaining({ profile: 'work', username: 'bob', state: 'valid', storage: keychain }),
    ]);
    // A refresh on the profile writes its own entry back, bound to the same key.
    await ss.store(workAccount, expired(JSON.stringify(bob)));
    const fresh = await runCli(['token', '--profile', 'work'], env).exit;
    expect(fresh.code, fresh.stderr).toBe(0);
    const refreshed = JSON.parse((await ss.lookup(workAccount))!);
    expect(refreshed).toMatchObject({ access_token: fresh.stdout.trim(), dpop_jkt: bob.dpop_jkt });
    expect(refreshed.access_token).not.toBe(bob.access_token);
    expect(await whoami(['--profile', 'work'])).toBe('bob');
    expect(JSON.parse((await ss.lookup(account()))!).access_token).toBe(alice.access_token);

    // Signed in to the keychain: not forgotten, even by a command told to use the file.
    const kept = await runCli(['profiles', 'remove', 'work'], { ...env, AUTHCLI_STORAGE: 'file' }).exit;
    expect([kept.code, kept.stderr]).toEqual([
      1,
      `authcli: profile work is signed in to ${server.issuer}. Sign out first: \`authcli logout --profile work\`.\n`,
    ]);
    const logout = await runCli(['logout', '--profile', 'work'], env).exit;
    expect(logout.code, logout.stderr).toBe(0);
    expect(await ss.lookup(workAccount)).toBeUndefined();
    expect(await ss.lookup(`${server.issuer}#work ${bob.dpop_jkt}`, 'authcli-dpop')).toBeUndefined();
    expect(await tokenWorks(env)).toBe(alice.access_token);
    expect((await runCli(['status', '--profile', 'work'], env).exit).code).toBe(1);
  });

  it('without a D-Bus session (no Secret Service): the 0600 file is used and "no keychain available" is said once per config folder', async () => {
    const home = tempConfigHome();
    const env = { XDG_CONFIG_HOME: home, AUTHCLI_ISSUER: server.issuer };
    const file = credentialsFile(home);
    const notice = `No keychain available: credentials are kept in ${file}.`;

    const first = await login(env);
    expect(first.stderr.split('\n').filter((l) => l === notice)).toHaveLength(1);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(file, 'utf8')).sessions[server.issuer];
    expect(stored.refresh_token).toBeTruthy();

    const status = await runCli(['status'], env).exit;
    expect(status.stdout).toContain(`stored in:    ${file}`);
    expect(JSON.parse((await runCli(['status', '--json'], env).exit).stdout).storage).toEqual({ kind: 'file', path: file });

    // Not again: not on `token`, not on a refresh that rewrites the file, not on the next login.
    const token = await runCli(['token'], env).exit;
    expect(token.stderr).not.toMatch(/keychain|credentials are kept/i);
    expireStoredToken(home, server.issuer);
    const { stderr } = await runCli(['token'], env).exit;
    expect(stderr).not.toMatch(/keychain|credentials are kept/i);
    expect(JSON.parse(readFileSync(file, 'utf8')).sessions[server.issuer].refresh_token).not.toBe(stored.refresh_token);
    expect((await login(env)).stderr).not.toContain('No keychain available');

    // Another config folder has not been told.
    const other = tempConfigHome();
    expect((await login({ ...env, XDG_CONFIG_HOME: other })).stderr).toContain(
      `No keychain available: credentials are kept in ${credentialsFile(other)}.`,
    );

    const logout = await runCli(['logout'], env).exit;
    expect(logout.code, logout.stderr).toBe(0);
    expect(existsSync(file)).toBe(false);
  });

  it('a keychain write that fails (keyring locked during login) falls back to the file, keeps the token, says so; the next write returns to the keychain', async () => {
    const ss = await secretService();
    const home = tempConfigHome();
    const env = { XDG_CONFIG_HOME: home, AUTHCLI_ISSUER: server.issuer, ...ss.env };
    const file = credentialsFile(home);

    const done = await login(env, [], () => ss.lock());
    expect(done.stderr).toMatch(
      /The keychain \(Secret Service\) could not store the credentials: .*prompt.*; they are kept in \S+credentials\.json instead\./,
    );
    expect(await ss.lookup(account())).toBeUndefined();
    expect(statSync(file).mode & 0o777).toBe(0o600);
    await tokenWorks(env);
    const status = await runCli(['status'], env).exit;
    expect(status.stdout).toContain(`stored in:    ${file}`);

    // Unlocked again: the next write (a refresh) goes to the keychain and the file's copy is removed.
    await ss.unlock();
    expireStoredToken(home, server.issuer);
    const fresh = await tokenWorks(env);
    expect(JSON.parse((await ss.lookup(account()))!).access_token).toBe(fresh);
    expect(existsSync(file)).toBe(false);
    expect(existsSync(noticeMarker(home))).toBe(false);
    expect((await runCli(['status'], env).exit).stdout).toContain('stored in:    keychain (Secret Service)');
  });

  it('a keychain write that fails (gnome-keyring killed during login) falls back to the file without losing the token', async () => {
    const ss = await secretService();
    const home = tempConfigHome();
    const env = { XDG_CONFIG_HOME: home, AUTHCLI_ISSUER: server.issuer, ...ss.env };
    const done = await login(env, [], () => ss.kill());
    expect(done.stderr).toMatch(
      /The keychain \(Secret Service\) could not store the credentials: .*org\.freedesktop\.secrets.*; they are kept in \S+ instead\./,
    );
    await tokenWorks(env);
    expect((await runCli(['status'], env).exit).stdout).toContain(`stored in:    ${credentialsFile(home)}`);
    // Said once: a refresh that again cannot reach the keychain stays quiet.
    expireStoredToken(home, server.issuer);
    const refreshed = await runCli(['token'], env).exit;
    expect(refreshed.code, refreshed.stderr).toBe(0);
    expect(refreshed.stderr).not.toMatch(/keychain|credentials are kept/i);
  });

  it('a locked keyring holding the session is said, not taken for "signed out"', async () => {
    const ss = await secretService();
    const home = tempConfigHome();
    const env = { XDG_CONFIG_HOME: home, AUTHCLI_ISSUER: server.issuer, ...ss.env };
    await login(env);
    await ss.lock();
    for (const command of ['token', 'status']) {
      const locked = await runCli([command], env).exit;
      expect(locked.code, command).toBe(1);
      expect(locked.stdout).toBe('');
      expect(locked.stderr).toMatch(
        /^authcli: the keychain \(Secret Service\) is locked \(.*IsLocked.*\); unlock it, or use --storage file\n$/,
      );
    }
    await ss.unlock();
    await tokenWorks(env);
  });

  it('--storage file and AUTHCLI_STORAGE=file keep credentials in the file even with a keychain, without a notice', async () => {
    const ss = await secretService();
    const home = tempConfigHome();
    const env = { XDG_CONFIG_HOME: home, AUTHCLI_ISSUER: server.issuer, ...ss.env };
    const done = await login(env, ['--storage', 'file']);
    expect(done.stderr).not.toMatch(/keychain|credentials are kept/i);
    expect(await ss.lookup(account())).toBeUndefined();
    expect(JSON.parse(readFileSync(credentialsFile(home), 'utf8')).sessions[server.issuer].username).toBe('alice');
    await tokenWorks(env, ['--storage', 'file']);
    await tokenWorks({ ...env, AUTHCLI_STORAGE: 'file' });
    // Without the choice, reading looks in both places and finds it in the file.
    expect((await runCli(['status'], env).exit).stdout).toContain(`stored in:    ${credentialsFile(home)}`);
    // The flag wins over the environment.
    expect((await runCli(['status', '--storage', 'file'], { ...env, AUTHCLI_STORAGE: 'keychain' }).exit).code).toBe(0);
    const other = tempConfigHome();
    await login({ ...env, XDG_CONFIG_HOME: other, AUTHCLI_STORAGE: 'file' });
    expect(existsSync(credentialsFile(other))).toBe(true);
    expect(await ss.lookup(account())).toBeUndefined();
  });

  it('--storage keychain where none answers falls back to the file and says so every time; an unknown storage is refused', async () => {
    const home = tempConfigHome();
    const env = { XDG_CONFIG_HOME: home, AUTHCLI_ISSUER: server.issuer };
    for (let i = 0; i < 2; i++) {
      const done = await login(env, ['--storage', 'keychain']);
      expect(done.stderr).toMatch(/The keychain \(Secret Service\) could not store the credentials: .*; they are kept in \S+ instead\./);
    }
    await tokenWorks(env, ['--storage', 'keychain']);

    const flag = await runCli(['status', '--storage', 'floppy'], env).exit;
    expect(flag.code).toBe(1);
    expect(flag.stderr).toMatch(/'floppy' is invalid/);
    const fromEnv = await runCli(['status'], { ...env, AUTHCLI_STORAGE: 'floppy' }).exit;
    expect(fromEnv.code).toBe(1);
    expect(fromEnv.stderr).toBe('authcli: AUTHCLI_STORAGE must be file or keychain, not "floppy"\n');
  });
});

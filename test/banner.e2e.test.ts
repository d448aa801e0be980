import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '@authcli/test-support/http';
import { SERVER_BIN, startServerProcess, waitUntilReady, type ServerProcess } from '@authcli/test-support/server-process';

/** The checkout: the server's bin is packages/server/bin/authcli-server.cjs in it. */
const ROOT = resolve(dirname(SERVER_BIN), '../../..');

describe('what `authcli-server start` says', () => {
  let server: ServerProcess | undefined;
  afterEach(async () => server?.stop());

  it('not on a terminal: JSON log lines only on stdout, the start among them', async () => {
    server = await startServerProcess({ env: { LOG_LEVEL: 'info' } });
    for (let i = 0; i < 50 && !server.output().includes('authcli-server started'); i++) await new Promise((r) => setTimeout(r, 100));
    const stdout = server
      .output()
      .split('\n')
      .filter((l) => l && !l.startsWith('authcli-server: warning:'));
    const lines = stdout.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.find((l) => l.msg === 'authcli-server started')).toMatchObject({
      issuer: server.issuer,
      store: expect.stringMatching(/^SQLite \//),
      listening: `127.0.0.1:${new URL(server.issuer).port}`,
      dashboard: `${server.issuer}/dashboard`,
      signingThreads: expect.any(String),
      // The test server's issuer is its IP address (startServerProcess): no passkeys there, and it says why.
      passkeys: expect.stringMatching(/^unavailable: Passkeys need this server to be reached by a domain name/),
    });
  });

  it('with AUTHCLI_FAPI2=on, each application that will get no tokens is named at start with why (the built-in public one among them)', async () => {
    server = await startServerProcess({ env: { AUTHCLI_FAPI2: 'on' } });
    expect(server.output()).toContain(
      'authcli-server: warning: authcli (authcli) will get no tokens: FAPI 2.0 (AUTHCLI_FAPI2=on) allows confidential applications only',
    );
    await server.stop();
    server = await startServerProcess();
    expect(server.output()).not.toContain('will get no tokens');
  });

  it('a password-hash cost below the production floor is warned about at start; at the default, no such warning', async () => {
    const weak = 'authcli-server: warning: AUTHCLI_PASSWORD_HASH_COST=10 is below the production minimum (16';
    // The tests' own cost (vitest sets AUTHCLI_PASSWORD_HASH_COST=10 for every process they start).
    server = await startServerProcess({ env: { AUTHCLI_PASSWORD_HASH_COST: '10' } });
    expect(server.output()).toContain(weak);
    await server.stop();
    // Unset, as on a real server: the default cost, no warning (starting costs no hash).
    server = await startServerProcess({ env: { AUTHCLI_PASSWORD_HASH_COST: '' } });
    expect(server.output()).not.toContain('AUTHCLI_PASSWORD_HASH_COST');
  });

  it('on a terminal: a banner of text (the metrics address among it when on), no JSON; a warning when listening beyond loopback with a loopback issuer; with no user, the command that adds one, which works as printed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'authcli-banner-'));
    const port = await freePort();
    const metricsPort = await freePort();
    // util-linux `script` gives the server a pseudo-terminal for stdout. Started from the checkout, as `pnpm start` does.
    const child = spawn('script', ['-qefc', `${process.execPath} ${SERVER_BIN} start --host 0.0.0.0`, '/dev/null'], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: String(port),
        DATABASE_URL: join(dir, 'authcli.db'),
        LOG_LEVEL: 'info',
        AUTHCLI_METRICS_PORT: String(metricsPort),
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await waitUntilReady(`http://127.0.0.1:${port}`, child, () => out);
      for (let i = 0; i < 50 && !out.includes('Ctrl-C stops it.'); i++) await new Promise((r) => setTimeout(r, 100));
      expect(out).toContain(
        `authcli-server: warning: listening on 0.0.0.0 but the issuer is http://localhost:${port}: verification URLs, QR codes and redirects will point other machines at themselves`,
      );
      expect(out).toMatch(/^authcli-server \d+\.\d+\.\d+\r?$/m);
      expect(out).toMatch(new RegExp(`^  issuer: +http://localhost:${port}\\r?$`, 'm'));
      expect(out).toMatch(/^ {2}store: +SQLite \//m);
      expect(out).toMatch(new RegExp(`^  listening on: +0\\.0\\.0\\.0:${port}\\r?$`, 'm'));
      expect(out).toMatch(new RegExp(`^  dashboard: +http://localhost:${port}/dashboard\\r?$`, 'm'));
      expect(out).toMatch(/^ {2}signing threads: +\S+/m);
      expect(out).toMatch(/^ {2}passkeys: +available\r?$/m);
      // Not the CLI's default issuer (another port): the line to give the CLI.
      expect(out).toContain(`the CLI signs in here with: authcli login --issuer http://localhost:${port}`);
      // The metrics listener stays on loopback whatever --host says (AUTHCLI_METRICS_HOST moves it).
      expect(out).toMatch(new RegExp(`^  metrics: +http://127\\.0\\.0\\.1:${metricsPort}/metrics\\r?$`, 'm'));
      expect(out).not.toContain('{"level"');
      // An empty store: how to add the first user, as the README says it, with the store this server uses.
      const database = join(dir, 'authcli.db');
      expect(out).toContain(`no users yet: add one from a second terminal, in ${ROOT} (it asks for a password):`);
      const command = out.match(/^ {2}(node .* users add NAME.*?)\r?$/m)?.[1];
      expect(command).toBe(`node packages/server/bin/authcli-server.cjs users add NAME --database ${database}`);
      expect(out).toMatch(new RegExp(`^then sign in at http://localhost:${port}/signin\\r?$`, 'm'));
      // Typed in a second terminal in that folder, which has none of the server's environment: it adds the user there.
      const { DATABASE_URL: _, ...shell } = process.env;
      const added = spawnSync('sh', ['-c', `${command!.replace('NAME', 'ada')} --password-stdin`], {
        cwd: ROOT,
        env: shell,
        input: 'a long enough password\n',
        encoding: 'utf8',
      });
      expect(added.status, added.stderr).toBe(0);
      const listed = spawnSync(process.execPath, [SERVER_BIN, 'users', 'list', '--json'], {
        env: { ...shell, DATABASE_URL: database },
        encoding: 'utf8',
      });
      expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ username: 'ada' })]);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 300));
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '@authcli/test-support/http';
import { SERVER_BIN, startServerProcess, waitUntilReady, type ServerProcess } from '@authcli/test-support/server-process';

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

  it('on a terminal: a banner of text (the metrics address among it when on), no JSON; a warning when listening beyond loopback with a loopback issuer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'authcli-banner-'));
    const port = await freePort();
    const metricsPort = await freePort();
    // util-linux `script` gives the server a pseudo-terminal for stdout.
    const child = spawn('script', ['-qefc', `${process.execPath} ${SERVER_BIN} start --host 0.0.0.0`, '/dev/null'], {
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
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 300));
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

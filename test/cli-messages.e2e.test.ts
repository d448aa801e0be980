import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, tempConfigHome } from '@authcli/test-support/cli-process';
import { freePort } from '@authcli/test-support/http';
import { addApp } from '@authcli/test-support/seed';
import { startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

/** Every failure is one line on stderr (message, then what to check), nothing on stdout. */
function oneLine(run: { stdout: string; stderr: string }): string {
  expect(run.stdout).toBe('');
  const lines = run.stderr.split('\n').filter(Boolean);
  expect(lines, run.stderr).toHaveLength(1);
  return lines[0]!;
}

async function listening(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return String((server.address() as AddressInfo).port);
}

describe('authcli messages: one line and a hint, the detail with --debug', () => {
  let server: ServerProcess;
  let confidential: { client_id: string; client_secret: string };

  beforeAll(async () => {
    server = await startServerProcess();
    confidential = (await addApp(server.env, {
      name: 'Build bot',
      kind: 'confidential',
      scopes: ['openid', 'profile'],
      grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'],
    })) as typeof confidential;
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('server down: "cannot reach …: connection refused. Is the server running?", exit 1', async () => {
    const issuer = `http://127.0.0.1:${await freePort()}`;
    const run = await runCli(['login', '--issuer', issuer], { XDG_CONFIG_HOME: tempConfigHome() }).exit;
    expect(run.code).toBe(1);
    expect(oneLine(run)).toBe(`authcli: cannot reach ${issuer}: connection refused. Is the server running?`);
  });

  it('--debug adds the cause chain down to the system error, with stacks', async () => {
    const issuer = `http://127.0.0.1:${await freePort()}`;
    const run = await runCli(['login', '--issuer', issuer, '--debug'], { XDG_CONFIG_HOME: tempConfigHome() }).exit;
    expect(run.code).toBe(1);
    const [first, ...detail] = run.stderr.split('\n');
    expect(first).toBe(`authcli: cannot reach ${issuer}: connection refused. Is the server running?`);
    const rest = detail.join('\n');
    expect(rest).toMatch(/AuthcliError: cannot reach/);
    expect(rest).toMatch(/\[cause\]: TypeError: fetch failed/);
    expect(rest).toMatch(/code: 'ECONNREFUSED'/);
    expect(rest).toMatch(/^\s+at /m);
  });

  it('unknown host: says which host and to check the issuer URL', async () => {
    const run = await runCli(['login', '--issuer', 'https://authcli-test.invalid'], { XDG_CONFIG_HOME: tempConfigHome() }).exit;
    expect(run.code).toBe(1);
    // ENOTFOUND from a resolver that answers; EAI_AGAIN where none is reachable at all.
    expect(oneLine(run)).toMatch(
      /^authcli: cannot reach https:\/\/authcli-test\.invalid: (unknown host authcli-test\.invalid\. Check the issuer URL \(--issuer, AUTHCLI_ISSUER or config\.json\)\.|cannot look up authcli-test\.invalid \(DNS did not answer\)\. Check the network connection\.)$/,
    );
  });

  it('TLS: a self-signed certificate, and an https issuer that speaks plain HTTP', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'authcli-tls-'));
    try {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:P-256',
          '-nodes',
          '-keyout',
          join(dir, 'key.pem'),
          '-out',
          join(dir, 'cert.pem'),
          '-days',
          '1',
          '-subj',
          '/CN=127.0.0.1',
        ],
        { stdio: 'ignore' },
      );
      const tls = createHttpsServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (_req, res) =>
        res.end('{}'),
      );
      const plain = createServer((_req, res) => res.end('{}'));
      try {
        const selfSigned = await runCli(['login', '--issuer', `https://127.0.0.1:${await listening(tls)}`], {
          XDG_CONFIG_HOME: tempConfigHome(),
        }).exit;
        expect(selfSigned.code).toBe(1);
        expect(oneLine(selfSigned)).toMatch(
          /^authcli: cannot reach https:\/\/127\.0\.0\.1:\d+: TLS failed: self-signed certificate \(DEPTH_ZERO_SELF_SIGNED_CERT\)\. If the server uses a private certificate authority, point NODE_EXTRA_CA_CERTS at its certificate\.$/,
        );
        const noTls = await runCli(['login', '--issuer', `https://127.0.0.1:${await listening(plain)}`], {
          XDG_CONFIG_HOME: tempConfigHome(),
        }).exit;
        expect(noTls.code).toBe(1);
        expect(oneLine(noTls)).toMatch(
          /^authcli: cannot reach https:\/\/127\.0\.0\.1:\d+: TLS failed: the server does not speak TLS on that port\. Does the issuer start with http:\/\/ rather than https:\/\/\?$/,
        );
      } finally {
        tls.close();
        plain.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("HTTP 5xx: names the status and says it is the server's side", async () => {
    const failing = createServer((_req, res) => res.writeHead(503, { 'content-type': 'text/html' }).end('<h1>down for maintenance</h1>'));
    try {
      const issuer = `http://127.0.0.1:${await listening(failing)}`;
      const run = await runCli(['login', '--issuer', issuer], { XDG_CONFIG_HOME: tempConfigHome() }).exit;
      expect(run.code).toBe(1);
      expect(oneLine(run)).toBe(
        `authcli: ${issuer} answered HTTP 503 Service Unavailable. The server or a gateway before it is unavailable; try again in a moment.`,
      );
    } finally {
      failing.close();
    }
  });

  it("invalid_client: the server's words and what to check", async () => {
    const run = await runCli(['login', '--client-id', 'nope'], { XDG_CONFIG_HOME: tempConfigHome(), AUTHCLI_ISSUER: server.issuer }).exit;
    expect(run.code).toBe(1);
    expect(oneLine(run)).toMatch(
      /^authcli: the server refused this client for the device flow \(invalid_client[^)]*\)\. Check the client id \(nope: --client-id, AUTHCLI_CLIENT_ID or config\.json\) and, for a confidential client, its secret\.$/,
    );
  });

  it("a usage error is its one line and where to read more, with commander's exit code, not the whole help", async () => {
    const home = tempConfigHome();
    const unknownOption = await runCli(['login', '--bogus'], { XDG_CONFIG_HOME: home }).exit;
    expect(unknownOption.code).toBe(1);
    expect(oneLine(unknownOption)).toBe("authcli: unknown option '--bogus'. See `authcli login --help`.");
    const missing = await runCli(['token', '--issuer'], { XDG_CONFIG_HOME: home }).exit;
    expect(missing.code).toBe(1);
    expect(oneLine(missing)).toBe("authcli: option '--issuer <url>' argument missing. See `authcli token --help`.");
    const unknownCommand = await runCli(['logn'], { XDG_CONFIG_HOME: home }).exit;
    expect(unknownCommand.code).toBe(1);
    expect(oneLine(unknownCommand)).toBe("authcli: unknown command 'logn'. Did you mean login? See `authcli --help`.");
    // --help itself is still the whole help, on stdout, exit 0.
    const help = await runCli(['login', '--help'], { XDG_CONFIG_HOME: home }).exit;
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: authcli login \[options\]/);
    expect(help.stdout).toMatch(/--client-secret-stdin/);
    expect(help.stderr).toBe('');
  });

  it("--version is package.json's version", async () => {
    const { version } = JSON.parse(readFileSync(new URL('../packages/cli/package.json', import.meta.url), 'utf8')) as { version: string };
    const run = await runCli(['--version'], { XDG_CONFIG_HOME: tempConfigHome() }).exit;
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`${version}\n`);
  });

  it('--client-secret-stdin authenticates a confidential client; the --client-secret flag still works but warns', async () => {
    const env = { XDG_CONFIG_HOME: tempConfigHome(), AUTHCLI_ISSUER: server.issuer, AUTHCLI_CLIENT_ID: confidential.client_id };
    const args = ['login', '--scope', 'openid profile'];
    // The right secret on stdin: the server hands out a device code, so the secret was sent and accepted.
    const fromStdin = runCli([...args, '--client-secret-stdin'], env, `${confidential.client_secret}\n`);
    await fromStdin.waitFor(/open \S+ on any device/);
    fromStdin.child.kill('SIGINT');
    const stopped = await fromStdin.exit;
    expect(stopped.code).toBe(130);
    expect(stopped.stderr).not.toMatch(/warning/);
    // A wrong one is refused, so stdin is what counts.
    const wrong = await runCli([...args, '--client-secret-stdin'], env, 'wrong secret\n').exit;
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/refused this client/);
    const empty = await runCli([...args, '--client-secret-stdin'], env, '').exit;
    expect(empty.code).toBe(1);
    expect(oneLine(empty)).toMatch(/^authcli: --client-secret-stdin: stdin is empty\./);
    const both = await runCli([...args, '--client-secret-stdin', '--client-secret', 'x'], env, 'y\n').exit;
    expect(both.code).toBe(1);
    expect(oneLine(both)).toMatch(/cannot be used with option '--client-secret/);

    const fromFlag = runCli([...args, '--client-secret', confidential.client_secret], env);
    await fromFlag.waitFor(/open \S+ on any device/);
    fromFlag.child.kill('SIGINT');
    const flagged = await fromFlag.exit;
    expect(flagged.code).toBe(130);
    expect(flagged.stderr.split('\n')[0]).toBe(
      'authcli: warning: --client-secret is visible to other users in `ps` and stays in shell history; use --client-secret-stdin or AUTHCLI_CLIENT_SECRET',
    );
  });
});

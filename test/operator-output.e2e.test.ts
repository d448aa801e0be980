import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withStore } from '@authcli/server';
import { addApp, addUsers } from '@authcli/test-support/seed';
import { freePort } from '@authcli/test-support/http';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

/**
 * Text from the store reaches the operator's terminal neutralised: a client_name stored before registration
 * refused such names (or written by anything else), with an OSC title, a screen clear, a cursor move and a
 * forged row, prints as visible escapes on one line, in the table and in JSON.
 */
const HOSTILE_NAME = '\u001b]0;owned\u0007\u001b[2J\u001b[H\nauthcli2  public  operator\u202e';
const HOSTILE_URI = 'https://rp.example/cb\r\nforged';
// Anything a terminal acts on (controls, bidi and other format characters, separators) but the newline ending a line.
const TERMINAL_CONTROL = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

describe('operator commands print stored text neutralised', () => {
  let server: ServerProcess;
  let clientId: string;

  beforeAll(async () => {
    server = await startServerProcess();
    await addUsers(server.env, [{ username: 'owner', password: 'operator output password' }]);
    clientId = (await addApp(server.env, { name: 'Plain app', callbackUrls: ['https://rp.example/cb'] })).client_id;
    // Straight into the store, past registration's checks: a row from before them.
    await withStore(server.env.DATABASE_URL, (store) =>
      store.applications.update(clientId, { name: HOSTILE_NAME, callbackUrls: [HOSTILE_URI] }, Date.now()),
    );
  });
  afterAll(async () => server?.stop());

  it('apps list: no control character reaches the terminal, and every application is one row', async () => {
    const list = await serverCommand(['apps', 'list'], server.env);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).not.toMatch(TERMINAL_CONTROL);
    const lines = list.stdout.trimEnd().split('\n');
    // The header, the built-in authcli application and this one: the forged "authcli2" row is not a row.
    expect(lines).toHaveLength(3);
    const row = lines.find((l) => l.startsWith(clientId))!;
    expect(row).toContain('\\x1b]0;owned\\x07\\x1b[2J\\x1b[H\\nauthcli2  public  operator\\u202e');
    expect(row).toContain('https://rp.example/cb\\r\\nforged');
  });

  it('apps list --json: the same values, escaped, and they parse back to what is stored', async () => {
    const list = await serverCommand(['apps', 'list', '--json'], server.env);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).not.toMatch(TERMINAL_CONTROL);
    const app = (JSON.parse(list.stdout) as { client_id: string; name: string; callback_urls: string[] }[]).find(
      (a) => a.client_id === clientId,
    )!;
    expect(app.name).toBe(HOSTILE_NAME);
    expect(app.callback_urls).toEqual([HOSTILE_URI]);
  });

  it('an error naming what the operator typed prints it escaped, on one line', async () => {
    const r = await serverCommand(['users', 'disable', 'no\u001b[2Jbody\nforged line'], server.env);
    expect(r.code).toBe(1);
    expect(r.stderr).not.toMatch(TERMINAL_CONTROL);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  });
});

describe("the server's own errors are one line that says what to do", () => {
  /** The lines on standard error that are not warnings (a test setting prints some at start). */
  const errorLines = (stderr: string) => stderr.split('\n').filter((l) => l && !l.startsWith('authcli-server: warning:'));

  it('a port in use names the address and the setting to change', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const r = await serverCommand(['start'], { PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: ':memory:', LOG_LEVEL: 'warn' });
      expect(r.code).toBe(1);
      expect(errorLines(r.stderr)).toEqual([
        `authcli-server: 127.0.0.1:${port} is already in use (another authcli-server, or another program): stop it, or choose another port with --port or PORT`,
      ]);
    } finally {
      taken.close();
    }
  });

  it('a usage error is one line and the help to read, not the whole help', async () => {
    const cases: [string[], string][] = [
      [['strat'], "authcli-server: unknown command 'strat'. Did you mean start? (see `authcli-server --help`)"],
      [['users', 'add'], "authcli-server: missing required argument 'username' (see `authcli-server users add --help`)"],
      [['start', '--prot', '9000'], "authcli-server: unknown option '--prot'. Did you mean --port? (see `authcli-server start --help`)"],
      [
        ['apps', 'list', '--database'],
        "authcli-server: option '--database <url>' argument missing (see `authcli-server apps list --help`)",
      ],
    ];
    for (const [args, line] of cases) {
      const r = await serverCommand(args, { DATABASE_URL: ':memory:' });
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stdout, args.join(' ')).toBe('');
      expect(r.stderr, args.join(' ')).toBe(`${line}\n`);
    }
    // --help itself is still the whole help, on standard output.
    const help = await serverCommand(['users', 'add', '--help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: authcli-server users add \[options\] <username>/);
  });

  it('a file that cannot be made says why in words: a missing folder, a file where a folder should be', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'authcli-errors-'));
    const server = await startServerProcess({ database: join(dir, 'authcli.db') });
    try {
      const backup = await serverCommand(['backup', join(dir, 'no', 'such', 'copy.db')], server.env);
      expect(backup.code).toBe(1);
      expect(backup.stderr).toBe(
        `authcli-server: cannot create ${join(dir, 'no', 'such', 'copy.db')}: the folder ${join(dir, 'no', 'such')} does not exist (create it first, or choose another path)\n`,
      );
    } finally {
      await server.stop();
    }
    writeFileSync(join(dir, 'a-file'), '');
    const start = await serverCommand(['start'], {
      PORT: String(await freePort()),
      HOST: '127.0.0.1',
      DATABASE_URL: join(dir, 'a-file', 'data', 'authcli.db'),
    });
    expect(start.code).toBe(1);
    expect(errorLines(start.stderr)).toEqual([
      `authcli-server: cannot create ${join(dir, 'a-file', 'data')}: a part of the path is a file, not a folder`,
    ]);
  });
});

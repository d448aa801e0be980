import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withStore } from '@authcli/server';
import { addApp, addUsers } from '@authcli/test-support/seed';
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

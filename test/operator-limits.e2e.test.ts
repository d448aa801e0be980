import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, hidden } from '@authcli/test-support/http';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const PASSWORD = 'operator e2e password';

/** The operator's side of the abuse limits: see them, unlock an account, clear an address, on a running server. */
describe('authcli-server limits and users unlock', () => {
  let server: ServerProcess;

  beforeAll(async () => {
    server = await startServerProcess();
    // carol signs in to reach /device: bob is the user with no sign-in counted at all, whatever ran before.
    for (const name of ['alice', 'bob', 'carol']) {
      const added = await serverCommand(['users', 'add', name, '--password-stdin'], server.env, `${PASSWORD}\n`);
      expect(added.code, added.stderr).toBe(0);
    }
  });
  afterAll(async () => server?.stop());

  async function signIn(username: string, password: string): Promise<number> {
    const b = new Browser(server.issuer);
    const page = await b.get('/signin');
    return (await b.postForm('/signin', { _csrf: hidden(page.text, '_csrf'), username, password })).status;
  }

  it('a locked account is listed, then unlocked by `users unlock` while the server runs', async () => {
    for (let i = 0; i < 10; i++) expect(await signIn('alice', `wrong ${i}`)).toBe(401);
    expect(await signIn('alice', PASSWORD)).toBe(429);

    const list = await serverCommand(['limits', 'list'], server.env);
    expect(list.code, list.stderr).toBe(0);
    const [header, ...rows] = list.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^KIND\s+SUBJECT\s+IP\s+COUNT\s+LIMIT\s+RESETS AT$/);
    expect(rows.some((r) => /^signin-account-ip\s+alice\s+127\.0\.0\.1\s+11\s+10\s/.test(r))).toBe(true);
    const json = JSON.parse((await serverCommand(['limits', 'list', '--json'], server.env)).stdout) as {
      kind: string;
      subject: string;
      limited: boolean;
    }[];
    expect(json.find((r) => r.kind === 'signin-account-ip' && r.subject === 'alice')?.limited).toBe(true);

    const unlock = await serverCommand(['users', 'unlock', 'Alice'], server.env);
    expect(unlock.code, unlock.stderr).toBe(0);
    expect(unlock.stdout).toMatch(/^unlocked Alice \(\d+ counters? cleared\)$/m);
    expect(await signIn('alice', PASSWORD)).toBe(303);
    // Nothing of bob's was there to clear, and saying so is not an error.
    const none = await serverCommand(['users', 'unlock', 'bob'], server.env);
    expect(none.code).toBe(0);
    expect(none.stdout).toContain('bob had no failed sign-ins counted');
  });

  it('an address locked out of /device is cleared by `limits clear-ip`', async () => {
    const b = new Browser(server.issuer);
    const page = await b.get('/signin');
    expect((await b.postForm('/signin', { _csrf: hidden(page.text, '_csrf'), username: 'carol', password: PASSWORD })).status).toBe(303);
    let entry = await b.get('/device');
    for (let i = 0; i < 10; i++) {
      entry = await b.postForm('/device', { _csrf: hidden(entry.text, '_csrf'), user_code: 'BCDF-GHJK' });
      expect(entry.status).toBe(400);
    }
    const locked = await b.postForm('/device', { _csrf: hidden(entry.text, '_csrf'), user_code: 'BCDF-GHJK' });
    expect(locked.status).toBe(429);

    expect((await serverCommand(['limits', 'clear-ip', 'not-an-ip'], server.env)).code).toBe(1);
    const cleared = await serverCommand(['limits', 'clear-ip', '127.0.0.1'], server.env);
    expect(cleared.code, cleared.stderr).toBe(0);
    expect(cleared.stdout).toMatch(/^cleared \d+ counters? of 127\.0\.0\.1$/m);
    const again = await b.postForm('/device', { _csrf: hidden(locked.text, '_csrf'), user_code: 'BCDF-GHJK' });
    expect(again.status).toBe(400);
  });
});

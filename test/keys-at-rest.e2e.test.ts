import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { challengeS256, generateNonce, generateState, generateVerifier } from '@authcli/pkce';
import { dialects, freshDatabase, type TestDatabase } from '@authcli/test-support/databases';
import { approveInBrowser, Browser, freePort } from '@authcli/test-support/http';
import { addUsers } from '@authcli/test-support/seed';
import { SERVER_BIN, serverCommand, startServerProcess, waitUntilReady, type CommandResult } from '@authcli/test-support/server-process';

const PASSWORD = 'keys at rest password';
const UNENCRYPTED = 'signing keys are stored unencrypted';

const mode = (path: string) => statSync(path).mode & 0o777;
const octal = (path: string) => mode(path).toString(8).padStart(4, '0');

/** Temporary folders made by this file, removed at the end. */
const folders: string[] = [];
function tempFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'authcli-at-rest-'));
  folders.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

/**
 * `authcli-server <args>` under `umask 000` (the loosest there is: the
 * modes a file gets are then exactly the ones the server asks for), killed if
 * it runs longer than `timeoutMs`.
 */
function spawnUnderUmask000(args: string[], env: Record<string, string>) {
  return spawn('/bin/sh', ['-c', 'umask 000 && exec "$@"', 'sh', process.execPath, SERVER_BIN, ...args], {
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

function runUnderUmask000(args: string[], env: Record<string, string>, input = '', timeoutMs = 20_000): Promise<CommandResult> {
  return new Promise((res, rej) => {
    const child = spawnUnderUmask000(args, env);
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', rej);
    child.once('close', (code) => {
      clearTimeout(timer);
      res({ code, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

/** `authcli-server start` under `umask 000`, ready to answer. */
async function startUnderUmask000(env: Record<string, string>) {
  const port = await freePort();
  const child = spawnUnderUmask000(['start'], { PORT: String(port), HOST: '127.0.0.1', ...env });
  child.stdin.end();
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const issuer = `http://127.0.0.1:${port}`;
  await waitUntilReady(issuer, child, () => out);
  const exit = async (signal: NodeJS.Signals) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    await exited;
  };
  return { issuer, output: () => out, stop: () => exit('SIGTERM'), crash: () => exit('SIGKILL') };
}

/** Waits for `text` to show in a process's output (stderr lines may trail the readiness answer). */
async function waitForOutput(output: () => string, text: string): Promise<string> {
  for (let i = 0; i < 50 && !output().includes(text); i++) await new Promise((r) => setTimeout(r, 100));
  return output();
}

const occurrences = (text: string, part: string) => text.split(part).length - 1;

describe('data folder and database files are private, whatever the umask', () => {
  it('start under umask 000 creates the data folder 0700 and the database, -wal and -shm 0600', async () => {
    const dir = tempFolder();
    const db = join(dir, 'srv', 'data', 'authcli.db');
    const server = await startUnderUmask000({ DATABASE_URL: db });
    try {
      expect(octal(join(dir, 'srv'))).toBe('0700');
      expect(octal(join(dir, 'srv', 'data'))).toBe('0700');
      for (const file of [db, `${db}-wal`, `${db}-shm`]) {
        expect(existsSync(file), file).toBe(true);
        expect(octal(file), file).toBe('0600');
      }
    } finally {
      await server.stop();
    }
  });

  it('users add (a one-shot command) under umask 000 creates the folder 0700 and the database 0600', async () => {
    const dir = tempFolder();
    const db = join(dir, 'data', 'authcli.db');
    const added = await runUnderUmask000(['users', 'add', 'alice', '--password-stdin'], { DATABASE_URL: db }, `${PASSWORD}\n`);
    expect(added.code, added.stderr).toBe(0);
    expect(octal(join(dir, 'data'))).toBe('0700');
    expect(octal(db)).toBe('0600');
    for (const side of [`${db}-wal`, `${db}-shm`]) if (existsSync(side)) expect(octal(side), side).toBe('0600');
  });

  it('an existing database, -wal and -shm left 0644 (an older server, a crash) are tightened to 0600 at open', async () => {
    const dir = tempFolder();
    const db = join(dir, 'authcli.db');
    const first = await startUnderUmask000({ DATABASE_URL: db });
    await first.crash(); // SIGKILL: the -wal and -shm stay behind
    const files = [db, `${db}-wal`, `${db}-shm`];
    for (const file of files) {
      expect(existsSync(file), file).toBe(true);
      chmodSync(file, 0o644);
    }
    const second = await startUnderUmask000({ DATABASE_URL: db });
    try {
      for (const file of files) expect(octal(file), file).toBe('0600');
    } finally {
      await second.stop();
    }
  });

  it('a folder the operator chose is never chmodded; a group/other-readable one is reported once at start', async () => {
    const dir = tempFolder();
    chmodSync(dir, 0o755);
    const db = join(dir, 'authcli.db');
    const server = await startUnderUmask000({ DATABASE_URL: db });
    try {
      const out = await waitForOutput(server.output, 'database folder');
      expect(occurrences(out, `the database folder ${dir} (mode 0755) is readable by other users`)).toBe(1);
      expect(octal(dir)).toBe('0755');
      expect(octal(db)).toBe('0600');
    } finally {
      await server.stop();
    }
    const private_ = tempFolder(); // mkdtemp: 0700
    const quiet = await startUnderUmask000({ DATABASE_URL: join(private_, 'authcli.db') });
    try {
      await waitForOutput(quiet.output, UNENCRYPTED);
      expect(quiet.output()).not.toContain('database folder');
    } finally {
      await quiet.stop();
    }
  });
});

describe.each(dialects())('signing keys at rest, real server process (%s)', (dialect) => {
  const databases: TestDatabase[] = [];
  // After each test, not at the end: Kysely's migrator looks for its tables in every schema of the database, so
  // a fresh schema created while another test's schema still holds them would not be migrated.
  afterEach(async () => {
    for (const d of databases.splice(0)) await d.cleanup();
  });

  const kek = () => randomBytes(32).toString('base64url');

  /** A fresh store with the user alice in it (seeded in-process; adding a user touches no key); no signing keys yet (the first start or rotation makes them). */
  async function storeWithUser(): Promise<TestDatabase> {
    const database = await freshDatabase(dialect);
    databases.push(database);
    await addUsers({ DATABASE_URL: database.url }, [{ username: 'alice', password: PASSWORD }]);
    return database;
  }

  const storedKeys = async (database: TestDatabase) =>
    (await database.query('select kid, private_jwk, retired_at from signing_keys order by created_at, kid')) as {
      kid: string;
      private_jwk: string;
      retired_at: unknown;
    }[];

  function expectEncrypted(keys: { kid: string; private_jwk: string }[]) {
    for (const k of keys) {
      expect(JSON.parse(k.private_jwk), k.kid).toMatchObject({ v: 1, enc: 'A256GCM' });
      for (const member of ['d', 'p', 'q', 'dp', 'dq', 'qi']) expect(k.private_jwk, k.kid).not.toContain(`"${member}"`);
    }
  }

  /** The code flow with the built-in `authcli` client; both tokens verified against the server's JWKS. */
  async function verifiedTokens(issuer: string): Promise<{ idKid: string; atKid: string }> {
    const verifier = generateVerifier();
    const redirectUri = 'http://127.0.0.1:40123/callback';
    const q = new URLSearchParams({
      response_type: 'code',
      client_id: 'authcli',
      redirect_uri: redirectUri,
      scope: 'openid',
      state: generateState(),
      nonce: generateNonce(),
      code_challenge: await challengeS256(verifier),
      code_challenge_method: 'S256',
    });
    const callback = new URL(await approveInBrowser(new Browser(issuer), `/oauth/authorize?${q}`, 'alice', PASSWORD));
    const res = await fetch(`${issuer}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code')!,
        redirect_uri: redirectUri,
        client_id: 'authcli',
        code_verifier: verifier,
      }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { id_token: string; access_token: string };
    const jwks = createRemoteJWKSet(new URL(`${issuer}/oauth/jwks`));
    await jwtVerify(body.id_token, jwks, { issuer, audience: 'authcli' });
    await jwtVerify(body.access_token, jwks, { issuer, typ: 'at+jwt' });
    return { idKid: decodeProtectedHeader(body.id_token).kid!, atKid: decodeProtectedHeader(body.access_token).kid! };
  }

  /** A start that must refuse: exit 1 with one line on stderr, no stack, never listening. */
  async function refusedStart(env: Record<string, string>): Promise<string> {
    const port = await freePort();
    const res = await runUnderUmask000(['start'], { PORT: String(port), HOST: '127.0.0.1', ...env });
    expect(res.code, res.stdout + res.stderr).toBe(1);
    expect(res.stdout).not.toContain('listening');
    const lines = res.stderr.trim().split('\n');
    expect(lines, res.stderr).toHaveLength(1);
    expect(res.stderr).not.toMatch(/\n\s+at /);
    return lines[0]!;
  }

  it('private signing keys are encrypted at rest (AES-256-GCM): tokens verify against the JWKS, and a restart with the same key signs with the same keys', async () => {
    const key = kek();
    const env = { AUTHCLI_KEY_ENCRYPTION_KEY: key };
    const database = await storeWithUser();
    // At info, so the start line (after the warnings) shows when the start is over.
    const server = await startServerProcess({ database: database.url, env: { ...env, LOG_LEVEL: 'info' } });
    let first: { idKid: string; atKid: string };
    try {
      first = await verifiedTokens(server.issuer);
      const keys = await storedKeys(database);
      expect(keys).toHaveLength(2);
      expectEncrypted(keys);
      expect(keys.map((k) => k.kid)).toEqual(expect.arrayContaining([first.idKid, first.atKid]));
      await waitForOutput(server.output, 'authcli-server started');
      expect(server.output()).not.toContain(UNENCRYPTED);
      expect(server.output()).not.toContain(key);
    } finally {
      await server.stop();
    }
    const again = await startServerProcess({ database: database.url, env });
    try {
      expect(await verifiedTokens(again.issuer)).toEqual(first);
      expect(await storedKeys(database)).toHaveLength(2);
    } finally {
      await again.stop();
    }
  });

  it('encrypted keys and a missing or wrong key-encryption key: the server refuses to start with one clear line', async () => {
    const env = { AUTHCLI_KEY_ENCRYPTION_KEY: kek() };
    const database = await storeWithUser();
    expect((await serverCommand(['keys', 'rotate'], { DATABASE_URL: database.url, ...env })).code).toBe(0);
    const before = await storedKeys(database);
    expect(before).toHaveLength(2);
    expectEncrypted(before);
    expect(await refusedStart({ DATABASE_URL: database.url })).toMatch(
      /^authcli-server: signing keys are encrypted: set AUTHCLI_KEY_ENCRYPTION_KEY/,
    );
    expect(await refusedStart({ DATABASE_URL: database.url, AUTHCLI_KEY_ENCRYPTION_KEY: kek() })).toMatch(
      /^authcli-server: the key-encryption key does not decrypt the signing keys/,
    );
    expect(await storedKeys(database)).toEqual(before);
  });

  it('an older plaintext store (run and rotated without a key-encryption key, which both say once) is encrypted in place, retired keys included, by the first start with AUTHCLI_KEY_ENCRYPTION_KEY_FILE', async () => {
    const database = await storeWithUser();
    const plain = await startServerProcess({ database: database.url });
    let first: { idKid: string; atKid: string };
    try {
      const out = await waitForOutput(plain.output, UNENCRYPTED);
      expect(occurrences(out, UNENCRYPTED)).toBe(1);
      expect(out).toContain('openssl rand -base64 32');
      first = await verifiedTokens(plain.issuer);
    } finally {
      await plain.stop();
    }
    const rotated = await serverCommand(['keys', 'rotate'], { DATABASE_URL: database.url });
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(occurrences(rotated.stderr, UNENCRYPTED)).toBe(1);
    const before = await storedKeys(database);
    expect(before).toHaveLength(4);
    for (const k of before) expect(JSON.parse(k.private_jwk)).toHaveProperty('d');

    const keyFile = join(tempFolder(), 'kek');
    writeFileSync(keyFile, `${kek()}\n`, { mode: 0o600 });
    const sealed = await startServerProcess({ database: database.url, env: { AUTHCLI_KEY_ENCRYPTION_KEY_FILE: keyFile } });
    try {
      const after = await storedKeys(database);
      expect(after.map((k) => k.kid)).toEqual(before.map((k) => k.kid));
      expectEncrypted(after);
      // The rotated keys sign a minute after the rotation; until then the previous ones do, decrypted.
      expect(await verifiedTokens(sealed.issuer)).toEqual(first);
      for (const k of before) expect(sealed.output()).not.toContain(JSON.parse(k.private_jwk).d as string);
    } finally {
      await sealed.stop();
    }
  });

  it('keys rotate with the key-encryption key stores encrypted keys, which a restarted server opens and publishes; without the key it refuses', async () => {
    const env = { AUTHCLI_KEY_ENCRYPTION_KEY: kek() };
    const database = await storeWithUser();
    const server = await startServerProcess({ database: database.url, env });
    await server.stop();
    const refused = await serverCommand(['keys', 'rotate'], { DATABASE_URL: database.url });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^authcli-server: signing keys are encrypted: set AUTHCLI_KEY_ENCRYPTION_KEY/);
    expect(await storedKeys(database)).toHaveLength(2);

    const rotated = await serverCommand(['keys', 'rotate'], { DATABASE_URL: database.url, ...env });
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.stderr).not.toContain(UNENCRYPTED);
    const newKids = [...rotated.stdout.matchAll(/key (\S+)/g)].map((m) => m[1]!);
    expect(newKids).toHaveLength(2);
    const keys = await storedKeys(database);
    expect(keys).toHaveLength(4);
    expectEncrypted(keys);
    expect(
      keys
        .filter((k) => k.retired_at === null)
        .map((k) => k.kid)
        .sort(),
    ).toEqual([...newKids].sort());

    const restarted = await startServerProcess({ database: database.url, env });
    try {
      const published = ((await (await fetch(`${restarted.issuer}/oauth/jwks`)).json()) as { keys: { kid: string }[] }).keys.map(
        (k) => k.kid,
      );
      expect(published).toEqual(expect.arrayContaining(keys.map((k) => k.kid)));
      // The new keys sign a minute after the rotation (the in-process suite moves the clock past that); until then the previous ones do.
      await verifiedTokens(restarted.issuer);
    } finally {
      await restarted.stop();
    }
  });
});

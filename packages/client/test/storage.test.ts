import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  allSessions,
  credentialsPath,
  deleteSession,
  describeStore,
  locateSession,
  readSession,
  writeSession,
  type StoredSession,
} from '../src/credentials.js';
import { AuthcliError } from '../src/errors.js';
import { keychainMayAnswer, keychainName } from '../src/storage/keychain.js';
import { announcesFallback, readsKeychain, storageChoice, writesKeychain, type StorageChoice } from '../src/storage/select.js';
import { newer, parseSession } from '../src/storage/session.js';

const session = (over: Partial<StoredSession> = {}): StoredSession => ({
  client_id: 'authcli',
  access_token: 'a',
  token_type: 'Bearer',
  expires_at: 1,
  scope: 'openid',
  subject: 'u',
  username: 'alice',
  obtained_at: 1000,
  ...over,
});

describe('storage selection', () => {
  it('AUTHCLI_STORAGE: unset or empty is auto, file and keychain are choices, anything else is refused', () => {
    expect(storageChoice({})).toBe('auto');
    expect(storageChoice({ AUTHCLI_STORAGE: '' })).toBe('auto');
    expect(storageChoice({ AUTHCLI_STORAGE: 'file' })).toBe('file');
    expect(storageChoice({ AUTHCLI_STORAGE: 'keychain' })).toBe('keychain');
    for (const bad of ['auto', 'FILE', 'wallet']) {
      expect(() => storageChoice({ AUTHCLI_STORAGE: bad }), bad).toThrow(
        expect.objectContaining({ code: 'config', message: `AUTHCLI_STORAGE must be file or keychain, not "${bad}"` }),
      );
    }
  });

  describe('a keychain may answer on macOS and Windows; elsewhere only with a D-Bus session bus', () => {
    let runtime: string;
    beforeEach(() => {
      runtime = mkdtempSync(join(tmpdir(), 'authcli-runtime-'));
    });
    afterEach(() => rmSync(runtime, { recursive: true, force: true }));

    it('macOS and Windows always have one', () => {
      expect(keychainMayAnswer({}, 'darwin')).toBe(true);
      expect(keychainMayAnswer({}, 'win32')).toBe(true);
      expect(keychainName('darwin')).toBe('macOS Keychain');
      expect(keychainName('win32')).toBe('Windows Credential Manager');
      expect(keychainName('linux')).toBe('Secret Service');
    });

    it('Linux: DBUS_SESSION_BUS_ADDRESS, or a bus socket in $XDG_RUNTIME_DIR (where libdbus looks without it)', () => {
      expect(keychainMayAnswer({ DBUS_SESSION_BUS_ADDRESS: 'unix:path=/run/user/1000/bus' }, 'linux')).toBe(true);
      expect(keychainMayAnswer({ XDG_RUNTIME_DIR: runtime }, 'linux')).toBe(false);
      writeFileSync(join(runtime, 'bus'), '');
      expect(keychainMayAnswer({ XDG_RUNTIME_DIR: runtime }, 'linux')).toBe(true);
      expect(keychainMayAnswer({ XDG_RUNTIME_DIR: 'relative/run' }, 'linux')).toBe(false);
      // SSH sessions, containers, CI: nothing to talk to, and nothing is loaded to find that out.
      expect(keychainMayAnswer({}, 'linux')).toBe(false);
      expect(keychainMayAnswer({}, 'freebsd')).toBe(false);
    });
  });

  const situations = (choice: StorageChoice) =>
    [true, false].flatMap((keychainMayAnswer) =>
      [true, false].map((fallbackAnnounced) => ({ choice, keychainMayAnswer, fallbackAnnounced })),
    );

  it('reads ask the keychain unless the file was chosen, none can answer, or the file holds the copy of an announced fallback', () => {
    for (const s of situations('file')) expect(readsKeychain(s, true) || readsKeychain(s, false)).toBe(false);
    // Chosen: always asked, whatever the file holds, since the file only holds what a failed write put there.
    for (const s of situations('keychain')) expect(readsKeychain(s, true) && readsKeychain(s, false)).toBe(true);
    expect(readsKeychain({ choice: 'auto', keychainMayAnswer: false, fallbackAnnounced: false }, false)).toBe(false);
    expect(readsKeychain({ choice: 'auto', keychainMayAnswer: true, fallbackAnnounced: false }, false)).toBe(true);
    expect(readsKeychain({ choice: 'auto', keychainMayAnswer: true, fallbackAnnounced: false }, true)).toBe(true);
    expect(readsKeychain({ choice: 'auto', keychainMayAnswer: true, fallbackAnnounced: true }, false)).toBe(true);
    // The fast path of `authcli token` on a machine whose keychain failed before.
    expect(readsKeychain({ choice: 'auto', keychainMayAnswer: true, fallbackAnnounced: true }, true)).toBe(false);
  });

  it('writes try the keychain unless the file was chosen or none can answer', () => {
    expect(writesKeychain({ choice: 'file', keychainMayAnswer: true })).toBe(false);
    expect(writesKeychain({ choice: 'auto', keychainMayAnswer: false })).toBe(false);
    expect(writesKeychain({ choice: 'auto', keychainMayAnswer: true })).toBe(true);
    expect(writesKeychain({ choice: 'keychain', keychainMayAnswer: false })).toBe(true);
  });

  it('the fallback to the file is said once in auto, every time when the keychain was chosen, never when the file was', () => {
    expect(announcesFallback({ choice: 'auto', fallbackAnnounced: false })).toBe(true);
    expect(announcesFallback({ choice: 'auto', fallbackAnnounced: true })).toBe(false);
    expect(announcesFallback({ choice: 'keychain', fallbackAnnounced: true })).toBe(true);
    expect(announcesFallback({ choice: 'file', fallbackAnnounced: false })).toBe(false);
  });

  it('rfc9700 §4.14.2 of two copies of a session the newer wins, so a rotated-out refresh token is never sent', () => {
    const old = session({ refresh_token: 'r1', obtained_at: 1000 });
    const fresh = session({ refresh_token: 'r2', obtained_at: 2000 });
    expect(newer(old, fresh)).toBe(fresh);
    expect(newer(fresh, old)).toBe(fresh);
    expect(newer(undefined, old)).toBe(old);
    expect(newer(old, undefined)).toBe(old);
    expect(newer(undefined, undefined)).toBeUndefined();
  });

  it('a keychain entry that is not an authcli session is ignored, not trusted', () => {
    expect(parseSession(JSON.stringify(session()))).toEqual(session());
    for (const bad of ['', 'hunter2', 'null', '[]', '{"access_token":"a"}', JSON.stringify({ ...session(), obtained_at: 'yesterday' })]) {
      expect(parseSession(bad), bad).toBeUndefined();
    }
  });
});

describe('credentials on a machine without a keychain (no D-Bus session bus)', () => {
  let home: string;
  let said: string[];
  const say = (line: string) => said.push(line);
  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'authcli-storage-'));
    said = [];
  });
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  it('auto: the 0600 file takes the session and "no keychain available" is said once per config folder', async () => {
    const env = { XDG_CONFIG_HOME: home } as NodeJS.ProcessEnv;
    const notice = `No keychain available: credentials are kept in ${credentialsPath(env)}.`;
    await writeSession('https://a.example', session(), env, say);
    await writeSession('https://a.example', session({ obtained_at: 2000 }), env, say);
    await writeSession('https://b.example', session(), env, say);
    expect(said).toEqual([notice]);
    expect(readdirSync(join(home, 'authcli')).sort()).toEqual(['credentials.json', 'storage-notice']);
    expect((await readSession('https://a.example', env))?.obtained_at).toBe(2000);
    const located = await locateSession('https://a.example', env);
    expect(describeStore(located.store)).toBe(credentialsPath(env));
    expect(located.keychainError).toBeUndefined();
    expect(Object.keys(await allSessions(env)).sort()).toEqual(['https://a.example', 'https://b.example']);

    // Another config folder has not been told.
    const other = { XDG_CONFIG_HOME: join(home, 'other') } as NodeJS.ProcessEnv;
    await writeSession('https://a.example', session(), other, say);
    expect(said).toEqual([notice, `No keychain available: credentials are kept in ${credentialsPath(other)}.`]);
  });

  it('the file chosen: nothing is said and no marker is left; the last session removed takes the file with it', async () => {
    const env = { XDG_CONFIG_HOME: home, AUTHCLI_STORAGE: 'file' } as NodeJS.ProcessEnv;
    await writeSession('https://a.example', session(), env, say);
    expect(said).toEqual([]);
    expect(readdirSync(join(home, 'authcli'))).toEqual(['credentials.json']);
    expect(await deleteSession('https://a.example', env)).toBe(true);
    expect(await deleteSession('https://a.example', env)).toBe(false);
    expect(existsSync(credentialsPath(env))).toBe(false);
    expect(await readSession('https://a.example', env)).toBeUndefined();
  });

  it('an unknown AUTHCLI_STORAGE fails every operation before anything is stored', async () => {
    const env = { XDG_CONFIG_HOME: home, AUTHCLI_STORAGE: 'usb' } as NodeJS.ProcessEnv;
    await expect(writeSession('https://a.example', session(), env, say)).rejects.toThrow(AuthcliError);
    await expect(readSession('https://a.example', env)).rejects.toThrow(/AUTHCLI_STORAGE/);
    expect(existsSync(join(home, 'authcli'))).toBe(false);
  });

  it('a damaged credentials file is an error on read and on write, never "signed out" or overwritten', async () => {
    const env = { XDG_CONFIG_HOME: home } as NodeJS.ProcessEnv;
    mkdirSync(join(home, 'authcli'));
    writeFileSync(credentialsPath(env), '{"version":1,');
    await expect(readSession('https://a.example', env)).rejects.toThrow(/damaged/);
    await expect(writeSession('https://a.example', session(), env, say)).rejects.toThrow(/damaged/);
  });
});

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { profileRows, renderProfiles, type ProfileRow } from '../src/commands/profiles.js';
import { acceptsReplace, confirmReplace, replaceDecision } from '../src/commands/replace-prompt.js';
import { accessTokenLine, localTime } from '../src/commands/status.js';
import {
  describeSlot,
  loginCommand,
  parseSlot,
  profileName,
  profilesPath,
  readProfileIndex,
  resolveSettings,
  slotOf,
} from '@authcli/client/internal/config.js';
import { credentialsPath, readSession, writeSession, type StoredSession } from '@authcli/client/internal/credentials.js';
import { CliError } from '../src/errors.js';
import { createOutput } from '../src/output.js';
import { rememberProfile } from '../src/profiles.js';

const ISS = 'https://id.example';
let home: string;
let env: NodeJS.ProcessEnv;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'authcli-profiles-'));
  env = { XDG_CONFIG_HOME: home, AUTHCLI_STORAGE: 'file' };
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

const session = (over: Partial<StoredSession> = {}): StoredSession => ({
  client_id: 'authcli',
  access_token: 'a',
  token_type: 'Bearer',
  expires_at: Date.now() + 600_000,
  scope: 'openid',
  subject: 'sub-alice',
  username: 'alice',
  obtained_at: Date.now(),
  ...over,
});

function writeConfig(config: unknown): void {
  mkdirSync(join(home, 'authcli'), { recursive: true });
  writeFileSync(join(home, 'authcli', 'config.json'), JSON.stringify(config));
}

describe('profile names and slots', () => {
  it('--profile and AUTHCLI_PROFILE: the flag wins, `default` without either; a name that cannot be one is refused', () => {
    expect(profileName(undefined, {})).toBe('default');
    expect(profileName(undefined, { AUTHCLI_PROFILE: '' })).toBe('default');
    expect(profileName(undefined, { AUTHCLI_PROFILE: 'work' })).toBe('work');
    expect(profileName('home', { AUTHCLI_PROFILE: 'work' })).toBe('home');
    for (const ok of ['a', 'A.b_c-1', '0', 'x'.repeat(64)]) expect(profileName(ok, {}), ok).toBe(ok);
    for (const bad of ['', 'a b', '-a', '.hidden', '_a', 'a#b', 'a/b', 'é', 'x'.repeat(65), 'a\n']) {
      expect(() => profileName(bad, {}), bad).toThrow(
        expect.objectContaining({ code: 'usage', message: expect.stringMatching(/^invalid profile name .*: a profile name is 1-64/) }),
      );
      if (bad !== '')
        expect(() => profileName(undefined, { AUTHCLI_PROFILE: bad }), bad).toThrow(/^AUTHCLI_PROFILE must be a profile name/);
    }
  });

  it('the default profile is stored under the bare issuer, the others under <issuer>#<profile>; messages name both', () => {
    expect(slotOf(ISS, 'default')).toBe(ISS);
    expect(slotOf(ISS, 'work')).toBe(`${ISS}#work`);
    expect(slotOf('https://id.example/tenant/a', 'w.1')).toBe('https://id.example/tenant/a#w.1');
    for (const [issuer, profile] of [
      [ISS, 'default'],
      [ISS, 'work'],
      ['http://127.0.0.1:8080/x', 'a-b'],
    ] as const) {
      expect(parseSlot(slotOf(issuer, profile))).toEqual({ issuer, profile });
    }
    expect(describeSlot(ISS)).toBe(ISS);
    expect(describeSlot(`${ISS}#work`)).toBe(`${ISS} (profile work)`);
    expect(loginCommand(ISS)).toBe('authcli login');
    expect(loginCommand(`${ISS}#work`)).toBe('authcli login --profile work');
  });

  it('sessions of two profiles at one issuer are kept apart, and the default one is the entry written before profiles', async () => {
    // credentials.json as the CLI before profiles wrote it: one session under the bare issuer.
    mkdirSync(join(home, 'authcli'), { mode: 0o700 });
    writeFileSync(credentialsPath(env), JSON.stringify({ version: 1, sessions: { [ISS]: session() } }), { mode: 0o600 });
    const defaults = await resolveSettings({ issuer: ISS }, env);
    expect((await readSession(defaults.slot, env))?.username).toBe('alice');
    const work = await resolveSettings({ issuer: ISS, profile: 'work' }, env);
    expect(await readSession(work.slot, env)).toBeUndefined();
    await writeSession(work.slot, session({ username: 'bob', subject: 'sub-bob' }), env);
    expect((await readSession(work.slot, env))?.username).toBe('bob');
    expect((await readSession(defaults.slot, env))?.username).toBe('alice');
    expect(Object.keys(JSON.parse(readFileSync(credentialsPath(env), 'utf8')).sessions).sort()).toEqual([ISS, `${ISS}#work`]);
  });
});

describe('where a profile signs in: flags > env > config.json profiles.<NAME> > last sign-in > config.json > default', () => {
  it('each source in turn', async () => {
    const issuerOf = async (flags: { issuer?: string; profile?: string }, extra: NodeJS.ProcessEnv = {}) =>
      (await resolveSettings(flags, { ...env, ...extra })).issuer;
    expect(await issuerOf({ profile: 'work' })).toBe('http://localhost:8080');
    writeConfig({ issuer: 'https://top.example' });
    expect(await issuerOf({ profile: 'work' })).toBe('https://top.example');
    await rememberProfile({ profile: 'work', issuer: 'https://last.example', clientId: 'last-client' }, env);
    expect(await issuerOf({ profile: 'work' })).toBe('https://last.example');
    // Another profile's last sign-in is not this one's.
    expect(await issuerOf({ profile: 'home' })).toBe('https://top.example');
    writeConfig({ issuer: 'https://top.example', profiles: { work: { issuer: 'https://section.example/' } } });
    expect(await issuerOf({ profile: 'work' })).toBe('https://section.example');
    expect(await issuerOf({ profile: 'work' }, { AUTHCLI_ISSUER: 'https://env.example' })).toBe('https://env.example');
    expect(await issuerOf({ profile: 'work', issuer: 'https://flag.example' }, { AUTHCLI_ISSUER: 'https://env.example' })).toBe(
      'https://flag.example',
    );
    // AUTHCLI_PROFILE picks the profile as --profile does.
    expect(await issuerOf({}, { AUTHCLI_PROFILE: 'work' })).toBe('https://section.example');
  });

  it('the client of the last sign-in goes with its issuer only; the secret comes from the profile section, else the top level', async () => {
    await rememberProfile({ profile: 'work', issuer: 'https://last.example', clientId: 'last-client' }, env);
    writeConfig({
      client_id: 'top-client',
      client_secret: 'top-secret',
      profiles: { ci: { client_id: 'ci-client', client_secret: 'ci' } },
    });
    expect(await resolveSettings({ profile: 'work' }, env)).toMatchObject({
      issuer: 'https://last.example',
      clientId: 'last-client',
      slot: 'https://last.example#work',
      profile: 'work',
    });
    // Another issuer: the remembered client was registered at the last one, not there.
    expect((await resolveSettings({ profile: 'work', issuer: 'https://other.example' }, env)).clientId).toBe('top-client');
    expect(await resolveSettings({ profile: 'ci' }, env)).toMatchObject({ clientId: 'ci-client', clientSecret: 'ci' });
    expect((await resolveSettings({ profile: 'work' }, env)).clientSecret).toBe('top-secret');
    expect((await resolveSettings({ profile: 'ci', clientId: 'flag' }, env)).clientId).toBe('flag');
  });

  it('config.json profiles must be objects; a damaged profiles.json is an error naming it', async () => {
    writeConfig({ profiles: { work: 'https://id.example' } });
    await expect(resolveSettings({ profile: 'work' }, env)).rejects.toThrow(/"profiles" must map profile names to objects/);
    writeConfig({});
    writeFileSync(profilesPath(env), '{ nope');
    await expect(resolveSettings({ profile: 'work' }, env)).rejects.toThrow(/profiles\.json is damaged/);
    // Given an issuer and client by flags, the index is not needed, and not read.
    expect((await resolveSettings({ profile: 'work', issuer: ISS, clientId: 'c' }, env)).issuer).toBe(ISS);
  });

  it('concurrent logins of different profiles keep every entry (the index is written under its lock)', async () => {
    const names = Array.from({ length: 12 }, (_, i) => `p${i}`);
    await Promise.all(names.map((profile, i) => rememberProfile({ profile, issuer: `https://as${i}.example`, clientId: `c${i}` }, env)));
    const index = await readProfileIndex(env);
    expect(Object.keys(index).sort()).toEqual([...names].sort());
    for (const [i, name] of names.entries()) expect(index[name]).toEqual({ issuer: `https://as${i}.example`, client_id: `c${i}` });
    // No lock or temporary file is left behind.
    expect(readdirSync(join(home, 'authcli'))).toEqual(['profiles.json']);
  });
});

describe('authcli profiles', () => {
  const row = (over: Partial<ProfileRow>): ProfileRow => ({
    profile: 'default',
    issuer: ISS,
    client_id: 'authcli',
    subject: 'sub',
    username: 'alice',
    state: 'valid',
    expires_at: '2026-01-01T00:00:00.000Z',
    storage: { kind: 'file', path: '/home/a/.config/authcli/credentials.json' },
    ...over,
  });

  it('rows: stored sessions by slot, remembered and configured profiles without one as signed out; the default first', async () => {
    await writeSession(ISS, session(), env);
    await writeSession(`${ISS}#work`, session({ username: undefined, subject: 'sub-bob', expires_at: Date.now() - 1000 }), env);
    await writeSession(`${ISS}#old`, session({ refresh_token: undefined, expires_at: Date.now() - 1000 }), env);
    await rememberProfile({ profile: 'work', issuer: ISS, clientId: 'authcli' }, env);
    await rememberProfile({ profile: 'gone', issuer: 'https://gone.example', clientId: 'x' }, env);
    writeConfig({ profiles: { ci: { issuer: 'https://ci.example/' }, bare: {} } });
    const { rows } = await profileRows({ ...env, AUTHCLI_ISSUER: 'https://ignored.example' });
    expect(rows.map((r) => [r.profile, r.issuer, r.state])).toEqual([
      ['default', ISS, 'valid'],
      ['ci', 'https://ci.example', 'signed_out'],
      ['gone', 'https://gone.example', 'signed_out'],
      ['old', ISS, 'expired'],
      ['work', ISS, 'expired'],
    ]);
    expect(rows[0]!.storage).toEqual({ kind: 'file', path: credentialsPath(env) });
    expect(rows[2]).toMatchObject({ client_id: 'x', storage: null, username: undefined, expires_at: undefined });
  });

  it('a table with aligned columns and where the file is; blocks of lines when the terminal is narrower', () => {
    const rows = [
      row({}),
      row({
        profile: 'work',
        username: undefined,
        subject: 'sub-bob',
        state: 'renewable',
        storage: { kind: 'keychain', name: 'Secret Service' },
      }),
      row({
        profile: 'old',
        issuer: 'https://a-much-longer-issuer.example',
        state: 'signed_out',
        storage: null,
        client_id: undefined,
        username: undefined,
        subject: undefined,
      }),
    ];
    const wide = renderProfiles(rows, 200).split('\n');
    expect(wide.slice(0, 4)).toEqual([
      'PROFILE  ISSUER                                CLIENT   USER     STATUS      STORED',
      'default  https://id.example                    authcli  alice    valid       file',
      'work     https://id.example                    authcli  sub-bob  renewable   keychain',
      'old      https://a-much-longer-issuer.example  -        -        signed out  -',
    ]);
    expect(wide.slice(4)).toEqual(['', 'file: /home/a/.config/authcli/credentials.json', 'keychain: Secret Service', '']);
    // Not a terminal: the table whatever its width.
    expect(renderProfiles(rows, undefined)).toBe(renderProfiles(rows, 200));
    const narrow = renderProfiles(rows, 60);
    for (const line of narrow.split('\n')) expect(line.length, line).toBeLessThanOrEqual(60);
    expect(narrow).toContain(
      'work\n  issuer:  https://id.example\n  client:  authcli\n  user:    sub-bob\n  status:  renewable\n  stored:  keychain\n',
    );
    expect(renderProfiles([], 80)).toMatch(/^No profiles yet/);
  });
});

describe('login on a profile that is signed in: the replace question', () => {
  it('decision: nothing to replace or --force goes on; a terminal is asked; a script is told and goes on', () => {
    for (const interactive of [true, false]) {
      expect(replaceDecision({ signedIn: false, force: false, interactive })).toBe('go');
      expect(replaceDecision({ signedIn: true, force: true, interactive })).toBe('go');
    }
    expect(replaceDecision({ signedIn: true, force: false, interactive: true })).toBe('ask');
    expect(replaceDecision({ signedIn: true, force: false, interactive: false })).toBe('notice');
    for (const yes of ['y', 'Y', 'yes', 'YES', ' y ']) expect(acceptsReplace(yes), yes).toBe(true);
    for (const no of ['', 'n', 'no', 'N', 'yep', 'y y', undefined]) expect(acceptsReplace(no), String(no)).toBe(false);
  });

  /** confirmReplace on streams standing in for a terminal (`tty`) or a pipe, answering `answer` (undefined: end of input). */
  async function confirm(opts: { tty: boolean; force?: boolean; answer?: string; profile?: string; stored?: StoredSession }) {
    const settings = await resolveSettings({ issuer: ISS, profile: opts.profile }, env);
    if (opts.stored) await writeSession(settings.slot, opts.stored, env);
    const stdin = Object.assign(new PassThrough(), { isTTY: opts.tty });
    let said = '';
    const stderr = Object.assign(new PassThrough(), { isTTY: opts.tty });
    stderr.on('data', (d: Buffer) => (said += d.toString()));
    const out = createOutput({ stdout: { write: () => true }, stderr: { write: (t: string) => (said += t) } }, {});
    const done = confirmReplace(settings, { force: opts.force ?? false, out, stdin, stderr, env });
    if (opts.answer === undefined) stdin.end();
    else stdin.write(`${opts.answer}\n`);
    const result = await done.then(
      () => 'replaced' as const,
      (err: unknown) => err,
    );
    return { result, said };
  }

  it('on a terminal: says who is signed in where, asks, and goes on only on yes', async () => {
    const stored = session({ refresh_token: 'r' });
    const yes = await confirm({ tty: true, answer: 'y', profile: 'work', stored });
    expect(yes.result).toBe('replaced');
    expect(yes.said).toBe(`Signed in to ${ISS} as alice on profile work; signing in again replaces that sign-in.\nReplace it? [y/N] `);
    for (const answer of ['n', '', undefined]) {
      const no = await confirm({ tty: true, answer, profile: 'work', stored });
      expect(no.result).toBeInstanceOf(CliError);
      expect(no.result).toMatchObject({ code: 'declined', message: `kept the current sign-in to ${ISS} (profile work) as alice` });
    }
  });

  it('not on a terminal: the notice on stderr, and on; --force: not a word; nothing usable stored: nothing asked', async () => {
    const stored = session();
    const script = await confirm({ tty: false, stored });
    expect(script).toEqual({ result: 'replaced', said: `Signed in to ${ISS} as alice; signing in again replaces that sign-in.\n` });
    expect(await confirm({ tty: true, force: true, stored })).toEqual({ result: 'replaced', said: '' });
    expect(await confirm({ tty: true, profile: 'empty' })).toEqual({ result: 'replaced', said: '' });
    // Expired without a refresh token: nothing left to lose.
    const dead = session({ expires_at: Date.now() - 1000, refresh_token: undefined });
    expect(await confirm({ tty: true, profile: 'dead', stored: dead })).toEqual({ result: 'replaced', said: '' });
  });
});

describe('status: the expiry in local time', () => {
  it('in the zone asked for, with its name', () => {
    const t = Date.UTC(2026, 10, 26, 15, 4, 30);
    expect(localTime(t, 'UTC')).toBe('2026-11-26 15:04 UTC');
    expect(localTime(t, 'Europe/Berlin')).toBe('2026-11-26 16:04 GMT+1');
    expect(localTime(Date.UTC(2026, 6, 1, 22, 30), 'Europe/Berlin')).toBe('2026-07-02 00:30 GMT+2');
    expect(localTime(t, 'America/New_York')).toBe('2026-11-26 10:04 EST');
    expect(localTime(t, 'Asia/Kolkata')).toBe('2026-11-26 20:34 GMT+5:30');
  });

  it('the access token line says "expired" once, with when it happened and what renews it', () => {
    const t = Date.UTC(2026, 10, 26, 15, 4, 30);
    const line = (state: 'valid' | 'renewable' | 'expired', now: number, slot = ISS) => accessTokenLine(state, t, now, slot, 'UTC');
    expect(line('valid', t - 58 * 60_000)).toBe('valid, expires 2026-11-26 15:04 UTC (in 58 min)');
    expect(line('valid', t - 20_000)).toBe('valid, expires 2026-11-26 15:04 UTC (in less than a minute)');
    expect(line('renewable', t + 12 * 60_000)).toBe('expired 2026-11-26 15:04 UTC (12 min ago); `authcli token` renews it');
    expect(line('renewable', t + 1000)).toBe('expired 2026-11-26 15:04 UTC (less than a minute ago); `authcli token` renews it');
    expect(line('expired', t + 3 * 3_600_000)).toBe('expired 2026-11-26 15:04 UTC (3 h ago) and cannot be renewed: run `authcli login`');
    expect(line('expired', t + 1000, `${ISS}#work`)).toMatch(/cannot be renewed: run `authcli login --profile work`$/);
    for (const state of ['renewable', 'expired'] as const) expect(line(state, t + 60_000).match(/expired/g), state).toHaveLength(1);
  });
});

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveSettings, type SettingFlags, slotOf } from '@authcli/client/internal/config.js';
import { type StoredSession, writeSession } from '@authcli/client/internal/credentials.js';
import { defaultIssuerNotice, loopbackSignIn, notSignedInMessage } from '../src/issuer-hints.js';

const ELSEWHERE = 'http://localhost:47500';
let home: string;
let env: NodeJS.ProcessEnv;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'authcli-hints-'));
  env = { XDG_CONFIG_HOME: home, AUTHCLI_STORAGE: 'file' };
  mkdirSync(join(home, 'authcli'), { recursive: true });
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

/** profiles.json as `login` writes it: each profile's last sign-in. */
function remembered(profiles: Record<string, string>): void {
  const entries = Object.fromEntries(Object.entries(profiles).map(([name, issuer]) => [name, { issuer, client_id: 'authcli' }]));
  writeFileSync(join(home, 'authcli', 'profiles.json'), JSON.stringify({ version: 1, profiles: entries }));
}

function config(value: unknown): void {
  writeFileSync(join(home, 'authcli', 'config.json'), JSON.stringify(value));
}

/** The settings a command resolves, in this test's folder. */
const settingsOf = async (flags: SettingFlags, extra: NodeJS.ProcessEnv = {}) => {
  const e = { ...env, ...extra };
  return { ...(await resolveSettings(flags, e)), env: e };
};
const noticeFor = async (flags: SettingFlags, extra: NodeJS.ProcessEnv = {}) => defaultIssuerNotice(await settingsOf(flags, extra));

const session = (): StoredSession => ({
  client_id: 'authcli',
  access_token: 'a',
  token_type: 'Bearer',
  expires_at: Date.now() + 600_000,
  scope: 'openid',
  subject: 'sub-alice',
  username: 'alice',
  obtained_at: Date.now(),
});

describe('a profile at the built-in default while the other profiles are elsewhere', () => {
  it('says so, with the issuer the other profiles use and the --issuer to pass', async () => {
    remembered({ default: ELSEWHERE, work: ELSEWHERE });
    expect(await noticeFor({ profile: 'new' })).toBe(
      `Profile new has no issuer: using http://localhost:8080 (the default), but profiles default and work use ${ELSEWHERE}; pass --issuer ${ELSEWHERE} to use it.`,
    );
    remembered({ work: ELSEWHERE });
    expect(await noticeFor({})).toBe(
      `Profile default has no issuer: using http://localhost:8080 (the default), but profile work uses ${ELSEWHERE}; pass --issuer ${ELSEWHERE} to use it.`,
    );
  });

  it('suggests the issuer most other profiles use; a tie goes to the default profile, then to the first by name', async () => {
    remembered({ a: 'https://a.example', b: ELSEWHERE, c: ELSEWHERE, d: 'https://a.example', e: ELSEWHERE });
    expect(await noticeFor({ profile: 'new' })).toMatch(
      /but profiles b, c and e use http:\/\/localhost:47500; pass --issuer http:\/\/localhost:47500 /,
    );
    remembered({ a: 'https://a.example', default: ELSEWHERE });
    expect(await noticeFor({ profile: 'new' })).toMatch(/but profile default uses http:\/\/localhost:47500;/);
    remembered({ b: ELSEWHERE, a: 'https://a.example' });
    expect(await noticeFor({ profile: 'new' })).toMatch(/but profile a uses https:\/\/a\.example;/);
    remembered(Object.fromEntries(['p1', 'p2', 'p3', 'p4', 'p5'].map((p) => [p, ELSEWHERE])));
    expect(await noticeFor({ profile: 'new' })).toMatch(/but profiles p1, p2, p3 and 2 more use /);
  });

  it("counts a profile's section in config.json, which wins over its last sign-in, as resolveSettings does", async () => {
    remembered({ work: 'https://old.example' });
    config({ profiles: { work: { issuer: `${ELSEWHERE}/` }, ci: { client_id: 'bot' } } });
    expect(await noticeFor({ profile: 'new' })).toMatch(
      /but profile work uses http:\/\/localhost:47500; pass --issuer http:\/\/localhost:47500 /,
    );
  });

  it('nothing when there is no other profile, or the others are at the default too (the most of them)', async () => {
    expect(await noticeFor({ profile: 'new' })).toBeUndefined();
    remembered({ new: ELSEWHERE });
    expect(await noticeFor({ profile: 'new' })).toBeUndefined();
    remembered({ a: 'http://localhost:8080', b: 'http://localhost:8080/', c: ELSEWHERE });
    expect(await noticeFor({ profile: 'new' })).toBeUndefined();
    config({ profiles: { a: { client_id: 'no-issuer' } } });
    remembered({});
    expect(await noticeFor({ profile: 'new' })).toBeUndefined();
  });

  it('nothing when the issuer was named: --issuer, AUTHCLI_ISSUER, config.json, or the profile signed in there before', async () => {
    remembered({ default: ELSEWHERE, work: ELSEWHERE, here: 'http://localhost:8080' });
    expect(await noticeFor({ profile: 'new' })).toBeDefined();
    expect(await noticeFor({ profile: 'new', issuer: 'http://localhost:8080' })).toBeUndefined();
    expect(await noticeFor({ profile: 'new' }, { AUTHCLI_ISSUER: 'http://localhost:8080' })).toBeUndefined();
    expect(await noticeFor({ profile: 'here' })).toBeUndefined();
    config({ profiles: { new: { issuer: 'http://localhost:8080' } } });
    expect(await noticeFor({ profile: 'new' })).toBeUndefined();
    config({ issuer: 'http://localhost:8080' });
    expect(await noticeFor({ profile: 'new' })).toBeUndefined();
  });
});

describe('a sign-in under another loopback name of the same server', () => {
  it('localhost, 127.0.0.1 and [::1] on one port are one server: the sign-in there is named, with its --issuer', async () => {
    await writeSession(slotOf(ELSEWHERE, 'default'), session(), env);
    for (const asked of ['http://127.0.0.1:47500', 'http://[::1]:47500', 'http://127.0.0.1:47500/']) {
      const settings = await settingsOf({ issuer: asked });
      expect(await loopbackSignIn(settings), asked).toBe(ELSEWHERE);
      expect(await notSignedInMessage(settings, 'not signed in')).toBe(
        `not signed in to ${settings.issuer}; you are signed in to ${ELSEWHERE} (the same server by another name?): use --issuer ${ELSEWHERE}`,
      );
    }
    await writeSession(slotOf('http://[::1]:9000/realm', 'work'), session(), env);
    const work = await settingsOf({ issuer: 'http://localhost:9000/realm', profile: 'work' });
    expect(await notSignedInMessage(work, 'not signed in')).toBe(
      'not signed in to http://localhost:9000/realm (profile work); you are signed in to http://[::1]:9000/realm (the same server by another name?): use --issuer http://[::1]:9000/realm',
    );
  });

  it('nothing for another port, path or profile, a host that is not loopback, or nothing stored', async () => {
    await writeSession(slotOf(ELSEWHERE, 'default'), session(), env);
    await writeSession(slotOf('https://id.example', 'default'), session(), env);
    for (const [issuer, profile] of [
      ['http://127.0.0.1:47501', undefined],
      ['http://127.0.0.1:47500/other', undefined],
      ['http://127.0.0.1:47500', 'work'],
      ['https://other.example', undefined],
      ['https://id.example.com', undefined],
      ['http://127.0.0.2:47500', undefined],
    ] as const) {
      const settings = await settingsOf({ issuer, profile });
      expect(await loopbackSignIn(settings), `${issuer} ${profile}`).toBeUndefined();
      expect(await notSignedInMessage(settings, 'the message as it was')).toBe('the message as it was');
    }
  });
});

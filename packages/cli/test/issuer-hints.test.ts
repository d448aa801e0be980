import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveSettings, type SettingFlags } from '@authcli/client/internal/config.js';
import { defaultIssuerNotice } from '../src/issuer-hints.js';

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

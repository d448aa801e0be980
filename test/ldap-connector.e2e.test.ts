// The LDAP connector (packages/server/src/connectors/ldap.ts) against a real directory: Debian's slapd started from a
// temporary folder by test/support/slapd.ts, with users, groups, a service account and a test CA. What it checks is in
// docs/connectors.md#ldap. Short timeouts through the options, except where the defaults themselves are the point.
import { authenticateLdap, type LdapOutcome, type LdapSettings } from '@authcli/server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from './support/http.js';
import { DIRECTORY, HAS_OPENSSL, HAS_SLAPD, SLAPD, type Slapd, startSlapd } from './support/slapd.js';
import { describeWith } from './support/tools.js';

/** Every step at most a second: the directory is on loopback and answers in milliseconds. */
const FAST = { timeoutMs: 1000 };
const { alice, bob, carol, star } = DIRECTORY.users;

async function until(what: string, check: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function timed(run: () => Promise<LdapOutcome>): Promise<{ outcome: LdapOutcome; ms: number }> {
  const started = performance.now();
  const outcome = await run();
  return { outcome, ms: performance.now() - started };
}

/** Every connection slapd has open now was open before (connections of other tests, in whatever order they ran, are theirs). */
let closedSince: (before: ReadonlySet<string>) => boolean = () => false;

const count = (text: string, pattern: RegExp) => text.match(new RegExp(pattern.source, 'g'))?.length ?? 0;

describeWith(
  'slapd',
  HAS_SLAPD && HAS_OPENSSL,
  `${SLAPD} or openssl is missing`,
)('the LDAP connector against a real slapd', () => {
  let slapd: Slapd;
  let settings: (over?: Partial<LdapSettings>) => LdapSettings;
  const uuid = (dn: string) => slapd.entryUuids.get(dn)!;

  beforeAll(async () => {
    slapd = await startSlapd({ tls: true });
    closedSince = (before) => slapd.openConnections().every((c) => before.has(c));
    settings = (over = {}) => ({
      url: slapd.url,
      startTls: false,
      bindDn: DIRECTORY.serviceDn,
      bindPassword: DIRECTORY.servicePassword,
      userBase: DIRECTORY.userBase,
      userFilter: '(uid={username})',
      groupBase: DIRECTORY.groupBase,
      allowedGroups: [],
      ...over,
    });
  });
  afterAll(async () => {
    await slapd?.stop();
  });

  it('the right password signs in: entryUUID as the subject, uid, mail and displayName (else cn) as claims, the groups', async () => {
    expect(uuid(alice.dn)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(await authenticateLdap(settings(), 'alice', alice.password, FAST)).toEqual({
      kind: 'ok',
      subject: uuid(alice.dn),
      claims: { preferred_username: 'alice', email: alice.mail, name: alice.displayName },
      groups: ['engineers'],
    });
    expect(await authenticateLdap(settings(), 'bob', bob.password, FAST)).toEqual({
      kind: 'ok',
      subject: uuid(bob.dn),
      claims: { preferred_username: 'bob', email: bob.mail, name: bob.cn },
      groups: ['designers'],
    });
    // Without a groupBase no group is read.
    const noGroups = await authenticateLdap(settings({ groupBase: undefined }), 'alice', alice.password, FAST);
    expect(noGroups).toMatchObject({ kind: 'ok', subject: uuid(alice.dn), groups: [] });
    // The service account searched (its bind), then alice's DN was bound with her password.
    expect(slapd.log()).toContain(`BIND dn="${DIRECTORY.serviceDn}" method=128`);
    expect(slapd.log()).toContain(`BIND dn="${alice.dn}" method=128`);
  });

  it('a wrong password and an unknown user get one answer: invalid', async () => {
    expect(await authenticateLdap(settings(), 'alice', 'not-her-password', FAST)).toEqual({ kind: 'invalid' });
    expect(await authenticateLdap(settings(), 'alice', bob.password, FAST)).toEqual({ kind: 'invalid' });
    expect(await authenticateLdap(settings(), 'nobody', alice.password, FAST)).toEqual({ kind: 'invalid' });
    // Two entries named "twin" (one in a sub-OU): not exactly one, so nobody, whatever the password.
    expect(await authenticateLdap(settings(), 'twin', DIRECTORY.twin.password, FAST)).toEqual({ kind: 'invalid' });
  });

  it('an empty password is invalid before any connection (it would be an unauthenticated bind, RFC 4513 §5.1.2)', async () => {
    expect(await authenticateLdap(settings(), 'alice', '', FAST)).toEqual({ kind: 'invalid' });
    // Nothing listens at this port: an answer of `unavailable` would mean a connection was tried. (Counting slapd's
    // ACCEPT lines instead was unreliable: on a busy machine an earlier test's connections reach the log late.)
    const nowhere = `ldap://127.0.0.1:${await freePort()}`;
    expect(await authenticateLdap(settings({ url: nowhere }), 'alice', '', FAST)).toEqual({ kind: 'invalid' });
    expect(await authenticateLdap(settings({ url: nowhere }), 'alice', 'x', FAST)).toMatchObject({ kind: 'unavailable' });
  });

  it('a username of filter metacharacters is escaped (RFC 4515): it matches itself only, never a wildcard or a second filter', async () => {
    for (const username of ['*', ')(uid=*', 'alice)(uid=*', '*)(|(uid=*', 'al*', 'alice*', '\\', 'star*', 'star*(x']) {
      expect(await authenticateLdap(settings(), username, alice.password, FAST), username).toEqual({ kind: 'invalid' });
    }
    expect(await authenticateLdap(settings(), 'star*', star.password, FAST)).toEqual({ kind: 'invalid' });
    // The entry whose uid is made of them signs in with exactly that name.
    expect(await authenticateLdap(settings(), star.uid, star.password, FAST)).toMatchObject({
      kind: 'ok',
      subject: uuid(star.dn),
      claims: { preferred_username: star.uid, name: star.cn },
    });
    // What slapd was asked: the value escaped, one equality filter.
    expect(slapd.log()).toContain('filter="(uid=\\2A)"');
    expect(slapd.log()).toContain('filter="(uid=\\29\\28uid=\\2A)"');
  });

  it('allowedGroups: a member signs in (CNs compared without case), anyone else is refused after the password check', async () => {
    const engineers = settings({ allowedGroups: ['engineers'] });
    expect(await authenticateLdap(engineers, 'alice', alice.password, FAST)).toMatchObject({ kind: 'ok', groups: ['engineers'] });
    expect(await authenticateLdap(settings({ allowedGroups: ['Engineers'] }), 'alice', alice.password, FAST)).toMatchObject({ kind: 'ok' });
    expect(await authenticateLdap(engineers, 'bob', bob.password, FAST)).toEqual({
      kind: 'refused',
      reason: 'your account may not use this service',
      detail: 'not a member of engineers',
    });
    // A wrong password outside the group is invalid, as anywhere: refused says the password was right.
    expect(await authenticateLdap(engineers, 'bob', 'wrong', FAST)).toEqual({ kind: 'invalid' });
    // posixGroup membership is by memberUid.
    expect(await authenticateLdap(settings({ allowedGroups: ['operators'] }), 'carol', carol.password, FAST)).toEqual({
      kind: 'ok',
      subject: uuid(carol.dn),
      claims: { preferred_username: 'carol', name: carol.cn },
      groups: ['operators'],
    });
    expect(await authenticateLdap(settings({ allowedGroups: ['operators', 'engineers'] }), 'alice', alice.password, FAST)).toMatchObject({
      kind: 'ok',
    });
  });

  it('settings that cannot work and a refused service account are unavailable, never invalid', async () => {
    const refused = await authenticateLdap(settings({ bindPassword: 'wrong' }), 'alice', alice.password, FAST);
    expect(refused).toEqual({
      kind: 'unavailable',
      reason: 'service account bind: the directory refused the service account: check bindDn and bindPassword',
    });
    // Plain ldap:// off loopback would send the password in clear: refused before connecting (192.0.2.1 is TEST-NET-1).
    const clear = await timed(() => authenticateLdap(settings({ url: 'ldap://192.0.2.1:389' }), 'alice', alice.password, FAST));
    expect(clear.outcome).toMatchObject({ kind: 'unavailable', reason: expect.stringMatching(/^settings: ldap:\/\/ without StartTLS/) });
    expect(clear.ms).toBeLessThan(100);
    expect(await authenticateLdap(settings({ bindPassword: '' }), 'alice', alice.password, FAST)).toMatchObject({
      kind: 'unavailable',
      reason: expect.stringContaining('RFC 4513'),
    });
    expect(await authenticateLdap(settings({ groupBase: undefined, allowedGroups: ['engineers'] }), 'alice', alice.password, FAST)).toEqual(
      {
        kind: 'unavailable',
        reason: 'settings: allowedGroups needs a groupBase to search the groups in',
      },
    );
    expect(await authenticateLdap(settings({ userFilter: '(uid=alice)' }), 'alice', alice.password, FAST)).toMatchObject({
      kind: 'unavailable',
    });
    // A filter that does not parse fails its step at once.
    const unparsed = await timed(() =>
      authenticateLdap(settings({ userFilter: '(&(uid={username})(bogus))' }), 'alice', alice.password, FAST),
    );
    expect(unparsed.outcome).toEqual({ kind: 'unavailable', reason: 'user search: Invalid expression: bogus' });
    expect(unparsed.ms).toBeLessThan(500);
    expect(await authenticateLdap(settings({ userBase: 'ou=nowhere,dc=example,dc=test' }), 'alice', alice.password, FAST)).toMatchObject({
      kind: 'unavailable',
      reason: 'user search: NoSuchObjectError (LDAP result 32)',
    });
  });

  it('StartTLS and LDAPS sign in with the test CA, and are unavailable without it or for another host name', async () => {
    const startTls = settings({ startTls: true, caCertPem: slapd.caCertPem });
    const ldaps = settings({ url: slapd.ldapsUrl!, caCertPem: slapd.caCertPem });
    const ok = { kind: 'ok', subject: uuid(alice.dn), groups: ['engineers'] };
    expect(await authenticateLdap(startTls, 'alice', alice.password, FAST)).toMatchObject(ok);
    expect(slapd.log()).toContain('EXT oid=1.3.6.1.4.1.1466.20037');
    expect(await authenticateLdap(ldaps, 'alice', alice.password, FAST)).toMatchObject(ok);
    expect(await authenticateLdap(ldaps, 'alice', 'wrong', FAST)).toEqual({ kind: 'invalid' });

    // Without the CA, the system's CAs do not know the test CA: TLS verification refuses the certificate.
    const untrusted = /StartTLS|service account bind/;
    for (const noCa of [settings({ startTls: true }), settings({ url: slapd.ldapsUrl! })]) {
      const outcome = await authenticateLdap(noCa, 'alice', alice.password, FAST);
      expect(outcome).toMatchObject({ kind: 'unavailable', reason: expect.stringMatching(untrusted) });
      expect(outcome).toMatchObject({ reason: expect.stringMatching(/certificate/i) });
    }
    // The certificate is for 127.0.0.1: the right CA does not make it good for another name.
    const otherName = settings({ url: slapd.ldapsUrl!.replace('127.0.0.1', 'localhost'), caCertPem: slapd.caCertPem });
    expect(await authenticateLdap(otherName, 'alice', alice.password, FAST)).toMatchObject({
      kind: 'unavailable',
      reason: expect.stringContaining('ERR_TLS_CERT_ALTNAME_INVALID'),
    });
  });

  it('a directory that stops answering (SIGSTOP) is unavailable within the timeout, and signs in again once resumed', async () => {
    await slapd.pause();
    let paused: Array<{ outcome: LdapOutcome; ms: number }>;
    try {
      paused = await Promise.all([
        timed(() => authenticateLdap(settings(), 'alice', alice.password)),
        timed(() => authenticateLdap(settings(), 'alice', alice.password, FAST)),
        timed(() => authenticateLdap(settings(), 'alice', alice.password, { timeoutMs: 5000, totalTimeoutMs: 1500 })),
        timed(() => authenticateLdap(settings({ startTls: true, caCertPem: slapd.caCertPem }), 'alice', alice.password, FAST)),
      ]);
    } finally {
      slapd.resume();
    }
    const [defaults, fast, total, startTls] = paused;
    for (const { outcome } of paused) {
      expect(outcome).toMatchObject({
        kind: 'unavailable',
        reason: expect.stringMatching(/(bind|StartTLS): .*(timed out|no answer within)/),
      });
    }
    // The kernel accepted the connection; the bind had no answer: the operation timeout (5 s by default) ends it.
    expect(defaults!.ms).toBeGreaterThan(4900);
    expect(defaults!.ms).toBeLessThan(7000);
    expect(fast!.ms).toBeGreaterThan(950);
    expect(fast!.ms).toBeLessThan(2500);
    expect(startTls!.ms).toBeLessThan(2500);
    // The whole sign-in's deadline cuts a step that has a longer timeout of its own.
    expect(total!.ms).toBeGreaterThan(1450);
    expect(total!.ms).toBeLessThan(3000);

    // Nothing restarted: the same slapd answers again. (When slapd closes the connections the timeouts gave up on,
    // while it was stopped, is slapd's: on a loaded machine it can take longer than any wait here. That every
    // connection the connector opens is closed is the parallel test's.)
    expect(await authenticateLdap(settings(), 'alice', alice.password, FAST)).toMatchObject({ kind: 'ok', subject: uuid(alice.dn) });
  });

  it('a stopped directory is unavailable at once (connection refused)', async () => {
    const gone = await startSlapd();
    const url = gone.url;
    try {
      expect(await authenticateLdap(settings({ url }), 'alice', alice.password, FAST)).toMatchObject({ kind: 'ok' });
    } finally {
      await gone.stop();
    }
    const { outcome, ms } = await timed(() => authenticateLdap(settings({ url }), 'alice', alice.password));
    expect(outcome).toMatchObject({ kind: 'unavailable', reason: expect.stringContaining('ECONNREFUSED') });
    expect(ms).toBeLessThan(500);
  });

  it('20 sign-ins at once each get their own answer, and every connection is closed', async () => {
    const before = new Set(slapd.openConnections());
    const cases: Array<[string, string, LdapOutcome['kind']]> = [
      ['alice', alice.password, 'ok'],
      ['bob', bob.password, 'ok'],
      ['carol', carol.password, 'ok'],
      ['alice', bob.password, 'invalid'],
      ['nobody', 'x', 'invalid'],
    ];
    const runs = Array.from({ length: 20 }, (_, i) => cases[i % cases.length]!);
    const outcomes = await Promise.all(runs.map(([u, p]) => authenticateLdap(settings(), u, p, FAST)));
    expect(outcomes.map((o) => o.kind)).toEqual(runs.map(([, , kind]) => kind));
    outcomes.forEach((outcome, i) => {
      const [username] = runs[i]!;
      if (outcome.kind === 'ok') expect(outcome.claims.preferred_username).toBe(username);
      if (outcome.kind === 'ok') expect(outcome.subject).toBe(uuid(DIRECTORY.users[username as 'alice' | 'bob' | 'carol'].dn));
    });
    await until('slapd has closed every connection this test opened', () => closedSince(before), 15_000);
    expect(count(slapd.log(), /UNBIND/)).toBeGreaterThanOrEqual(20);
  });
});

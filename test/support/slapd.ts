// A real LDAP directory for the LDAP connector's tests: Debian's OpenLDAP server (slapd) run from a temporary folder
// with a slapd.conf of its own (no slapd.d, nothing of /etc/ldap but the schema files), the mdb backend in that folder,
// a small directory loaded offline (slapd -T add, which is slapadd) before it starts, on free loopback ports. With
// `tls`, a CA and a server certificate made by openssl in the folder, and slapd serving StartTLS on its ldap:// port
// and TLS from the start on an ldaps:// port. slapd runs in the foreground (-d), so the child process is slapd itself:
// pause() and resume() send it SIGSTOP and SIGCONT. Its stats log (connections, binds, searches) is kept for the
// tests to read. Installed by scripts/ensure-slapd.mjs.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './http.js';

const run = promisify(execFile);

export const SLAPD = process.env.AUTHCLI_SLAPD ?? '/usr/sbin/slapd';
export const HAS_SLAPD = existsSync(SLAPD) && existsSync('/etc/ldap/schema/nis.schema');
export const HAS_OPENSSL = existsSync('/usr/bin/openssl');

const SUFFIX = 'dc=example,dc=test';
/** Where Debian keeps slapd's modules (back_mdb is one). */
const MODULE_PATH = '/usr/lib/ldap';

/** The directory's names and secrets, as the tests use them. */
export const DIRECTORY = {
  suffix: SUFFIX,
  userBase: `ou=people,${SUFFIX}`,
  groupBase: `ou=groups,${SUFFIX}`,
  serviceDn: `cn=authcli,ou=services,${SUFFIX}`,
  servicePassword: 'service-account-password',
  /** alice is in engineers (groupOfNames); bob in none; carol in operators (posixGroup, by memberUid). */
  users: {
    alice: { dn: `uid=alice,ou=people,${SUFFIX}`, password: 'alice-password', mail: 'alice@example.test', displayName: 'Alice Liddell' },
    bob: { dn: `uid=bob,ou=people,${SUFFIX}`, password: 'bob-password', mail: 'bob@example.test', cn: 'Bob Builder' },
    carol: { dn: `uid=carol,ou=people,${SUFFIX}`, password: 'carol-password', cn: 'Carol Operator' },
    /** A login name made of filter metacharacters: it must match itself exactly, as no wildcard. */
    star: { uid: 'star*(x)', dn: `uid=star*(x),ou=people,${SUFFIX}`, password: 'star-password', cn: 'Star' },
  },
  /** Two entries with uid "twin" (one in a sub-OU): a username that names two people signs nobody in. */
  twin: { password: 'twin-password' },
} as const;

const LDIF = `dn: ${SUFFIX}
objectClass: dcObject
objectClass: organization
dc: example
o: Example

dn: ou=people,${SUFFIX}
objectClass: organizationalUnit
ou: people

dn: ou=contractors,ou=people,${SUFFIX}
objectClass: organizationalUnit
ou: contractors

dn: ou=groups,${SUFFIX}
objectClass: organizationalUnit
ou: groups

dn: ou=services,${SUFFIX}
objectClass: organizationalUnit
ou: services

dn: ${DIRECTORY.serviceDn}
objectClass: organizationalRole
objectClass: simpleSecurityObject
cn: authcli
userPassword: ${DIRECTORY.servicePassword}

dn: ${DIRECTORY.users.alice.dn}
objectClass: inetOrgPerson
uid: alice
cn: Alice
sn: Liddell
displayName: ${DIRECTORY.users.alice.displayName}
mail: ${DIRECTORY.users.alice.mail}
userPassword: ${DIRECTORY.users.alice.password}

dn: ${DIRECTORY.users.bob.dn}
objectClass: inetOrgPerson
uid: bob
cn: ${DIRECTORY.users.bob.cn}
sn: Builder
mail: ${DIRECTORY.users.bob.mail}
userPassword: ${DIRECTORY.users.bob.password}

dn: ${DIRECTORY.users.carol.dn}
objectClass: inetOrgPerson
objectClass: posixAccount
uid: carol
cn: ${DIRECTORY.users.carol.cn}
sn: Operator
uidNumber: 10003
gidNumber: 10003
homeDirectory: /home/carol
userPassword: ${DIRECTORY.users.carol.password}

dn: ${DIRECTORY.users.star.dn}
objectClass: inetOrgPerson
uid: ${DIRECTORY.users.star.uid}
cn: ${DIRECTORY.users.star.cn}
sn: Star
userPassword: ${DIRECTORY.users.star.password}

dn: uid=twin,ou=people,${SUFFIX}
objectClass: inetOrgPerson
uid: twin
cn: Twin One
sn: One
userPassword: ${DIRECTORY.twin.password}

dn: uid=twin,ou=contractors,ou=people,${SUFFIX}
objectClass: inetOrgPerson
uid: twin
cn: Twin Two
sn: Two
userPassword: ${DIRECTORY.twin.password}

dn: cn=engineers,ou=groups,${SUFFIX}
objectClass: groupOfNames
cn: engineers
member: ${DIRECTORY.users.alice.dn}

dn: cn=designers,ou=groups,${SUFFIX}
objectClass: groupOfNames
cn: designers
member: ${DIRECTORY.users.bob.dn}

dn: cn=operators,ou=groups,${SUFFIX}
objectClass: posixGroup
cn: operators
gidNumber: 20001
memberUid: carol
`;

export interface Slapd {
  /** ldap://127.0.0.1:<port> (StartTLS offered there when started with tls). */
  url: string;
  /** ldaps://127.0.0.1:<port>, when started with tls. */
  ldapsUrl: string | undefined;
  /** The test CA that signed the server's certificate (for 127.0.0.1 only), when started with tls. */
  caCertPem: string | undefined;
  /** Each entry's entryUUID (RFC 4530) by DN, as slapd made them. */
  entryUuids: Map<string, string>;
  /** slapd's stats log so far (one line per connection, operation and result). */
  log(): string;
  /** Connections slapd accepted and has not closed yet, by its conn= numbers. */
  openConnections(): string[];
  /** SIGSTOP: the kernel still accepts connections on its ports, nothing answers them. */
  pause(): Promise<void>;
  /** SIGCONT. */
  resume(): void;
  stop(): Promise<void>;
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', () => r()));
}

async function makeCertificates(dir: string): Promise<void> {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  await run('openssl', [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    join(dir, 'ca.key'),
    '-out',
    join(dir, 'ca.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=authcli test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  await run('openssl', ['req', ...ec, '-keyout', join(dir, 'server.key'), '-out', join(dir, 'server.csr'), '-subj', '/CN=127.0.0.1']);
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n');
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    join(dir, 'server.csr'),
    '-CA',
    join(dir, 'ca.pem'),
    '-CAkey',
    join(dir, 'ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    join(dir, 'server.ext'),
    '-out',
    join(dir, 'server.pem'),
  ]);
}

function slapdConf(dir: string, tls: boolean): string {
  return [
    ...['core', 'cosine', 'inetorgperson', 'nis'].map((schema) => `include /etc/ldap/schema/${schema}.schema`),
    `pidfile ${join(dir, 'slapd.pid')}`,
    `argsfile ${join(dir, 'slapd.args')}`,
    `modulepath ${MODULE_PATH}`,
    'moduleload back_mdb',
    ...(tls
      ? [
          `TLSCACertificateFile ${join(dir, 'ca.pem')}`,
          `TLSCertificateFile ${join(dir, 'server.pem')}`,
          `TLSCertificateKeyFile ${join(dir, 'server.key')}`,
        ]
      : []),
    'database mdb',
    `suffix "${SUFFIX}"`,
    `directory ${join(dir, 'data')}`,
    // Passwords are only ever compared by a bind; the service account reads everything else; anonymous reads nothing.
    'access to attrs=userPassword by anonymous auth by * none',
    `access to * by dn.exact="${DIRECTORY.serviceDn}" read by * none`,
    '',
  ].join('\n');
}

/** Waits until slapd accepts a connection on the port, or fails with its log when it exits first. */
async function listening(port: number, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`slapd exited: ${log()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`slapd did not listen on ${port}: ${log()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export async function startSlapd(opts: { tls?: boolean } = {}): Promise<Slapd> {
  const tls = opts.tls === true;
  const dir = mkdtempSync(join(tmpdir(), 'authcli-slapd-'));
  mkdirSync(join(dir, 'data'));
  const conf = join(dir, 'slapd.conf');
  writeFileSync(conf, slapdConf(dir, tls));
  writeFileSync(join(dir, 'directory.ldif'), LDIF);
  if (tls) await makeCertificates(dir);
  // slapd -T add is slapadd, -T cat slapcat: offline, before the server starts, so no entry can be missing at start.
  await run(SLAPD, ['-T', 'add', '-f', conf, '-l', join(dir, 'directory.ldif')]);
  const { stdout: dump } = await run(SLAPD, ['-T', 'cat', '-f', conf]);
  const entryUuids = new Map<string, string>();
  for (const record of dump.split('\n\n')) {
    const dn = /^dn: (.*)$/m.exec(record)?.[1];
    const uuid = /^entryUUID: (.*)$/m.exec(record)?.[1];
    if (dn && uuid) entryUuids.set(dn, uuid);
  }

  // A port free a moment ago may be taken by another test's server before slapd binds it: then try new ones.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const ldapsPort = tls ? await freePort() : undefined;
    const urls = [`ldap://127.0.0.1:${port}/`, ...(ldapsPort ? [`ldaps://127.0.0.1:${ldapsPort}/`] : [])];
    let output = '';
    // -d stats: in the foreground, logging connections and operations to stderr.
    const child = spawn(SLAPD, ['-f', conf, '-h', urls.join(' '), '-d', 'stats'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH ?? '' },
    });
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    try {
      await listening(port, child, () => output);
      if (ldapsPort) await listening(ldapsPort, child, () => output);
    } catch (err) {
      child.kill('SIGKILL');
      await exited(child);
      if (attempt < 3 && /bind|Address already in use/i.test(output)) continue;
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    let paused = false;
    return {
      url: `ldap://127.0.0.1:${port}`,
      ldapsUrl: ldapsPort ? `ldaps://127.0.0.1:${ldapsPort}` : undefined,
      caCertPem: tls ? readFileSync(join(dir, 'ca.pem'), 'utf8') : undefined,
      entryUuids,
      log: () => output,
      openConnections: () => {
        const open = new Set<string>();
        for (const [, conn, event] of output.matchAll(/conn=(\d+) fd=\d+ (ACCEPT|closed)/g)) {
          if (event === 'ACCEPT') open.add(conn!);
          else open.delete(conn!);
        }
        return [...open];
      },
      pause: async () => {
        child.kill('SIGSTOP');
        paused = true;
        // The signal stops each of slapd's threads when the kernel next schedules it: on a busy machine one may still
        // answer a request sent at once. Resolved once every thread is stopped (state T in /proc), as a frozen
        // directory is.
        const stopped = () =>
          readdirSync(`/proc/${child.pid}/task`).every((t) => {
            const stat = readFileSync(`/proc/${child.pid}/task/${t}/stat`, 'utf8');
            return /^\S+ \(.*\) [Tt] /.test(stat);
          });
        for (let i = 0; i < 200 && !stopped(); i++) await new Promise((r) => setTimeout(r, 5));
      },
      resume: () => {
        child.kill('SIGCONT');
        paused = false;
      },
      stop: async () => {
        if (child.exitCode === null && child.signalCode === null) {
          if (paused) child.kill('SIGCONT');
          child.kill('SIGTERM');
          const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
          await exited(child);
          clearTimeout(killer);
        }
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
}

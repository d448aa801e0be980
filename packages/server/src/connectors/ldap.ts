/**
 * The LDAP connector's core: checks a username and password against a directory and says who that is. No
 * Fastify and no store: settings in, a typed outcome out (the sign-in page and user provisioning decide what to do
 * with it). Steps, on one connection (docs/connectors.md#ldap):
 *
 * 1. refuse an empty password before anything else: a simple bind with a DN and no password is an
 *    unauthenticated bind (RFC 4513 §5.1.2) that directories answer with success;
 * 2. connect (ldaps://, or ldap:// then StartTLS, RFC 4511 §4.14), certificates verified;
 * 3. bind as the service account and search userBase with the user filter, the username escaped (RFC 4515 §3);
 *    anything but exactly one entry is `invalid`, as a wrong password is;
 * 4. bind as that entry's DN with the password (RFC 4513 §5.1.3): the directory checks it;
 * 5. bind as the service account again and read the user's groups (groupOfNames `member`, posixGroup
 *    `memberUid`) under groupBase; outside allowedGroups is `refused`.
 *
 * Every step is bounded (config/defaults.ts LDAP_*), and the connection is closed (unbind) however it ends.
 */
import { isIP } from 'node:net';
import type { ConnectionOptions } from 'node:tls';
import { Client, type Entry, InappropriateAuthError, InvalidCredentialsError, ResultCodeError } from 'ldapts';
import { isLoopbackHost } from '@authcli/protocol';
import { NOT_A_MEMBER } from './accounts.js';
import {
  CLAIM_TEXT_MAX,
  LDAP_CONNECT_TIMEOUT_MS,
  LDAP_GROUPS_MAX,
  LDAP_OPERATION_TIMEOUT_MS,
  LDAP_TOTAL_TIMEOUT_MS,
  LDAP_USER_SEARCH_SIZE_LIMIT,
  SIGNIN_PASSWORD_MAX,
  SIGNIN_USERNAME_MAX,
} from '../config/defaults.js';

export interface LdapSettings {
  /** ldap://host:port or ldaps://host:port. Plain ldap:// without StartTLS only to a loopback address. */
  url: string;
  /** Upgrade an ldap:// connection with StartTLS before any bind. */
  startTls: boolean;
  /** The service account that searches users and groups. */
  bindDn: string;
  bindPassword: string;
  userBase: string;
  /** Default "(uid={username})"; {username} is replaced with the RFC 4515-escaped username. */
  userFilter: string;
  /** Where groups are searched (groupOfNames member=<userDN> or posixGroup memberUid=<uid>). */
  groupBase?: string;
  /** CNs; empty = anyone in userBase. */
  allowedGroups: string[];
  /** A CA (PEM) for ldaps/StartTLS in place of the system's CAs. */
  caCertPem?: string;
}

export type LdapOutcome =
  | { kind: 'ok'; subject: string; claims: { preferred_username: string; email?: string; name?: string }; groups: string[] }
  /** Unknown user or wrong password: one answer for both. */
  | { kind: 'invalid' }
  /** Authenticated, but outside the allowed groups: `reason` for the person, `detail` for the log. */
  | { kind: 'refused'; reason: string; detail?: string }
  /** Directory down, timed out, TLS failure, service bind refused, settings unusable. */
  | { kind: 'unavailable'; reason: string };

export interface LdapOptions {
  /** Each step's timeout, the connection's and every operation's (default LDAP_CONNECT_TIMEOUT_MS and LDAP_OPERATION_TIMEOUT_MS). */
  timeoutMs?: number;
  /** The whole sign-in's (default LDAP_TOTAL_TIMEOUT_MS). */
  totalTimeoutMs?: number;
}

/** RFC 4515 §3: the five characters a filter's assertion value may not hold as they are, as `\XX` escapes. */
export function escapeFilterValue(value: string): string {
  return value.replace(/[*()\\\0]/g, (c) => `\\${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** The user filter with the escaped username in place of every {username}. */
export function userFilterFor(template: string, username: string): string {
  const escaped = escapeFilterValue(username);
  return template.replaceAll('{username}', () => escaped);
}

/** The URL's host without IPv6 brackets. */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * Whether a filter is one parenthesised filter: its first "(" closes at its last character. In RFC 4515 a "(" or ")"
 * inside a value is always escaped (\28, \29), so every bare one is structure. ldapts parses some unbalanced filters
 * without a word ("(&(uid=x)" as "(&(uid=x))"); this refuses them before they mean something the operator did not write.
 */
function isOneFilter(filter: string): boolean {
  let depth = 0;
  for (let i = 0; i < filter.length; i++) {
    const c = filter[i];
    if (c === '(') depth++;
    else if (c === ')' && --depth === 0 && i !== filter.length - 1) return false;
    if (depth < 0 || (depth === 0 && i === 0)) return false;
  }
  return depth === 0 && filter.startsWith('(');
}

/** What makes these settings unusable, in a sentence, or undefined. Checked before any connection. */
export function ldapSettingsProblem(s: LdapSettings): string | undefined {
  let url: URL;
  try {
    url = new URL(s.url);
  } catch {
    return `url ${JSON.stringify(s.url)} is not a URL`;
  }
  if (url.protocol !== 'ldap:' && url.protocol !== 'ldaps:') return 'url must start with ldap:// or ldaps://';
  if (!url.hostname) return 'url names no host';
  if ((url.pathname !== '' && url.pathname !== '/') || url.search || url.hash || url.username || url.password) {
    return 'url takes a scheme, a host and a port only';
  }
  if (url.protocol === 'ldaps:' && s.startTls) return 'StartTLS is for ldap:// URLs; ldaps:// is TLS from the start';
  if (url.protocol === 'ldap:' && !s.startTls && !isLoopbackHost(url.hostname)) {
    return 'ldap:// without StartTLS would send passwords in clear: use ldaps:// or StartTLS (plain ldap:// is for a loopback address only)';
  }
  if (!s.bindDn || !s.bindPassword) {
    return 'the service account needs a DN and a password (a bind without a password is unauthenticated, RFC 4513 §5.1.2)';
  }
  if (!s.userBase) return 'userBase is empty';
  if (!s.userFilter.includes('{username}')) return 'userFilter must contain {username}';
  if (!isOneFilter(s.userFilter)) return 'userFilter must be one parenthesised filter with balanced parentheses, as "(uid={username})"';
  if (s.allowedGroups.length > 0 && !s.groupBase) return 'allowedGroups needs a groupBase to search the groups in';
  return undefined;
}

/** The client's TLS options: the CA when given (else Node's system CAs), the host's name checked against the certificate. */
function tlsOptions(host: string, caCertPem: string | undefined): ConnectionOptions {
  return {
    minVersion: 'TLSv1.2',
    rejectUnauthorized: true,
    ...(caCertPem ? { ca: caCertPem } : {}),
    // SNI names hosts only (RFC 6066 §3); an IP literal is checked against the certificate's IP addresses by `host`.
    ...(isIP(host) ? {} : { servername: host }),
  };
}

/** A step that failed or did not answer in time: which one, and why (never the password). */
class StepError extends Error {
  constructor(
    readonly step: string,
    readonly why: unknown,
  ) {
    super(`${step}: ${describe(why)}`);
  }
}

function describe(err: unknown): string {
  let text: string;
  if (err instanceof ResultCodeError) {
    // The directory's answer (RFC 4511 §4.1.9): ldapts names the result code; the diagnostic text is often empty.
    const diagnostic = err.message.replace(/\s*Code: 0x[0-9a-f]+$/, '');
    text = `${err.name} (LDAP result ${err.code})${diagnostic ? `: ${diagnostic}` : ''}`;
  } else if (err instanceof Error) {
    text = `${err.message}${'code' in err && typeof err.code === 'string' ? ` (${err.code})` : ''}`;
  } else {
    text = String(err);
  }
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > 200 ? `${oneLine.slice(0, 200)}…` : oneLine;
}

/** The first value of an attribute as text, whatever the case the directory spells its name in. */
function firstText(entry: Entry, name: string): string | undefined {
  return allText(entry, name)[0];
}

function allText(entry: Entry, name: string): string[] {
  const key = Object.keys(entry).find((k) => k.toLowerCase() === name.toLowerCase());
  if (!key || key === 'dn') return [];
  const value = entry[key];
  const values = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return values.map((v) => (Buffer.isBuffer(v) ? v.toString('utf8') : v)).filter((v) => v !== '');
}

/** A claim's text when it fits the claims' limit (CLAIM_TEXT_MAX); a longer value is left out, not cut. */
function claimText(value: string | undefined): string | undefined {
  return value !== undefined && value.length <= CLAIM_TEXT_MAX ? value : undefined;
}

/** The attributes the user search asks for; entryUUID (RFC 4530) is operational, so it is named. */
const USER_ATTRIBUTES = ['uid', 'mail', 'cn', 'displayName', 'entryUUID'];

export async function authenticateLdap(
  settings: LdapSettings,
  username: string,
  password: string,
  opts: LdapOptions = {},
): Promise<LdapOutcome> {
  const problem = ldapSettingsProblem(settings);
  if (problem) return { kind: 'unavailable', reason: `settings: ${problem}` };
  // Before any connection: an empty password would be an unauthenticated bind, which succeeds (RFC 4513 §5.1.2).
  if (password === '' || password.length > SIGNIN_PASSWORD_MAX || username === '' || username.length > SIGNIN_USERNAME_MAX) {
    return { kind: 'invalid' };
  }
  const connectMs = opts.timeoutMs ?? LDAP_CONNECT_TIMEOUT_MS;
  const operationMs = opts.timeoutMs ?? LDAP_OPERATION_TIMEOUT_MS;
  const deadline = Date.now() + (opts.totalTimeoutMs ?? LDAP_TOTAL_TIMEOUT_MS);
  const url = new URL(settings.url);
  const host = hostOf(url);
  const client = new Client({
    url: settings.url,
    connectTimeout: connectMs,
    timeout: operationMs,
    // ldapts speaks TLS from the start whenever it is given TLS options, so only ldaps:// gets them here.
    ...(url.protocol === 'ldaps:' ? { tlsOptions: tlsOptions(host, settings.caCertPem) } : {}),
  });

  /** Runs one step within its own timeout and what is left of the whole sign-in's. */
  const step = <T>(name: string, run: () => Promise<T>, ms = operationMs): Promise<T> => {
    const left = Math.min(ms, deadline - Date.now());
    if (left <= 0)
      return Promise.reject(
        new StepError(name, new Error(`not started: the sign-in's ${opts.totalTimeoutMs ?? LDAP_TOTAL_TIMEOUT_MS} ms were up`)),
      );
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new StepError(name, new Error(`no answer within ${left} ms`))), left);
      // Through then(): a step that throws at once (a filter ldapts cannot parse) is settled here too, its timer cleared.
      Promise.resolve()
        .then(run)
        .then(
          (value) => {
            clearTimeout(timer);
            resolve(value);
          },
          (err: unknown) => {
            clearTimeout(timer);
            reject(new StepError(name, err));
          },
        );
    });
  };
  let connected = false;
  /** The first step opens the connection, so it has the connect timeout on top of its own. */
  const firstStep = <T>(name: string, run: () => Promise<T>): Promise<T> => {
    const ms = connected ? operationMs : connectMs + operationMs;
    connected = true;
    return step(name, run, ms);
  };
  const serviceBind = async (): Promise<void> => {
    try {
      await firstStep('service account bind', () => client.bind(settings.bindDn, settings.bindPassword));
    } catch (err) {
      if (err instanceof StepError && err.why instanceof InvalidCredentialsError) {
        throw new StepError('service account bind', new Error('the directory refused the service account: check bindDn and bindPassword'));
      }
      throw err;
    }
  };

  try {
    // ldapts takes the options of the upgrade itself; `host` names the server the certificate must be for.
    if (settings.startTls) await firstStep('StartTLS', () => client.startTLS({ ...tlsOptions(host, settings.caCertPem), host }));
    await serviceBind();
    const { searchEntries } = await step('user search', () =>
      client.search(settings.userBase, {
        scope: 'sub',
        filter: userFilterFor(settings.userFilter, username),
        sizeLimit: LDAP_USER_SEARCH_SIZE_LIMIT,
        attributes: USER_ATTRIBUTES,
      }),
    );
    const entry = searchEntries.length === 1 ? searchEntries[0]! : undefined;
    if (!entry) return { kind: 'invalid' };
    try {
      await step('user bind', () => client.bind(entry.dn, password));
    } catch (err) {
      // 49 invalidCredentials: wrong password (or no password stored); 48 inappropriateAuthentication: the entry
      // may not bind with a password at all. Both are "this username and password do not sign in".
      const why = err instanceof StepError ? err.why : err;
      if (why instanceof InvalidCredentialsError || why instanceof InappropriateAuthError) return { kind: 'invalid' };
      throw err;
    }
    const uid = firstText(entry, 'uid');
    let groups: string[] = [];
    if (settings.groupBase) {
      await serviceBind();
      groups = await userGroups(settings.groupBase, entry.dn, uid, step, client);
    }
    if (settings.allowedGroups.length > 0) {
      const allowed = new Set(settings.allowedGroups.map((g) => g.toLowerCase()));
      if (!groups.some((g) => allowed.has(g.toLowerCase()))) {
        return { kind: 'refused', reason: NOT_A_MEMBER, detail: `not a member of ${settings.allowedGroups.join(', ')}` };
      }
    }
    const email = claimText(firstText(entry, 'mail'));
    const name = claimText(firstText(entry, 'displayName') ?? firstText(entry, 'cn'));
    return {
      kind: 'ok',
      // entryUUID (RFC 4530) stays with the entry through renames and moves; the DN is what is left without it.
      subject: firstText(entry, 'entryUUID') ?? entry.dn,
      claims: { preferred_username: uid ?? username, ...(email ? { email } : {}), ...(name ? { name } : {}) },
      groups,
    };
  } catch (err) {
    return { kind: 'unavailable', reason: describe(err) };
  } finally {
    await close(client, Math.min(operationMs, LDAP_OPERATION_TIMEOUT_MS));
  }
}

type Step = <T>(name: string, run: () => Promise<T>, ms?: number) => Promise<T>;

/** The CNs of the groups under groupBase that list the user: groupOfNames by DN, posixGroup by uid. */
async function userGroups(groupBase: string, dn: string, uid: string | undefined, step: Step, client: Client): Promise<string[]> {
  const byDn = `(&(objectClass=groupOfNames)(member=${escapeFilterValue(dn)}))`;
  const filter = uid === undefined ? byDn : `(|${byDn}(&(objectClass=posixGroup)(memberUid=${escapeFilterValue(uid)})))`;
  const { searchEntries } = await step('group search', () =>
    client.search(groupBase, { scope: 'sub', filter, sizeLimit: LDAP_GROUPS_MAX, attributes: ['cn'] }),
  );
  return searchEntries.flatMap((group) => allText(group, 'cn').slice(0, 1));
}

/** Unbind (RFC 4511 §4.3) and close, whatever state the connection is in; never throws, never waits past `ms`. */
async function close(client: Client, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    client.unbind().catch(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

/**
 * What a person is told when the directory could not be used: why, in the log (`log`, with `context`); not the
 * directory's own diagnostics (its DNs, hosts, TLS errors), which are not for whoever typed a name on the form.
 */
export function directoryFacing<O extends { kind: 'refused' | 'unavailable'; reason: string }>(
  outcome: O,
  log: { warn(details: object, message: string): void },
  context: object,
): O {
  if (outcome.kind !== 'unavailable') return outcome;
  log.warn({ ...context, reason: outcome.reason }, 'directory unavailable');
  return { ...outcome, reason: 'the directory did not answer' };
}

import {
  CLIENT_AUTH_FAILURES_REFRESH_MS,
  LIMITS as DEFAULT_LIMITS,
  USERNAME_PATTERN,
  type CounterKind,
  type Limit,
  type Limits,
} from '../config/defaults.js';
import { ipSubject } from '../http/client-ip.js';
import { ANONYMOUS, type Store } from '../store/store.js';
import { NO_METRICS, type ProtocolMetrics } from '../util/metrics.js';

/**
 * The abuse limits, as policy over the store's one atomic counter
 * (`store.rateLimits.consume`). Every limit is consumed before the work it
 * protects (a password hash, a user-code lookup, a device authorization row),
 * so parallel requests cannot all pass a check that has not yet been counted;
 * a success may give its attempt back.
 *
 * Counter keys are `kind|subject...`; subjects never contain `|` (IP
 * addresses, client ids, user ids, and usernames of the allowed form), so the
 * operator commands can read them back (see {@link describeCounter}).
 */

/** An admitted event, which a success may give back; or a refusal with when to retry. */
export type Admission =
  | { readonly admitted: true; giveBack(): Promise<void> }
  | { readonly admitted: false; readonly retryAfterSeconds: number; readonly by: CounterKind };

export type { CounterKind, Limits };

/** A limit on failures, read before the attempt: refused, or admitted with a way to count it if it fails. */
export type FailureGate =
  | { readonly admitted: true; failed(): Promise<Admission> }
  | { readonly admitted: false; readonly retryAfterSeconds: number; readonly by: CounterKind };

/** What a counter's key names: its kind, limit and subjects (IP, username, user id or client id). */
export interface CounterInfo {
  kind: CounterKind;
  limit: Limit;
  ip?: string;
  username?: string;
  /** For a name counted at a directory (an LDAP connector), its connector: counted apart from the local account. */
  connector?: string;
  userId?: string;
  clientId?: string;
  /** An admin API caller: a user's sub or a client_id. */
  actor?: string;
}

const key = (kind: CounterKind, ...subjects: string[]) => [kind, ...subjects].join('|');

/**
 * The account subject of a sign-in name: the name itself for this server's accounts, `connector:name` for a name
 * typed on an LDAP connector's form (`:` is in neither a username nor a connector id), so a directory user `ann`
 * and a local user `ann` never lock each other out.
 */
const accountOf = (name: string, connector?: string) => (connector === undefined ? name : `${connector}:${name}`);

/** An account subject read back: the name, and its connector when it has one. */
function nameOf(subject: string): { username: string; connector?: string } {
  const at = subject.indexOf(':');
  return at < 0 ? { username: subject } : { username: subject.slice(at + 1), connector: subject.slice(0, at) };
}

/** The IP subject of a counter (an IPv4 address or an IPv6 /64; see ipSubject). */
const ipOf = (address: string) => ipSubject(address) ?? address;

/** Reads a counter key back; undefined for keys this module did not write. */
export function describeCounter(counterKey: string, limits: Limits = DEFAULT_LIMITS): CounterInfo | undefined {
  const [kind, a, b] = counterKey.split('|') as [CounterKind, string | undefined, string | undefined];
  if (!Object.hasOwn(limits, kind) || a === undefined) return undefined;
  const limit = limits[kind];
  switch (kind) {
    case 'signin-ip':
    case 'user-code-ip':
    case 'continuation-ip':
    case 'registration-ip':
    case 'client-auth-ip':
    case 'webauthn-ip':
      return { kind, limit, ip: a };
    case 'signin-account':
    case 'signin-account-slowed':
      return { kind, limit, ...nameOf(a) };
    case 'signin-account-ip':
      return { kind, limit, ...nameOf(a), ...(b !== undefined && { ip: b }) };
    case 'user-code-account':
      return { kind, limit, userId: a };
    case 'admin-write':
      return { kind, limit, actor: a };
    case 'signin-device':
      return { kind, limit };
    case 'device-authz-ip':
    case 'par-ip':
      return { kind, limit, clientId: a, ...(b !== undefined && { ip: b }) };
    case 'device-authz-client':
    case 'par-client':
      return { kind, limit, clientId: a };
  }
}

/**
 * The client IPs this instance knows to have failed client authentications in the open window: every instance's
 * failures, as the store had them at most CLIENT_AUTH_FAILURES_REFRESH_MS ago, and this instance's own at once.
 * A request from any other address (a confidential client's every token request, nearly always) is admitted
 * without a store round trip; one from an address in the set reads its counter, as before.
 *
 * What the staleness allows, and only for that long: an address that went past its budget at another instance
 * may have a secret compared here without the early refusal. A wrong one is counted by the store's atomic
 * increment and refused there, so no more guesses are ever answered as failures than the limit allows, on any
 * number of instances; only the right secret, sent in that moment from an address past its budget, is let
 * through rather than answered 429.
 */
class ClientAuthFailures {
  private known = new Set<string>();
  /** Added here while a refresh was under way: kept when its answer replaces the set. */
  private addedDuring: string[] | undefined;
  private loadedAt: number | undefined;
  private loading: Promise<void> | undefined;

  constructor(
    private readonly store: Store,
    private readonly now: () => number,
    private readonly windowMs: number,
  ) {}

  /**
   * Whether `counter` may have failures counted: answered at once from a fresh list (nearly every request). When
   * the list is older than CLIENT_AUTH_FAILURES_REFRESH_MS the requests of that moment wait for one read of it
   * (shared): at most one round trip a second, never one a request.
   */
  mayHave(counter: string): boolean | Promise<boolean> {
    const now = this.now();
    if (this.loadedAt === undefined || now - this.loadedAt >= CLIENT_AUTH_FAILURES_REFRESH_MS || now < this.loadedAt) {
      return this.refresh().then(() => this.known.has(counter));
    }
    return this.known.has(counter);
  }

  add(counter: string): void {
    this.known.add(counter);
    this.addedDuring?.push(counter);
  }

  private refresh(): Promise<void> {
    this.loading ??= (async () => {
      const now = this.now();
      this.addedDuring = [];
      try {
        const keys = await this.store.rateLimits.openKeys(CLIENT_AUTH_PREFIX, this.windowMs, now);
        this.known = new Set([...keys, ...this.addedDuring]);
        this.loadedAt = now;
      } finally {
        this.addedDuring = undefined;
        this.loading = undefined;
      }
    })();
    return this.loading;
  }
}

const CLIENT_AUTH_PREFIX = 'client-auth-ip|';

export class AbuseLimits {
  private readonly clientAuthFailures: ClientAuthFailures;

  constructor(
    private readonly store: Store,
    private readonly now: () => number,
    private readonly limits: Limits = DEFAULT_LIMITS,
    private readonly metrics: ProtocolMetrics = NO_METRICS,
  ) {
    this.clientAuthFailures = new ClientAuthFailures(store, now, limits['client-auth-ip'].windowMs);
  }

  /**
   * Consumes the counters in order and stops at the first that is over its
   * limit, so a refusal never touches the counters after it (one IP hammering
   * one account is stopped per IP before it counts against the account). A
   * refused attempt stays counted where it was counted: it was made.
   */
  private async consume(counters: readonly [CounterKind, string][]): Promise<Admission> {
    const now = this.now();
    const taken: { key: string; windowStart: number }[] = [];
    for (const [kind, k] of counters) {
      const limit = this.limits[kind];
      const { count, windowStart } = await this.store.rateLimits.consume(k, limit.windowMs, now);
      if (count === limit.limit + 1) await this.reached(k, limit, now);
      if (count > limit.limit) return this.refuse(kind, windowStart, now);
      taken.push({ key: k, windowStart });
    }
    return {
      admitted: true,
      // Best effort, and only into the window the attempt was counted in: an answer that is already decided
      // (a device approved, a correct password) must not turn into an error because the give-back failed, and a
      // give-back that comes after its window ended must not lower the next one.
      giveBack: async () => {
        for (const t of taken) await this.store.rateLimits.release(t.key, t.windowStart).catch(() => undefined);
      },
    };
  }

  /**
   * A counter went past its limit (the first refusal of its window: one request gets that count, however many
   * come at once): a `limit.reached` row in the audit trail, with the counter's subjects (docs/audit.md). Once per
   * window, so a flood past a limit writes one row, not one per request.
   */
  private async reached(counter: string, limit: Limit, now: number): Promise<void> {
    const info = describeCounter(counter, this.limits);
    // A name typed at sign-in is recorded only as the account it names, when there is one (people type passwords
    // into username fields); a name typed on an LDAP connector's form is the directory's, and is not recorded.
    const account =
      info?.username !== undefined && info.connector === undefined ? await this.store.users.findByUsername(info.username) : undefined;
    // Best effort: the refusal stands whether or not its row can be written (the metrics count it either way).
    await this.store.audit
      .append({
        at: now,
        actor: ANONYMOUS,
        action: 'limit.reached',
        target: account ? { type: 'user', id: account.id, name: account.username } : null,
        address: info?.ip ?? null,
        detail: {
          counter: counter.split('|', 1)[0],
          limit: `${limit.limit} per ${limit.windowMs / 1000} s`,
          ...(info?.connector !== undefined && { connector: info.connector }),
          ...(info?.userId !== undefined && { user: info.userId }),
          ...(info?.clientId !== undefined && { client_id: info.clientId }),
          ...(info?.actor !== undefined && { actor: info.actor }),
        },
      })
      .catch(() => undefined);
  }

  private refuse(kind: CounterKind, windowStart: number, now: number) {
    this.metrics.rateLimited(kind);
    const retryAfterSeconds = Math.max(1, Math.ceil((windowStart + this.limits[kind].windowMs - now) / 1000));
    return { admitted: false, by: kind, retryAfterSeconds } as const;
  }

  /**
   * A client secret presented (RFC 6749 §2.3.1), before it is compared: refused when this client IP is past
   * its failed client authentications, counting nothing (a secret that authenticates is never counted, so a
   * busy confidential client's bursts cannot meet the limit); `failed()` counts a secret that did not
   * authenticate, and is refused when that failure is past the limit. Parallel failures each get a count of
   * their own, so at most the limit of them are ever answered as plain failures.
   */
  clientSecret(ip: string): FailureGate | Promise<FailureGate> {
    const counter = CLIENT_AUTH_PREFIX + ipOf(ip);
    // An address with no failure known (ClientAuthFailures): nothing to read, nothing to wait for. The gate is
    // answered synchronously then, since nearly every confidential client's token request takes this path.
    const mayHave = this.clientAuthFailures.mayHave(counter);
    if (mayHave === false) return new SecretGate(this, counter);
    return mayHave === true
      ? this.peekClientAuth(counter)
      : mayHave.then((m) => (m ? this.peekClientAuth(counter) : new SecretGate(this, counter)));
  }

  /** Counts a failed client authentication of `counter` (a SecretGate's `failed`). */
  countClientAuthFailure(counter: string): Promise<Admission> {
    this.clientAuthFailures.add(counter);
    return this.consume([['client-auth-ip', counter]]);
  }

  /** The gate of an address with failures known: its counter read from the store. */
  private async peekClientAuth(counter: string): Promise<FailureGate> {
    const { limit, windowMs } = this.limits['client-auth-ip'];
    const now = this.now();
    const { count, windowStart } = await this.store.rateLimits.peek(counter, windowMs, now);
    if (count >= limit) return this.refuse('client-auth-ip', windowStart, now);
    return new SecretGate(this, counter);
  }

  /**
   * A sign-in attempt, before its password is hashed: per client IP, per IP
   * and username, then either per device cookie (`device`: a browser where
   * this user signed in before, see web/trusted-device.ts) or, from any other
   * browser, per username across IPs. An account past that budget (distributed
   * guessing) is slowed for unknown browsers to one attempt a minute, never
   * locked, and never slowed for its owner's known browsers; `users unlock`
   * clears it. `connector`: the name was typed on that LDAP connector's form, and is counted as that
   * directory's (the per-IP count is shared: one address guessing is one address guessing).
   */
  async signIn(ip: string, username: string, device?: string, connector?: string): Promise<Admission> {
    const perIp = key('signin-ip', ipOf(ip));
    if (!USERNAME_PATTERN.test(username.toLowerCase())) return this.consume([['signin-ip', perIp]]);
    const name = accountOf(username.toLowerCase(), connector);
    const here: [CounterKind, string][] = [
      ['signin-ip', perIp],
      ['signin-account-ip', key('signin-account-ip', name, ipOf(ip))],
    ];
    if (device !== undefined) return this.consume([...here, ['signin-device', key('signin-device', device)]]);
    const admission = await this.consume(here);
    if (!admission.admitted) return admission;
    const account = await this.consume([['signin-account', key('signin-account', name)]]);
    if (account.admitted) return combine(admission, account);
    // Over the account's budget: no refusal yet, but one attempt per slot, whoever makes it.
    const slowed = await this.consume([['signin-account-slowed', key('signin-account-slowed', name)]]);
    return slowed.admitted ? combine(admission, slowed) : slowed;
  }

  /**
   * A user code tried at `/device` or `/device/decision` (RFC 8628 §5.1):
   * the same budget for both, per client IP and per signed-in account.
   */
  async userCodeGuess(ip: string, userId: string): Promise<Admission> {
    return this.consume([
      ['user-code-ip', key('user-code-ip', ipOf(ip))],
      ['user-code-account', key('user-code-account', userId)],
    ]);
  }

  /** A sign-in continuation stored for a signed-out visitor (each is a row kept 15 minutes). */
  async continuation(ip: string): Promise<Admission> {
    return this.consume([['continuation-ip', key('continuation-ip', ipOf(ip))]]);
  }

  /** A passkey ceremony (its challenge is a row kept 5 minutes), per client IP. */
  async webauthnCeremony(ip: string): Promise<Admission> {
    return this.consume([['webauthn-ip', key('webauthn-ip', ipOf(ip))]]);
  }

  /** A client registration (RFC 7591 §3) with AUTHCLI_REGISTRATION=open, per client IP. */
  async registration(ip: string): Promise<Admission> {
    return this.consume([['registration-ip', key('registration-ip', ipOf(ip))]]);
  }

  /**
   * A pushed authorization request (RFC 9126 §2): per application, and for a public client (which
   * authenticates nothing) per client IP and application first.
   */
  async pushedAuthorization(ip: string, client: { clientId: string; kind: 'public' | 'confidential' }): Promise<Admission> {
    const perClient: [CounterKind, string] = ['par-client', key('par-client', client.clientId)];
    if (client.kind === 'confidential') return this.consume([perClient]);
    return this.consume([['par-ip', key('par-ip', client.clientId, ipOf(ip))], perClient]);
  }

  /** A write to the admin API, per caller (a user's sub or a client_id). */
  async adminWrite(actor: string): Promise<Admission> {
    return this.consume([['admin-write', key('admin-write', actor)]]);
  }

  /** A device authorization request (RFC 8628 §3.1), per client IP and application, then per application. */
  async deviceAuthorization(ip: string, clientId: string): Promise<Admission> {
    return this.consume([
      ['device-authz-ip', key('device-authz-ip', clientId, ipOf(ip))],
      ['device-authz-client', key('device-authz-client', clientId)],
    ]);
  }
}

/** An admitted client secret or assertion: `failed()` counts it against its address when it did not authenticate. */
class SecretGate {
  readonly admitted = true;
  constructor(
    private readonly limits: AbuseLimits,
    private readonly counter: string,
  ) {}

  failed(): Promise<Admission> {
    return this.limits.countClientAuthFailure(this.counter);
  }
}

function combine(a: Admission & { admitted: true }, b: Admission & { admitted: true }): Admission {
  return {
    admitted: true,
    giveBack: async () => {
      await a.giveBack();
      await b.giveBack();
    },
  };
}

/** The counters that hold back sign-in to this account, or to this name at an LDAP connector (`users unlock`). */
export function accountCounterKeys(keys: readonly string[], username: string, connector?: string): string[] {
  const name = username.toLowerCase();
  return keys.filter((k) => {
    const info = describeCounter(k);
    return info?.username === name && info.connector === connector;
  });
}

/**
 * The counters that hold back this client IP (`limits clear-ip`): sign-in and user-code entry, client
 * registration and client authentication.
 */
export function ipCounterKeys(keys: readonly string[], ip: string): string[] {
  const subject = ipOf(ip);
  return keys.filter((k) => {
    const info = describeCounter(k);
    return info?.ip === subject && info.kind !== 'device-authz-ip' && info.kind !== 'par-ip';
  });
}

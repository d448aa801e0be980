import { LIMITS as DEFAULT_LIMITS, type CounterKind, type Limit, type Limits } from '../config/defaults.js';
import { ipSubject } from '../http/client-ip.js';
import type { Store } from '../store/store.js';

/**
 * The abuse limits, as policy over the store's one atomic counter
 * ({@link Store.consumeRateLimit}). Every limit is consumed before the work it
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

/** What a counter's key names: its kind, limit and subjects (IP, username, user id or client id). */
export interface CounterInfo {
  kind: CounterKind;
  limit: Limit;
  ip?: string;
  username?: string;
  userId?: string;
  clientId?: string;
}

const key = (kind: CounterKind, ...subjects: string[]) => [kind, ...subjects].join('|');

/** The IP subject of a counter (an IPv4 address or an IPv6 /64; see ipSubject). */
const ipOf = (address: string) => ipSubject(address) ?? address;

/** Usernames are counted without regard to case, and only in the form an account can have. */
const USERNAME_FORM = /^[A-Za-z0-9._@-]{1,64}$/;

/** Reads a counter key back; undefined for keys this module did not write. */
export function describeCounter(counterKey: string, limits: Limits = DEFAULT_LIMITS): CounterInfo | undefined {
  const [kind, a, b] = counterKey.split('|') as [CounterKind, string | undefined, string | undefined];
  if (!Object.hasOwn(limits, kind) || a === undefined) return undefined;
  const limit = limits[kind];
  switch (kind) {
    case 'signin-ip':
    case 'user-code-ip':
      return { kind, limit, ip: a };
    case 'signin-account':
    case 'signin-account-slowed':
      return { kind, limit, username: a };
    case 'signin-account-ip':
      return { kind, limit, username: a, ...(b !== undefined && { ip: b }) };
    case 'user-code-account':
      return { kind, limit, userId: a };
    case 'device-authz-ip':
      return { kind, limit, clientId: a, ...(b !== undefined && { ip: b }) };
    case 'device-authz-client':
      return { kind, limit, clientId: a };
  }
}

export class AbuseLimits {
  constructor(
    private readonly store: Store,
    private readonly now: () => number,
    private readonly limits: Limits = DEFAULT_LIMITS,
  ) {}

  /**
   * Consumes the counters in order and stops at the first that is over its
   * limit, so a refusal never touches the counters after it (one IP hammering
   * one account is stopped per IP before it counts against the account).
   */
  private async consume(counters: readonly [CounterKind, string][]): Promise<Admission> {
    const now = this.now();
    const taken: [string, Limit][] = [];
    for (const [kind, k] of counters) {
      const limit = this.limits[kind];
      const { count, windowStart } = await this.store.consumeRateLimit(k, limit.windowMs, now);
      if (count > limit.limit) {
        return { admitted: false, by: kind, retryAfterSeconds: Math.max(1, Math.ceil((windowStart + limit.windowMs - now) / 1000)) };
      }
      taken.push([k, limit]);
    }
    return {
      admitted: true,
      giveBack: async () => {
        for (const [k, limit] of taken) await this.store.releaseRateLimit(k, limit.windowMs, now);
      },
    };
  }

  /**
   * A sign-in attempt, before its password is hashed: per client IP, per IP
   * and username, then per username across IPs. An account past its own limit
   * (distributed guessing) is slowed to one attempt every few seconds, not
   * locked, so its owner can still sign in; `users unlock` clears it.
   */
  async signIn(ip: string, username: string): Promise<Admission> {
    const name = username.toLowerCase();
    if (!USERNAME_FORM.test(name)) return this.consume([['signin-ip', key('signin-ip', ipOf(ip))]]);
    const admission = await this.consume([
      ['signin-ip', key('signin-ip', ipOf(ip))],
      ['signin-account-ip', key('signin-account-ip', name, ipOf(ip))],
    ]);
    if (!admission.admitted) return admission;
    const account = await this.consume([['signin-account', key('signin-account', name)]]);
    if (account.admitted) return combine(admission, account);
    // Over the account's budget: no refusal yet, but at most one attempt per slot, whoever makes it.
    const slowed = await this.consume([['signin-account-slowed', key('signin-account-slowed', name)]]);
    if (slowed.admitted) return combine(admission, slowed);
    await admission.giveBack();
    return slowed;
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

  /** A device authorization request (RFC 8628 §3.1), per client IP and application, then per application. */
  async deviceAuthorization(ip: string, clientId: string): Promise<Admission> {
    return this.consume([
      ['device-authz-ip', key('device-authz-ip', clientId, ipOf(ip))],
      ['device-authz-client', key('device-authz-client', clientId)],
    ]);
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

/** The counters that hold back sign-in to this account (`users unlock`). */
export function accountCounterKeys(keys: readonly string[], username: string): string[] {
  const name = username.toLowerCase();
  return keys.filter((k) => describeCounter(k)?.username === name);
}

/** The counters that hold back this client IP (`limits clear-ip`): sign-in and user-code entry. */
export function ipCounterKeys(keys: readonly string[], ip: string): string[] {
  const subject = ipOf(ip);
  return keys.filter((k) => {
    const info = describeCounter(k);
    return info?.ip === subject && info.kind !== 'device-authz-ip';
  });
}

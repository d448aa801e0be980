/**
 * The JWK Sets `private_key_jwt` clients are checked against: a registered
 * `jwks` as it is, a `jwks_uri` fetched (http/outbound.ts: bounded in time
 * and size, public addresses only unless the operator set it) and kept per
 * instance for as long as its `Cache-Control` says, within bounds. An
 * assertion whose `kid` is not in the kept set fetches it again, at most once
 * per cooldown, so a rotated key is picked up and a stream of made-up `kid`s
 * (or a jwks_uri that is down) costs the client's server one request per
 * cooldown, not one per token request. A fetch that fails keeps the last good
 * set in use.
 */
import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import {
  CLIENT_JWKS_CACHE_BOUNDS_MS,
  CLIENT_JWKS_CACHE_MS,
  CLIENT_JWKS_CACHED,
  CLIENT_JWKS_MAX_BYTES,
  CLIENT_JWKS_REFETCH_COOLDOWN_MS,
  CLIENT_JWKS_TIMEOUT_MS,
} from '../config/defaults.js';
import { type FetchedJson, FetchJsonError, fetchJson } from '../http/fetch-json.js';
import type { ClientKeys } from '../store/store.js';
import { InputError } from '../util/input-error.js';
import { jwkSetOf } from './client-keys.js';

/** A client's key set could not be had: the message is fixed text for the error description. */
export class KeySetUnavailable extends Error {
  override name = 'KeySetUnavailable';
}

/** A key set to verify with; `fetchedNow`: it was just fetched, so fetching again would find nothing newer. */
export interface KeySet {
  getKey: JWTVerifyGetKey;
  fetchedNow: boolean;
}

interface Fetched {
  getKey: JWTVerifyGetKey | undefined;
  /** Until when the set is used without fetching again. */
  freshUntil: number;
  /** When it was last fetched, or tried (the cooldown counts from here). */
  triedAt: number;
  /** Why the last fetch failed, when it did. */
  failure: string | undefined;
  pending: Promise<void> | undefined;
}

/** How long a fetched set is kept: `max-age` within bounds, the lower bound for no-store or no-cache, else the default. */
export function keepFor(cacheControl: string | undefined): number {
  const directives = (cacheControl ?? '').toLowerCase();
  const { min, max } = CLIENT_JWKS_CACHE_BOUNDS_MS;
  if (/(?:^|[\s,])(?:no-store|no-cache)(?:$|[\s,=])/.test(directives)) return min;
  const m = /(?:^|[\s,])max-age\s*=\s*"?(\d{1,10})"?/.exec(directives);
  if (!m) return CLIENT_JWKS_CACHE_MS;
  return Math.min(max, Math.max(min, Number(m[1]) * 1000));
}

/** One instance's key sets of jwks_uri clients (OAuthContext `clientJwks`). */
export class ClientJwks {
  private readonly fetched = new Map<string, Fetched>();
  /** Registered sets, made into key lookups once per application read (the store hands out the same frozen object). */
  private readonly inline = new WeakMap<object, JWTVerifyGetKey>();

  constructor(
    private readonly now: () => number,
    /** One fetch of a JWK Set (http/fetch-json.ts); `publicOnly` for a jwks_uri the operator did not set. */
    private readonly fetchSet: (uri: string, publicOnly: boolean) => Promise<FetchedJson> = (uri, publicOnly) =>
      fetchJson(uri, { timeoutMs: CLIENT_JWKS_TIMEOUT_MS, maxBytes: CLIENT_JWKS_MAX_BYTES, publicOnly }),
  ) {}

  /**
   * The key set of a client. `unknownKid`: the kept set of its jwks_uri had no key for the assertion, so it is
   * fetched again unless it was fetched or tried within the cooldown.
   * @throws KeySetUnavailable
   */
  async keySet(keys: ClientKeys, unknownKid = false): Promise<KeySet> {
    if (keys.jwks) {
      let getKey = this.inline.get(keys.jwks);
      if (!getKey) {
        getKey = createLocalJWKSet(keys.jwks as unknown as JSONWebKeySet);
        this.inline.set(keys.jwks, getKey);
      }
      return { getKey, fetchedNow: true };
    }
    if (!keys.jwksUri) throw new KeySetUnavailable('the client has no keys registered');
    const key = `${keys.anyAddress ? 'any' : 'public'} ${keys.jwksUri}`;
    let entry = this.fetched.get(key);
    const now = this.now();
    const cooled = entry === undefined || now - entry.triedAt >= CLIENT_JWKS_REFETCH_COOLDOWN_MS;
    const stale = entry === undefined || now >= entry.freshUntil;
    let fetchedNow = false;
    if (entry?.pending) {
      // Another request is fetching: wait for it only when the kept set will not do.
      if (!entry.getKey || stale || unknownKid) {
        await entry.pending;
        fetchedNow = true;
      }
    } else if ((stale || unknownKid) && cooled) {
      if (!entry) {
        if (this.fetched.size >= CLIENT_JWKS_CACHED) this.fetched.clear();
        entry = { getKey: undefined, freshUntil: 0, triedAt: now, failure: undefined, pending: undefined };
        this.fetched.set(key, entry);
      }
      const pending = this.fetch(entry, keys.jwksUri, keys.anyAddress === true);
      entry.pending = pending;
      try {
        await pending;
      } finally {
        entry.pending = undefined;
      }
      fetchedNow = true;
    }
    const current = this.fetched.get(key) ?? entry;
    if (current?.getKey) return { getKey: current.getKey, fetchedNow };
    throw new KeySetUnavailable(`the client's jwks_uri could not be used: ${current?.failure ?? 'it was not fetched yet'}`);
  }

  private async fetch(entry: Fetched, uri: string, anyAddress: boolean): Promise<void> {
    entry.triedAt = this.now();
    try {
      const { json, cacheControl } = await this.fetchSet(uri, !anyAddress);
      const set = jwkSetOf(json, 'the JWK Set');
      entry.getKey = createLocalJWKSet(set as unknown as JSONWebKeySet);
      entry.freshUntil = this.now() + keepFor(cacheControl);
      entry.failure = undefined;
    } catch (err) {
      if (!(err instanceof FetchJsonError || err instanceof InputError)) throw err;
      entry.failure = err instanceof FetchJsonError ? err.reason : err.message;
    }
  }
}

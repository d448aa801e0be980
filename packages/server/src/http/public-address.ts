/**
 * Whether an address is one of the public Internet's: what a request the server makes on behalf of someone who
 * registered over the network (a self-registered client's back-channel logout URI) may connect to. Checked on the
 * address the connection is about to use, after DNS, so a name that resolves somewhere else on a second look
 * (DNS rebinding) is caught where it matters.
 */
import { lookup as dnsLookup } from 'node:dns';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * True for a global unicast address only. Everything else is refused: loopback, private (RFC 1918, IPv6 unique
 * local), link-local (cloud metadata at 169.254.169.254), carrier-grade NAT, unspecified, multicast, broadcast,
 * documentation and benchmarking ranges, and the IPv6 forms that carry an IPv4 address inside (IPv4-mapped is
 * judged by that address; NAT64, 6to4 and Teredo are refused, as their IPv4 part cannot be vouched for).
 */
export function isPublicAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  if (!ipaddr.isValid(bare)) return false;
  let parsed = ipaddr.parse(bare);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed.range() === 'unicast';
}

/** Resolves a host name to every address it has, as `dns.lookup(name, { all: true })` does. */
export type Resolver = (hostname: string) => Promise<readonly { address: string; family: number }[]>;

/** The system resolver (getaddrinfo: /etc/hosts, then DNS), every address. */
export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

/** The error a connection to a non-public address fails with (its code names it in logs). */
export class NonPublicAddress extends Error {
  readonly code = 'ENONPUBLIC';
  constructor(hostname: string) {
    super(`${hostname} resolves to an address that is not public`);
  }
}

/**
 * A `lookup` for net.connect and http.request that resolves through `resolver` and, when `publicOnly`, fails the
 * connection when any address the name has is not public (a name with a private address beside public ones is
 * as suspect as one with only private ones). Node calls it at connect time, so the address checked is the
 * address connected to.
 */
export function guardedLookup(resolver: Resolver, publicOnly: boolean): LookupFunction {
  return (hostname, options, callback) => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : (options.family ?? 0);
    resolver(hostname).then(
      (addresses) => {
        if (publicOnly && !addresses.every((a) => isPublicAddress(a.address))) return callback(new NonPublicAddress(hostname), '');
        const usable = addresses.filter((a) => family === 0 || a.family === family);
        if (usable.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
        if (options.all) return callback(null, [...usable]);
        return callback(null, usable[0]!.address, usable[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}

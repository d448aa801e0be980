import ipaddr from 'ipaddr.js';

/**
 * Who the client is. Per-IP limits key on `req.ip`, which Fastify computes
 * with proxy-addr from the socket address and `X-Forwarded-For`, walking from
 * the socket towards the client (hop 0 is the socket peer, hop 1 the
 * rightmost forwarded entry) and stopping at the first hop it does not trust.
 * Only the entries the trusted proxies appended count: the leftmost entries
 * are written by the client and never name it.
 */
export type TrustProxy = false | number | string[];

/** The `trustProxy` option for Fastify: a hop count becomes "trust the first n hops", a list is compiled by proxy-addr. */
export function trustProxyOption(trust: TrustProxy): false | string[] | ((address: string, hop: number) => boolean) {
  if (typeof trust === 'number') return (_address: string, hop: number) => hop < trust;
  return trust;
}

/**
 * The part of a client address that per-IP limits count: an IPv4 address
 * (also when it arrives IPv4-mapped, `::ffff:192.0.2.1`), or an IPv6 /64.
 * One IPv6 host commonly holds a whole /64 and can rotate through it, so
 * counting single IPv6 addresses would let it pass every per-IP limit.
 * Undefined for a value that is not an IP address.
 */
export function ipSubject(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return undefined;
  let parsed = ipaddr.parse(address);
  if (parsed instanceof ipaddr.IPv6 && parsed.isIPv4MappedAddress()) parsed = parsed.toIPv4Address();
  if (parsed instanceof ipaddr.IPv4) return parsed.toString();
  const prefix = new ipaddr.IPv6([...parsed.parts.slice(0, 4), 0, 0, 0, 0]);
  return `${prefix.toString()}/64`;
}

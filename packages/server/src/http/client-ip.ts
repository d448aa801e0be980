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

/** An address as a proxy may write it: bare, `192.0.2.1:443` or `[2001:db8::1]:443`. */
function withoutPort(address: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(address);
  if (bracketed) return bracketed[1]!;
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(address);
  return v4WithPort ? v4WithPort[1]! : address;
}

const OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
/** An IPv4 address in dotted decimal without leading zeros: the one spelling ipaddr.js's toString() gives. */
const CANONICAL_IPV4 = new RegExp(`^${OCTET}(?:\\.${OCTET}){3}$`);

/**
 * The part of a client address that per-IP limits count: an IPv4 address
 * (also when it arrives IPv4-mapped, `::ffff:192.0.2.1`, or with a port), or
 * an IPv6 /56. One IPv6 subscriber commonly holds a /56 (a /64 at least) and
 * can rotate through it, so counting single IPv6 addresses would let it pass
 * every per-IP limit. Undefined for a value that is not an IP address. A
 * subject that is already a /56 (as `limits list` shows it) is its own.
 */
export function ipSubject(address: string): string | undefined {
  // Nearly every request's address is a plain dotted quad, already in the form ipaddr.js would give it back:
  // answered without parsing (parsing it was 3 % of a device poll's time on the main thread).
  if (CANONICAL_IPV4.test(address)) return address;
  const bare = withoutPort(address.trim()).replace(/\/56$/, '');
  if (!ipaddr.isValid(bare)) return undefined;
  let parsed = ipaddr.parse(bare);
  if (parsed instanceof ipaddr.IPv6 && parsed.isIPv4MappedAddress()) parsed = parsed.toIPv4Address();
  if (parsed instanceof ipaddr.IPv4) return parsed.toString();
  const [a, b, c, d] = parsed.parts as [number, number, number, number];
  const prefix = new ipaddr.IPv6([a, b, c, d & 0xff00, 0, 0, 0, 0]);
  return `${prefix.toString()}/56`;
}

/**
 * The client address per-IP limits count for a request: Fastify's `req.ip`
 * (the socket peer, or the trusted proxies' entry), or the socket peer when
 * a proxy wrote something that is not an address.
 */
export function clientAddress(req: { ip: string; socket: { remoteAddress?: string | undefined } }): string {
  return ipSubject(req.ip) ?? ipSubject(req.socket.remoteAddress ?? '') ?? 'unknown';
}

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

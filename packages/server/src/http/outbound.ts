/**
 * Requests this server makes to addresses its users gave it (a client's
 * `jwks_uri`): bounded in time and size, never following a redirect, and,
 * for an address that an operator did not set, never reaching this machine or
 * a private network. That check is made on the addresses a connection is
 * opened to, when it is opened (the `lookup` of the connection), so a name
 * that resolved to a public address once and to 127.0.0.1 the next time (DNS
 * rebinding) is refused the second time too. Failure reasons are fixed text:
 * nothing the remote end sent is repeated.
 */
import { type LookupAddress, type LookupOptions, lookup as dnsLookup } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, request } from 'undici';

/**
 * Whether an address is a public one: ipaddr.js's `unicast`, i.e. none of the special ranges (loopback,
 * RFC 1918 and unique local, link-local with the cloud metadata address, carrier-grade NAT, multicast,
 * reserved and documentation ranges, and IPv6 forms that carry an IPv4 address: mapped, NAT64, 6to4, Teredo).
 */
export function isPublicAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  if (!ipaddr.isValid(bare)) return false;
  return ipaddr.process(bare).range() === 'unicast';
}

/** A failed outbound request: `reason` is fixed text, safe to put in an error description. */
export class OutboundError extends Error {
  override name = 'OutboundError';
  constructor(readonly reason: string) {
    super(reason);
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

const NOT_PUBLIC = 'ENOTPUBLIC';

/**
 * A connection's `lookup` that resolves as usual and refuses a name any of whose addresses is not public
 * (not only picks a public one: a name that answers with both is not one to trust).
 */
export function publicOnlyLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) {
      callback(err, '');
      return;
    }
    if (addresses.length === 0 || addresses.some((a) => !isPublicAddress(a.address))) {
      callback(Object.assign(new Error(`${hostname} resolves to an address that is not public`), { code: NOT_PUBLIC }), '');
      return;
    }
    if (options.all) callback(null, addresses);
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}

export interface OutboundLimits {
  /** The whole request, connection and body included. */
  timeoutMs: number;
  /** The largest body read. */
  maxBytes: number;
  /** Connections kept open to one host. */
  connectionsPerHost: number;
}

/** A JSON document fetched: its parsed body and its `Cache-Control` header. */
export interface FetchedJson {
  json: unknown;
  cacheControl: string | undefined;
}

/**
 * GET of JSON documents at addresses users gave: one connection pool for addresses an operator set (any
 * scheme and address) and one that reaches public addresses only, over https only.
 */
export class OutboundJson {
  private readonly anyAddress: Agent;
  private readonly publicOnly: Agent;

  constructor(private readonly limits: OutboundLimits) {
    const common = { connections: limits.connectionsPerHost, headersTimeout: limits.timeoutMs, bodyTimeout: limits.timeoutMs };
    this.anyAddress = new Agent({ ...common, connect: { timeout: limits.timeoutMs } });
    this.publicOnly = new Agent({ ...common, connect: { timeout: limits.timeoutMs, lookup: publicOnlyLookup } });
  }

  /**
   * The JSON at `url` (a 200 answer). `anyAddress`: the operator set the URL, so http and loopback or private
   * addresses are allowed; otherwise only https to a public address.
   * @throws OutboundError
   */
  async get(url: string, anyAddress: boolean): Promise<FetchedJson> {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      throw new OutboundError('it is not a URL');
    }
    if (!anyAddress) {
      if (target.protocol !== 'https:') throw new OutboundError('it is not an https URL');
      // An address literal is connected to without any lookup: checked here.
      const host = target.hostname.replace(/^\[|\]$/g, '');
      if (isIP(host) !== 0 && !isPublicAddress(host)) throw new OutboundError('it names an address that is not public');
    } else if (target.protocol !== 'https:' && target.protocol !== 'http:') {
      throw new OutboundError('it is not an http or https URL');
    }
    const signal = AbortSignal.timeout(this.limits.timeoutMs);
    try {
      const res = await request(target, {
        method: 'GET',
        headers: { accept: 'application/jwk-set+json, application/json' },
        dispatcher: anyAddress ? this.anyAddress : this.publicOnly,
        signal,
      });
      if (res.statusCode !== 200) {
        await res.body.dump().catch(() => undefined);
        throw new OutboundError(
          res.statusCode >= 300 && res.statusCode < 400 ? 'it answered with a redirect' : `it answered ${res.statusCode}`,
        );
      }
      const text = await readBounded(res.body, Number(res.headers['content-length'] ?? 0), this.limits.maxBytes);
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw new OutboundError('its answer is not JSON');
      }
      const cacheControl = res.headers['cache-control'];
      return { json, cacheControl: Array.isArray(cacheControl) ? cacheControl.join(', ') : cacheControl };
    } catch (err) {
      if (err instanceof OutboundError) throw err;
      if (signal.aborted) throw new OutboundError(`it did not answer within ${this.limits.timeoutMs} ms`);
      if (causeCode(err) === NOT_PUBLIC) throw new OutboundError('its host resolves to an address that is not public');
      throw new OutboundError('it could not be reached');
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.anyAddress.close(), this.publicOnly.close()]);
  }
}

/** The body as UTF-8 text, refused past `max` bytes (declared or read); the rest is not read. */
async function readBounded(body: AsyncIterable<Buffer> & { destroy(): void }, declared: number, max: number): Promise<string> {
  const tooLarge = () => new OutboundError(`its answer is larger than ${max} bytes`);
  if (declared > max) {
    body.destroy();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > max) {
      body.destroy();
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The `code` of an error or of one of its causes (undici wraps a connection's errors). */
function causeCode(err: unknown): string | undefined {
  const seen = new Set<unknown>();
  for (let e = err; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e);
    const code = (e as { code?: unknown }).code;
    if (code === NOT_PUBLIC) return code;
  }
  return undefined;
}

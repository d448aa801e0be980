/**
 * One GET of a JSON document at an address someone gave the server (a client's `jwks_uri`): bounded in time
 * (connecting, TLS, the answer and its body) and in size, no redirect followed, no connection kept. For an
 * address that an operator did not set (`publicOnly`) only https to public addresses: an IP literal is checked
 * here, a name at connect time on the addresses it resolves to then (public-address.ts `guardedLookup`), so DNS
 * rebinding does not get around it. Failure reasons are fixed text: nothing the remote end sent is repeated.
 */
import { type IncomingMessage, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { guardedLookup, isPublicAddress, NonPublicAddress, type Resolver, systemResolver } from './public-address.js';

/** A failed fetch: `reason` is fixed text, safe to put in an error description. */
export class FetchJsonError extends Error {
  override name = 'FetchJsonError';
  constructor(readonly reason: string) {
    super(reason);
  }
}

export interface FetchJsonOptions {
  /** The whole fetch: connecting, TLS, the answer and its body. */
  timeoutMs: number;
  /** The largest body read. */
  maxBytes: number;
  /** https to public addresses only (an address someone registered over the network or in the dashboard). */
  publicOnly: boolean;
  /** How names are resolved (the system's by default). */
  resolver?: Resolver | undefined;
}

/** A JSON document fetched: its parsed body and its `Cache-Control` header. */
export interface FetchedJson {
  json: unknown;
  cacheControl: string | undefined;
}

/**
 * The JSON at `url` (a 200 answer).
 * @throws FetchJsonError
 */
export async function fetchJson(url: string, options: FetchJsonOptions): Promise<FetchedJson> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new FetchJsonError('it is not a URL');
  }
  if (options.publicOnly && target.protocol !== 'https:') throw new FetchJsonError('it is not an https URL');
  if (target.protocol !== 'https:' && target.protocol !== 'http:') throw new FetchJsonError('it is not an http or https URL');
  // Node connects to an IP literal without a lookup: checked here instead.
  const host = target.hostname.replace(/^\[|\]$/g, '');
  if (options.publicOnly && isIP(host) !== 0 && !isPublicAddress(host)) throw new FetchJsonError('it names an address that is not public');
  const signal = AbortSignal.timeout(options.timeoutMs);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  try {
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = send(target, {
        method: 'GET',
        headers: { accept: 'application/jwk-set+json, application/json', 'user-agent': 'authcli-server' },
        lookup: guardedLookup(options.resolver ?? systemResolver, options.publicOnly),
        agent: false,
        signal,
      });
      req.once('response', resolve);
      req.once('error', reject);
      req.end();
    });
    if (res.statusCode !== 200) {
      res.destroy();
      const status = res.statusCode ?? 0;
      throw new FetchJsonError(status >= 300 && status < 400 ? 'it answered with a redirect' : `it answered ${status}`);
    }
    const text = await readBounded(res, options.maxBytes);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new FetchJsonError('its answer is not JSON');
    }
    const cacheControl = res.headers['cache-control'];
    return { json, cacheControl: Array.isArray(cacheControl) ? cacheControl.join(', ') : cacheControl };
  } catch (err) {
    if (err instanceof FetchJsonError) throw err;
    if (signal.aborted) throw new FetchJsonError(`it did not answer within ${options.timeoutMs} ms`);
    if (err instanceof NonPublicAddress) throw new FetchJsonError('its host resolves to an address that is not public');
    throw new FetchJsonError('it could not be reached');
  }
}

/** The body as UTF-8 text, refused past `max` bytes (declared or read); the rest is not read. */
async function readBounded(res: IncomingMessage, max: number): Promise<string> {
  const tooLarge = () => new FetchJsonError(`its answer is larger than ${max} bytes`);
  if (Number(res.headers['content-length'] ?? 0) > max) {
    res.destroy();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max) {
      res.destroy();
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * One POST of a form to another server, as the server makes it on its own behalf (a logout token to an
 * application, OpenID Connect Back-Channel Logout 1.0 §2.5): bounded in time, no redirect followed, no
 * connection kept, the answer's body read and dropped. For a URI someone registered over the network
 * (`publicOnly`) only public addresses are connected to: an IP literal is checked here, a name at connect time
 * (public-address.ts `guardedLookup`).
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { guardedLookup, isPublicAddress, NonPublicAddress, type Resolver, systemResolver } from './public-address.js';

/** What came of a POST: an answer (any status), a refusal to connect (not a public address), or no answer. */
export type PostOutcome =
  | { kind: 'answered'; status: number }
  | { kind: 'refused'; reason: string }
  | { kind: 'unreachable'; reason: string };

export interface PostOptions {
  /** The whole attempt: connecting, TLS, sending, and the answer's status line. */
  timeoutMs: number;
  /** Connect only to public addresses (public-address.ts `isPublicAddress`). */
  publicOnly: boolean;
  /** How names are resolved (the system's by default). */
  resolver?: Resolver | undefined;
  /** Ends the attempt early (a shutdown past its grace). */
  signal?: AbortSignal | undefined;
}

/** POSTs `form` as application/x-www-form-urlencoded to `url` (http or https); never throws. */
export function postForm(url: string, form: Record<string, string>, options: PostOptions): Promise<PostOutcome> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return Promise.resolve({ kind: 'refused', reason: 'not an absolute URL' });
  }
  if (target.protocol !== 'https:' && target.protocol !== 'http:') return Promise.resolve({ kind: 'refused', reason: 'not http or https' });
  const host = target.hostname.replace(/^\[|\]$/g, '');
  // Node connects to an IP literal without a lookup: checked here instead.
  if (options.publicOnly && isIP(host) !== 0 && !isPublicAddress(host)) {
    return Promise.resolve({ kind: 'refused', reason: `${host} is not a public address` });
  }
  const body = new URLSearchParams(form).toString();
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    let settled = false;
    const done = (outcome: PostOutcome) => {
      if (settled) return;
      settled = true;
      resolve(outcome);
    };
    const req = send(
      target,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': Buffer.byteLength(body),
          'user-agent': 'authcli-server',
        },
        lookup: guardedLookup(options.resolver ?? systemResolver, options.publicOnly),
        agent: false,
        signal,
      },
      (res) => {
        done({ kind: 'answered', status: res.statusCode ?? 0 });
        // The body says nothing the status does not (§2.8); read and dropped, cut by the signal if it never ends.
        res.on('error', () => undefined);
        res.resume();
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err instanceof NonPublicAddress || err.code === 'ENONPUBLIC') return done({ kind: 'refused', reason: err.message });
      if (timeout.aborted) return done({ kind: 'unreachable', reason: `no answer within ${options.timeoutMs / 1000} s` });
      if (options.signal?.aborted) return done({ kind: 'unreachable', reason: 'cancelled' });
      done({ kind: 'unreachable', reason: err.code ?? err.message });
    });
    req.end(body);
  });
}

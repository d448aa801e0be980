// A server as a script: the Transport the protocol client and the flows are tested with, and a clock that only
// moves when they sleep. What was sent is recorded as it was handed to the transport.
import type { Clock } from '../../src/device/poll.js';
import { AuthcliError } from '../../src/errors.js';
import type { HttpResponse, Transport } from '../../src/http.js';

export type Sent = { url: string; init: Parameters<Transport>[1] };

/** An answer: a response, `'network'` for a request that got none (what httpTransport throws), or a function of the request. */
export type Answer = HttpResponse | 'network' | ((sent: Sent) => HttpResponse);

export function response(status: number, body: unknown, headers: Record<string, string> = {}): HttpResponse {
  return { status, headers: new Headers(headers), body };
}

/** A transport that answers from `answers` in order, and fails a request it has no answer for. */
export function scripted(...answers: Answer[]): Transport & { sent: Sent[] } {
  const sent: Sent[] = [];
  const transport = async (url: string, init: Sent['init']) => {
    sent.push({ url, init });
    const answer = answers.shift();
    if (answer === undefined) throw new Error(`unscripted ${init.method} ${url}`);
    if (answer === 'network') throw new AuthcliError('network', `cannot reach ${new URL(url).origin}: connection refused`);
    return typeof answer === 'function' ? answer({ url, init }) : answer;
  };
  return Object.assign(transport, { sent });
}

/** A clock that only moves when the code under test sleeps, recording each sleep. */
export class FakeClock implements Clock {
  t = 0;
  sleeps: number[] = [];
  now = () => this.t;
  sleep = async (ms: number, signal?: AbortSignal) => {
    if (signal?.aborted) throw new AuthcliError('cancelled', 'cancelled');
    this.sleeps.push(ms);
    this.t += ms;
  };
}

/** The HTTP Basic header of RFC 6749 §2.3.1 for an id and secret that need no encoding. */
export const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

/** A device authorization response (RFC 8628 §3.2) of `issuer`, for device code `deviceCode`. */
export function deviceCodes(issuer: string, deviceCode = 'dc-1') {
  return {
    device_code: deviceCode,
    user_code: 'BCDF-GHJK',
    verification_uri: `${issuer}/device`,
    verification_uri_complete: `${issuer}/device?user_code=BCDF-GHJK`,
    expires_in: 600,
    interval: 5,
  };
}

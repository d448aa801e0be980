import type { TokenResponse } from '@authcli/protocol';
import { CliError } from '../errors.js';
import { oauthError, type Transport } from '../http.js';
import { asTokenResponse } from '../tokens.js';

export interface Clock {
  now(): number;
  /** Resolves after `ms`, or rejects with CliError('cancelled') when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const realClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(new CliError('cancelled', 'sign-in cancelled'));
      const t = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(t);
        reject(new CliError('cancelled', 'sign-in cancelled'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

export interface PollRequest {
  tokenEndpoint: string;
  /** The form to send on each poll (grant_type, device_code, client credentials in form if any). */
  form: Record<string, string>;
  headers: Record<string, string>;
  /** Seconds between polls, from the device authorization response (RFC 8628 §3.2, default 5). */
  interval: number;
  /** Epoch ms after which the codes are dead. */
  expiresAt: number;
}

export interface PollEvents {
  /** Called before each wait, with the interval now in force (after slow_down growth). */
  onWait?(info: { intervalSeconds: number; reason: 'pending' | 'slow_down' | 'rate_limited' | 'network' }): void;
}

const MAX_NETWORK_BACKOFF_S = 60;

/**
 * Polls the token endpoint for a device authorization (RFC 8628 §3.4–3.5):
 * never sooner than the interval; `slow_down` (and HTTP 429) add 5 s for the
 * rest of this login; transient network and 5xx failures are retried with
 * exponential backoff until the codes expire; `access_denied`,
 * `expired_token` and an invalid client end the login.
 */
export async function pollForTokens(
  req: PollRequest,
  transport: Transport,
  clock: Clock,
  signal?: AbortSignal,
  events: PollEvents = {},
): Promise<TokenResponse> {
  let interval = Math.max(1, req.interval || 5);
  let failures = 0;
  let reason: 'pending' | 'slow_down' | 'rate_limited' | 'network' = 'pending';
  for (;;) {
    const wait = failures > 0 ? Math.max(interval, Math.min(interval * 2 ** failures, MAX_NETWORK_BACKOFF_S)) : interval;
    events.onWait?.({ intervalSeconds: interval, reason });
    if (clock.now() + wait * 1000 > req.expiresAt) {
      // The next poll would land after expiry: wait out what is left, then say so.
      throw new CliError('expired_token', 'the code expired before the sign-in was approved; run `authcli login` again');
    }
    await clock.sleep(wait * 1000, signal);

    let res;
    try {
      res = await transport(req.tokenEndpoint, { method: 'POST', headers: req.headers, form: req.form });
    } catch (err) {
      if (err instanceof CliError && err.code === 'network') {
        failures++;
        reason = 'network';
        continue;
      }
      throw err;
    }
    if (res.status === 200) return asTokenResponse(res.body);
    if (res.status === 429) {
      interval += 5;
      failures = 0;
      reason = 'rate_limited';
      continue;
    }
    const e = oauthError(res);
    if (!e) {
      if (res.status >= 500) {
        failures++;
        reason = 'network';
        continue;
      }
      throw new CliError('protocol', `the token endpoint answered ${res.status} without an OAuth error`);
    }
    failures = 0;
    switch (e.error) {
      case 'authorization_pending':
        reason = 'pending';
        continue;
      case 'slow_down':
        interval += 5;
        reason = 'slow_down';
        continue;
      case 'access_denied':
        throw new CliError('access_denied', 'the sign-in was denied in the browser');
      case 'expired_token':
        throw new CliError('expired_token', 'the code expired before the sign-in was approved; run `authcli login` again');
      case 'invalid_client':
      case 'unauthorized_client':
        throw new CliError(
          'invalid_client',
          `the server refused this client (${e.error}${e.description ? `: ${e.description}` : ''}); check --client-id / --client-secret`,
        );
      default:
        throw new CliError('protocol', `${e.error}${e.description ? `: ${e.description}` : ''}`);
    }
  }
}

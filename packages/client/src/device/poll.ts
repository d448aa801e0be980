import type { TokenResponse } from '@authcli/protocol';
import { AuthcliError } from '../errors.js';
import type { DevicePoll } from '../oauth/client.js';
import { CODE_EXPIRED } from '../oauth/explain.js';

export interface Clock {
  now(): number;
  /** Resolves after `ms`, or rejects with AuthcliError('cancelled') when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const realClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(new AuthcliError('cancelled', 'sign-in cancelled'));
      const t = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(t);
        reject(new AuthcliError('cancelled', 'sign-in cancelled'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

/** When to poll: the device authorization response's interval and expiry. */
export interface PollTiming {
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
 * Polls the token endpoint for a device authorization (RFC 8628 §3.4–3.5),
 * one `poll` (OAuthClient.pollDeviceToken) at a time: never sooner than the
 * interval; `slow_down` (and HTTP 429) add 5 s for the rest of this login;
 * transient network and 5xx failures are retried with exponential backoff
 * until the codes expire; any other answer (`access_denied`,
 * `expired_token`, an invalid client) ends the login with its error.
 */
export async function pollForTokens(
  poll: () => Promise<DevicePoll>,
  timing: PollTiming,
  clock: Clock,
  signal?: AbortSignal,
  events: PollEvents = {},
): Promise<TokenResponse> {
  let interval = Math.max(1, timing.interval || 5);
  let failures = 0;
  let reason: 'pending' | 'slow_down' | 'rate_limited' | 'network' = 'pending';
  for (;;) {
    const wait = failures > 0 ? Math.max(interval, Math.min(interval * 2 ** failures, MAX_NETWORK_BACKOFF_S)) : interval;
    events.onWait?.({ intervalSeconds: interval, reason });
    // The next poll would land after expiry: wait out what is left, then say so.
    if (clock.now() + wait * 1000 > timing.expiresAt) throw new AuthcliError('expired_token', CODE_EXPIRED);
    await clock.sleep(wait * 1000, signal);

    const answer = await poll();
    switch (answer.kind) {
      case 'tokens':
        return answer.tokens;
      case 'failed':
        throw answer.error;
      case 'transient':
        failures++;
        reason = 'network';
        continue;
      case 'authorization_pending':
        failures = 0;
        reason = 'pending';
        continue;
      case 'slow_down':
      case 'rate_limited':
        interval += 5;
        failures = 0;
        reason = answer.kind;
        continue;
    }
  }
}

import type { TokenResponse } from '@authcli/protocol';
import type { ClientSettings } from '../config.js';
import type { Transport } from '../http.js';
import { OAuthClient } from '../oauth/client.js';
import type { ServerMetadata } from '../oauth/discovery.js';
import { type Clock, type PollEvents, pollForTokens } from './poll.js';

/** What a person needs to approve a device sign-in (RFC 8628 §3.2), for the tool to show in its own way. */
export interface DeviceCode {
  /** The code the person enters at `verificationUri`. */
  userCode: string;
  verificationUri: string;
  /** The URI with the code filled in (§3.3.1), for a QR code or a link; the server may send none. */
  verificationUriComplete?: string | undefined;
  /** Seconds from now until the codes expire. */
  expiresIn: number;
  /** Seconds between polls the server asked for (5 when it said nothing). */
  interval: number;
}

/**
 * The device authorization grant (RFC 8628) without a screen: asks for codes, hands them to `onDeviceCode`, and
 * polls (device/poll.ts) until the person approves, denies, or the codes expire.
 */
export async function deviceFlow(
  meta: ServerMetadata,
  settings: ClientSettings,
  transport: Transport,
  opts: {
    scope: string;
    clock: Clock;
    onDeviceCode: (code: DeviceCode) => void | Promise<void>;
    signal?: AbortSignal | undefined;
    /** How the token endpoint is polled: with DPoP proofs when the sign-in uses DPoP (default `transport`). */
    tokenTransport?: Transport | undefined;
    onWait?: PollEvents['onWait'];
  },
): Promise<TokenResponse> {
  const client = new OAuthClient({ meta, settings, transport, tokenTransport: opts.tokenTransport });
  const d = await client.deviceAuthorization(opts.scope);
  const expiresAt = opts.clock.now() + d.expires_in * 1000;
  await opts.onDeviceCode({
    userCode: d.user_code,
    verificationUri: d.verification_uri,
    verificationUriComplete: d.verification_uri_complete,
    expiresIn: d.expires_in,
    interval: d.interval ?? 5,
  });
  return pollForTokens(() => client.pollDeviceToken(d.device_code), { interval: d.interval ?? 5, expiresAt }, opts.clock, opts.signal, {
    onWait: opts.onWait,
  });
}

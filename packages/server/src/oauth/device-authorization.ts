import { coveredResources, namedResources, storedResources } from './resources.js';
import { DEVICE_CODE_GRANT_TYPE, type DeviceAuthorizationResponse } from '@authcli/protocol';
import type { OAuthContext } from './context.js';
import { DEVICE_CODE_TTL_SECONDS, DEVICE_POLL_INTERVAL_SECONDS } from '../config/defaults.js';
import { StoreError, type DeviceAuthorization } from '../store/store.js';
import { randomToken, sha256Hex } from '../util/crypto.js';
import { authenticateClient } from './client-auth.js';
import { TemporarilyUnavailable, UnauthorizedClient } from './errors.js';
import { parseScope } from './scopes.js';
import { formatUserCode, generateUserCode } from './user-code.js';

/**
 * The row a device authorization request stores: pending for the device
 * code's lifetime, polled at its first interval (the server passes its
 * configured AUTHCLI_DEVICE_CODE_TTL and AUTHCLI_DEVICE_POLL_INTERVAL).
 */
export function pendingDeviceAuthorization(input: {
  deviceCodeHash: string;
  userCode: string;
  clientId: string;
  scope: string;
  /** The resources the grant will cover (oauth/resources.ts storedResources); null: none. */
  resource?: string | null;
  now: number;
  /** The address the request came from (http/client-ip.ts `clientAddress`), shown on the confirmation page. */
  clientIp: string | null;
  /** Defaults: config/defaults.ts; the server passes its configured ones. */
  ttlSeconds?: number;
  intervalSeconds?: number;
}): DeviceAuthorization {
  return {
    device_code_hash: input.deviceCodeHash,
    user_code: input.userCode,
    client_id: input.clientId,
    scope: input.scope,
    status: 'pending',
    user_id: null,
    auth_time: null,
    amr: null,
    acr: null,
    created_at: input.now,
    expires_at: input.now + (input.ttlSeconds ?? DEVICE_CODE_TTL_SECONDS) * 1000,
    interval_s: input.intervalSeconds ?? DEVICE_POLL_INTERVAL_SECONDS,
    last_poll_at: null,
    last_poll_slowed: 0,
    grant_id: null,
    client_ip: input.clientIp,
    resource: input.resource ?? null,
  };
}

/**
 * A device authorization request (RFC 8628 §3.1–3.2) from the client at
 * `clientIp`: the client authenticated and allowed the device grant, the
 * scope checked, the limits consumed, then a pending authorization stored.
 * Protocol errors are thrown as OAuthError.
 */
export async function authorizeDevice(
  ctx: OAuthContext,
  params: Readonly<Record<string, string>>,
  authorization: string | undefined,
  clientIp: string,
  resources: readonly string[] = [],
): Promise<DeviceAuthorizationResponse> {
  const client = await authenticateClient(ctx, authorization, params, clientIp);
  if (!client.grantTypes.includes(DEVICE_CODE_GRANT_TYPE))
    throw new UnauthorizedClient('this application may not use the device authorization grant');
  const catalog = await ctx.store.resources.catalog();
  const scopes = parseScope(params.scope, client.scopes, catalog.byScope);
  const covered = coveredResources(namedResources(resources, catalog, client.scopes), scopes, catalog);
  // Each authorization is a row kept for a day: counted per client IP and per application before one is made.
  const admission = await ctx.limits.deviceAuthorization(clientIp, client.clientId);
  if (!admission.admitted) {
    throw new TemporarilyUnavailable('too many device authorization requests; retry later', admission.retryAfterSeconds, { status: 429 });
  }
  const now = ctx.config.now();
  const deviceCode = randomToken(32);
  // 20^8 user codes: a collision with a live one is rare; draw again if it happens.
  for (let attempt = 0; ; attempt++) {
    const userCode = generateUserCode();
    try {
      await ctx.store.deviceGrants.insert(
        pendingDeviceAuthorization({
          deviceCodeHash: sha256Hex(deviceCode),
          userCode,
          clientId: client.clientId,
          scope: scopes.join(' '),
          resource: storedResources(covered),
          now,
          clientIp,
          ttlSeconds: ctx.config.deviceCodeTtlSeconds,
          intervalSeconds: ctx.config.devicePollIntervalSeconds,
        }),
      );
      const shown = formatUserCode(userCode);
      const verificationUri = `${ctx.config.issuer}/device`;
      return {
        device_code: deviceCode,
        user_code: shown,
        verification_uri: verificationUri,
        verification_uri_complete: `${verificationUri}?user_code=${shown}`,
        expires_in: ctx.config.deviceCodeTtlSeconds,
        interval: ctx.config.devicePollIntervalSeconds,
      };
    } catch (err) {
      if (!(err instanceof StoreError && err.code === 'duplicate') || attempt >= 4) throw err;
    }
  }
}

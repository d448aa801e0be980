import { audienceFor } from '../resources.js';
import type { TokenResponse } from '@authcli/protocol';
import type { OAuthContext } from '../context.js';
import type { Application } from '../../store/store.js';
import { sha256Hex } from '../../util/crypto.js';
import { AUTHORIZATION_PENDING, AccessDenied, ExpiredToken, InvalidGrant, InvalidRequest, SlowDown, type OAuthError } from '../errors.js';
import { newGrant, newRefreshToken, refreshBinding, wantsRefreshToken } from '../refresh.js';
import type { DpopProof } from '../dpop.js';

type Params = Readonly<Record<string, string>>;

/**
 * RFC 8628 §3.4–3.5 device access token request. The device code is bound
 * to the client that asked for it; pending codes answer
 * `authorization_pending`, or `slow_down` when polled sooner than the
 * current interval after the previous poll (kept in the store, so it holds
 * across instances); denied codes `access_denied`; codes past their lifetime
 * (`deviceCodeTtlSeconds`, AUTHCLI_DEVICE_CODE_TTL) `expired_token`; an
 * approved code is redeemed once, atomically, after the account is checked
 * again. The two answers of a code still waiting
 * (authorization_pending, slow_down) are returned, not thrown. The DPoP
 * proof of the request that redeems the code binds the tokens (RFC 9449 §5).
 */
export async function deviceCodeGrant(
  ctx: OAuthContext,
  app: Application,
  params: Params,
  dpop: DpopProof | undefined,
  resources: readonly string[] = [],
): Promise<TokenResponse | OAuthError> {
  const { store, config } = ctx;
  const deviceCode = params.device_code;
  if (!deviceCode) throw new InvalidRequest('device_code is missing');
  if (deviceCode.length > 256) throw new InvalidGrant('the device_code is invalid');
  const hash = sha256Hex(deviceCode);
  const now = config.now();

  // The common case first, in one statement: a pending code of this client being polled.
  const poll = await store.deviceGrants.recordPoll(hash, app.clientId, now);
  if (poll) {
    return poll.slowed ? new SlowDown(`polling too fast: wait ${poll.interval_s} seconds between requests`) : AUTHORIZATION_PENDING;
  }

  const row = await store.deviceGrants.findByCodeHash(hash);
  if (!row) throw new InvalidGrant('the device_code is invalid');
  if (row.client_id !== app.clientId) throw new InvalidGrant('the device_code was issued to another client');
  if (row.status === 'consumed') throw new InvalidGrant('the device_code was already redeemed');
  if (now >= row.expires_at) throw new ExpiredToken('the device_code has expired; start over');
  if (row.status === 'denied') throw new AccessDenied('the user denied the request');
  // Approved a moment after our poll statement saw it pending: the next poll redeems it.
  if (row.status === 'pending') return AUTHORIZATION_PENDING;

  // Approved: check the account again before anything is issued.
  const user = row.user_id ? await store.users.findById(row.user_id) : undefined;
  if (!user || user.disabled_at !== null) throw new InvalidGrant('the account is disabled or no longer exists');
  const scopes = row.scope.split(' ').filter(Boolean);
  // RFC 8707 §2.2: which API the token is for, before the code is used up.
  const audience = await audienceFor(ctx, row.resource, scopes, resources);
  const authTime = row.auth_time ?? now;
  const grant = newGrant(
    config,
    {
      clientId: app.clientId,
      userId: user.id,
      scope: row.scope,
      resource: row.resource,
      authTime,
      amr: row.amr,
      acr: row.acr,
      dpopJkt: refreshBinding(app, dpop),
      ttlSeconds: app.refreshTokenTtl,
    },
    now,
  );
  const refresh = wantsRefreshToken(app, scopes, { kind: 'device' }) ? newRefreshToken(grant, now) : undefined;
  if (!(await store.deviceGrants.redeem(hash, grant, now, refresh?.row))) {
    throw new InvalidGrant('the device_code was already redeemed');
  }
  return ctx.tokens.issue(
    { grantId: grant.id, user, app, scopes, authTime, amr: row.amr, acr: row.acr, jkt: dpop?.jkt, audience },
    refresh ? { refreshToken: refresh.token } : {},
  );
}

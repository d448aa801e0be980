import { PRESENTED_SECRET_MAX } from '../../config/defaults.js';
import type { TokenResponse } from '@authcli/protocol';
import { isValidChallenge, isValidVerifier } from '@authcli/pkce';
import { hash, timingSafeEqual } from 'node:crypto';
import type { OAuthContext } from '../context.js';
import type { Application } from '../../store/store.js';
import { sha256Hex } from '../../util/crypto.js';
import { isLoopbackRedirect } from '../redirect-uri.js';
import { newGrant, newRefreshToken, refreshBinding, wantsRefreshToken } from '../refresh.js';
import { InvalidDpopProof, InvalidGrant, InvalidRequest } from '../errors.js';
import type { DpopProof } from '../dpop.js';
import { storedClaimsRequest } from '../claims-request.js';
import { audienceFor } from '../resources.js';

type Params = Readonly<Record<string, string>>;

/**
 * RFC 7636 §4.6: BASE64URL-ENCODE(SHA256(ASCII(code_verifier))) == code_challenge,
 * compared as strings (in constant time), as the RFC states it. Comparing
 * decoded bytes instead would accept a challenge whose last character has
 * stray low bits set (a non-canonical base64url form of the same bytes).
 * node:crypto's synchronous hash here, not Web Crypto: this is the token
 * endpoint's hot path and a thread-pool round trip costs more than the hash.
 */
function verifyS256(verifier: string, challenge: string): boolean {
  if (!isValidVerifier(verifier) || !isValidChallenge(challenge)) return false;
  const computed = Buffer.from(hash('sha256', verifier, 'base64url'));
  const expected = Buffer.from(challenge);
  return expected.length === computed.length && timingSafeEqual(computed, expected);
}

/**
 * RFC 6749 §4.1.3 access token request with PKCE (RFC 7636 §4.5, §4.6).
 * Checks run against the stored code before it is consumed, so a request by
 * the wrong client or with the wrong verifier cannot burn a victim's code;
 * consumption itself is one conditional UPDATE, so exactly one of concurrent
 * requests wins; a replay of a consumed code revokes its grant and every
 * token issued under it (RFC 6749 §4.1.2, RFC 9700 §4.5). A code bound to a
 * DPoP key by `dpop_jkt` (RFC 9449 §10) is redeemed only with a proof by that
 * key, checked before consumption too.
 */
export async function authorizationCodeGrant(
  ctx: OAuthContext,
  app: Application,
  params: Params,
  dpop: DpopProof | undefined,
  resources: readonly string[] = [],
): Promise<TokenResponse> {
  const { store, config } = ctx;
  const code = params.code;
  if (!code) throw new InvalidRequest('code is missing');
  if (params.redirect_uri === undefined) throw new InvalidRequest('redirect_uri is missing');
  const verifier = params.code_verifier;

  const row = code.length <= PRESENTED_SECRET_MAX ? await store.codes.find(sha256Hex(code)) : undefined;
  if (!row) throw new InvalidGrant('the authorization code is invalid');
  if (row.client_id !== app.clientId) throw new InvalidGrant('the authorization code was issued to another client');

  const now = config.now();
  if (row.consumed_at !== null) {
    if (row.grant_id) await store.grants.revoke(row.grant_id, now);
    throw new InvalidGrant('the authorization code was already used; tokens issued from it are revoked');
  }
  if (row.expires_at <= now) throw new InvalidGrant('the authorization code has expired');
  if (row.redirect_uri !== params.redirect_uri) throw new InvalidGrant('redirect_uri differs from the authorization request');

  if (row.code_challenge === null) {
    // RFC 9700 §2.1.1: a verifier for a code issued without a challenge is a PKCE downgrade attempt.
    if (verifier !== undefined) throw new InvalidGrant('code_verifier sent for a code issued without code_challenge');
    throw new InvalidGrant('the authorization code was issued without PKCE');
  }
  if (verifier === undefined) throw new InvalidGrant('code_verifier is required (RFC 7636 §4.5)');
  if (!verifyS256(verifier, row.code_challenge)) {
    throw new InvalidGrant('code_verifier does not match the code_challenge (RFC 7636 §4.6)');
  }

  // RFC 9449 §10: https://www.rfc-editor.org/rfc/rfc9449#section-10
  if (row.dpop_jkt !== null) {
    if (!dpop) throw new InvalidDpopProof('the authorization request bound this code to a DPoP key (dpop_jkt): send a proof by that key');
    if (dpop.jkt !== row.dpop_jkt) throw new InvalidGrant('the DPoP proof is not by the key the authorization request named (dpop_jkt)');
  }

  const user = await store.users.findById(row.user_id);
  if (!user || user.disabled_at !== null) throw new InvalidGrant('the account is disabled or no longer exists');

  const scopes = row.scope.split(' ').filter(Boolean);
  // RFC 8707 §2.2: which API the token is for, before the code is used up.
  const audience = await audienceFor(ctx, row.resource, scopes, resources);
  const grant = newGrant(
    config,
    {
      clientId: app.clientId,
      userId: user.id,
      scope: row.scope,
      resource: row.resource,
      claims: row.claims,
      authTime: row.auth_time,
      amr: row.amr,
      acr: row.acr,
      dpopJkt: refreshBinding(app, dpop),
      sid: row.sid,
      ttlSeconds: app.refreshTokenTtl,
    },
    now,
  );
  const refresh = wantsRefreshToken(app, scopes, { kind: 'code', nativeLoopback: isLoopbackRedirect(row.redirect_uri) })
    ? newRefreshToken(grant, now)
    : undefined;
  if (!(await store.codes.redeem(row.code_hash, grant, now, refresh?.row))) {
    // Another request redeemed it first (or it just expired): treat as a replay.
    const winner = await store.codes.find(row.code_hash);
    if (winner?.grant_id) await store.grants.revoke(winner.grant_id, now);
    throw new InvalidGrant('the authorization code was already used; tokens issued from it are revoked');
  }
  return ctx.tokens.issue(
    {
      grantId: grant.id,
      user,
      app,
      scopes,
      authTime: row.auth_time,
      amr: row.amr,
      acr: row.acr,
      nonce: row.nonce,
      claims: storedClaimsRequest(row.claims),
      jkt: dpop?.jkt,
      sid: row.sid,
      audience,
    },
    refresh ? { refreshToken: refresh.token } : {},
  );
}

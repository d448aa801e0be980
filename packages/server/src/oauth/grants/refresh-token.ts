import type { TokenResponse } from '@authcli/protocol';
import { PRESENTED_SECRET_MAX } from '../../config/defaults.js';
import type { OAuthContext } from '../context.js';
import type { Application, Grant } from '../../store/store.js';
import { sha256Hex } from '../../util/crypto.js';
import { InvalidDpopProof, InvalidGrant, InvalidRequest, InvalidScope } from '../errors.js';
import type { DpopProof } from '../dpop.js';
import { newRefreshToken } from '../refresh.js';
import { isSupportedScope } from '../scopes.js';
import { storedClaimsRequest } from '../claims-request.js';
import { audienceFor } from '../resources.js';

type Params = Readonly<Record<string, string>>;

/**
 * RFC 6749 §6 refresh with rotation (RFC 9700 §4.14.2): every use returns a
 * new refresh token and retires the old one; presenting a retired token is
 * a reuse and revokes the whole family (the grant), so a stolen token dies
 * with the legitimate one. Under the FAPI 2.0 Security Profile
 * (`AUTHCLI_FAPI2`) a confidential client's refresh token is not rotated
 * (§5.3.2.1: its authentication binds it already). The family ends at the grant's absolute
 * lifetime. `scope` may only narrow; the new refresh token keeps the
 * grant's full scope (RFC 6749 §6). A public client's family bound to a DPoP
 * key (RFC 9449 §5) refreshes only with a proof by that key, checked after
 * revocation (a revoked token is invalid_grant whoever sends it) and before
 * the reuse check, so a thief without the key cannot end the victim's
 * sign-in either; the new access token is bound to the proof's key.
 */
export async function refreshTokenGrant(
  ctx: OAuthContext,
  app: Application,
  params: Params,
  dpop: DpopProof | undefined,
  resources: readonly string[] = [],
): Promise<TokenResponse> {
  const { store, config } = ctx;
  const presented = params.refresh_token;
  if (!presented) throw new InvalidRequest('refresh_token is missing');
  const hash = sha256Hex(presented);
  const row = presented.length <= PRESENTED_SECRET_MAX ? await store.grants.findRefreshToken(hash) : undefined;
  if (!row) throw new InvalidGrant('the refresh token is invalid');
  const grant = await store.grants.find(row.grant_id);
  if (!grant || grant.client_id !== app.clientId) throw new InvalidGrant('the refresh token was issued to another client');
  const now = config.now();
  if (grant.revoked_at !== null) throw new InvalidGrant('the refresh token has been revoked');
  // RFC 9449 §5: https://www.rfc-editor.org/rfc/rfc9449#section-5
  if (grant.dpop_jkt !== null) {
    if (!dpop) throw new InvalidDpopProof('this refresh token is bound to a DPoP key: send a proof by that key (RFC 9449 §5)');
    if (dpop.jkt !== grant.dpop_jkt) throw new InvalidGrant('the refresh token is bound to another DPoP key (RFC 9449 §5)');
  }
  if (row.used_at !== null) throw await reuseDetected(ctx, grant, app, now);
  if (now >= row.expires_at || now >= grant.expires_at) throw new InvalidGrant('the refresh token has expired; sign in again');

  const granted = grant.scope.split(' ').filter(Boolean);
  let scopes = granted;
  if (params.scope !== undefined) {
    // Unknown values are ignored, as at the authorization endpoint (OIDC Core §3.1.2.1); the grant's own API
    // scopes are known.
    scopes = [...new Set(params.scope.split(' ').filter((s) => isSupportedScope(s) || granted.includes(s)))];
    if (scopes.length === 0) throw new InvalidScope('none of the requested scopes is one this server supports');
    for (const s of scopes)
      if (!granted.includes(s)) throw new InvalidScope(`the ${s} scope was not granted (a refresh may only narrow scope)`);
  }
  // An API scope the application is no longer allowed (`apps update --scope`) is left out of its next token.
  if (grant.resource) scopes = scopes.filter((s) => isSupportedScope(s) || app.scopes.includes(s));
  // RFC 8707 §2.2: a refresh may name any API the grant covers, and gets a token for it alone.
  const audience = await audienceFor(ctx, grant.resource, scopes, resources);

  const user = await store.users.findById(grant.user_id);
  if (!user || user.disabled_at !== null) throw new InvalidGrant('the account is disabled or no longer exists');

  // FAPI 2.0 Security Profile §5.3.2.1 (AUTHCLI_FAPI2): no rotation for a client that authenticates; its refresh
  // token stays as it was (RFC 6749 §6 lets the server keep it), so a lost answer costs the client nothing.
  const rotate = !(config.fapi2 && app.kind === 'confidential');
  const successor = rotate ? newRefreshToken(grant, now) : undefined;
  if (successor && !(await store.grants.rotateRefreshToken(hash, successor.row, now))) throw await reuseDetected(ctx, grant, app, now);
  return ctx.tokens.issue(
    {
      grantId: grant.id,
      user,
      app,
      scopes,
      authTime: grant.auth_time,
      amr: grant.amr,
      acr: grant.acr,
      claims: storedClaimsRequest(grant.claims),
      jkt: dpop?.jkt,
      sid: grant.sid,
      audience,
    },
    successor ? { refreshToken: successor.token } : {},
  );
}

/**
 * A refresh token used twice (RFC 9700 §4.14.2): the family (the grant) is revoked, and the reuse recorded in
 * the audit trail in the same transaction (`token.reuse_detected`: a stolen token, or a client that lost an
 * answer). Returns the error to answer.
 */
async function reuseDetected(ctx: OAuthContext, grant: Grant, app: Application, now: number): Promise<InvalidGrant> {
  await ctx.store.changes(async () => {
    await ctx.store.grants.revoke(grant.id, now);
    await ctx.store.audit.append({
      at: now,
      actor: { type: 'client', id: app.clientId, name: app.name },
      action: 'token.reuse_detected',
      target: { type: 'user', id: grant.user_id },
      detail: { client_id: app.clientId, grant: grant.id },
    });
  });
  return new InvalidGrant('the refresh token was already used; every token of this sign-in is revoked');
}

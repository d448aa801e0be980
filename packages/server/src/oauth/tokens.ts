import { hash } from 'node:crypto';
import { accessTokenTtl } from './lifetimes.js';
import type { TokenResponse } from '@authcli/protocol';
import type { ServerConfig } from '../config/config.js';
import type { Application, User } from '../store/store.js';
import { standardClaims } from './claims.js';
import { randomToken } from '../util/crypto.js';
import { acrFor, amrOf } from './acr.js';
import { CLAIM_SCOPE_NAMES, type ClaimsRequest, essentialAcrValues, pickClaims } from './claims-request.js';
import type { KeyRing, SigningAlg } from './keys.js';
import type { TokenAudience } from './resources.js';

/** What a token is issued for: one grant (a code exchange, a device approval, a refresh family). */
export interface TokenContext {
  grantId: string;
  user: User;
  app: Application;
  scopes: string[];
  authTime: number;
  /** How the person signed in (RFC 8176 `amr` as stored, space-separated; null: a password). */
  amr?: string | null | undefined;
  /** The class of a federated sign-in, as stored; null or absent: derived from `amr`. */
  acr?: string | null | undefined;
  nonce?: string | null | undefined;
  /** The `claims` request of the sign-in (OIDC Core §5.5), if it named any. */
  claims?: ClaimsRequest | undefined;
  /** RFC 9449 §6.1: the JWK thumbprint of the DPoP key the access token is bound to, if any. */
  jkt?: string | undefined;
  /** The browser session the sign-in was made in (Back-Channel Logout 1.0 §2.1 `sid`); none for a device's. */
  sid?: string | null | undefined;
  /**
   * The API the access token is for (RFC 8707, oauth/resources.ts tokenAudience): its `aud` is the API's
   * identifier and its `scope` only the API's scopes; absent: `aud` is the issuer and `scope` every granted scope.
   */
  audience?: TokenAudience | undefined;
}

/** OIDC Core §3.1.3.6: at_hash is the left half of SHA-256 of the access token, base64url. */
export function atHash(accessToken: string): string {
  return hash('sha256', accessToken, 'buffer').subarray(0, 16).toString('base64url');
}

/** Mints access and ID tokens with the shared key ring. */
export class TokenIssuer {
  constructor(
    private readonly config: ServerConfig,
    private readonly keys: KeyRing,
    /** RFC 9068 §2.1: RS256 is supported; ES256 is the default because it signs ~15x faster. */
    private readonly accessTokenAlg: SigningAlg = 'ES256',
  ) {}

  /**
   * RFC 9068 §2.2 access token: iss, exp, aud, sub, client_id, iat, jti, scope, auth_time; and
   * `cnf.jkt` when it is DPoP-bound (RFC 9449 §6.1, https://www.rfc-editor.org/rfc/rfc9449#section-6.1).
   */
  async accessToken(ctx: TokenContext, iat: number): Promise<string> {
    return this.keys.signJwt(this.accessTokenAlg, 'at+jwt', {
      iss: this.config.issuer,
      sub: ctx.user.id,
      aud: ctx.audience ? ctx.audience.resource.id : this.config.issuer,
      client_id: ctx.app.clientId,
      scope: (ctx.audience ? ctx.audience.scopes : ctx.scopes).join(' '),
      auth_time: Math.floor(ctx.authTime / 1000),
      iat,
      exp: iat + accessTokenTtl(ctx.app, this.config),
      jti: randomToken(16),
      gid: ctx.grantId,
      ...(ctx.jkt !== undefined && { cnf: { jkt: ctx.jkt } }),
    });
  }

  /**
   * OIDC Core §2 ID token, with nonce, azp, at_hash (§3.1.3.6), acr and amr
   * (RFC 8176), and `sid` when it comes from a browser session (OpenID Connect
   * Back-Channel Logout 1.0 §2.1); signed with the application's algorithm. An access token is
   * always issued with it, so the claims of the requested scopes are the
   * UserInfo response's (§5.4), not the ID token's; it carries only the
   * claims the `claims` request names for it (§5.5).
   */
  async idToken(ctx: TokenContext, accessToken: string, iat: number): Promise<string> {
    const amr = amrOf(ctx.amr);
    return this.keys.signJwt(ctx.app.idTokenAlg, 'JWT', {
      iss: this.config.issuer,
      sub: ctx.user.id,
      aud: ctx.app.clientId,
      azp: ctx.app.clientId,
      exp: iat + this.config.idTokenTtlSeconds,
      iat,
      auth_time: Math.floor(ctx.authTime / 1000),
      ...(ctx.nonce ? { nonce: ctx.nonce } : {}),
      at_hash: atHash(accessToken),
      acr: acrFor(amr, essentialAcrValues(ctx.claims), ctx.acr),
      // OIDC Core §2: optional; left out when nothing is known of how the person signed in (a federated upstream that said nothing).
      ...(amr.length > 0 && { amr }),
      ...(ctx.sid && { sid: ctx.sid }),
      ...pickClaims(standardClaims(ctx.user, CLAIM_SCOPE_NAMES), ctx.claims?.id_token),
    });
  }

  /**
   * A client credentials token (RFC 6749 §4.4.3, RFC 9068 §2.2): the application's own, for one API; `sub` is its
   * client_id and no grant stands behind it (no `gid`, no `auth_time`); bound to `jkt` when a DPoP proof came.
   */
  async issueToClient(
    app: Application,
    audience: TokenAudience,
    jkt: string | undefined,
    /** A CI workload's exchange (RFC 8693): the upstream `sub`, the policy, its lifetime. */
    workload?: { subject: string; id: string; issuer: string; lifetimeSeconds: number },
  ): Promise<TokenResponse> {
    const iat = Math.floor(this.config.now() / 1000);
    const scope = audience.scopes.join(' ');
    const ttl = workload?.lifetimeSeconds ?? accessTokenTtl(app, this.config);
    const access = await this.keys.signJwt(this.accessTokenAlg, 'at+jwt', {
      iss: this.config.issuer,
      sub: workload?.subject ?? app.clientId,
      aud: audience.resource.id,
      client_id: app.clientId,
      scope,
      iat,
      exp: iat + ttl,
      jti: randomToken(16),
      ...(workload && { workload: workload.id, upstream_iss: workload.issuer }),
      ...(jkt !== undefined && { cnf: { jkt } }),
    });
    return { access_token: access, token_type: jkt !== undefined ? 'DPoP' : 'Bearer', expires_in: ttl, scope };
  }

  /**
   * RFC 6749 §5.1 successful response; an ID token when `openid` was granted; `token_type` DPoP for a
   * DPoP-bound access token (RFC 9449 §5).
   */
  async issue(ctx: TokenContext, extra: { refreshToken?: string } = {}): Promise<TokenResponse> {
    const iat = Math.floor(this.config.now() / 1000);
    const access = await this.accessToken(ctx, iat);
    const response: TokenResponse = {
      access_token: access,
      token_type: ctx.jkt !== undefined ? 'DPoP' : 'Bearer',
      expires_in: accessTokenTtl(ctx.app, this.config),
      // RFC 6749 §5.1: the access token's scope (an API's token carries only that API's).
      scope: (ctx.audience ? ctx.audience.scopes : ctx.scopes).join(' '),
    };
    if (ctx.scopes.includes('openid')) response.id_token = await this.idToken(ctx, access, iat);
    if (extra.refreshToken) response.refresh_token = extra.refreshToken;
    return response;
  }
}

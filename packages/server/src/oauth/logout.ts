import { verifyIdTokenHint } from './id-token-hint.js';
import { LOGOUT_STATE_MAX } from '../config/defaults.js';
import type { Application } from '../store/store.js';
import type { OAuthContext } from './context.js';

/** An end-session request that passed every check; nothing in it came from the request unverified. */
export interface LogoutRequest {
  /** The subject of a verified `id_token_hint`. */
  hintSub: string | undefined;
  app: Application | undefined;
  /** An exact match of one of `app`'s registered post-logout redirect URIs. */
  redirectUri: string | undefined;
  state: string | undefined;
}

/** A malformed or unverifiable end-session request: answered with a page, never a redirect (§3). */
export class LogoutError extends Error {
  readonly statusCode = 400;
}

/**
 * Validates an end-session request (OpenID Connect RP-Initiated Logout 1.0
 * §2, §3): `id_token_hint` must be an ID token this server signed (its
 * expiry is not checked: §2 expects expired ones); `client_id`, when both
 * are sent, must be its audience; `post_logout_redirect_uri` needs a client
 * and must equal one the client registered. Every failure is a page, never
 * a redirect.
 */
export async function validateLogout(ctx: OAuthContext, params: Readonly<Record<string, string>>): Promise<LogoutRequest> {
  let hintSub: string | undefined;
  let hintAud: string | undefined;
  if (params.id_token_hint !== undefined) {
    const hint = await verifyIdTokenHint(ctx, params.id_token_hint);
    if (!hint) throw new LogoutError('id_token_hint is not an ID token issued by this server');
    hintSub = hint.sub;
    hintAud = hint.aud;
  }
  if (params.client_id !== undefined && hintAud !== undefined && params.client_id !== hintAud) {
    throw new LogoutError('client_id does not match the audience of id_token_hint');
  }
  const clientId = params.client_id ?? hintAud;
  const app = clientId === undefined ? undefined : await ctx.store.applications.get(clientId);
  if (clientId !== undefined && !app) throw new LogoutError('unknown client_id');
  let redirectUri: string | undefined;
  if (params.post_logout_redirect_uri !== undefined) {
    if (!app) throw new LogoutError('post_logout_redirect_uri needs client_id or id_token_hint to say which application registered it');
    if (!app.postLogoutRedirectUris.includes(params.post_logout_redirect_uri)) {
      throw new LogoutError('post_logout_redirect_uri is not registered for this application');
    }
    redirectUri = params.post_logout_redirect_uri;
  }
  if (params.state !== undefined && params.state.length > LOGOUT_STATE_MAX) throw new LogoutError('state is too long');
  return { hintSub, app, redirectUri, state: params.state };
}

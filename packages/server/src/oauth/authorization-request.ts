/**
 * The authorization request once it passed every check, and the two ways a
 * check fails (RFC 6749 §4.1.2.1): a page shown to the user, or an error sent
 * back to the client. Apart from the validation pipeline (authorize.ts), so
 * that what comes after it (the next step, the code, the query resumed after
 * sign-in) can name a request without the checks.
 */
import type { Application } from '../store/store.js';
import type { ClaimsRequest } from './claims-request.js';
import type { OAuthError } from './errors.js';

/**
 * How the authorization response reaches the client: in the redirect's query (RFC 6749 §4.1.2), or posted by
 * the browser from an auto-submitting form (OAuth 2.0 Form Post Response Mode), which keeps the code out of
 * the URL, its history and its logs.
 */
export type ResponseMode = 'query' | 'form_post';

/** Where a request that was pushed first (RFC 9126) came from. */
export interface PushedOrigin {
  requestUri: string;
  /** When it was pushed (epoch ms): a sign-in after this is a sign-in for this request. */
  createdAt: number;
  /** The `prompt` as pushed. */
  prompt: ReadonlySet<string>;
}

/** An authorization request that passed every check (RFC 6749 §4.1.1, RFC 7636 §4.3, OIDC Core §3.1.2.1). */
export interface AuthorizationRequest {
  app: Application;
  redirectUri: string;
  state: string | undefined;
  /** `response_mode`: `query` unless the request asked for `form_post`. */
  responseMode: ResponseMode;
  scopes: string[];
  /** The APIs the grant covers (RFC 8707 `resource`s named, and those the scopes imply); empty: none. */
  resources: string[];
  nonce: string | undefined;
  codeChallenge: string;
  prompt: ReadonlySet<string>;
  maxAge: number | undefined;
  /** The `claims` parameter (OIDC Core §5.5), reduced to the claims this application may be given. */
  claims: ClaimsRequest | undefined;
  /** The `id_token_hint` as sent (OIDC Core §3.1.2.1): carried along when the request is resumed. */
  idTokenHint: string | undefined;
  /** `login_hint` (OIDC Core §3.1.2.1) when it could be a username (authorize-checks.ts `loginHint`): the sign-in page fills it in. */
  loginHint: string | undefined;
  /**
   * The only user this request may be answered for: the subject of `id_token_hint`, or of a `sub` value in
   * the claims request (§3.1.2.2). A session of anyone else counts as no session.
   */
  subject: string | undefined;
  /** OIDC Core §3.1.2.1 `acr_values`: the classes the client prefers, in its order (voluntary). */
  acrValues: string[] | undefined;
  /** RFC 9449 §10 `dpop_jkt`: the thumbprint of the DPoP key the code's token request must prove. */
  dpopJkt: string | undefined;
  /**
   * The query string as received, carried through sign-in and consent and validated again there. For a pushed
   * request only `client_id` and `request_uri`: its parameters never reach the browser (RFC 9126 §1).
   */
  rawQuery: string;
  /** Set when the request was pushed (RFC 9126): it is answered once, and its parameters stay on the server. */
  pushed: PushedOrigin | undefined;
}

/**
 * An error that must not be redirected (RFC 6749 §4.1.2.1): the client or
 * redirect_uri is unknown or invalid, so the user sees an error page.
 */
export class AuthorizationPageError extends Error {
  override name = 'AuthorizationPageError';
  constructor(
    readonly error: string,
    readonly description: string,
  ) {
    super(description);
  }
}

/** An error returned to the client at its validated redirect_uri. */
export class AuthorizationRedirectError extends Error {
  override name = 'AuthorizationRedirectError';
  constructor(
    readonly oauthError: OAuthError,
    readonly redirectUri: string,
    readonly state: string | undefined,
    /** The request's `response_mode` when it was valid enough to read; errors go back the way the code would. */
    readonly responseMode: ResponseMode = 'query',
  ) {
    super(oauthError.description);
  }
}

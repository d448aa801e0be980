import type { OAuthErrorResponse } from '@authcli/protocol';
import { STORE_RETRY_AFTER_SECONDS } from '../config/defaults.js';
import type { ErrorAnswer } from '../http/errors.js';

/** RFC 6749 §4.1.2.1, §5.2: `error-description = 1*( %x20-21 / %x23-5B / %x5D-7E )`. */
const DESCRIPTION_CHARS = /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/;

/**
 * An error description within RFC 6749's character set, whatever the text
 * it is made from: a section sign becomes "section", a double quote a single
 * one, a backslash a slash, and any other character outside the set "?".
 * Every protocol error's description passes through here (the OAuthError
 * constructor), so no answer (JSON body, redirect parameter,
 * `WWW-Authenticate` quoted string) can carry one.
 */
export function errorDescription(text: string): string {
  if (DESCRIPTION_CHARS.test(text)) return text;
  return text
    .replace(/\u00a7\s*/g, 'section ')
    .replace(/"/g, "'")
    .replace(/\\/g, '/')
    .replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/gu, '?');
}

/**
 * OAuth 2.0 protocol errors: one class per error code (RFC 6749 §4.1.2.1,
 * §5.2; RFC 8628 §3.5; RFC 6750 §3.1), each carrying its HTTP status, turned
 * into the RFC JSON or redirect parameters in one place. Descriptions are
 * fixed text written here in the code, never request input echoed back, and
 * are held to RFC 6749's character set by {@link errorDescription}.
 */
export abstract class OAuthError extends Error implements ErrorAnswer {
  abstract readonly error: string;
  /** HTTP status; 400 unless the error code or the caller (e.g. 413 for an oversize body) says otherwise. */
  readonly status: number;
  /** Extra response headers, e.g. `WWW-Authenticate` for invalid_client. */
  headers: Record<string, string> = {};

  /** The `error_description`, within RFC 6749's character set. */
  readonly description: string;

  constructor(description: string, options: { status?: number } = {}) {
    // A protocol error is an expected answer, not a bug: skip the stack trace (hot on polling paths).
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(description);
    Error.stackTraceLimit = limit;
    this.description = errorDescription(description);
    this.name = new.target.name;
    this.status = options.status ?? this.defaultStatus;
  }

  /** The status of this error code (a prototype getter, so the base constructor sees the subclass's). */
  protected get defaultStatus(): number {
    return 400;
  }

  /** RFC 6749 §5.2 error response body. */
  toJSON(): OAuthErrorResponse {
    return { error: this.error, error_description: this.description };
  }

  private answer: { headers: Record<string, string>; body: string } | undefined;

  /**
   * The RFC 6749 §5.2 answer: headers (`Cache-Control: no-store`, §5.1, and
   * this error's own) and the serialized JSON body, built once per instance,
   * so an answer that repeats (authorization_pending on every device poll) is
   * one constant.
   */
  get response(): { readonly headers: Readonly<Record<string, string>>; readonly body: string } {
    this.answer ??= {
      headers: { 'cache-control': 'no-store', pragma: 'no-cache', 'content-type': 'application/json; charset=utf-8', ...this.headers },
      body: JSON.stringify(this.toJSON()),
    };
    return this.answer;
  }
}

export class InvalidRequest extends OAuthError {
  readonly error = 'invalid_request';
}

/** RFC 6749 §5.2: 401 with `WWW-Authenticate` naming the scheme the client should use. */
export class InvalidClient extends OAuthError {
  readonly error = 'invalid_client';
  protected override get defaultStatus() {
    return 401;
  }
  constructor(description: string, scheme = 'Basic') {
    super(description);
    this.headers['www-authenticate'] = `${scheme} realm="authcli", error="invalid_client"`;
  }
}

export class InvalidGrant extends OAuthError {
  readonly error = 'invalid_grant';
}

export class UnauthorizedClient extends OAuthError {
  readonly error = 'unauthorized_client';
}

export class UnsupportedGrantType extends OAuthError {
  readonly error = 'unsupported_grant_type';
}

export class UnsupportedResponseType extends OAuthError {
  readonly error = 'unsupported_response_type';
}

export class InvalidScope extends OAuthError {
  readonly error = 'invalid_scope';
}

/** RFC 8707 §2: a `resource` that is not one of this server's, or that the grant does not cover. */
export class InvalidTarget extends OAuthError {
  readonly error = 'invalid_target';
}

export class AccessDenied extends OAuthError {
  readonly error = 'access_denied';
}

/** OIDC Core §3.1.2.6 */
export class LoginRequired extends OAuthError {
  readonly error = 'login_required';
}

/** OIDC Core §3.1.2.6 */
export class ConsentRequired extends OAuthError {
  readonly error = 'consent_required';
}

export class ServerError extends OAuthError {
  readonly error = 'server_error';
  protected override get defaultStatus() {
    return 500;
  }
}

/**
 * `temporarily_unavailable`: 503 when the store did not answer in time or
 * cannot be reached, 429 when a client went over a limit. RFC 6749 §4.1.2.1
 * names the code for the authorization endpoint; the JSON endpoints use it
 * too, as is common, so a client can tell "try again" from a server_error.
 * `Retry-After` (RFC 9110 §10.2.3) says when.
 */
export class TemporarilyUnavailable extends OAuthError {
  readonly error = 'temporarily_unavailable';
  protected override get defaultStatus() {
    return 503;
  }
  constructor(description: string, retryAfterSeconds: number, options: { status?: 429 | 503 } = {}) {
    super(description, options);
    this.headers['retry-after'] = String(retryAfterSeconds);
  }
}

/** The one answer to a request the store failed (it never varies, and during an outage every request gets it). */
export const STORE_UNAVAILABLE = new TemporarilyUnavailable(
  'the server cannot reach its database just now; try again shortly',
  STORE_RETRY_AFTER_SECONDS,
);

/**
 * RFC 6750 §3.1: 401 with the error in `WWW-Authenticate: Bearer`; in the
 * DPoP challenge instead (RFC 9449 §7.1) when the token was sent with the
 * DPoP scheme or is DPoP-bound (`dpop`: the algorithms it names).
 */
export class InvalidToken extends OAuthError {
  readonly error = 'invalid_token';
  constructor(description: string, dpop?: { algs: readonly string[] }) {
    super(description);
    this.headers['www-authenticate'] = dpop
      ? resourceChallenges(dpop.algs, { scheme: 'DPoP', error: this.error, description: this.description })
      : `Bearer realm="authcli", error="invalid_token", error_description="${this.description}"`;
  }
  protected override get defaultStatus() {
    return 401;
  }
}

/** RFC 9449 §7.1: the DPoP challenge alone, naming the proof algorithms. */
export function dpopChallenge(algs: readonly string[]): string {
  return `DPoP algs="${algs.join(' ')}"`;
}

/**
 * The `WWW-Authenticate` challenges of a protected resource that takes DPoP
 * and Bearer tokens (RFC 9449 §7.1, RFC 6750 §3): the DPoP one names the
 * algorithms a proof may use (`algs`); `error` and its description go in the
 * challenge of the scheme the request used, and that challenge comes first
 * (a Bearer-only client reads its own challenge where it always was).
 * https://www.rfc-editor.org/rfc/rfc9449#section-7.1
 */
export function resourceChallenges(
  algs: readonly string[],
  failure?: { scheme: 'Bearer' | 'DPoP'; error: string; description: string },
): string {
  const dpop = [dpopChallenge(algs)];
  const bearer = ['Bearer realm="authcli"'];
  if (failure) (failure.scheme === 'DPoP' ? dpop : bearer).push(`error="${failure.error}"`, `error_description="${failure.description}"`);
  return failure?.scheme === 'Bearer' ? `${bearer.join(', ')}, ${dpop.join(', ')}` : `${dpop.join(', ')}, ${bearer.join(', ')}`;
}

/**
 * RFC 9449 §5 (token endpoint: 400) and §7.1 (protected resource: 401 with
 * the DPoP challenge): the DPoP proof is missing where one is required, or
 * fails a check of §4.3.
 * https://www.rfc-editor.org/rfc/rfc9449#section-5
 */
export class InvalidDpopProof extends OAuthError {
  readonly error = 'invalid_dpop_proof';
  constructor(description: string, resource?: { algs: readonly string[] }) {
    super(description, resource ? { status: 401 } : {});
    if (resource)
      this.headers['www-authenticate'] = resourceChallenges(resource.algs, {
        scheme: 'DPoP',
        error: this.error,
        description: this.description,
      });
  }
}

/**
 * RFC 9449 §8 (token endpoint: 400) and §9 (protected resource: 401 with the
 * DPoP challenge): the proof must carry the server's nonce, sent in the
 * `DPoP-Nonce` header of this answer.
 * https://www.rfc-editor.org/rfc/rfc9449#section-8
 */
export class UseDpopNonce extends OAuthError {
  readonly error = 'use_dpop_nonce';
  constructor(description: string, nonce: string, resource?: { algs: readonly string[] }) {
    super(description, resource ? { status: 401 } : {});
    this.headers['dpop-nonce'] = nonce;
    if (resource)
      this.headers['www-authenticate'] = resourceChallenges(resource.algs, {
        scheme: 'DPoP',
        error: this.error,
        description: this.description,
      });
  }
}

/** OIDC Core §3.1.2.6 */
export class RequestNotSupported extends OAuthError {
  readonly error = 'request_not_supported';
}

/** OIDC Core §3.1.2.6 */
export class RequestUriNotSupported extends OAuthError {
  readonly error = 'request_uri_not_supported';
}

/** RFC 7591 §3.2.2: one or more redirect URIs of a registration are invalid. */
export class InvalidRedirectUri extends OAuthError {
  readonly error = 'invalid_redirect_uri';
}

/** RFC 7591 §3.2.2: a client metadata field is invalid (or the request is not a JSON object of them). */
export class InvalidClientMetadata extends OAuthError {
  readonly error = 'invalid_client_metadata';
}

/**
 * RFC 6750 §3.1: a request to a Bearer-protected endpoint that carries no
 * credentials at all gets the challenge alone, without an error code or any
 * other error information, and no body.
 */
export class BearerRequired extends OAuthError {
  readonly error = 'invalid_token';
  protected override get defaultStatus() {
    return 401;
  }
  override get response() {
    return { headers: { 'cache-control': 'no-store', 'www-authenticate': 'Bearer realm="authcli"' }, body: '' };
  }
}

/** RFC 8628 §3.5 */
export class AuthorizationPending extends OAuthError {
  readonly error = 'authorization_pending';
}

/** The one authorization_pending answer (it never varies, and every pending device poll gets it). */
export const AUTHORIZATION_PENDING = new AuthorizationPending('the user has not yet approved the request');

/** RFC 8628 §3.5: the client must add 5 seconds to its polling interval. */
export class SlowDown extends OAuthError {
  readonly error = 'slow_down';
}

/** RFC 8628 §3.5 */
export class ExpiredToken extends OAuthError {
  readonly error = 'expired_token';
}

/** RFC 6750 §3.1 */
export class InsufficientScope extends OAuthError {
  readonly error = 'insufficient_scope';
  constructor(description: string, scope: string) {
    super(description);
    this.headers['www-authenticate'] = `Bearer realm="authcli", error="insufficient_scope", scope="${scope}"`;
  }
  protected override get defaultStatus() {
    return 403;
  }
}

import { AuthcliError } from '../errors.js';
import { type ClientContext, explain } from './explain.js';

/** The places the CLI talks to a server: its endpoints, and the redirect back from the browser (`callback`). */
export type Endpoint =
  | 'discovery'
  | 'jwks'
  | 'authorization'
  | 'callback'
  | 'device_authorization'
  | 'pushed_authorization_request'
  | 'token'
  | 'revocation'
  | 'userinfo';

/** What a token request was for. */
export type Grant = 'device_code' | 'authorization_code' | 'refresh_token' | 'client_credentials' | 'token_exchange';

/** What went wrong with one request, as facts: nothing here is worded for people (explain.ts does that). */
export interface ProtocolFailure {
  endpoint: Endpoint;
  /** The token endpoint's grant (the other endpoints have one grant each). */
  grant?: Grant | undefined;
  url?: string | undefined;
  /** The answer's HTTP status, when there was an answer. */
  status?: number | undefined;
  /** The RFC 6749 §5.2 error code, when the answer had one. */
  error?: string | undefined;
  description?: string | undefined;
  /** What was wrong with an answer that is not an OAuth error (a success without its fields, the wrong issuer): one line. */
  problem?: string | undefined;
  /** The scope asked for, when the request asked for one (for the invalid_scope hint). */
  scope?: string | undefined;
}

/**
 * The one error of the protocol client: an endpoint refused a request, or answered something that is not what
 * the protocol says. It is an AuthcliError, worded by explain.ts (message, hint and the error boundary's code), and
 * keeps the facts (`endpoint`, `error`, `description`, `status`) for callers that act on them, e.g. refresh.ts
 * on `invalid_grant`.
 */
export class ProtocolError extends AuthcliError {
  override name = 'ProtocolError';
  readonly endpoint: Endpoint;
  readonly grant: Grant | undefined;
  readonly status: number | undefined;
  /** The OAuth error code; undefined for an answer without one. */
  readonly error: string | undefined;
  readonly description: string | undefined;

  constructor(failure: ProtocolFailure, client: ClientContext, options?: { cause?: unknown }) {
    const words = explain(failure, client);
    super(words.code, words.message, { cause: options?.cause, hint: words.hint });
    this.endpoint = failure.endpoint;
    this.grant = failure.grant;
    this.status = failure.status;
    this.error = failure.error;
    this.description = failure.description;
  }
}

/** The RFC 6749 §5.2 error of an answer's body, if it has one. */
export function oauthErrorOf(body: unknown): { error: string; description: string | undefined } | undefined {
  const b = body as { error?: unknown; error_description?: unknown } | undefined;
  if (!b || typeof b !== 'object' || typeof b.error !== 'string') return undefined;
  return { error: b.error, description: typeof b.error_description === 'string' ? b.error_description : undefined };
}

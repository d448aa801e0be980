import { STATUS_CODES } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { STORE_RETRY_AFTER_SECONDS } from '../config/defaults.js';
import { JsonBodyError } from '../http/json.js';
import { OAuthError } from '../oauth/errors.js';
import { StoreError } from '../store/store.js';
import { isStoreUnavailable } from '../store/unavailable.js';
import { InputError } from '../util/input-error.js';

/** The content type of every error answer of the admin API (RFC 9457 §3). */
export const PROBLEM_JSON = 'application/problem+json';

/**
 * An RFC 9457 problem: `type` about:blank (the HTTP status says what kind of
 * problem it is, and `title` is its phrase, §4.2.1), `detail` a sentence
 * for people, and two members of this API: `error`, a code for programs
 * (the OAuth codes of RFC 6750 §3.1 for token problems: `invalid_token`,
 * `insufficient_scope`; else `invalid_input`, `not_found`, `conflict`,
 * `unsupported_media_type`, `too_large`, `rate_limited`, `unavailable`,
 * `server_error`), and `field` when one input is at fault.
 */
export class Problem extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
    readonly field?: string,
  ) {
    super(detail);
  }

  body(): Record<string, unknown> {
    return {
      type: 'about:blank',
      title: STATUS_CODES[this.status] ?? 'Error',
      status: this.status,
      detail: this.detail,
      error: this.error,
      ...(this.field !== undefined && { field: this.field }),
    };
  }
}

/** Fastify's schema validation failure, as it throws it. */
interface ValidationFailure {
  validation: { instancePath: string; message?: string; params?: Record<string, unknown> }[];
  validationContext?: string;
}

/** The first schema violation, as a sentence naming the member: `body.name must be string`, `unknown member body.colour`. */
function validationDetail(err: ValidationFailure): { detail: string; field?: string } {
  const [first] = err.validation;
  const where = `${err.validationContext ?? 'body'}${(first?.instancePath ?? '').replace(/\//g, '.')}`;
  const extra = first?.params?.additionalProperty;
  if (typeof extra === 'string') return { detail: `unknown member ${where}.${extra}`, field: extra };
  const missing = first?.params?.missingProperty;
  if (typeof missing === 'string') return { detail: `${where}.${missing} is required`, field: missing };
  return { detail: `${where} ${first?.message ?? 'is not valid'}`, field: first?.instancePath.split('/')[1] || undefined };
}

/** Anything thrown in the admin API, as a problem; never internals. */
export function toProblem(err: Error & { statusCode?: number; code?: string }): Problem {
  if (err instanceof Problem) return err;
  if (err instanceof OAuthError) return new Problem(err.status, err.error, err.description, err.headers);
  if (err instanceof InputError) return new Problem(400, 'invalid_input', err.message, {}, (err as InputError).field);
  if (err instanceof StoreError && err.code === 'not_found') return new Problem(404, 'not_found', err.message);
  if (err instanceof StoreError && err.code === 'duplicate') return new Problem(409, 'conflict', err.message);
  if (isStoreUnavailable(err) || (err instanceof StoreError && err.code === 'unavailable')) {
    return new Problem(503, 'unavailable', 'the store did not answer: try again shortly', {
      'retry-after': String(STORE_RETRY_AFTER_SECONDS),
    });
  }
  if (err instanceof JsonBodyError) return new Problem(400, 'invalid_input', err.message);
  if ('validation' in err && Array.isArray((err as unknown as ValidationFailure).validation)) {
    const v = validationDetail(err as unknown as ValidationFailure);
    return new Problem(400, 'invalid_input', v.detail, {}, v.field);
  }
  if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || err.code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH') {
    return new Problem(415, 'unsupported_media_type', 'the request body must be application/json');
  }
  if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new Problem(413, 'too_large', 'the request body is too large');
  if (err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return new Problem(400, 'invalid_input', 'the request body is empty: send a JSON object');
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
    return new Problem(err.statusCode, 'invalid_request', `the request could not be read (HTTP ${err.statusCode})`);
  }
  return new Problem(500, 'server_error', 'the server could not complete the request');
}

export function sendProblem(reply: FastifyReply, p: Problem): FastifyReply {
  return reply
    .code(p.status)
    .headers({ ...p.headers, 'cache-control': 'no-store' })
    .type(`${PROBLEM_JSON}; charset=utf-8`)
    .send(JSON.stringify(p.body()));
}

/** The admin API's error handler: a problem for anything thrown, server errors logged with their stack. */
export async function problemHandler(err: Error & { statusCode?: number; code?: string }, req: FastifyRequest, reply: FastifyReply) {
  const p = toProblem(err);
  if (p.status === 503) req.log.warn({ reqId: req.id, reason: err.message }, 'store unavailable');
  else if (p.status >= 500) req.log.error({ err, reqId: req.id }, 'request failed');
  return sendProblem(reply, p);
}

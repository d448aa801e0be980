import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { STORE_RETRY_AFTER_SECONDS } from '../config/defaults.js';
import { AuthorizationPageError, AuthorizationRedirectError } from '../oauth/authorization-request.js';
import { errorResponse } from '../oauth/authorization-response.js';
import type { OAuthContext } from '../oauth/context.js';
import { isStoreUnavailable } from '../store/unavailable.js';
import { sendAuthorizationResponse } from './authorization-answer.js';
import { sendPage } from './render.js';
import { MessagePage } from './views.js';

/** Errors on pages become pages: a redirect to the client when the request allows it, else an HTML message. */
export function pageErrorHandler(ctx: OAuthContext) {
  return async (err: Error & { statusCode?: number; code?: string }, req: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof AuthorizationRedirectError) return sendAuthorizationResponse(reply, errorResponse(ctx, err));
    if (err instanceof AuthorizationPageError) {
      return sendPage(
        reply,
        <MessagePage title="Cannot continue" kind="error" message={err.description} detail={`Error: ${err.error}`} />,
        400,
      );
    }
    if (isStoreUnavailable(err)) {
      req.log.warn({ reqId: req.id, reason: err.message }, 'store unavailable');
      reply.header('retry-after', String(STORE_RETRY_AFTER_SECONDS));
      return sendPage(
        reply,
        <MessagePage
          title="Temporarily unavailable"
          kind="error"
          message="The server cannot complete this just now. Please try again in a few seconds."
        />,
        503,
      );
    }
    if (err.code?.startsWith('FST_CSRF')) {
      return sendPage(
        reply,
        <MessagePage
          title="Form expired"
          kind="error"
          message="This form has expired or was not sent from this site. Go back, reload the page and try again."
        />,
        403,
      );
    }
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    if (status === 500) req.log.error({ err, reqId: req.id }, 'page failed');
    return sendPage(
      reply,
      <MessagePage
        title={status === 500 ? 'Something went wrong' : 'Bad request'}
        kind="error"
        message={status === 500 ? 'The server could not complete this request. Please try again.' : err.message}
      />,
      status,
    );
  };
}

/**
 * The security headers of an answer Fastify makes before any hook runs, so helmet's never apply: nosniff, a
 * policy that loads nothing but the page's own style sheet, and no framing.
 */
const FRAMEWORK_ERROR_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy':
    "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-site',
  'cache-control': 'no-store',
};

/** The protocol endpoints answer JSON (RFC 6749 §5.2 errors); every other address is a page. */
function isProtocolPath(url: string): boolean {
  return (url.startsWith('/oauth/') && !url.startsWith('/oauth/authorize')) || url.startsWith('/.well-known/');
}

/**
 * What Fastify would answer by itself, before any route or hook runs (Fastify's `frameworkErrors`): an address
 * whose percent-escapes are not UTF-8 (FST_ERR_BAD_URL, 400) and a path segment longer than the router takes
 * (FST_ERR_MAX_PARAM_LENGTH, 414). Its own answer is JSON that echoes the address, without the security
 * headers; this one is the app's: an error page, or an RFC 6749 error for a protocol endpoint, never the address.
 */
export function frameworkErrorHandler() {
  return (err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    const tooLong = err.code === 'FST_ERR_MAX_PARAM_LENGTH';
    const status = tooLong ? 414 : 400;
    const description = tooLong ? 'a part of the address is too long' : 'the address has percent-escapes that are not UTF-8';
    reply.headers(FRAMEWORK_ERROR_HEADERS);
    if (isProtocolPath(req.url)) return reply.code(status).send({ error: 'invalid_request', error_description: description });
    return sendPage(
      reply,
      <MessagePage title="Bad request" kind="error" message={`This address cannot be opened: ${description}.`} />,
      status,
    );
  };
}

import type { FastifyReply, FastifyRequest } from 'fastify';
import { STORE_RETRY_AFTER_SECONDS } from '../config/defaults.js';
import { AuthorizationPageError, AuthorizationRedirectError } from '../oauth/authorization-request.js';
import { errorCallback } from '../oauth/authorization-response.js';
import type { OAuthContext } from '../oauth/context.js';
import { isStoreUnavailable } from '../store/unavailable.js';
import { sendPage } from './render.js';
import { MessagePage } from './views.js';

/** Errors on pages become pages: a redirect to the client when the request allows it, else an HTML message. */
export function pageErrorHandler(ctx: OAuthContext) {
  return async (err: Error & { statusCode?: number; code?: string }, req: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof AuthorizationRedirectError) return reply.redirect(errorCallback(ctx, err), 303);
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

import type { FastifyReply } from 'fastify';

/**
 * An error that carries its own HTTP answer: status, headers and a body
 * serialized once. The protocol errors (oauth/errors.ts, RFC 6749 §5.2 and
 * RFC 6750 §3) are these; this layer only sends them, so it knows no error
 * codes of its own.
 */
export interface ErrorAnswer {
  readonly status: number;
  readonly response: { readonly headers: Readonly<Record<string, string>>; readonly body: string };
}

/** Sends an error's answer as it is (the body is already JSON text). */
export function sendErrorAnswer(reply: FastifyReply, err: ErrorAnswer): FastifyReply {
  const { headers, body } = err.response;
  return reply.code(err.status).headers(headers).send(body);
}

/**
 * The body of every 404 a program reads (the protocol endpoints, /.well-known, the metrics listener): an RFC 9457
 * problem that names nothing of the request. Fastify's own answer echoes the method and path, which turns any URL
 * someone is tricked into opening, or a scanner's probe, into text of theirs in our answer and our logs.
 */
const NOT_FOUND_PROBLEM = JSON.stringify({
  type: 'about:blank',
  title: 'Not Found',
  status: 404,
  detail: 'There is nothing at this address.',
});

/** Answers 404 with {@link NOT_FOUND_PROBLEM}. */
export function sendNotFoundProblem(reply: FastifyReply): FastifyReply {
  return reply
    .code(404)
    .header('content-type', 'application/problem+json; charset=utf-8')
    .header('cache-control', 'no-store')
    .send(NOT_FOUND_PROBLEM);
}

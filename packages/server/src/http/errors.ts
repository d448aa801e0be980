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

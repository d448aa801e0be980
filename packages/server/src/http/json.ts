import type { FastifyRequest } from 'fastify';

/**
 * Strict `application/json` request bodies (RFC 8259) for the one endpoint
 * that takes them, client registration (RFC 7591 §3): valid UTF-8, valid
 * JSON, and no NUL anywhere in it (PostgreSQL text cannot hold one, and no
 * metadata value can mean it). The body size is bounded by the server's body
 * limit before this runs.
 */
export class JsonBodyError extends Error {
  override name = 'JsonBodyError';
  readonly statusCode = 400;
  readonly code = 'AUTHCLI_BAD_JSON';
}

/** A parsed JSON body, told apart from anything else a request body can be. */
export class JsonBody {
  constructor(readonly value: unknown) {}
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Whether a NUL occurs in any string (key or value) of a parsed JSON value; iterative, however deep it nests. */
function containsNul(root: unknown): boolean {
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const v = pending.pop();
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return true;
    } else if (Array.isArray(v)) {
      pending.push(...v);
    } else if (typeof v === 'object' && v !== null) {
      for (const [k, inner] of Object.entries(v)) {
        if (k.includes('\u0000')) return true;
        pending.push(inner);
      }
    }
  }
  return false;
}

/** Parses a request body as JSON. */
export function parseJson(body: Uint8Array): JsonBody {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new JsonBodyError('the request body is not valid UTF-8');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new JsonBodyError('the request body is not valid JSON');
  }
  if (containsNul(value)) throw new JsonBodyError('the request body must not contain NUL');
  return new JsonBody(value);
}

/** The JSON body of a request; a JsonBodyError when it sent none. */
export function jsonBody(req: FastifyRequest): unknown {
  if (!(req.body instanceof JsonBody)) throw new JsonBodyError('the request body must be application/json');
  return req.body.value;
}

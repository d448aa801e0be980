import type { FastifyRequest } from 'fastify';

/**
 * Every value of a request header field, one per field line as received
 * (undefined when there is none): what "exactly one" checks need, such as
 * RFC 9449 §4.3's single `DPoP` header. Node's `headersDistinct` when the
 * request has it; otherwise (a request injected in-process, which carries
 * only `rawHeaders`) read from the raw name/value pairs. `name` is lower case.
 */
export function headerValues(req: FastifyRequest, name: string): string[] | undefined {
  // Absent (the usual case for DPoP): known from the headers Node has already parsed, without building the
  // distinct copy of every header, which Node makes on first use of `headersDistinct`.
  if (req.raw.headers[name] === undefined) return undefined;
  const distinct = (req.raw as { headersDistinct?: Record<string, string[] | undefined> }).headersDistinct;
  if (distinct) return distinct[name];
  const raw = req.raw.rawHeaders;
  const values: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i]!.toLowerCase() === name) values.push(raw[i + 1]!);
  return values.length > 0 ? values : undefined;
}

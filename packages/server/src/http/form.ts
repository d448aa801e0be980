import type { FastifyRequest } from 'fastify';
/**
 * Strict `application/x-www-form-urlencoded` parsing (WHATWG URL §5.1) for
 * request bodies and query strings. Unlike URLSearchParams it refuses input a
 * client cannot have meant: invalid UTF-8, malformed percent-escapes, NUL. It also
 * records repeated names, because RFC 6749 §3.1 and §3.2 forbid repeating a
 * parameter.
 */
export class FormError extends Error {
  override name = 'FormError';
  readonly statusCode = 400;
  readonly code = 'AUTHCLI_BAD_FORM';
}

export interface ParsedForm {
  /** Parameter values by name (null prototype; first value wins). */
  readonly params: Readonly<Record<string, string>>;
  /** Names that occurred more than once. */
  readonly repeated: ReadonlySet<string>;
  /** Every value of every name, in order (checkbox groups on pages). */
  readonly lists: Readonly<Record<string, readonly string[]>>;
  /** The form as received (decoded from UTF-8, still percent-encoded): a POSTed authorization request is validated from it like a query. */
  readonly text: string;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function decodeComponent(raw: string): string {
  const plus = raw.indexOf('+') !== -1;
  if (!plus && raw.indexOf('%') === -1) return raw;
  try {
    return decodeURIComponent(plus ? raw.replace(/\+/g, ' ') : raw);
  } catch {
    throw new FormError('malformed percent-encoding or invalid UTF-8 in form data');
  }
}

/**
 * Calls `visit` with each decoded name and value, in order; empty pairs are
 * skipped and only the first `=` splits. One pass with indexOf, no array of
 * pairs: every token request and device poll is parsed here.
 */
function eachPair(text: string, visit: (name: string, value: string) => void): void {
  for (let start = 0; start <= text.length; ) {
    let end = text.indexOf('&', start);
    if (end === -1) end = text.length;
    if (end > start) {
      const eq = text.indexOf('=', start);
      const named = eq !== -1 && eq < end;
      visit(decodeComponent(text.slice(start, named ? eq : end)), named ? decodeComponent(text.slice(eq + 1, end)) : '');
    }
    start = end + 1;
  }
}

const NO_REPEATS: ReadonlySet<string> = new Set();

/** A parsed form; the lists (checkbox groups, pages only) are built on first use. */
class Form implements ParsedForm {
  private all: Record<string, string[]> | undefined;

  constructor(
    readonly params: Readonly<Record<string, string>>,
    readonly repeated: ReadonlySet<string>,
    readonly text: string,
  ) {}

  get lists(): Readonly<Record<string, readonly string[]>> {
    if (!this.all) {
      const lists: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
      eachPair(this.text, (name, value) => {
        const list = lists[name];
        if (list) list.push(value);
        else lists[name] = [value];
      });
      this.all = lists;
    }
    return this.all;
  }
}

/** Parses a form body or query string (without the leading `?`). */
export function parseForm(input: string | Uint8Array): ParsedForm {
  let text: string;
  if (typeof input === 'string') {
    text = input;
  } else {
    try {
      text = utf8.decode(input);
    } catch {
      throw new FormError('form data is not valid UTF-8');
    }
  }
  // No parameter of this server can mean NUL, and PostgreSQL text cannot hold one: refused here, for every form
  // and query at once, rather than as a database error (a 500) wherever a value reaches a statement. `%00` is
  // the only escape that decodes to NUL (overlong forms are invalid UTF-8; a `%` always starts an escape).
  if (text.indexOf('\u0000') !== -1 || text.indexOf('%00') !== -1) throw new FormError('form data must not contain NUL');
  const params: Record<string, string> = Object.create(null) as Record<string, string>;
  let repeated: Set<string> | undefined;
  eachPair(text, (name, value) => {
    if (params[name] === undefined) params[name] = value;
    else {
      repeated ??= new Set();
      repeated.add(name);
    }
  });
  return new Form(params, repeated ?? NO_REPEATS, text);
}

/** The query string of a raw request URL, parsed strictly. */
export function parseQuery(rawUrl: string): ParsedForm {
  const q = rawUrl.indexOf('?');
  return parseForm(q === -1 ? '' : rawUrl.slice(q + 1));
}

export function isParsedForm(body: unknown): body is ParsedForm {
  return typeof body === 'object' && body !== null && 'params' in body && 'repeated' in body;
}

/**
 * The error text for a repeated parameter (RFC 6749 §3.1, §3.2). The name
 * is said only when it looks like a parameter name (lower-case letters and
 * underscores, as every OAuth parameter is): request input is never echoed
 * into an error description otherwise.
 */
export function repeatedParameter(name: string): string {
  return /^[a-z][a-z_]{0,39}$/.test(name) ? `the ${name} parameter is repeated` : 'a parameter is repeated';
}

/**
 * The strict form body every OAuth POST endpoint requires (RFC 6749 §3.2):
 * `application/x-www-form-urlencoded`, no parameter repeated. A FormError
 * otherwise, which the protocol endpoints answer as `invalid_request`.
 */
export function formParams(req: FastifyRequest): Readonly<Record<string, string>> {
  if (!isParsedForm(req.body)) throw new FormError('the request body must be application/x-www-form-urlencoded');
  if (req.body.repeated.size > 0) {
    for (const name of req.body.repeated) if (!MAY_REPEAT.has(name)) throw new FormError(repeatedParameter(name));
  }
  return req.body.params;
}

/** The one parameter a request may repeat: RFC 8707 §2 `resource`, one per API the request is for. */
const MAY_REPEAT: ReadonlySet<string> = new Set(['resource']);

const NO_VALUES: readonly string[] = [];

/** Every `resource` of a parsed form (RFC 8707 §2), in order; none when absent. */
export function resourceValues(form: ParsedForm): readonly string[] {
  if (form.repeated.has('resource')) return form.lists.resource ?? NO_VALUES;
  const one = form.params.resource;
  return one === undefined ? NO_VALUES : [one];
}

/** The `resource` values of a request whose body formParams has accepted. */
export function bodyResources(req: FastifyRequest): readonly string[] {
  return isParsedForm(req.body) ? resourceValues(req.body) : NO_VALUES;
}

/** The fields of a page's form POST; a page form never repeats a field. */
export function pageForm(req: FastifyRequest): Readonly<Record<string, string>> {
  if (!isParsedForm(req.body)) throw new FormError('expected a form submission');
  return req.body.params;
}

/**
 * The query of a page request, parsed strictly rather than by Fastify's
 * lenient parser: malformed escapes, invalid UTF-8 and NUL are a 400 page,
 * the same answer wherever they appear.
 */
export function pageQuery(req: FastifyRequest): Readonly<Record<string, string>> {
  return parseQuery(req.raw.url ?? '').params;
}

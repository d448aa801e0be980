/**
 * Strict `application/x-www-form-urlencoded` parsing (WHATWG URL §5.1) for
 * request bodies and query strings. Unlike URLSearchParams it refuses input a
 * client cannot have meant: invalid UTF-8, malformed percent-escapes. It also
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
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Recently decoded short components. Every device poll sends the same
 * percent-encoded grant type (`urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code`),
 * and decoding it costs more than the rest of the form; bounded, and
 * emptied when full.
 */
const decoded = new Map<string, string>();

function decodeComponent(raw: string): string {
  const plus = raw.indexOf('+') !== -1;
  if (!plus && raw.indexOf('%') === -1) return raw;
  const known = decoded.get(raw);
  if (known !== undefined) return known;
  let value: string;
  try {
    value = decodeURIComponent(plus ? raw.replace(/\+/g, ' ') : raw);
  } catch {
    throw new FormError('malformed percent-encoding or invalid UTF-8 in form data');
  }
  if (raw.length <= 128) {
    if (decoded.size >= 256) decoded.clear();
    decoded.set(raw, value);
  }
  return value;
}

const NO_REPEATS: ReadonlySet<string> = new Set();

/** Every value of every name, in order. */
function allValues(text: string): Record<string, string[]> {
  const lists: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
  for (const pair of text.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    (lists[decodeComponent(eq === -1 ? pair : pair.slice(0, eq))] ??= []).push(eq === -1 ? '' : decodeComponent(pair.slice(eq + 1)));
  }
  return lists;
}

/** A parsed form; the lists (checkbox groups, pages only) are built on first use. */
class Form implements ParsedForm {
  private all: Record<string, string[]> | undefined;

  constructor(
    readonly params: Readonly<Record<string, string>>,
    readonly repeated: ReadonlySet<string>,
    private readonly text: string,
  ) {}

  get lists(): Readonly<Record<string, readonly string[]>> {
    return (this.all ??= allValues(this.text));
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
  // Every token request and device poll is parsed here, so: one pass with indexOf (no array of pairs), no
  // set until a name repeats, no lists unless asked for.
  const params: Record<string, string> = Object.create(null) as Record<string, string>;
  let repeated = NO_REPEATS as Set<string>;
  for (let start = 0; start <= text.length; ) {
    let end = text.indexOf('&', start);
    if (end === -1) end = text.length;
    if (end > start) {
      const eq = text.indexOf('=', start);
      const named = eq !== -1 && eq < end;
      const name = decodeComponent(text.slice(start, named ? eq : end));
      const value = named ? decodeComponent(text.slice(eq + 1, end)) : '';
      if (params[name] === undefined) {
        params[name] = value;
      } else {
        if (repeated === NO_REPEATS) repeated = new Set();
        repeated.add(name);
      }
    }
    start = end + 1;
  }
  return new Form(params, repeated, text);
}

/** The query string of a raw request URL, parsed strictly. */
export function parseQuery(rawUrl: string): ParsedForm {
  const q = rawUrl.indexOf('?');
  return parseForm(q === -1 ? '' : rawUrl.slice(q + 1));
}

export function isParsedForm(body: unknown): body is ParsedForm {
  return typeof body === 'object' && body !== null && 'params' in body && 'repeated' in body;
}

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

function decodeComponent(raw: string): string {
  if (raw.indexOf('%') === -1 && raw.indexOf('+') === -1) return raw;
  const plus = raw.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(plus);
  } catch {
    throw new FormError('malformed percent-encoding or invalid UTF-8 in form data');
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
  const params: Record<string, string> = Object.create(null) as Record<string, string>;
  const repeated = new Set<string>();
  const lists: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
  if (text === '') return { params, repeated, lists };
  for (const pair of text.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = decodeComponent(eq === -1 ? pair : pair.slice(0, eq));
    const value = eq === -1 ? '' : decodeComponent(pair.slice(eq + 1));
    if (name in params) repeated.add(name);
    else params[name] = value;
    (lists[name] ??= []).push(value);
  }
  return { params, repeated, lists };
}

/** The query string of a raw request URL, parsed strictly. */
export function parseQuery(rawUrl: string): ParsedForm {
  const q = rawUrl.indexOf('?');
  return parseForm(q === -1 ? '' : rawUrl.slice(q + 1));
}

export function isParsedForm(body: unknown): body is ParsedForm {
  return typeof body === 'object' && body !== null && 'params' in body && 'repeated' in body;
}

import { EnvHttpProxyAgent, fetch, type Dispatcher } from 'undici';
import { AuthcliError } from './errors.js';
import { oauthErrorOf } from './oauth/errors.js';
import { reasonOf } from './oauth/explain.js';

let dispatcher: Dispatcher | undefined;

/** undici's env proxy agent: honours HTTPS_PROXY / HTTP_PROXY / NO_PROXY. */
export function agent(): Dispatcher {
  dispatcher ??= new EnvHttpProxyAgent();
  return dispatcher;
}

export interface HttpResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

/** A transport: what the login flows need from HTTP, so tests can drive them without a network. */
export type Transport = (
  url: string,
  init: {
    method: 'GET' | 'POST';
    headers?: Record<string, string>;
    form?: Record<string, string>;
    /** 'manual' returns a 3xx as it is, to look at where it points (default: follow). */
    redirect?: 'follow' | 'manual';
  },
) => Promise<HttpResponse>;

/** How long one request may take, connection to last byte. */
export const REQUEST_TIMEOUT_MS = 30_000;

const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_SELF_SIGNED_CERT$|SELF_SIGNED_CERT_IN_CHAIN$|UNABLE_TO_|HOSTNAME_MISMATCH$)/;

/** The system error under undici's "fetch failed": the first `code` down the cause chain (and in AggregateErrors). */
function rootCause(err: unknown): { code: string | undefined; message: string; name: string } {
  const seen = new Set<unknown>();
  let e: unknown = err;
  let last: { code: string | undefined; message: string; name: string } = { code: undefined, message: String(err), name: '' };
  while (e instanceof Error && !seen.has(e)) {
    seen.add(e);
    const code = (e as { code?: unknown }).code;
    last = { code: typeof code === 'string' ? code : undefined, message: e.message, name: e.name };
    if (last.code) return last;
    const inner = e instanceof AggregateError ? e.errors[0] : undefined;
    e = e.cause ?? inner;
  }
  return last;
}

/**
 * Turns a failed request into one line a person can act on (the formatter
 * adds the hint): connection refused, unknown host, TLS, timeout, reset.
 * The original error stays as `cause` for `--debug`.
 */
export function networkError(url: string, err: unknown): AuthcliError {
  const target = new URL(url);
  const origin = target.origin;
  const { code, message, name } = rootCause(err);
  const fail = (what: string, hint?: string) => new AuthcliError('network', `cannot reach ${origin}: ${what}`, { cause: err, hint });
  if (
    name === 'TimeoutError' ||
    code === 'ETIMEDOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT'
  ) {
    return fail(`no answer within ${REQUEST_TIMEOUT_MS / 1000} s`, 'Is the server overloaded, or is a firewall dropping the connection?');
  }
  switch (code) {
    case 'ECONNREFUSED':
      return fail('connection refused', 'Is the server running?');
    case 'ENOTFOUND':
      return fail(`unknown host ${target.hostname}`, 'Check the issuer URL (--issuer, AUTHCLI_ISSUER or config.json).');
    case 'EAI_AGAIN':
      return fail(`cannot look up ${target.hostname} (DNS did not answer)`, 'Check the network connection.');
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'ENETDOWN':
      return fail('the network is unreachable', 'Check the network connection (and HTTPS_PROXY if one is needed).');
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
      return fail(
        'the connection was closed before an answer',
        `Is ${origin} an HTTP${target.protocol === 'https:' ? 'S' : ''} server, and is a proxy in the way?`,
      );
    case 'ERR_SSL_WRONG_VERSION_NUMBER':
      return fail('TLS failed: the server does not speak TLS on that port', 'Does the issuer start with http:// rather than https://?');
    case 'ERR_TLS_CERT_ALTNAME_INVALID':
      return fail(`TLS failed: the certificate is not for ${target.hostname}`, 'Check the issuer URL.');
  }
  if (code && TLS_CODE.test(code)) {
    return fail(
      `TLS failed: ${message} (${code})`,
      'If the server uses a private certificate authority, point NODE_EXTRA_CA_CERTS at its certificate.',
    );
  }
  if (message === 'bad port')
    return fail(`port ${target.port} is on the fetch standard's list of blocked ports`, 'Run the server on another port.');
  return fail(code ?? message);
}

/** A 5xx answer: the server (or a gateway before it) failed; nothing the user sent is at fault. */
function serverError(url: string, status: number, statusText: string, body: unknown): AuthcliError {
  const e = oauthErrorOf(body);
  const detail = e ? ` (${reasonOf(e.error, e.description)})` : '';
  return new AuthcliError('network', `${new URL(url).origin} answered HTTP ${status}${statusText ? ` ${statusText}` : ''}${detail}`, {
    hint:
      status === 502 || status === 503 || status === 504
        ? 'The server or a gateway before it is unavailable; try again in a moment.'
        : 'The server failed; try again, and see its log if it keeps failing.',
  });
}

/**
 * The real transport over undici. Network failures and 5xx answers become
 * AuthcliError('network') with a hint (see networkError), so callers handle
 * only answers the server meant.
 */
export const httpTransport: Transport = async (url, init) => {
  let res;
  let text;
  try {
    res = await fetch(url, {
      method: init.method,
      dispatcher: agent(),
      redirect: init.redirect ?? 'follow',
      headers: {
        accept: 'application/json',
        ...(init.form && { 'content-type': 'application/x-www-form-urlencoded' }),
        ...init.headers,
      },
      ...(init.form && { body: new URLSearchParams(init.form).toString() }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    text = await res.text();
  } catch (err) {
    throw networkError(url, err);
  }
  let body: unknown = text;
  if (text && (res.headers.get('content-type') ?? '').includes('json')) {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  if (res.status >= 500) throw serverError(url, res.status, res.statusText, body);
  return { status: res.status, headers: res.headers as unknown as Headers, body };
};

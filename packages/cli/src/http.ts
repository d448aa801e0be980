import { EnvHttpProxyAgent, fetch, type Dispatcher } from 'undici';
import { CliError } from './errors.js';
import type { ClientSettings } from './config.js';

let dispatcher: Dispatcher | undefined;

/** undici's env proxy agent: honours HTTPS_PROXY / HTTP_PROXY / NO_PROXY. */
function agent(): Dispatcher {
  dispatcher ??= new EnvHttpProxyAgent();
  return dispatcher;
}

export interface HttpResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

/** A transport: what the login flows need from HTTP, so tests can drive them without a network. */
export type Transport = (url: string, init: { method: 'GET' | 'POST'; headers?: Record<string, string>; form?: Record<string, string> }) => Promise<HttpResponse>;

/** The real transport over undici; network failures become CliError('network'). */
export const httpTransport: Transport = async (url, init) => {
  let res;
  try {
    res = await fetch(url, {
      method: init.method,
      dispatcher: agent(),
      headers: {
        accept: 'application/json',
        ...(init.form && { 'content-type': 'application/x-www-form-urlencoded' }),
        ...init.headers,
      },
      ...(init.form && { body: new URLSearchParams(init.form).toString() }),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new CliError('network', `cannot reach ${new URL(url).origin}: ${cause?.code ?? cause?.message ?? (err as Error).message}`, { cause: err });
  }
  const text = await res.text();
  let body: unknown = text;
  if (text && (res.headers.get('content-type') ?? '').includes('json')) {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  return { status: res.status, headers: res.headers as unknown as Headers, body };
};

/** HTTP Basic for confidential clients (RFC 6749 §2.3.1: id and secret form-urlencoded first). */
export function clientAuth(settings: ClientSettings, form: Record<string, string>): { headers: Record<string, string>; form: Record<string, string> } {
  if (!settings.clientSecret) return { headers: {}, form: { ...form, client_id: settings.clientId } };
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  const basic = Buffer.from(`${enc(settings.clientId)}:${enc(settings.clientSecret)}`).toString('base64');
  return { headers: { authorization: `Basic ${basic}` }, form };
}

/** The RFC 6749 §5.2 error code of a response, if it has one. */
export function oauthError(res: HttpResponse): { error: string; description: string | undefined } | undefined {
  const b = res.body as { error?: unknown; error_description?: unknown } | undefined;
  if (b && typeof b === 'object' && typeof b.error === 'string') {
    return { error: b.error, description: typeof b.error_description === 'string' ? b.error_description : undefined };
  }
  return undefined;
}

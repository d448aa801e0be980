// `authcli api`: one HTTP request with the signed-in token, like `gh api`. The token goes as Bearer, or for a
// DPoP-bound sign-in as `Authorization: DPoP` with a new proof for this method and URL (RFC 9449 §7), retried
// once with the resource's nonce when it asks for one (§9). A token the resource refuses as `invalid_token` is
// renewed once and the request sent again. The body goes to stdout as it comes; exit 0 on 2xx, 1 otherwise.
import { readFile } from 'node:fs/promises';
import { fetch } from 'undici';
import { resolveSettings, resourceFlag, type ProfileSettings, type SettingFlags } from '@authcli/client/internal/config.js';
import type { StoredSession } from '@authcli/client/internal/credentials.js';
import { CliError } from '../errors.js';
import { agent, networkError, REQUEST_TIMEOUT_MS } from '@authcli/client/internal/http.js';
import { challengeError } from '@authcli/client/internal/oauth/userinfo.js';
import { validSession } from './session.js';

export interface ApiFlags extends SettingFlags {
  /** `--resource URL`: send the token of that API (RFC 8707) of the sign-in. */
  resource?: string;
  method?: string;
  header?: string[];
  data?: string;
  include?: boolean;
}

/** What is sent: everything but the credentials, which each attempt adds. */
export interface ApiRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

const usage = (message: string) => new CliError('usage', message, { hint: 'See `authcli api --help`.' });

/** Headers the command sets itself: a value given with -H would send another credential, or a stale proof. */
const OWN_HEADERS = new Set(['authorization', 'dpop']);

/** `Name: value` lines from -H, lower-cased names; a malformed one is a usage error. */
export function parseHeaders(lines: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon).trim().toLowerCase() : '';
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name)) throw usage(`-H takes "Name: value", got ${JSON.stringify(line)}`);
    if (OWN_HEADERS.has(name)) throw usage(`-H ${name} would replace the sign-in's credentials, which authcli api sends itself`);
    const value = line.slice(colon + 1).trim();
    if (/[\r\n\0]/.test(value)) throw usage(`the -H ${name} value has a line break`);
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  return headers;
}

/** The body of -d: the text itself, `@FILE` (the file's bytes) or `@-` (stdin). */
async function readData(data: string, stdin: NodeJS.ReadableStream): Promise<Buffer> {
  if (!data.startsWith('@')) return Buffer.from(data, 'utf8');
  const file = data.slice(1);
  if (file === '-') {
    const chunks: Buffer[] = [];
    for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
    return Buffer.concat(chunks);
  }
  try {
    return await readFile(file);
  } catch (err) {
    throw usage(`-d @${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
}

/** JSON for a body that is a JSON object or array, else curl's default, a form. */
function contentTypeOf(body: Buffer): string {
  const text = body.toString('utf8').trim();
  if (text.startsWith('{') || text.startsWith('[')) {
    try {
      JSON.parse(text);
      return 'application/json';
    } catch {
      // Not JSON after all: sent as curl would.
    }
  }
  return 'application/x-www-form-urlencoded';
}

/**
 * The request from the command line: an absolute http(s) URL, or a path resolved against the issuer
 * (`authcli api /oauth/userinfo`); GET, or POST when there is a body; -H headers; a Content-Type for a
 * body that has none.
 */
export async function apiRequest(
  target: string,
  flags: ApiFlags,
  issuer: string,
  stdin: NodeJS.ReadableStream = process.stdin,
): Promise<ApiRequest> {
  let url: URL;
  try {
    url = target.startsWith('/') ? new URL(target, `${issuer}/`) : new URL(target);
  } catch {
    throw usage(`${JSON.stringify(target)} is not a URL; give an absolute http(s) URL, or a path such as /oauth/userinfo on the issuer`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw usage(`only http(s) URLs are requested, not ${url.protocol}`);
  if (url.username || url.password) throw usage('the URL carries a user name or password; the sign-in is the credential');
  const method = (flags.method ?? (flags.data !== undefined ? 'POST' : 'GET')).toUpperCase();
  if (!/^[A-Z]+$/.test(method)) throw usage(`-X takes an HTTP method such as GET or POST, got ${JSON.stringify(flags.method)}`);
  const headers = parseHeaders(flags.header ?? []);
  const body = flags.data === undefined ? undefined : await readData(flags.data, stdin);
  if (body && (method === 'GET' || method === 'HEAD')) throw usage(`a ${method} request has no body; use -X POST (or PUT, PATCH) with -d`);
  if (body && headers['content-type'] === undefined) headers['content-type'] = contentTypeOf(body);
  return { method, url: url.href, headers, body };
}

/** One attempt's answer, its body still to be read (or drained before a retry). */
type Answer = Awaited<ReturnType<typeof fetch>>;

/** Sends the request once; the 30 s limit is on the answer's headers, so a long download is not cut off. */
async function send(req: ApiRequest, credentials: Record<string, string>, signal?: AbortSignal): Promise<Answer> {
  const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
  const ac = new AbortController();
  const abort = () => ac.abort(signal?.aborted ? new CliError('cancelled', 'request cancelled') : timeout.reason);
  timeout.addEventListener('abort', abort, { once: true });
  signal?.addEventListener('abort', abort, { once: true });
  try {
    return await fetch(req.url, {
      method: req.method,
      dispatcher: agent(),
      // A redirect is shown, not followed: the proof is for this URL, and the token is for whoever it was sent to.
      redirect: 'manual',
      headers: { ...req.headers, ...credentials },
      ...(req.body && { body: req.body }),
      signal: ac.signal,
    });
  } catch (err) {
    if (signal?.aborted) throw new CliError('cancelled', 'request cancelled');
    throw networkError(req.url, err);
  } finally {
    // Past the headers, neither the limit nor Ctrl-C's listener is this attempt's any more (the body streams on).
    timeout.removeEventListener('abort', abort);
    signal?.removeEventListener('abort', abort);
  }
}

/** The `error` of the answer's `WWW-Authenticate: Bearer|DPoP ... error="..."` challenge (RFC 6750 §3, RFC 9449 §7.1). */
function refusal(res: Answer): string | undefined {
  return challengeError(res.headers.get('www-authenticate'))?.error;
}

/** The answer to the request with the session's token, after at most one nonce retry. */
async function withToken(req: ApiRequest, settings: ProfileSettings, session: StoredSession, signal?: AbortSignal): Promise<Answer> {
  if (!session.dpop_jkt && session.token_type.toLowerCase() !== 'dpop') {
    return send(req, { authorization: `Bearer ${session.access_token}` }, signal);
  }
  const { dpopProof, keyOfSession, savedNonces } = await import('@authcli/client/internal/dpop.js');
  const key = (await keyOfSession(settings.slot, session))!;
  const nonces = await savedNonces();
  const origin = new URL(req.url).origin;
  const attempt = async () => {
    const nonce = nonces.get(origin);
    const proof = await dpopProof(key, { htm: req.method, htu: req.url, nonce, accessToken: session.access_token });
    const res = await send(req, { authorization: `DPoP ${session.access_token}`, dpop: proof }, signal);
    const given = res.headers.get('dpop-nonce');
    const fresh = given !== null && given !== '' && given !== nonce;
    if (fresh) await nonces.set(origin, given);
    return { res, fresh };
  };
  const first = await attempt();
  // RFC 9449 §9: once, and only with a nonce it did not have.
  if (first.res.status === 401 && refusal(first.res) === 'use_dpop_nonce' && first.fresh) {
    await first.res.body?.cancel();
    return (await attempt()).res;
  }
  return first.res;
}

/** Writes the body as it arrives; with -i the status line and headers first, as curl -i shows them. */
async function print(res: Answer, include: boolean, stdout: NodeJS.WritableStream): Promise<void> {
  const write = (chunk: string | Uint8Array) =>
    new Promise<void>((resolve, reject) => stdout.write(chunk, (err) => (err ? reject(err) : resolve())));
  if (include) {
    const lines = [`HTTP/1.1 ${res.status} ${res.statusText}`];
    for (const [name, value] of res.headers) lines.push(`${name}: ${value}`);
    await write(`${lines.join('\r\n')}\r\n\r\n`);
  }
  if (res.body) for await (const chunk of res.body) await write(chunk as Uint8Array);
}

/** `authcli api <URL>`: see the top of this file. */
export async function api(
  target: string,
  flags: ApiFlags,
  signal?: AbortSignal,
  stdout: NodeJS.WritableStream = process.stdout,
): Promise<void> {
  const settings = { ...(await resolveSettings(flags)), resource: resourceFlag(flags.resource, 'api') };
  const req = await apiRequest(target, flags, settings.issuer);
  let session = await validSession(settings, 'token', signal);
  let res = await withToken(req, settings, session, signal);
  // RFC 6750 §3.1: the token was refused (revoked, or expired early): renewed once, and the request sent again.
  if (res.status === 401 && refusal(res) === 'invalid_token' && session.refresh_token) {
    await res.body?.cancel();
    session = await validSession(settings, 'token', signal, undefined, session.access_token);
    res = await withToken(req, settings, session, signal);
  }
  await print(res, flags.include === true, stdout);
  if (res.status >= 200 && res.status < 300) return;
  const location = res.status >= 300 && res.status < 400 ? res.headers.get('location') : null;
  throw new CliError(
    'http_status',
    `${req.method} ${req.url} answered HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}${location ? `; not followed to ${location}` : ''}`,
  );
}

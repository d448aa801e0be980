/**
 * How the GitHub connector talks to GitHub: every request bounded by a timeout and by the sign-in's deadline,
 * every answer read up to a size and parsed as JSON only when it says it is JSON. Nothing here logs, and no
 * message names a token or a secret: reasons are built from status codes and fixed text only.
 */
import { GITHUB_RESPONSE_MAX_BYTES } from '../config/defaults.js';
import type { GithubOutcome } from './github.js';

/** Ends a sign-in early with this outcome (thrown by the steps, caught once by githubSignIn). */
export class GithubStop extends Error {
  override name = 'GithubStop';
  constructor(readonly outcome: Exclude<GithubOutcome, { kind: 'ok' }>) {
    super(outcome.reason);
  }
}

export const unavailable = (reason: string) => new GithubStop({ kind: 'unavailable', reason });
export const refused = (reason: string, detail?: string) =>
  new GithubStop({ kind: 'refused', reason, ...(detail !== undefined && { detail }) });

/** What one sign-in's requests share: the transport, the time one request may take, the whole sign-in's signal. */
export interface Transport {
  fetch: typeof fetch;
  timeoutMs: number;
  deadline: AbortSignal;
}

/** An answer: its status and headers, and its body parsed when it was JSON (`undefined` when it was not). */
export interface Answer {
  status: number;
  headers: Headers;
  json: unknown;
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/**
 * One request. `what` names it in reasons ("GitHub's token endpoint"). A transport failure, a timeout, an
 * answer larger than GITHUB_RESPONSE_MAX_BYTES, or a body that says it is JSON but is not, all end the
 * sign-in as unavailable.
 */
export async function request(t: Transport, what: string, url: string, init: RequestInit): Promise<Answer> {
  if (t.deadline.aborted) throw unavailable(`GitHub did not complete the sign-in in time (before ${what})`);
  const signal = AbortSignal.any([AbortSignal.timeout(t.timeoutMs), t.deadline]);
  try {
    // No redirects: GitHub documents none for these endpoints, and following one would carry the token on.
    const res = await t.fetch(url, { ...init, signal, redirect: 'manual' });
    const text = await readBounded(res, what);
    const isJson = JSON_TYPE.test(res.headers.get('content-type') ?? '');
    let json: unknown;
    if (isJson) {
      try {
        json = JSON.parse(text);
      } catch {
        throw unavailable(`${what} answered ${res.status} with a body that is not JSON`);
      }
    }
    return { status: res.status, headers: res.headers, json };
  } catch (err) {
    if (err instanceof GithubStop) throw err;
    if (t.deadline.aborted) throw unavailable(`GitHub did not complete the sign-in in time (at ${what})`);
    if (signal.aborted) throw unavailable(`${what} did not answer within ${t.timeoutMs} ms`);
    throw unavailable(`${what} could not be reached (${errorName(err)})`);
  }
}

/** The body as text, at most GITHUB_RESPONSE_MAX_BYTES of UTF-8; the rest is not read. */
async function readBounded(res: Response, what: string): Promise<string> {
  const tooLarge = () => unavailable(`${what} answered with more than ${GITHUB_RESPONSE_MAX_BYTES} bytes`);
  const declared = Number(res.headers.get('content-length') ?? '0');
  if (declared > GITHUB_RESPONSE_MAX_BYTES) {
    await res.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > GITHUB_RESPONSE_MAX_BYTES) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw unavailable(`${what} answered with a body that is not UTF-8`);
  }
}

/** An error's class name only (TypeError, ECONNREFUSED…): its message may quote a URL or a header. */
function errorName(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown } } | null)?.cause;
  if (cause && typeof cause.code === 'string' && /^[A-Z_]{1,40}$/.test(cause.code)) return cause.code;
  return err instanceof Error && /^\w{1,40}$/.test(err.name) ? err.name : 'error';
}

/** GitHub's rate limits: 429, or 403 with no requests left or a Retry-After (docs: "Rate limits for the REST API"). */
export function rateLimited(a: Answer): boolean {
  return a.status === 429 || (a.status === 403 && (a.headers.get('x-ratelimit-remaining') === '0' || a.headers.has('retry-after')));
}

// ---- shapes: nothing GitHub sends is used before it is checked ------------------------------

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A JSON object answer with status 200, or the sign-in is unavailable. */
export function okObject(a: Answer, what: string): Record<string, unknown> {
  if (a.status !== 200) throw unavailable(rateLimited(a) ? `${what} is rate-limited (${a.status})` : `${what} answered ${a.status}`);
  if (!isRecord(a.json)) throw unavailable(`${what} answered with something other than the JSON object GitHub documents`);
  return a.json;
}

/** A string member of at most `max` characters matching `pattern`, or `undefined`. */
export function text(o: Record<string, unknown>, key: string, max: number, pattern?: RegExp): string | undefined {
  const v = o[key];
  if (typeof v !== 'string' || v.length === 0 || v.length > max) return undefined;
  return pattern && !pattern.test(v) ? undefined : v;
}

/** An http(s) URL of at most `max` characters (profile, picture), or `undefined`. */
export function webUrl(o: Record<string, unknown>, key: string, max: number): string | undefined {
  const v = text(o, key, max);
  if (v === undefined || !URL.canParse(v)) return undefined;
  const protocol = new URL(v).protocol;
  return protocol === 'https:' || protocol === 'http:' ? v : undefined;
}

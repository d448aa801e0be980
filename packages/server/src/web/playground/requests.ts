/**
 * The requests the playground sends to the server (PAR, token, userinfo):
 * sent with fetch, shown on the page as text, and the server's DPoP nonce
 * (RFC 9449 §8) remembered from every answer for the proofs that follow.
 */
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { el, json, pre } from './page.js';

/** The latest DPoP-Nonce the server sent (RFC 9449 §8), put in every following proof. */
let dpopNonce: string | undefined;

/** The nonce to put in the next DPoP proof: the latest the server sent, if any. */
export function latestDpopNonce(): string | undefined {
  return dpopNonce;
}

/** A request as sent: shown on the page, and sent again to the letter for the replay. */
export interface Sent {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: string;
}

/** An answer as received: status, headers, and the body as text. */
export interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

/** Sends `req` as it is; a DPoP-Nonce in the answer is kept for the next proof. */
export async function send(req: Sent): Promise<Answer> {
  const res = await fetch(req.url, { method: req.method, headers: req.headers, body: req.body });
  const nonce = res.headers.get('dpop-nonce');
  if (nonce) dpopNonce = nonce;
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** The request as text; an access token in the Authorization header is not repeated on the page. */
export function requestText(req: Sent): string {
  const headers = Object.entries(req.headers).map(([k, v]) => `${k}: ${k === 'authorization' ? `${v.split(' ')[0]} …` : v}`);
  return `${req.method} ${req.url}\n${headers.join('\n')}${req.body === undefined ? '' : `\n\n${req.body}`}`;
}

/** The answer as text: status, headers, body. */
export function responseText(answer: Answer): string {
  const headers = [...answer.headers].map(([k, v]) => `${k}: ${v}`).join('\n');
  return `HTTP ${answer.status}\n${headers}\n\n${answer.text}`;
}

/** The OAuth error of an answer: the JSON body's, else the one in the WWW-Authenticate challenge (RFC 6750 §3, RFC 9449 §7.1). */
export function errorOf(answer: Answer): string | undefined {
  try {
    const { error } = JSON.parse(answer.text) as { error?: unknown };
    if (typeof error === 'string') return error;
  } catch {
    /* not JSON: the challenge says it */
  }
  return /error="([^"]+)"/.exec(answer.headers.get('www-authenticate') ?? '')?.[1];
}

/** Whether the server asks for its nonce: 400 use_dpop_nonce (RFC 9449 §8) or a 401 challenge naming it (§9), with a DPoP-Nonce. */
function asksForNonce(answer: Answer): boolean {
  return answer.headers.has('dpop-nonce') && (answer.status === 400 || answer.status === 401) && errorOf(answer) === 'use_dpop_nonce';
}

/** A proof decoded: its header (typ, alg, jwk) and claims (jti, htm, htu, iat, nonce, ath). */
export function proofView(proof: string): Node[] {
  return [
    el('h3', {}, 'DPoP proof: header'),
    pre(json(decodeProtectedHeader(proof)), 'DPoP proof header'),
    el('h3', {}, 'DPoP proof: payload'),
    pre(json(decodeJwt(proof)), 'DPoP proof payload'),
  ];
}

/**
 * Sends the request `make` builds, showing it (and its proof) in `section`.
 * With DPoP, `make` signs a new proof with the latest server nonce each time,
 * and when the server answers that it wants its nonce the request goes once
 * more (RFC 9449 §8). `beforeAnswer` adds what goes between the request and
 * the final answer.
 */
export async function sendShown(
  section: HTMLElement,
  make: () => Promise<Sent>,
  label: { request: string; response: string },
  beforeAnswer: (sent: Sent) => Node[] = () => [],
): Promise<{ sent: Sent; answer: Answer }> {
  for (let attempt = 1; ; attempt++) {
    const sent = await make();
    section.append(
      el('h3', {}, attempt === 1 ? 'Request' : 'Request again, the nonce in a new proof'),
      pre(requestText(sent), label.request),
    );
    if (sent.headers.dpop) section.append(...proofView(sent.headers.dpop));
    const answer = await send(sent);
    if (attempt === 1 && sent.headers.dpop && asksForNonce(answer)) {
      section.append(el('h3', {}, 'Response: the server wants its nonce (RFC 9449 §8)'), pre(responseText(answer), 'Nonce challenge'));
      continue;
    }
    section.append(...beforeAnswer(sent), el('h3', {}, 'Response'), pre(responseText(answer), label.response));
    return { sent, answer };
  }
}

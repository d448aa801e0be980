// Before the browser opens: does the server accept the authorization request, or would it show an error page
// the CLI never hears of? Reads that page for its OAuth error code and its first words.
import type { ClientSettings } from '../config.js';
import { AuthcliError } from '../errors.js';
import type { Transport } from '../http.js';
import { oauthErrorOf, ProtocolError } from '../oauth/errors.js';

const OAUTH_ERROR_CODE =
  /\b(invalid_client|invalid_request|unauthorized_client|redirect_uri_mismatch|invalid_redirect_uri|unsupported_response_type|invalid_scope)\b/;

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };

/** An HTML fragment as the text a person reads. */
function textOf(html: string): string {
  return html
    .replace(/<(script|style|head)\b[\s\S]*?<\/\1>/gi, ' ')
    .replace(/<[^>]*>/g, ' ')
    .replace(/&(amp|lt|gt|quot|#39);/g, (m) => ENTITIES[m]!)
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * What an error page says: its OAuth error (a JSON body's, or a code named in the page's text) and, for a page,
 * its first paragraph (or title) in one short line.
 */
export function pageReason(body: unknown): { error?: string | undefined; description?: string | undefined } {
  if (body && typeof body === 'object') return oauthErrorOf(body) ?? {};
  if (typeof body !== 'string' || !body.trim()) return {};
  const error = OAUTH_ERROR_CODE.exec(textOf(body))?.[1];
  const para = /<p\b[^>]*>([\s\S]*?)<\/p>/i.exec(body)?.[1] ?? /<title\b[^>]*>([\s\S]*?)<\/title>/i.exec(body)?.[1];
  let said = para !== undefined ? textOf(para) : textOf(body);
  if (said.length > 200) said = `${said.slice(0, 199)}…`;
  return { error, description: said || undefined };
}

/**
 * Asks for the authorization URL once, as the browser is about to, without
 * following redirects. A server that will not send the result back (unknown
 * client, unregistered redirect URI) shows an error page instead of
 * redirecting (RFC 6749 §4.1.2.1), and the CLI would otherwise wait for a
 * callback that never comes. Only such a 4xx page stops the login: a
 * redirect (to sign-in, or to us) or a network problem here leaves it to the
 * browser, whose proxy and cookies may differ; 403 and 429 are about who is
 * asking, not the request.
 */
export async function preflight(url: URL, transport: Transport, settings: ClientSettings, scope: string): Promise<void> {
  let res;
  try {
    res = await transport(url.href, { method: 'GET', redirect: 'manual', headers: { accept: 'text/html' } });
  } catch (err) {
    if (err instanceof AuthcliError && err.code === 'network') return;
    throw err;
  }
  if (res.status < 400 || res.status >= 500 || [403, 407, 429].includes(res.status)) return;
  throw new ProtocolError({ endpoint: 'authorization', url: url.href, status: res.status, scope, ...pageReason(res.body) }, settings);
}

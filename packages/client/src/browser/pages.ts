// The pages the browser shows at the loopback callback, in the look of the server's own pages (its
// stylesheet, packages/server/src/web/assets.ts, and its Layout: the header with the brand, a card, the
// footer): the same colours, light and dark, fonts and card. Self-contained: the style is inline, allowed by
// its hash in the page's CSP, and the brand mark is inline SVG, so the page makes no request.
import { createHash } from 'node:crypto';
import { AuthcliError } from '../errors.js';

/** A page to answer the browser with. */
export interface Page {
  status: number;
  html: string;
}

/** The server's colours, light and dark (its STYLESHEET's custom properties; loopback-page.test.ts keeps them equal). */
export const PALETTE = {
  light: { fg: '#1d2330', muted: '#5b6474', bg: '#f5f6f8', card: '#fff', line: '#dde1e7', danger: '#b42318', ok: '#067647' },
  dark: { fg: '#e7e9ee', muted: '#9aa3b2', bg: '#12151b', card: '#1b1f27', line: '#2c323d', danger: '#f97066', ok: '#47cd89' },
};

const properties = (colours: Record<string, string>) =>
  Object.entries(colours)
    .map(([name, value]) => `--${name}:${value};`)
    .join(' ');

/** The one inline style of the pages. */
export const PAGE_STYLE = `
:root { color-scheme: light dark; ${properties(PALETTE.light)} }
@media (prefers-color-scheme: dark) { :root { ${properties(PALETTE.dark)} } }
* { box-sizing: border-box; }
html { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: var(--bg); color: var(--fg); }
body { margin: 0; min-height: 100vh; display: flex; flex-direction: column; }
header { display: flex; align-items: center; padding: .75rem 1.5rem; border-bottom: 1px solid var(--line); background: var(--card); }
header span { font-weight: 700; letter-spacing: .02em; display: flex; gap: .45rem; align-items: center; }
header svg { width: 1.4rem; height: 1.4rem; }
main { flex: 1; width: 100%; max-width: 28rem; margin: 2.5rem auto; padding: 0 1rem; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 12px; padding: 1.75rem; }
h1 { font-size: 1.4rem; margin: 0 0 1rem; overflow-wrap: break-word; }
p { margin: .5rem 0; overflow-wrap: break-word; }
.muted { color: var(--muted); font-size: .92rem; }
.result { border-radius: 8px; padding: .75rem 1rem; margin: 0 0 1rem; border: 1px solid; background: color-mix(in srgb, currentColor 8%, transparent); }
.ok { color: var(--ok); }
.failed { color: var(--danger); }
footer { text-align: center; padding: 1rem; color: var(--muted); font-size: .85rem; }
@media (max-width: 40rem) { header { padding: .6rem .75rem; } main { margin: 1.25rem auto; padding: 0 .6rem; } section { padding: 1.1rem; } }
`;

/** The brand mark of the server's header and favicon (its FAVICON_SVG), drawn inline. */
export const BRAND_MARK =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32" aria-hidden="true">' +
  '<rect width="32" height="32" rx="7" fill="#2f5bd3"/>' +
  '<circle cx="12" cy="16" r="5.5" fill="none" stroke="#fff" stroke-width="3"/>' +
  '<path d="M17.5 16H27M23 16v4.5M26 16v3" fill="none" stroke="#fff" stroke-width="3" stroke-linecap="round"/>' +
  '</svg>';

/** The page's Content-Security-Policy: nothing may load; the one inline style is allowed by its hash. */
export const PAGE_CSP = `default-src 'none'; style-src 'sha256-${createHash('sha256').update(PAGE_STYLE).digest('base64')}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

const notice = (kind: 'ok' | 'failed' | 'info') =>
  kind === 'info' ? '<p>' : kind === 'ok' ? '<p class="result ok" role="status">' : '<p class="result failed" role="alert">';

/** The page, `title` and `message` plain text; `kind` colours the message as the server's success and error notices do. */
function page(status: number, title: string, message: string, kind: 'ok' | 'failed' | 'info', name: string): Page {
  const html =
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="no-referrer">' +
    `<title>${escapeHtml(title)} · ${escapeHtml(name)}</title><style>${PAGE_STYLE}</style></head><body>` +
    `<header><span>${BRAND_MARK}${escapeHtml(name)}</span></header>` +
    `<main><section><h1>${escapeHtml(title)}</h1>${notice(kind)}${escapeHtml(message)}</p>` +
    '<p class="muted">You can close this tab and return to the terminal.</p></section></main>' +
    `<footer>${escapeHtml(name)} command-line sign-in</footer></body></html>`;
  return { status, html };
}

/** The name a page gives the tool that signs in, unless its caller names another (@authcli/client's `appName`). */
export const DEFAULT_APP_NAME = 'authcli';

/** The sign-in is verified and stored. */
export function signedInPage(who: string | undefined, issuer: string, name = DEFAULT_APP_NAME): Page {
  return page(200, `Signed in${who ? ` as ${who}` : ''}`, `${name} has verified and stored the sign-in to ${issuer}.`, 'ok', name);
}

/** A sign-in that did not complete: denial in its own words, anything else with its reason. */
export function failurePage(err: unknown, name = DEFAULT_APP_NAME): Page {
  if (err instanceof AuthcliError && err.code === 'access_denied') {
    return page(200, 'Sign-in cancelled', `You denied the sign-in in the browser, so ${name} did not sign in.`, 'info', name);
  }
  const reason = err instanceof AuthcliError ? err.message : 'an unexpected error; the terminal has the details';
  return page(400, 'Sign-in failed', `${name} could not complete the sign-in: ${reason}.`, 'failed', name);
}

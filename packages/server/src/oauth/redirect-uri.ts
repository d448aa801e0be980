import { REDIRECT_URI_MAX } from '../config/defaults.js';

/**
 * redirect_uri matching (RFC 6749 §3.1.2.3, RFC 9700 §4.1.3): exact string
 * comparison, with one exception from RFC 8252 §7.3: for a registered
 * `http://127.0.0.1/...` or `http://[::1]/...` the port may differ, since a
 * native app listens on an ephemeral port. `localhost` gets no exception
 * (RFC 8252 §8.3). No normalization: what is compared is what was sent.
 */
const LOOPBACK = /^http:\/\/(127\.0\.0\.1|\[::1\])(?::(\d{1,5}))?([/?][^#]*)?$/;

function withoutPort(uri: string): { host: string; port: number | undefined; rest: string } | undefined {
  const m = LOOPBACK.exec(uri);
  if (!m) return undefined;
  const port = m[2] === undefined ? undefined : Number(m[2]);
  if (port !== undefined && (port < 1 || port > 65535 || m[2]!.startsWith('0'))) return undefined;
  return { host: m[1]!, port, rest: m[3] ?? '' };
}

/** True when `requested` matches one of `registered` under the rules above. */
export function matchRedirectUri(requested: string, registered: readonly string[]): boolean {
  if (registered.includes(requested)) return true;
  const req = withoutPort(requested);
  if (!req) return false;
  return registered.some((r) => {
    const reg = withoutPort(r);
    return reg !== undefined && reg.host === req.host && reg.rest === req.rest;
  });
}

/** True for loopback redirect URIs (RFC 8252 §7.3), i.e. a native app. */
export function isLoopbackRedirect(uri: string): boolean {
  return withoutPort(uri) !== undefined;
}

/** A host name of DNS labels (letters, digits, hyphens), or an IP literal: no `*`, `_` or anything else. */
const DNS_NAME = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;
const IPV6_LITERAL = /^\[[0-9a-f:.]+\]$/;

/** Whether a URL's host is a DNS name of letters, digits and hyphens, or an IP literal (no `*`, `_` or anything else). */
export const isHostName = (hostname: string) => DNS_NAME.test(hostname) || IPV6_LITERAL.test(hostname);

/**
 * A private-use URI scheme in reverse-domain form (RFC 8252 §7.1, §8.4): `com.example.app`, a scheme with
 * a dot, so never `http`, `https`, `javascript`, `data`, `file` or any other scheme a browser acts on itself.
 */
const REVERSE_DOMAIN_SCHEME = /^[a-z][a-z0-9+-]*(\.[a-z0-9][a-z0-9+-]*)+:$/;

/** True for a private-use URI scheme redirect (`com.example.app:/callback`): an app on the person's device. */
export function isPrivateUseRedirect(uri: string): boolean {
  const colon = uri.indexOf(':');
  return colon > 0 && REVERSE_DOMAIN_SCHEME.test(uri.slice(0, colon + 1).toLowerCase());
}

/**
 * Where a redirect URI sends the browser, as the consent page names it: the host of an http(s) URI, the scheme
 * of a private-use one (`com.example.app:`, an app on this device).
 */
export function redirectTarget(uri: string): string {
  const url = new URL(uri);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.host : url.protocol;
}

/**
 * Validates a callback URL at registration (RFC 6749 §3.1.2, RFC 8252 §7):
 * absolute, no fragment, and one of: https; http on loopback; a private-use
 * URI scheme in reverse-domain form (RFC 8252 §7.1, `com.example.app:/cb`).
 * And it must be what a browser is sent to: the URL parser's serialisation
 * of it, unchanged (but for the `/` the parser adds to an empty http(s)
 * path, `http://localhost:4242`, which leads to the same place). A tab or
 * line break (which the parser drops), a backslash (which it reads as a
 * slash, so `https://rp.example\@evil.example/` is not on evil.example), a
 * percent-encoded or upper-case host would all be stored as one thing and
 * followed as another. Hosts are DNS names or IP literals: no wildcards
 * (RFC 9700 §4.1.3). Returns an error message, or undefined when the URL is
 * acceptable.
 */
export function callbackUrlProblem(value: string): string | undefined {
  if (value.length > REDIRECT_URI_MAX) return `a redirect URI must be at most ${REDIRECT_URI_MAX} characters (this one is ${value.length})`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `${value} is not an absolute URL`;
  }
  if (value.includes('#')) return `${value} must not contain a fragment`;
  if (url.username || url.password) return `${value} must not contain credentials`;
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    if (!isPrivateUseRedirect(value)) {
      return `${value}: use https, http on loopback (127.0.0.1, [::1] or localhost), or a private-use scheme in reverse-domain form such as com.example.app:/callback (RFC 8252 §7.1)`;
    }
    // Matched exactly, so it must be stored as the parser reads it (no spaces or controls, which it would drop or encode).
    if (/[\s\\]/.test(value)) return `${value} is not in its normal form`;
    if (url.href !== value) return `${value} is not in its normal form; register it as ${url.href}`;
    return undefined;
  }
  if (!isHostName(url.hostname)) {
    return `${url.hostname} in ${value} is not a host name (letters, digits, hyphens and dots; no wildcards)`;
  }
  if (url.href !== value && url.href !== `${value}/`) return `${value} is not in its normal form; register it as ${url.href}`;
  if (url.protocol === 'https:') return undefined;
  // localhost is accepted but matched exactly, without the any-port rule (RFC 8252 §8.3 prefers the IP literal).
  if (withoutPort(value) || url.hostname === 'localhost') return undefined;
  return `${value}: http is allowed only for loopback (127.0.0.1, [::1] or localhost)`;
}

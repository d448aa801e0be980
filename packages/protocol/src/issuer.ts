/** Thrown by {@link normalizeIssuer} for a value that cannot be an issuer identifier (RFC 8414 §2). */
export class IssuerError extends TypeError {
  override name = 'IssuerError';
}

/**
 * Whether a host names this machine's loopback: `localhost` and the names under it (RFC 6761 §6.3), an IPv4
 * address in 127.0.0.0/8 (RFC 1122 §3.2.1.3; any spelling the WHATWG URL parser reads as one, `127.1` too), `::1`,
 * and 127.0.0.0/8 as IPv4-mapped IPv6 addresses (`::ffff:127.0.0.2`). `host` may be a URL's `hostname` (IPv6 in
 * brackets) or a bare address. The one definition of loopback: the issuer's http allowance (here), and on the
 * server every rule that depends on it (connector upstreams, jwks_uri, back-channel logout URIs, the start
 * warning).
 */
export function isLoopbackHost(host: string): boolean {
  let bare = host.toLowerCase().replace(/^\[|\]$/g, '');
  if (bare.endsWith('.')) bare = bare.slice(0, -1);
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true;
  let hostname: string;
  try {
    // The WHATWG URL parser puts an IPv4 address in dotted-decimal form and compresses an IPv6 one.
    hostname = new URL(`http://${bare.includes(':') ? `[${bare}]` : bare}/`).hostname;
  } catch {
    return false;
  }
  return /^127(\.\d{1,3}){3}$/.test(hostname) || hostname === '[::1]' || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(hostname);
}

/**
 * The canonical form of an issuer identifier, or an {@link IssuerError}.
 * The server validates its configured issuer with it and publishes the
 * result; the CLI applies it to the issuer it is given and compares the
 * result with the metadata's.
 *
 * - RFC 8414 §2 ({@link https://www.rfc-editor.org/rfc/rfc8414#section-2}):
 *   an `https` URL with a host and optionally a port and a path, and no
 *   query or fragment component. An empty query or fragment (`https://id.example?`,
 *   `https://id.example#`) is one too and is refused, as is userinfo
 *   (`https://user@id.example`). Plain `http` is accepted only for a
 *   loopback host ({@link isLoopbackHost}: `localhost`, `127.x.x.x`,
 *   `[::1]`), for development on one machine.
 * - RFC 8414 §3.1 ({@link https://www.rfc-editor.org/rfc/rfc8414#section-3.1}):
 *   a terminating `/` is removed before the well-known suffix is added, so
 *   trailing slashes are removed here, from a path too
 *   (`https://id.example/tenant/` is `https://id.example/tenant`), and
 *   `${issuer}/.well-known/openid-configuration` is well formed.
 * - RFC 8414 §3.3 ({@link https://www.rfc-editor.org/rfc/rfc8414#section-3.3})
 *   and OIDC Discovery §4.3: the `issuer` in the metadata must be identical
 *   to the issuer used. The result is the WHATWG URL serialization (scheme
 *   and host in lower case, no default port, dot segments resolved) without
 *   trailing slashes, so spellings of one issuer normalize to the one string
 *   the server publishes.
 *
 * @throws IssuerError when the value is not an absolute URL, is neither
 *   https nor loopback http, or has a query, a fragment or credentials.
 */
export function normalizeIssuer(value: string): string {
  // A host and port typed without a scheme ("127.0.0.1:8080", "localhost:8080" — the second even parses, as a
  // URL of scheme "localhost:"): say what was probably meant.
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(value) && /^[\w.-]+(:\d+)?(\/.*)?$/.test(value)) {
    const host = value.split(/[:/]/)[0]!;
    const scheme = isLoopbackHost(host.toLowerCase()) ? 'http' : 'https';
    throw new IssuerError(`issuer ${JSON.stringify(value)} is not an absolute URL: did you mean ${scheme}://${value}?`);
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new IssuerError(`issuer ${JSON.stringify(value)} is not an absolute URL`);
  }
  // Before the messages below, which repeat the value.
  if (url.username || url.password) throw new IssuerError('issuer must not contain credentials');
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
    throw new IssuerError(`issuer must use https (http is allowed only for loopback hosts): ${value}`);
  }
  // `url.search` and `url.hash` are empty for a bare `?` or `#`, which is still a query or fragment component.
  if (url.search || url.hash || value.includes('?') || value.includes('#')) {
    throw new IssuerError(`issuer must not have a query or fragment: ${value}`);
  }
  return url.href.replace(/\/+$/, '');
}

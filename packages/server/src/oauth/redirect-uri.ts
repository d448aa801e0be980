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

/**
 * Validates a callback URL at registration (RFC 6749 §3.1.2, RFC 8252 §7):
 * absolute, no fragment, https, or http on loopback.
 * Returns an error message, or undefined when the URL is acceptable.
 */
export function callbackUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `${value} is not an absolute URL`;
  }
  if (value.includes('#')) return `${value} must not contain a fragment`;
  if (url.username || url.password) return `${value} must not contain credentials`;
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:') {
    // localhost is accepted but matched exactly, without the any-port rule (RFC 8252 §8.3 prefers the IP literal).
    if (withoutPort(value) || url.hostname === 'localhost') return undefined;
    return `${value}: http is allowed only for loopback (127.0.0.1, [::1] or localhost)`;
  }
  return `${value}: use https, or http on loopback (127.0.0.1, [::1] or localhost)`;
}

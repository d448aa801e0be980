import { isLoopbackHost } from '@authcli/protocol';

/**
 * Where a page request that reached this server by another loopback name should go: `http://127.0.0.1:8080/account`
 * while the issuer is `http://localhost:8080` is the same listener, but a browser keeps cookies per host name and
 * takes only a host name as a passkey's RP ID, so on the other name there is no session and passkeys fail ("an
 * invalid domain"). The same path at the issuer's host, or undefined: the issuer's own host, a name that is not
 * loopback (a reverse proxy's, which is the proxy's to set), or another port (not this listener).
 */
export function issuerHostRedirect(issuer: URL): (host: string | undefined, path: string) => string | undefined {
  const issuerPort = issuer.port || (issuer.protocol === 'https:' ? '443' : '80');
  if (!isLoopbackHost(issuer.hostname)) return () => undefined;
  return (host, path) => {
    if (!host || host.toLowerCase() === issuer.host) return undefined;
    let seen: URL;
    try {
      seen = new URL(`${issuer.protocol}//${host}`);
    } catch {
      return undefined;
    }
    const port = seen.port || (seen.protocol === 'https:' ? '443' : '80');
    if (port !== issuerPort || !isLoopbackHost(seen.hostname) || seen.hostname === issuer.hostname) return undefined;
    return `${issuer.origin}${path.startsWith('/') ? path : '/'}`;
  };
}

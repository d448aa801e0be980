import ipaddr from 'ipaddr.js';

/** Whether a host name or address names this machine's loopback (127.0.0.0/8, ::1, IPv4-mapped, `localhost`). */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true;
  if (!ipaddr.isValid(bare)) return false;
  let addr = ipaddr.parse(bare);
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()) addr = (addr as ipaddr.IPv6).toIPv4Address();
  return addr.range() === 'loopback';
}

/**
 * Said at start when the server listens beyond loopback while its issuer is
 * still a loopback URL: every verification URL, QR code and redirect it
 * hands out would point other machines at themselves.
 */
export function loopbackIssuerWarning(host: string, issuer: string): string | undefined {
  if (isLoopbackHost(host) || !isLoopbackHost(new URL(issuer).hostname)) return undefined;
  return `listening on ${host} but the issuer is ${issuer}: verification URLs, QR codes and redirects will point other machines at themselves; set --issuer (AUTHCLI_ISSUER) to the URL clients use`;
}

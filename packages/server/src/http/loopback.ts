import { isLoopbackHost } from '@authcli/protocol';

/**
 * Said at start when the server listens beyond loopback while its issuer is
 * still a loopback URL: every verification URL, QR code and redirect it
 * hands out would point other machines at themselves.
 */
export function loopbackIssuerWarning(host: string, issuer: string): string | undefined {
  if (isLoopbackHost(host) || !isLoopbackHost(new URL(issuer).hostname)) return undefined;
  return `listening on ${host} but the issuer is ${issuer}: verification URLs, QR codes and redirects will point other machines at themselves; set --issuer (AUTHCLI_ISSUER) to the URL clients use`;
}

/**
 * An application's back-channel logout settings (OpenID Connect Back-Channel Logout 1.0 §2.2), checked the same
 * way wherever they are given: `apps add|update`, the dashboard, dynamic registration (RFC 7591 metadata
 * `backchannel_logout_uri`, `backchannel_logout_session_required`). Messages never repeat the value given.
 */
import { isIP } from 'node:net';
import { REDIRECT_URI_MAX } from '../config/defaults.js';
import { isLoopbackHost } from '@authcli/protocol';
import { isPublicAddress } from '../http/public-address.js';
import { InputError } from '../util/input-error.js';
import { isHostName } from './redirect-uri.js';

/**
 * What is wrong with a back-channel logout URI, or undefined. §2.2: an absolute URL, https (http on loopback for
 * an operator's or a developer's own application), no fragment; no credentials, its host a name or an IP
 * literal, written as the URL parser writes it. A client that registered itself over the network names a
 * server this one will connect to: https, and never a loopback, private, link-local or otherwise non-public
 * address (a name is checked again at each delivery, on the address it resolves to).
 */
export function backchannelLogoutUriProblem(value: string, selfRegistered: boolean): string | undefined {
  if (value.length > REDIRECT_URI_MAX) return `must be at most ${REDIRECT_URI_MAX} characters`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an https URL';
  if (value.includes('#')) return 'must not contain a fragment';
  if (url.username || url.password) return 'must not contain credentials';
  if (!isHostName(url.hostname)) return 'must have a host name (letters, digits, hyphens and dots) or an IP address';
  if (/[\s\\]/.test(value) || (url.href !== value && url.href !== `${value}/`))
    return 'is not in its normal form (as a URL parser writes it)';
  const loopback = isLoopbackHost(url.hostname);
  if (selfRegistered) {
    if (url.protocol !== 'https:') return 'must be https for a client that registered itself';
    const bare = url.hostname.replace(/^\[|\]$/g, '');
    if (loopback || (isIP(bare) !== 0 && !isPublicAddress(bare))) {
      return 'must be on a public address for a client that registered itself (not loopback, private or link-local)';
    }
    return undefined;
  }
  if (url.protocol === 'http:' && !loopback) return 'must be https (http only on loopback: localhost, 127.0.0.0/8 or [::1])';
  return undefined;
}

export interface BackchannelFields {
  backchannelLogoutUri: string | null;
  backchannelLogoutSessionRequired: boolean;
}

/** The back-channel settings given, checked (an InputError when one is wrong); none (null) when no URI is given. */
export function backchannelFields(
  input: { backchannelLogoutUri?: string | null | undefined; backchannelLogoutSessionRequired?: boolean | undefined },
  selfRegistered: boolean,
): BackchannelFields {
  const uri = input.backchannelLogoutUri?.trim() || null;
  const sessionRequired = input.backchannelLogoutSessionRequired ?? false;
  if (uri === null) {
    if (sessionRequired) throw new InputError('back-channel logout session required needs a back-channel logout URI');
    return { backchannelLogoutUri: null, backchannelLogoutSessionRequired: false };
  }
  const problem = backchannelLogoutUriProblem(uri, selfRegistered);
  if (problem) throw new InputError(`the back-channel logout URI ${problem}`);
  return { backchannelLogoutUri: uri, backchannelLogoutSessionRequired: sessionRequired };
}

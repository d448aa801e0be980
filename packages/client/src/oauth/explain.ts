// The one place protocol failures are worded for people: the message, the hint (what to check or do) and the
// AuthcliError code the error boundary goes by, from the facts of a ProtocolFailure.
import { DEVICE_CODE_GRANT_TYPE } from '@authcli/protocol';
import { describeSlot, loginCommand } from '../config.js';
import type { AuthcliErrorCode } from '../errors.js';
import type { Endpoint, Grant, ProtocolFailure } from './errors.js';

/** The redirect URI a server must have registered for the CLI (any port, RFC 8252 §7.3). */
export const LOOPBACK_CALLBACK = 'http://127.0.0.1/callback';

/** The device flow's codes are dead: said when the server says so (`expired_token`) and when the CLI's own clock does. */
export const CODE_EXPIRED = 'the code expired before the sign-in was approved; run `authcli login` again';

/** Who asked: the issuer, and the client when the request was a client's. */
export interface ClientContext {
  issuer: string;
  clientId?: string | undefined;
  /** Set for a confidential client: its requests carried the secret. */
  clientSecret?: string | undefined;
  /** Where the sign-in is stored (config.ts slotOf), when the request is about one: names its profile. */
  slot?: string | undefined;
}

export interface Wording {
  code: AuthcliErrorCode;
  message: string;
  hint: string | undefined;
}

/** "error: description", or whichever of the two there is. */
export function reasonOf(error: string | undefined, description: string | undefined): string | undefined {
  return [error, description].filter(Boolean).join(': ') || undefined;
}

/** The advice for a sign-in that never came back from the browser, or an authorization request refused for no stated reason. */
export function checkClientAndRedirect(clientId: string): string {
  return `check the client id (${clientId}) and that the server has ${LOOPBACK_CALLBACK} registered as a redirect URI for it`;
}

const CODE: Record<Endpoint, AuthcliErrorCode> = {
  discovery: 'discovery',
  jwks: 'id_token',
  authorization: 'authorization_request',
  callback: 'callback',
  device_authorization: 'protocol',
  pushed_authorization_request: 'authorization_request',
  token: 'protocol',
  revocation: 'protocol',
  userinfo: 'protocol',
};

/** What the person was doing, for "the server refused this client for …". */
const FLOW: Record<Grant, string> = {
  device_code: 'the device flow',
  authorization_code: 'the browser sign-in',
  refresh_token: 'refreshing',
  client_credentials: 'the application sign-in (client credentials)',
  token_exchange: 'the CI sign-in (token exchange)',
};

/** What a client that may not use a grant may not do. */
const MAY_NOT: Record<Grant, string> = {
  device_code: 'use the device flow',
  authorization_code: 'use the browser sign-in',
  refresh_token: 'renew sign-ins',
  client_credentials: 'get tokens of its own (client credentials)',
  token_exchange: 'exchange CI tokens',
};

const GRANT_TYPE: Record<Grant, string> = {
  device_code: DEVICE_CODE_GRANT_TYPE,
  authorization_code: 'authorization_code',
  refresh_token: 'refresh_token',
  client_credentials: 'client_credentials',
  token_exchange: 'urn:ietf:params:oauth:grant-type:token-exchange',
};

/** What to do instead, for a client that may not use a grant or a server that does not offer it. */
const INSTEAD: Record<Grant, string> = {
  device_code: 'sign in with `authcli login --browser`',
  authorization_code: 'sign in with the device flow (`authcli login`)',
  refresh_token: 'run `authcli login` whenever the token expires',
  client_credentials: 'ask the operator to allow it (`authcli-server apps update CLIENT_ID --grant client_credentials ...`)',
  token_exchange: 'ask the operator for a trust policy (`authcli-server workloads add ...`)',
};

/** The grant an endpoint's request is about (the token endpoint's is in the failure). */
function grantOf(f: ProtocolFailure): Grant | undefined {
  if (f.grant) return f.grant;
  if (f.endpoint === 'device_authorization') return 'device_code';
  if (f.endpoint === 'authorization' || f.endpoint === 'callback' || f.endpoint === 'pushed_authorization_request')
    return 'authorization_code';
  return undefined;
}

function clientIdHint(clientId: string): string {
  return `Check the client id (${clientId}: --client-id, AUTHCLI_CLIENT_ID or config.json)`;
}

/** invalid_client: the id, and the secret where one goes with the request (not at the authorization endpoint). */
function invalidClientHint(f: ProtocolFailure, who: ClientContext, clientId: string): string {
  if (f.endpoint === 'authorization' || f.endpoint === 'callback') return `${clientIdHint(clientId)}.`;
  if (who.clientSecret) return `${clientIdHint(clientId)} and its secret (--client-secret-stdin or AUTHCLI_CLIENT_SECRET).`;
  return `${clientIdHint(clientId)} and, for a confidential client, its secret.`;
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** invalid_scope: the scope the server named, and the --scope without it; else the scopes asked for. */
function scopeHint(f: ProtocolFailure, clientId: string): string | undefined {
  const asked = (f.scope ?? '').split(' ').filter(Boolean);
  if (asked.length === 0) return undefined;
  const named = asked.filter((s) => new RegExp(`(^|[\\s"'\`(])${escapeRegExp(s)}($|[\\s"'\`),.;:])`).test(f.description ?? ''));
  const rest = asked.filter((s) => !named.includes(s));
  if (named.length > 0 && rest.length > 0) {
    return `Ask without ${named.join(', ')}: --scope "${rest.join(' ')}" (or ask the server's operator to allow ${named.length > 1 ? 'them' : 'it'} for client ${clientId}).`;
  }
  return `The scopes asked for were "${asked.join(' ')}": pass --scope with those client ${clientId} may have, or ask the server's operator to allow them.`;
}

/** A redirect URI the server does not know: the loopback callback (any port) is what to register. */
function aboutRedirect(f: ProtocolFailure): boolean {
  if (f.error === 'redirect_uri_mismatch' || f.error === 'invalid_redirect_uri') return true;
  return (f.error === undefined || f.error === 'invalid_request') && /redirect/i.test(f.description ?? '');
}

function hintFor(f: ProtocolFailure, who: ClientContext): string | undefined {
  const clientId = who.clientId ?? '';
  const grant = grantOf(f);
  if (aboutRedirect(f))
    return `Check that the server has ${LOOPBACK_CALLBACK} (any port) registered as a redirect URI for client ${clientId}.`;
  switch (f.error) {
    case 'invalid_client':
      return invalidClientHint(f, who, clientId);
    case 'unauthorized_client':
      if (!grant) break;
      return `Client ${clientId} exists but may not ${MAY_NOT[grant]}: ask the server's operator to allow the ${GRANT_TYPE[grant]} grant for it, or ${INSTEAD[grant]}.`;
    case 'invalid_scope':
      return scopeHint(f, clientId);
    case 'unsupported_grant_type':
      if (!grant) break;
      return `${who.issuer} does not offer ${FLOW[grant]} (the ${GRANT_TYPE[grant]} grant): ${INSTEAD[grant]}.`;
    case 'invalid_grant':
      if (grant === 'authorization_code') return 'The code was used already or has expired; run `authcli login --browser` again.';
      if (grant === 'device_code') return 'Run `authcli login` again.';
      return undefined;
    case 'access_denied':
    case 'expired_token':
      return undefined;
  }
  if (f.endpoint === 'authorization' || f.endpoint === 'pushed_authorization_request') {
    // An error page that says only that something is wrong with the client.
    if (f.error === undefined && /client/i.test(f.description ?? '')) return `${clientIdHint(clientId)}.`;
    const check = checkClientAndRedirect(clientId);
    return `${check[0]!.toUpperCase()}${check.slice(1)}.`;
  }
  return undefined;
}

/** The message of a refusal without a wording of its own: which request failed, and the server's reason. */
function frame(f: ProtocolFailure, who: ClientContext): string {
  const given = reasonOf(f.error, f.description);
  const reason = given ?? `HTTP ${f.status}`;
  switch (f.endpoint) {
    case 'discovery':
      return `${f.url} answered ${f.status}; is ${who.issuer} an OAuth server?`;
    case 'jwks':
      return `cannot load the issuer's keys from ${f.url} (HTTP ${f.status})`;
    case 'authorization':
      return `the server refused the sign-in request with HTTP ${f.status}${given ? ` (${given})` : ''}; the browser was not opened`;
    case 'callback':
      return `the server returned ${reason}`;
    case 'device_authorization':
      return `device authorization failed: ${reason}`;
    case 'pushed_authorization_request':
      return `the server refused the pushed authorization request (${reason}); the browser was not opened`;
    case 'token':
      return f.grant === 'authorization_code'
        ? `the code exchange failed: ${reason}`
        : f.grant === 'refresh_token'
          ? `refreshing failed: ${reason}`
          : `the device sign-in failed: ${reason}`;
    case 'revocation':
      return `the server refused to revoke it (${reason})`;
    case 'userinfo':
      return `the userinfo request failed: ${reason}`;
  }
}

/** Refusals with a message (and AuthcliError code) of their own. */
function special(f: ProtocolFailure, who: ClientContext): Omit<Wording, 'hint'> | undefined {
  const reason = reasonOf(f.error, f.description);
  const grant = grantOf(f);
  const ownRequest = f.endpoint === 'device_authorization' || f.endpoint === 'token';
  switch (f.error) {
    case 'invalid_client':
    case 'unauthorized_client':
      if (ownRequest && grant) return { code: 'invalid_client', message: `the server refused this client for ${FLOW[grant]} (${reason})` };
      return undefined;
    case 'access_denied':
      if (f.endpoint === 'callback') return { code: 'access_denied', message: 'you denied the sign-in in the browser' };
      if (grant === 'device_code' && f.endpoint === 'token')
        return { code: 'access_denied', message: 'the sign-in was denied in the browser' };
      return undefined;
    case 'expired_token':
      if (grant === 'device_code' && f.endpoint === 'token') return { code: 'expired_token', message: CODE_EXPIRED };
      return undefined;
    case 'invalid_grant':
      // RFC 6749 §5.2: the refresh token is no longer valid; the sign-in has ended at the server.
      if (grant === 'refresh_token') {
        const [named, login] = who.slot ? [describeSlot(who.slot), loginCommand(who.slot)] : [who.issuer, 'authcli login'];
        return { code: 'signed_out', message: `the sign-in to ${named} has ended (${f.description ?? 'invalid_grant'}); run \`${login}\`` };
      }
      return undefined;
  }
  return undefined;
}

/** How a protocol failure reads: one message, the hint that fits its error code, and its AuthcliError code. */
export function explain(f: ProtocolFailure, who: ClientContext): Wording {
  if (f.problem !== undefined) return { code: CODE[f.endpoint], message: f.problem, hint: undefined };
  const own = special(f, who);
  if (own?.code === 'signed_out') return { ...own, hint: undefined };
  return { code: own?.code ?? CODE[f.endpoint], message: own?.message ?? frame(f, who), hint: hintFor(f, who) };
}

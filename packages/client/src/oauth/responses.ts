// The successful answers of the client-authenticated endpoints, checked before anything uses them: each
// validator returns the typed answer or calls `problem` with what is wrong (the client makes that a ProtocolError).
import type { DeviceAuthorizationResponse, TokenResponse } from '@authcli/protocol';

type Problem = (what: string) => never;

const isObject = (body: unknown): body is Record<string, unknown> => typeof body === 'object' && body !== null && !Array.isArray(body);

/**
 * A successful token response (RFC 6749 §5.1) with a Bearer or DPoP (RFC 9449 §5) access token. Whether a
 * DPoP token is one we asked for is sessionFromTokens' to check.
 */
export function asTokenResponse(body: unknown, problem: Problem): TokenResponse {
  if (!isObject(body) || typeof body.access_token !== 'string' || typeof body.token_type !== 'string') {
    return problem('the token endpoint answered without an access token');
  }
  if (!['bearer', 'dpop'].includes(body.token_type.toLowerCase())) return problem(`unsupported token_type ${body.token_type}`);
  for (const name of ['refresh_token', 'id_token', 'scope'] as const) {
    if (body[name] != null && typeof body[name] !== 'string')
      return problem(`the token endpoint answered with a ${name} that is not a string`);
  }
  // Some servers send the lifetime as a string of digits; anything else is not a lifetime.
  const lifetime = body.expires_in;
  if (typeof lifetime === 'string' && /^\d+$/.test(lifetime)) return { ...body, expires_in: Number(lifetime) } as unknown as TokenResponse;
  if (lifetime !== undefined && typeof lifetime !== 'number')
    return problem('the token endpoint answered with an expires_in that is not a number');
  return body as unknown as TokenResponse;
}

/** A device authorization response (RFC 8628 §3.2): the codes, where to enter them, and how long they last. */
export function asDeviceAuthorization(body: unknown, problem: Problem): DeviceAuthorizationResponse {
  if (
    !isObject(body) ||
    typeof body.device_code !== 'string' ||
    typeof body.user_code !== 'string' ||
    typeof body.verification_uri !== 'string' ||
    typeof body.expires_in !== 'number' ||
    (body.interval !== undefined && typeof body.interval !== 'number') ||
    (body.verification_uri_complete !== undefined && typeof body.verification_uri_complete !== 'string')
  ) {
    return problem('the device authorization response is incomplete');
  }
  return body as unknown as DeviceAuthorizationResponse;
}

/** A pushed authorization response (RFC 9126 §2.2): the single-use reference the browser is sent with. */
export function asPushedAuthorization(body: unknown, problem: Problem): { request_uri: string; expires_in: number | undefined } {
  if (!isObject(body) || typeof body.request_uri !== 'string') {
    return problem('the server answered the pushed authorization request without a request_uri; the browser was not opened');
  }
  return { request_uri: body.request_uri, expires_in: typeof body.expires_in === 'number' ? body.expires_in : undefined };
}

/** The userinfo claims the CLI shows (OIDC Core §5.3.2); `sub` is required. */
export interface UserInfo {
  sub: string;
  preferred_username?: string | undefined;
  email?: string | undefined;
  name?: string | undefined;
}

export function asUserInfo(body: unknown, problem: Problem): UserInfo {
  if (!isObject(body) || typeof body.sub !== 'string') return problem('the userinfo endpoint answered without a subject');
  const text = (v: unknown) => (typeof v === 'string' ? v : undefined);
  return { sub: body.sub, preferred_username: text(body.preferred_username), email: text(body.email), name: text(body.name) };
}

import { InvalidScope } from './errors.js';

/** The scopes this server knows (OIDC Core §5.4, §11). */
export const SUPPORTED_SCOPES = ['openid', 'profile', 'email', 'address', 'phone', 'offline_access'] as const;

const NO_API_SCOPES: ReadonlyMap<string, unknown> = new Map();

// RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/** A scope value this server knows. */
export function isSupportedScope(token: string): boolean {
  return (SUPPORTED_SCOPES as readonly string[]).includes(token);
}

/**
 * Parses a `scope` parameter (RFC 6749 §3.3). Values this server does not
 * know are ignored (OIDC Core §3.1.2.1: "Scope values used that are not
 * understood by an implementation SHOULD be ignored"); a value it knows (an
 * OpenID Connect scope, or one of a resource's, `apiScopes`) but the
 * application may not use is `invalid_scope` (RFC 6749 §4.1.2.1), as is
 * a request left with no scope at all. Order is kept, duplicates dropped.
 * The token response says which scopes were granted (RFC 6749 §5.1).
 * @throws InvalidScope
 */
export function parseScope(
  value: string | undefined,
  allowed: readonly string[],
  apiScopes: ReadonlyMap<string, unknown> = NO_API_SCOPES,
): string[] {
  if (value === undefined || value.trim() === '') throw new InvalidScope('scope is required');
  const out: string[] = [];
  for (const t of value.split(' ')) {
    if (t === '') continue;
    if (!SCOPE_TOKEN.test(t)) throw new InvalidScope('scope contains characters outside RFC 6749 section 3.3');
    if (!isSupportedScope(t) && !apiScopes.has(t)) continue;
    if (!allowed.includes(t)) throw new InvalidScope(`the ${t} scope is not allowed for this application`);
    if (!out.includes(t)) out.push(t);
  }
  if (out.length === 0) throw new InvalidScope('none of the requested scopes is one this server supports');
  return out;
}

import { InvalidScope } from './errors.js';

/** The scopes this server knows (OIDC Core §5.4, §11). */
export const SUPPORTED_SCOPES = ['openid', 'profile', 'email', 'address', 'phone', 'offline_access'] as const;

// RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/**
 * Parses a `scope` parameter (RFC 6749 §3.3) and checks every token is known
 * and allowed for the application. Order is kept, duplicates dropped.
 * @throws InvalidScope
 */
export function parseScope(value: string | undefined, allowed: readonly string[]): string[] {
  if (value === undefined || value.trim() === '') throw new InvalidScope('scope is required');
  const tokens = value.split(' ').filter((t) => t !== '');
  const out: string[] = [];
  for (const t of tokens) {
    if (!SCOPE_TOKEN.test(t)) throw new InvalidScope('scope contains characters outside RFC 6749 §3.3');
    if (!(SUPPORTED_SCOPES as readonly string[]).includes(t)) throw new InvalidScope(`unknown scope ${t}`);
    if (!allowed.includes(t)) throw new InvalidScope(`scope ${t} is not allowed for this application`);
    if (!out.includes(t)) out.push(t);
  }
  return out;
}

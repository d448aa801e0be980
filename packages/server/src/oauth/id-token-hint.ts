import { decodeJwt, jwtVerify } from 'jose';
import type { OAuthContext } from './context.js';

/** Who an `id_token_hint` names, and the client it was issued to. */
export interface IdTokenHint {
  sub: string;
  aud: string;
}

/**
 * Verifies an `id_token_hint` (OIDC Core §3.1.2.1; RP-Initiated Logout 1.0
 * §2): an ID token this server signed, for one audience. Its expiry is not
 * checked: a client commonly holds an expired ID token when it sends the
 * user back (both specifications expect that). Undefined when it is not one.
 */
export async function verifyIdTokenHint(ctx: OAuthContext, hint: string): Promise<IdTokenHint | undefined> {
  try {
    const { payload } = await jwtVerify(hint, await ctx.keys.verificationKeys(), {
      issuer: ctx.config.issuer,
      algorithms: ['ES256', 'RS256'],
      typ: 'JWT',
      // Only exp is left unchecked (see above).
      currentDate: new Date(Math.min(ctx.config.now(), (decodeJwt(hint).exp ?? 0) * 1000 - 1000)),
    });
    if (typeof payload.sub !== 'string' || typeof payload.aud !== 'string') return undefined;
    return { sub: payload.sub, aud: payload.aud };
  } catch {
    return undefined;
  }
}

/**
 * What the authorization endpoint does with a valid request (OIDC Core
 * §3.1.2.3-3.1.2.6): ask for a sign-in, offer the account chooser, ask for
 * consent, or answer with a code; and the user's approval on the consent page.
 */
import type { User } from '../store/store.js';
import { AuthorizationPageError, type AuthorizationRequest, AuthorizationRedirectError } from './authorization-request.js';
import { requestQuery, withoutPrompt } from './authorization-query.js';
import { type AuthorizationResponse, issueCode } from './authorization-response.js';
import { acrRequirement, amrOf, meetsAcr, PASSWORD_ACR } from './acr.js';
import { claimsScopes, essentialAcrValues } from './claims-request.js';
import type { OAuthContext } from './context.js';
import { ConsentRequired, LoginRequired } from './errors.js';

/** The user's sign-in an authorization request may rest on: who, and when they authenticated. */
export interface Authentication {
  user: User;
  /** Epoch ms of the sign-in (OIDC Core §2 `auth_time`). */
  authTime: number;
  /** How (RFC 8176 `amr` as stored, space-separated; null: a password). */
  amr?: string | null | undefined;
  /** The class of a federated sign-in, as stored; null or absent: derived from `amr`. */
  acr?: string | null | undefined;
  /** The browser session's ID (Back-Channel Logout 1.0 §2.1), recorded with the codes it issues. */
  sid?: string | undefined;
}

/** What the authorization endpoint does next with a validated request. */
export type AuthorizationStep =
  /** Send the browser to sign in, then resume the request; `acr`: the class the sign-in must meet (a passkey). */
  | { next: 'sign-in'; acr?: string }
  /**
   * Signed in, but below the class the request requires (or prefers, for a person with a passkey): sign in
   * again with a passkey, then resume the request (the step-up of OIDC Core §3.1.2.1 `acr_values`, §5.5.1.1).
   */
  | { next: 'step-up'; acr: string }
  /**
   * `prompt=select_account` (OIDC Core §3.1.2.1) with a live session: offer to continue as the signed-in user
   * (`continueAs`, the request again without select_account) or to sign in as someone else.
   */
  | { next: 'select-account'; continueAs: string }
  /** Ask the signed-in user to approve the application and scopes. */
  | { next: 'consent' }
  /** Done: send the browser back to the client with a fresh code. */
  | { next: 'redirect'; response: AuthorizationResponse };

/**
 * The authorization endpoint's decision (OIDC Core §3.1.2.3–3.1.2.4, RFC
 * 6749 §4.1.1): a sign-in when there is none, `prompt=login` asks for one,
 * it is older than `max_age`, or it is not the user the request names
 * (`id_token_hint`, a `sub` value; §3.1.2.2); the account chooser for `prompt=select_account`;
 * consent unless the user approved these scopes
 * for this application before and `prompt=consent` is absent; otherwise a
 * code. With `prompt=none` (§3.1.2.6) a step that needs the user is the
 * error `login_required` or `consent_required`, redirected to the client.
 * A pushed request (RFC 9126) keeps its parameters on the server, so a sign-in
 * made after it was pushed is what satisfies its `prompt=login`,
 * `select_account` and `max_age` (a direct request's resumed query drops them).
 */
export async function nextAuthorizationStep(
  ctx: OAuthContext,
  req: AuthorizationRequest,
  signedIn: Authentication | undefined,
): Promise<AuthorizationStep> {
  const signedInForThis = signedIn !== undefined && req.pushed !== undefined && signedIn.authTime >= req.pushed.createdAt;
  const stale =
    signedIn !== undefined && !signedInForThis && req.maxAge !== undefined && ctx.config.now() - signedIn.authTime > req.maxAge * 1000;
  const someoneElse = signedIn !== undefined && req.subject !== undefined && signedIn.user.id !== req.subject;
  const need = acrNeed(req);
  if (!signedIn || (req.prompt.has('login') && !signedInForThis) || stale || someoneElse) {
    if (req.prompt.has('none'))
      throw new AuthorizationRedirectError(new LoginRequired('the user is not signed in'), req.redirectUri, req.state, req.responseMode);
    return { next: 'sign-in', ...(need.essential && need.essential !== PASSWORD_ACR && { acr: need.essential }) };
  }
  const stepUp = await stepUpTo(ctx, need, signedIn);
  if (stepUp !== undefined) {
    if (req.prompt.has('none')) {
      throw new AuthorizationRedirectError(
        new LoginRequired('the sign-in does not meet the requested authentication context class (a passkey is needed)'),
        req.redirectUri,
        req.state,
        req.responseMode,
      );
    }
    return { next: 'step-up', acr: stepUp };
  }
  if (req.prompt.has('select_account') && !signedInForThis) {
    return { next: 'select-account', continueAs: `/oauth/authorize?${requestQuery(withoutPrompt(req, 'select_account'))}` };
  }
  if (!req.prompt.has('consent') && (await ctx.store.consents.covers(signedIn.user.id, req.app.clientId, consentScopes(req)))) {
    return { next: 'redirect', response: await issueCode(ctx, req, signedIn) };
  }
  if (req.prompt.has('none')) {
    throw new AuthorizationRedirectError(
      new ConsentRequired('the user has not approved this application'),
      req.redirectUri,
      req.state,
      req.responseMode,
    );
  }
  return { next: 'consent' };
}

/** What a request asks of the sign-in (acr.ts acrRequirement): its application's setting, essential `acr`, `acr_values`. */
export function acrNeed(req: AuthorizationRequest): { essential?: string; preferred?: string } {
  return acrRequirement({ appRequires: req.app.requireAcr, essentialValues: essentialAcrValues(req.claims), acrValues: req.acrValues });
}

/**
 * The class a signed-in user must step up to, if any: the essential one when the sign-in is below it; the
 * preferred one (`acr_values`) when the sign-in is below it and the person has a passkey to step up with.
 */
export async function stepUpTo(
  ctx: OAuthContext,
  need: { essential?: string; preferred?: string },
  signedIn: Authentication,
): Promise<string | undefined> {
  const amr = amrOf(signedIn.amr);
  if (need.essential !== undefined && !meetsAcr(amr, need.essential, signedIn.acr)) return need.essential;
  if (need.preferred === undefined || meetsAcr(amr, need.preferred, signedIn.acr)) return undefined;
  return (await ctx.store.passkeys.listByUser(signedIn.user.id)).length > 0 ? need.preferred : undefined;
}

/**
 * The user approved the request on the consent page: the approval is
 * remembered for this application and scope set, and a code issued; returns
 * the response to send the browser back with.
 */
export async function approveAuthorization(
  ctx: OAuthContext,
  req: AuthorizationRequest,
  signedIn: Authentication,
): Promise<AuthorizationResponse> {
  // The consent form can be posted without the page: the step-up is checked again here.
  if ((await stepUpTo(ctx, acrNeed(req), signedIn)) !== undefined) {
    throw new AuthorizationPageError('unmet_authentication_requirements', 'This application asks for a sign-in with a passkey first.');
  }
  await ctx.store.consents.add(signedIn.user.id, req.app.clientId, consentScopes(req), ctx.config.now());
  return issueCode(ctx, req, signedIn);
}

/**
 * What the user approves: the requested scopes, and the scopes of the claims
 * the request names one by one (OIDC Core §5.5), so a claim is never
 * released without the user's approval of its scope.
 */
export function consentScopes(req: AuthorizationRequest): string[] {
  return [...new Set([...req.scopes, ...claimsScopes(req.claims)])];
}

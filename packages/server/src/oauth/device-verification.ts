import type { DeviceAuthorization } from '../store/store.js';
import type { Authentication } from './authorization-step.js';
import type { OAuthContext } from './context.js';
import { formatUserCode, normalizeUserCode } from './user-code.js';

/** Why a user code cannot be confirmed now. */
export type UserCodeProblem = 'unknown' | 'expired' | 'used';

/** What the user's code names: a pending authorization to confirm, or why not. */
export type UserCodeLookup =
  /** Too many guesses from this address or account (RFC 8628 §5.1): try again after this. */
  | { kind: 'limited'; retryAfterSeconds: number }
  | { kind: 'problem'; problem: UserCodeProblem }
  /** A pending authorization: what the confirmation page shows (§3.3: the application and its scopes). */
  | { kind: 'pending'; userCode: string; clientId: string; appName: string; selfRegistered: boolean; scopes: string[] };

/** What became of the user's Approve or Deny. */
export type UserCodeDecision =
  | { kind: 'limited'; retryAfterSeconds: number }
  /** Nothing was decided: the code is unknown, expired or used (`gone`: it stopped being pending meanwhile). */
  | { kind: 'problem'; problem: UserCodeProblem | 'gone' }
  | { kind: 'decided'; decision: 'approve' | 'deny' };

function problemOf(row: DeviceAuthorization | undefined, now: number): UserCodeProblem | undefined {
  if (!row) return 'unknown';
  if (row.expires_at <= now) return 'expired';
  if (row.status !== 'pending') return 'used';
  return undefined;
}

/**
 * Looks up the code a signed-in user typed on the second screen (RFC 8628
 * §3.3), as a guess: counted per client IP and account before the lookup
 * (§5.1), the attempt given back when the code names a pending
 * authorization.
 */
export async function lookUpUserCode(ctx: OAuthContext, typed: string, clientIp: string, userId: string): Promise<UserCodeLookup> {
  const admission = await ctx.limits.userCodeGuess(clientIp, userId);
  if (!admission.admitted) return { kind: 'limited', retryAfterSeconds: admission.retryAfterSeconds };
  const code = normalizeUserCode(typed);
  const row = code ? await ctx.store.deviceGrants.findByUserCode(code) : undefined;
  const problem = problemOf(row, ctx.config.now());
  if (problem || !row) return { kind: 'problem', problem: problem ?? 'unknown' };
  await admission.giveBack();
  const application = await ctx.store.applications.get(row.client_id);
  return {
    kind: 'pending',
    userCode: formatUserCode(row.user_code),
    clientId: row.client_id,
    appName: application?.name ?? row.client_id,
    // RFC 7591: a client that registered itself chose its own name; the page says nobody checked it.
    selfRegistered: (application?.registrationTokenHash ?? null) !== null,
    scopes: row.scope.split(' '),
  };
}

/**
 * Records the user's explicit Approve or Deny of a pending authorization
 * (RFC 8628 §3.3, §3.5: the device then gets tokens or `access_denied`).
 * The posted code is a guess like a typed one, from the same budget:
 * without that, a signed-in account could guess codes here directly and
 * approve a stranger's device. One conditional UPDATE decides, so of two
 * decisions at once only one counts.
 */
export async function decideUserCode(
  ctx: OAuthContext,
  typed: string,
  decision: 'approve' | 'deny',
  clientIp: string,
  signedIn: Authentication,
): Promise<UserCodeDecision> {
  const admission = await ctx.limits.userCodeGuess(clientIp, signedIn.user.id);
  if (!admission.admitted) return { kind: 'limited', retryAfterSeconds: admission.retryAfterSeconds };
  const code = normalizeUserCode(typed);
  const now = ctx.config.now();
  const decided = code
    ? await ctx.store.deviceGrants.decide(
        code,
        decision === 'approve'
          ? { status: 'approved', userId: signedIn.user.id, authTime: signedIn.authTime }
          : { status: 'denied', userId: signedIn.user.id },
        now,
      )
    : false;
  if (!decided) {
    const problem = problemOf(code ? await ctx.store.deviceGrants.findByUserCode(code) : undefined, now);
    return { kind: 'problem', problem: problem ?? 'gone' };
  }
  await admission.giveBack();
  return { kind: 'decided', decision };
}

import type { DeviceAuthorization } from '../store/store.js';
import { amrOf, meetsAcr } from './acr.js';
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
  /**
   * A pending authorization: what the confirmation page shows (§3.3: the application and its scopes; §5.4 and
   * draft-ietf-oauth-cross-device-security: where and when the device asked, so a person can tell a sign-in
   * they did not start).
   */
  | {
      kind: 'pending';
      userCode: string;
      clientId: string;
      appName: string;
      selfRegistered: boolean;
      scopes: string[];
      /** The device authorization request's client address; null for a row made before it was kept. */
      deviceAddress: string | null;
      /** When the device asked for its code (epoch ms). */
      startedAt: number;
      /** Still within the approval window (AUTHCLI_DEVICE_APPROVAL_WINDOW): it can be approved, not only denied. */
      approvable: boolean;
      /** The class the approver's sign-in must meet (the application's `--require-acr`), if any. */
      requireAcr: string | null;
    };

/** What became of the user's Approve or Deny. */
export type UserCodeDecision =
  | { kind: 'limited'; retryAfterSeconds: number }
  /**
   * Nothing was decided: the code is unknown, expired or used (`gone`: it stopped being pending meanwhile), or,
   * for an approval, `stale`: started longer ago than the approval window.
   */
  | { kind: 'problem'; problem: UserCodeProblem | 'gone' | 'stale' }
  | { kind: 'decided'; decision: 'approve' | 'deny' }
  /** Not approved: the application requires a stronger sign-in (`acr`) than the approver's; step up, then approve. */
  | { kind: 'step-up'; acr: string };

/** Authorizations started at or before this instant can no longer be approved (config deviceApprovalWindowSeconds). */
const approvableAfter = (ctx: OAuthContext, now: number) => now - ctx.config.deviceApprovalWindowSeconds * 1000;

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
  const now = ctx.config.now();
  const problem = problemOf(row, now);
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
    deviceAddress: row.client_ip,
    startedAt: row.created_at,
    approvable: row.created_at > approvableAfter(ctx, now),
    requireAcr: application?.requireAcr ?? null,
  };
}

/**
 * Records the user's explicit Approve or Deny of a pending authorization
 * (RFC 8628 §3.3, §3.5: the device then gets tokens or `access_denied`),
 * and with it a sign-in record with both addresses (the device's and
 * `clientIp`, the browser's). An approval must come within the approval
 * window after the device asked (a denial may come any time before expiry).
 * The posted code is a guess like a typed one, from the same budget:
 * without that, a signed-in account could guess codes here directly and
 * approve a stranger's device. One conditional UPDATE decides, so of many
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
  if (decision === 'approve' && code) {
    // An application that requires a passkey sign-in is approved only from one (a denial needs nothing).
    const pending = await ctx.store.deviceGrants.findByUserCode(code);
    const required = pending && (await ctx.store.applications.get(pending.client_id))?.requireAcr;
    if (required && !meetsAcr(amrOf(signedIn.amr), required, signedIn.acr)) {
      await admission.giveBack();
      return { kind: 'step-up', acr: required };
    }
  }
  const startedAfter = approvableAfter(ctx, now);
  const userId = signedIn.user.id;
  const decided = code
    ? await ctx.store.deviceGrants.decide(
        code,
        decision === 'approve'
          ? { status: 'approved', userId, authTime: signedIn.authTime, amr: signedIn.amr ?? null, acr: signedIn.acr ?? null, startedAfter }
          : { status: 'denied', userId },
        now,
        clientIp,
      )
    : false;
  if (!decided) {
    const row = code ? await ctx.store.deviceGrants.findByUserCode(code) : undefined;
    const problem = problemOf(row, now);
    if (problem) return { kind: 'problem', problem };
    // Still pending, yet not approved: started too long ago, a right code like a pending one at lookup.
    if (decision === 'approve' && row && row.created_at <= startedAfter) {
      await admission.giveBack();
      return { kind: 'problem', problem: 'stale' };
    }
    return { kind: 'problem', problem: 'gone' };
  }
  await admission.giveBack();
  return { kind: 'decided', decision };
}

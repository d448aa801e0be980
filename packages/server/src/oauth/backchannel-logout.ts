/**
 * OpenID Connect Back-Channel Logout 1.0, the OP's side: when a browser session ends (the person signs out at
 * /signout, logs out through an application, or signs in as someone else over it) or an operator disables
 * the person, every application that signed in through it and registered a `backchannel_logout_uri` gets a
 * logout token (§2.4) posted to it (§2.5, backchannel-delivery.ts: from the store's outbox, retried until the
 * session or access it ends could no longer have been used). The session ID it names (§2.1 `sid`) is the one its
 * ID tokens carried.
 */
import type { ServerConfig } from '../config/config.js';
import { LOGOUT_TOKEN_TTL_SECONDS } from '../config/defaults.js';
import type { Application, GrantHolder, NewLogout, Store } from '../store/store.js';
import { randomToken } from '../util/crypto.js';
import type { BackchannelDelivery, DeliveryLog } from './backchannel-delivery.js';
import type { KeyRing } from './keys.js';

/** §2.4: the member of `events` that makes a JWT a logout token. */
export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';
/** §2.4: the `typ` header of a logout token (OpenID Connect Back-Channel Logout 1.0, as RFC 8725 §3.11 advises). */
export const LOGOUT_TOKEN_TYP = 'logout+jwt';

/** What making and sending logout tokens needs. */
export interface LogoutContext {
  config: ServerConfig;
  store: Store;
  keys: KeyRing;
}

/**
 * A logout token (§2.4) for `app`: signed as its ID tokens are (its `id_token_signed_response_alg`, the
 * server's key), `typ` logout+jwt; `iss`, `aud` (the client id), `iat`, `exp` (LOGOUT_TOKEN_TTL_SECONDS),
 * `jti` (`jti`: the one every attempt of a delivery keeps), `sub`, `sid` when a session is named, the
 * back-channel logout event; never a `nonce` (§2.4 forbids one, so a logout token cannot pass for an ID token).
 */
export async function logoutToken(
  ctx: Pick<LogoutContext, 'config' | 'keys'>,
  app: Application,
  sub: string,
  sid?: string,
  jti: string = randomToken(16),
): Promise<string> {
  const iat = Math.floor(ctx.config.now() / 1000);
  return ctx.keys.signJwt(app.idTokenAlg, LOGOUT_TOKEN_TYP, {
    iss: ctx.config.issuer,
    sub,
    aud: app.clientId,
    iat,
    exp: iat + LOGOUT_TOKEN_TTL_SECONDS,
    jti,
    ...(sid !== undefined && { sid }),
    events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
  });
}

/** Whom to tell: an application, and the session to name (none: every session of the user there). */
interface Target {
  clientId: string;
  sid?: string | undefined;
}

/** The OP's side of back-channel logout, one per server (or operator command). */
export class BackchannelLogout {
  constructor(
    private readonly ctx: LogoutContext,
    private readonly delivery: BackchannelDelivery,
    private readonly log: DeliveryLog,
  ) {}

  /**
   * A browser session of `userId` ended. Its unredeemed codes expire and its grants without `offline_access`
   * are revoked (§2.7; grants.ts `endSession`), then each application it signed in to that wants to know is
   * sent a logout token naming the session. Returns the outbox ids once the tokens are queued (stored);
   * never throws (the person is signed out whatever becomes of this), a failure is logged.
   */
  async sessionEnded(userId: string, sid: string): Promise<string[]> {
    try {
      return await this.sessionsEnded(userId, [sid]);
    } catch (err) {
      this.log.warn({ reason: (err as Error).message }, 'back-channel logout of an ended session failed');
      return [];
    }
  }

  /**
   * Several browser sessions of `userId` ended at once (a password changed or reset, the passkeys reset): each
   * as {@link sessionEnded}, but a failure (the store, a signing key) is thrown, for the caller to say.
   */
  async sessionsEnded(userId: string, sids: readonly string[]): Promise<string[]> {
    return this.notify(userId, await this.endSessions(sids), this.ctx.config.backchannelLogout.sessionDeadlineMs);
  }

  /**
   * Every sign-in of `userId` ends at the applications holding `holders` (the user's live grants: those
   * `grants.revokeForUser` just revoked, or `grants.holders` of a disabled user), and the browser sessions
   * `endedSids` ended with them (§2.7, as {@link sessionsEnded}): an operator disabled the user or reset the
   * password with every application's access, the person changed the password ending every application's
   * access, or removed one application's access. Each application that wants to know is told once without `sid` (every session of the
   * user there), or, when it requires `sid`, once per session its grants or the ended sessions name (a device's
   * grant, of no browser session, cannot be named to it). Throws what fails, for the caller to say.
   */
  async accessEnded(userId: string, holders: readonly GrantHolder[], endedSids: readonly string[] = []): Promise<string[]> {
    const bySession = new Map<string, Set<string>>();
    for (const h of [...holders, ...(await this.endSessions(endedSids))]) {
      const sids = bySession.get(h.clientId) ?? new Set<string>();
      bySession.set(h.clientId, sids);
      if (h.sid !== null) sids.add(h.sid);
    }
    const targets: Target[] = [];
    for (const [clientId, sids] of bySession) {
      const app = await this.ctx.store.applications.get(clientId);
      if (app?.backchannelLogoutSessionRequired) for (const sid of sids) targets.push({ clientId, sid });
      else targets.push({ clientId });
    }
    return this.notify(userId, targets, this.ctx.config.backchannelLogout.accessDeadlineMs);
  }

  /** §2.7 for each ended session (grants.ts `endSession`): the applications it signed in to, with its sid. */
  private async endSessions(sids: readonly string[]): Promise<{ clientId: string; sid: string }[]> {
    const now = this.ctx.config.now();
    const ended = await Promise.all(
      sids.map(async (sid) => (await this.ctx.store.grants.endSession(sid, now)).map((clientId) => ({ clientId, sid }))),
    );
    return ended.flat();
  }

  /** Queues a logout token for each target that wants one, retried for `deadlineMs`: the outbox ids. */
  private async notify(sub: string, targets: readonly Target[], deadlineMs: number): Promise<string[]> {
    const logouts: NewLogout[] = [];
    const giveUpAt = this.ctx.config.now() + deadlineMs;
    for (const t of targets) {
      const app = await this.ctx.store.applications.get(t.clientId);
      if (!app?.backchannelLogoutUri) continue;
      if (app.backchannelLogoutSessionRequired && t.sid === undefined) continue;
      logouts.push({ clientId: app.clientId, sub, sid: t.sid, jti: randomToken(16), giveUpAt });
    }
    return this.delivery.enqueue(logouts);
  }
}

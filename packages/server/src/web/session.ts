import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServerConfig } from '../config/config.js';
import type { WebContext } from './context.js';
import { sidOf, type Session, type Store, type User } from '../store/store.js';
import { randomToken, sha256Hex } from '../util/crypto.js';
import type { Continuation } from './continuation.js';
import type { Authentication } from '../oauth/authorization-step.js';
import { PASSWORD_AMR } from '../oauth/acr.js';
import type { BackchannelLogout } from '../oauth/backchannel-logout.js';

export interface CurrentSession {
  session: Session;
  user: User;
}

/** The sign-in a session rests on, as the authorization endpoint weighs it: who, when and how. */
export function authenticationOf(current: CurrentSession): Authentication {
  return {
    user: current.user,
    authTime: current.session.auth_time,
    amr: current.session.amr,
    acr: current.session.acr,
    sid: sidOf(current.session),
  };
}

/**
 * End-user browser sessions: an opaque 256-bit cookie (`HttpOnly`,
 * `SameSite=Lax`, `Secure` and the `__Host-` prefix on https issuers) that
 * points to a server-side row keyed by the cookie's SHA-256. Each has a
 * session ID (`sid`, OpenID Connect Back-Channel Logout 1.0 §2.1) of its own,
 * random and not secret; when a session ends, the applications it signed in
 * to are told (`backchannel`).
 */
export class Sessions {
  readonly cookieName: string;
  private readonly secure: boolean;

  constructor(
    private readonly config: ServerConfig,
    private readonly store: Store,
    /** Told of every session that ends (none: a test that only makes sessions). */
    private readonly backchannel?: Pick<BackchannelLogout, 'sessionEnded'>,
  ) {
    this.secure = config.issuer.startsWith('https:');
    this.cookieName = this.secure ? '__Host-authcli_session' : 'authcli_session';
  }

  cookieOptions() {
    return { path: '/', httpOnly: true, sameSite: 'lax' as const, secure: this.secure };
  }

  /** The signed-in user of this request, if the session is live and the account enabled. */
  async current(req: FastifyRequest): Promise<CurrentSession | undefined> {
    const raw = req.cookies[this.cookieName];
    if (!raw || raw.length > 128) return undefined;
    return this.store.sessions.find(sha256Hex(raw), this.config.now());
  }

  /**
   * Starts a new session (a fresh id on every sign-in, against session fixation) and ends the one this browser
   * had: signing in as someone else, or again, leaves no earlier session id that still opens the account. The
   * same person signing in again (a step-up, `prompt=login`) keeps the session ID, so the applications signed in
   * before are still reached by its logout; someone else's live session this replaces has ended, and is logged
   * out of its applications.
   */
  async start(req: FastifyRequest, reply: FastifyReply, user: User, amr: readonly string[] = PASSWORD_AMR, acr?: string): Promise<void> {
    const previous = req.cookies[this.cookieName];
    const ended = previous && previous.length <= 128 ? await this.store.sessions.delete(sha256Hex(previous)) : undefined;
    const live = ended !== undefined && ended.expires_at > this.config.now();
    const sid = live && ended.user_id === user.id ? sidOf(ended) : undefined;
    if (live && sid === undefined) await this.backchannel?.sessionEnded(ended.user_id, sidOf(ended));
    reply.setCookie(this.cookieName, await this.create(user, amr, acr, sid), {
      ...this.cookieOptions(),
      maxAge: this.config.sessionTtlSeconds,
    });
  }

  /**
   * Stores a new session of `user`, authenticated now by `amr` (RFC 8176); returns the cookie value that names it
   * (start sets it). `sid`: the session ID it continues; a new one otherwise.
   */
  async create(user: User, amr: readonly string[] = PASSWORD_AMR, acr?: string, sid?: string): Promise<string> {
    const now = this.config.now();
    const raw = randomToken(32);
    await this.store.sessions.create({
      id_hash: sha256Hex(raw),
      user_id: user.id,
      auth_time: now,
      amr: amr.join(' '),
      acr: acr ?? null,
      sid: sid ?? randomToken(16),
      created_at: now,
      expires_at: now + this.config.sessionTtlSeconds * 1000,
    });
    return raw;
  }

  /**
   * Signs this browser out: its session is deleted and the applications it signed in to are told (the tokens
   * are queued, not awaited: a receiver that hangs never holds the page).
   */
  async end(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const raw = req.cookies[this.cookieName];
    const ended = raw && raw.length <= 128 ? await this.store.sessions.delete(sha256Hex(raw)) : undefined;
    reply.clearCookie(this.cookieName, this.cookieOptions());
    if (ended) await this.backchannel?.sessionEnded(ended.user_id, sidOf(ended));
  }
}

/**
 * The signed-in user of a page request; without one, a redirect to sign-in
 * that resumes `resume` afterwards. The page names what to resume as data,
 * never as a URL from the request (see continuation.ts).
 */
export async function requireSignIn(
  ctx: Pick<WebContext, 'sessions' | 'continuations'>,
  req: FastifyRequest,
  reply: FastifyReply,
  resume: Continuation,
): Promise<CurrentSession | undefined> {
  const current = await ctx.sessions.current(req);
  if (!current) await reply.redirect(await ctx.continuations.signInUrl(req, reply, resume), 303);
  return current;
}

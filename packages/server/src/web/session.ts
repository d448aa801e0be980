import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServerConfig } from '../config/config.js';
import type { WebContext } from './context.js';
import type { Session, Store, User } from '../store/store.js';
import { randomToken, sha256Hex } from '../util/crypto.js';
import type { Continuation } from './continuation.js';
import type { Authentication } from '../oauth/authorization-step.js';
import { PASSWORD_AMR } from '../oauth/acr.js';

export interface CurrentSession {
  session: Session;
  user: User;
}

/** The sign-in a session rests on, as the authorization endpoint weighs it: who, when and how. */
export function authenticationOf(current: CurrentSession): Authentication {
  return { user: current.user, authTime: current.session.auth_time, amr: current.session.amr, acr: current.session.acr };
}

/**
 * End-user browser sessions: an opaque 256-bit cookie (`HttpOnly`,
 * `SameSite=Lax`, `Secure` and the `__Host-` prefix on https issuers) that
 * points to a server-side row keyed by the cookie's SHA-256.
 */
export class Sessions {
  readonly cookieName: string;
  private readonly secure: boolean;

  constructor(
    private readonly config: ServerConfig,
    private readonly store: Store,
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
   * had: signing in as someone else, or again, leaves no earlier session id that still opens the account.
   */
  async start(req: FastifyRequest, reply: FastifyReply, user: User, amr: readonly string[] = PASSWORD_AMR, acr?: string): Promise<void> {
    const previous = req.cookies[this.cookieName];
    if (previous && previous.length <= 128) await this.store.sessions.delete(sha256Hex(previous));
    reply.setCookie(this.cookieName, await this.create(user, amr, acr), { ...this.cookieOptions(), maxAge: this.config.sessionTtlSeconds });
  }

  /**
   * Stores a new session of `user`, authenticated now by `amr` (RFC 8176); returns the cookie value that names it
   * (start sets it).
   */
  async create(user: User, amr: readonly string[] = PASSWORD_AMR, acr?: string): Promise<string> {
    const now = this.config.now();
    const raw = randomToken(32);
    await this.store.sessions.create({
      id_hash: sha256Hex(raw),
      user_id: user.id,
      auth_time: now,
      amr: amr.join(' '),
      acr: acr ?? null,
      created_at: now,
      expires_at: now + this.config.sessionTtlSeconds * 1000,
    });
    return raw;
  }

  async end(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const raw = req.cookies[this.cookieName];
    if (raw) await this.store.sessions.delete(sha256Hex(raw));
    reply.clearCookie(this.cookieName, this.cookieOptions());
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

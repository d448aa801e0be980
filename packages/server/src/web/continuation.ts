import type { FastifyReply, FastifyRequest } from 'fastify';
import { isSupportedAcr, PHISHING_RESISTANT_ACR } from '../oauth/acr.js';
import type { ServerConfig } from '../config/config.js';
import { CONTINUATION_TTL_MS } from '../config/defaults.js';
import { clientAddress } from '../http/client-ip.js';
import type { AbuseLimits } from '../oauth/limits.js';
import { formatUserCode, normalizeUserCode } from '../oauth/user-code.js';
import type { Continuations as ContinuationRows } from '../store/repositories/continuations.js';
import { randomToken, sha256Hex } from '../util/crypto.js';

/** Pages a sign-in may continue to by name, with the one path each stands for. */
const PAGES = {
  home: '/',
  dashboard: '/dashboard',
  'new-application': '/dashboard/apps/new',
  playground: '/developer/playground',
  account: '/account',
} as const;

export type PageName = keyof typeof PAGES;

/**
 * What a sign-in resumes, as data the server checked, never as a URL: the
 * redirect after sign-in is built from it by {@link continuationPath}, so
 * nothing a request sends can become a redirect target.
 */
export type Continuation =
  /** An authorization request: the query `resumeQuery` (oauth/authorization-query.ts) serialized from the validated request. */
  | {
      kind: 'authorize';
      query: string;
      /** The class the sign-in must meet (`phr`: the sign-in page asks for a passkey). */
      acr?: string;
    }
  /**
   * The device page, with the user code it was opened with (normalized), if any. `confirm`: the person already went
   * on with that code (Continue) and was sent to a step-up: the sign-in resumes at its confirmation page.
   */
  | { kind: 'device'; userCode: string | null; acr?: string; confirm?: true }
  /** One application's page in the dashboard. */
  | { kind: 'application'; clientId: string }
  /** A page of this server; `acr`: the class the sign-in must meet (a passkey, to change a passkey on /account). */
  | { kind: 'page'; page: PageName; acr?: string };

/**
 * Where a signed-in person signs in again before adding or removing a way into their account
 * (oauth/credential-change.ts): a passkey sign-in when that is what it needs; the account page after.
 */
export const reauthFor = (needs: 'recent' | 'passkey'): Continuation =>
  needs === 'passkey' ? { kind: 'page', page: 'account', acr: PHISHING_RESISTANT_ACR } : { kind: 'page', page: 'account' };

/** The random ids, and the browser-binding value: 256 bits, base64url (util/crypto.ts randomToken). */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/**
 * Client ids the server creates are base64url (and the built-in `authcli`):
 * characters a path segment carries as they are, so the dashboard path needs
 * no encoding and cannot be `.` or `..`. Anything else continues to the dashboard.
 */
const CLIENT_ID_SEGMENT = /^[A-Za-z0-9_-]{1,128}$/;

function isPageName(value: unknown): value is PageName {
  return typeof value === 'string' && Object.hasOwn(PAGES, value);
}

/**
 * The same-origin path a continuation resumes, built here from its parts
 * (URLSearchParams serializes the authorization query again, the user code
 * is normalized and formatted again), so even a stored row that was tampered
 * with yields a path on this server and a header-safe ASCII value.
 */
export function continuationPath(c: Continuation): string {
  switch (c.kind) {
    case 'authorize':
      return `/oauth/authorize?${new URLSearchParams(c.query).toString()}`;
    case 'device': {
      const code = c.userCode === null ? undefined : normalizeUserCode(c.userCode);
      return code ? `/device?user_code=${formatUserCode(code)}` : '/device';
    }
    case 'application':
      return CLIENT_ID_SEGMENT.test(c.clientId) ? `/dashboard/apps/${c.clientId}` : PAGES.dashboard;
    case 'page':
      return PAGES[c.page];
  }
}

/** The class a stored continuation's sign-in must meet, when it names a supported one. */
const acrOf = (o: Record<string, unknown>) => (typeof o.acr === 'string' && isSupportedAcr(o.acr) ? { acr: o.acr } : {});

/** A stored target read back, checked field by field; undefined for anything that is not a continuation. */
export function parseContinuation(json: string): Continuation | undefined {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const o = value as Record<string, unknown>;
  switch (o.kind) {
    case 'authorize':
      return typeof o.query === 'string' ? { kind: 'authorize', query: o.query, ...acrOf(o) } : undefined;
    case 'device':
      return o.userCode === null || typeof o.userCode === 'string'
        ? { kind: 'device', userCode: o.userCode, ...acrOf(o), ...(o.confirm === true && { confirm: true as const }) }
        : undefined;
    case 'application':
      return typeof o.clientId === 'string' ? { kind: 'application', clientId: o.clientId } : undefined;
    case 'page':
      return isPageName(o.page) ? { kind: 'page', page: o.page, ...acrOf(o) } : undefined;
    default:
      return undefined;
  }
}

/** The device page continuation for what someone typed or followed: only a well-formed code is kept. */
export function deviceContinuation(typed: string | undefined): Continuation {
  return { kind: 'device', userCode: normalizeUserCode(typed ?? '') ?? null };
}

/**
 * Sign-in continuations. A page that needs a signed-in user stores what to
 * resume under a random 256-bit id (kept as its SHA-256) and sends the
 * browser to `/signin?continue=<id>`; the sign-in form carries the id; after
 * the sign-in the server redirects to the path it builds from the stored row.
 *
 * The row is bound to the browser by a second cookie (HttpOnly,
 * SameSite=Lax, `__Host-` and Secure on https issuers, like the session):
 * an id copied out of a URL, history or a log is worth nothing elsewhere, and
 * an attacker cannot plant one of their own in a victim's sign-in. A row is
 * used once and lives {@link CONTINUATION_TTL_MS}. An id that is unknown,
 * expired, used or from another browser continues to `/`, with no error that
 * would tell which.
 */
export class Continuations {
  readonly cookieName: string;
  private readonly secure: boolean;

  constructor(
    private readonly config: ServerConfig,
    private readonly rows: ContinuationRows,
    private readonly limits: AbuseLimits,
  ) {
    this.secure = config.issuer.startsWith('https:');
    this.cookieName = this.secure ? '__Host-authcli_continue' : 'authcli_continue';
  }

  /** The SHA-256 of this browser's binding cookie; undefined without a well-formed one. */
  private browserOf(req: FastifyRequest): string | undefined {
    const raw = req.cookies[this.cookieName];
    return raw !== undefined && TOKEN.test(raw) ? sha256Hex(raw) : undefined;
  }

  /**
   * Stores `target` for this browser and returns the sign-in URL that
   * resumes it. The binding cookie is kept when the browser has one (sign-ins
   * started in several tabs all stay usable) and its lifetime renewed.
   */
  async signInUrl(req: FastifyRequest, reply: FastifyReply, target: Continuation): Promise<string> {
    // Every signed-out visit stores a row: one address may not fill the store with them. Past its limit the
    // sign-in still works and lands on the home page.
    if (!(await this.limits.continuation(clientAddress(req))).admitted) return '/signin';
    const existing = req.cookies[this.cookieName];
    const binding = existing !== undefined && TOKEN.test(existing) ? existing : randomToken(32);
    reply.setCookie(this.cookieName, binding, {
      path: '/',
      httpOnly: true,
      sameSite: 'lax',
      secure: this.secure,
      maxAge: Math.ceil(CONTINUATION_TTL_MS / 1000),
    });
    return `/signin?continue=${await this.insert(sha256Hex(binding), target)}`;
  }

  /** Stores `target` for the browser whose binding cookie hashes to `browser`: its new id. */
  private async insert(browser: string, target: Continuation): Promise<string> {
    const id = randomToken(32);
    const now = this.config.now();
    await this.rows.insert({
      id_hash: sha256Hex(id),
      browser_hash: browser,
      target: JSON.stringify(target),
      created_at: now,
      expires_at: now + CONTINUATION_TTL_MS,
    });
    return id;
  }

  /** The live continuation `id` names for this browser, left usable (the sign-in page shows which application waits). */
  async peek(req: FastifyRequest, id: string | undefined): Promise<Continuation | undefined> {
    const browser = this.browserOf(req);
    if (id === undefined || !TOKEN.test(id) || browser === undefined) return undefined;
    const target = await this.rows.peek(sha256Hex(id), browser, this.config.now());
    return target === undefined ? undefined : parseContinuation(target);
  }

  /**
   * After a successful sign-in: uses the continuation up and returns the path to resume, `/` when there is none.
   * A device code the person already went on with resumes at its confirmation page: the path carries a new id,
   * single-use and of this browser too, that {@link takeConfirmation} reads (a link cannot skip the code page).
   */
  async resume(req: FastifyRequest, id: string | undefined): Promise<string> {
    const c = await this.take(req, id);
    if (c?.kind === 'device' && c.confirm && c.userCode !== null) {
      const code = normalizeUserCode(c.userCode);
      const browser = this.browserOf(req);
      if (code && browser) {
        const confirm = await this.insert(browser, { kind: 'device', userCode: code, confirm: true });
        return `/device?user_code=${formatUserCode(code)}&confirm=${confirm}`;
      }
    }
    return c ? continuationPath(c) : PAGES.home;
  }

  /** The normalized user code a confirmation id of this browser stands for (used up); undefined for anything else. */
  async takeConfirmation(req: FastifyRequest, id: string | undefined): Promise<string | undefined> {
    const c = await this.take(req, id);
    return c?.kind === 'device' && c.confirm && c.userCode !== null ? normalizeUserCode(c.userCode) : undefined;
  }

  /** The live continuation `id` names for this browser, used up. */
  private async take(req: FastifyRequest, id: string | undefined): Promise<Continuation | undefined> {
    const browser = this.browserOf(req);
    if (id === undefined || !TOKEN.test(id) || browser === undefined) return undefined;
    const target = await this.rows.take(sha256Hex(id), browser, this.config.now());
    return target === undefined ? undefined : parseContinuation(target);
  }
}

/**
 * The GitHub connector's core: a person signs in at GitHub (or GitHub Enterprise) through an OAuth app, and
 * comes back as a GitHub user id with a verified email, a member of the organizations and teams the operator
 * named. No Fastify and no store: the connectors framework keeps the state and the PKCE verifier, calls
 * githubAuthorizationUrl on the way out and githubSignIn with the code on the way back.
 *
 * GitHub's docs followed: "Authorizing OAuth apps" (the web application flow, with PKCE S256),
 * "Troubleshooting OAuth app access token request errors" (errors answered 200 with an `error` member),
 * REST "Get the authenticated user", "List email addresses for the authenticated user", "Get an organization
 * membership for the authenticated user", "Get team membership for a user", "Scopes for OAuth apps", and
 * "Rate limits for the REST API".
 */
import { isLoopbackHost } from '@authcli/protocol';
import {
  CLAIM_TEXT_MAX,
  CLAIM_URL_MAX,
  GITHUB_EMAILS_PER_PAGE,
  GITHUB_REQUEST_TIMEOUT_MS,
  GITHUB_SIGNIN_TIMEOUT_MS,
  GITHUB_TOKEN_MAX,
} from '../config/defaults.js';
import { InputError } from '../util/input-error.js';
import { NOT_A_MEMBER } from './accounts.js';
import {
  type Answer,
  GithubStop,
  isRecord,
  okObject,
  rateLimited,
  refused,
  request,
  text,
  type Transport,
  unavailable,
  webUrl,
} from './github-http.js';

export interface GithubOrgRule {
  org: string;
  /** A team's slug (as in its URL, `github.com/orgs/ORG/teams/SLUG`). */
  team?: string;
}

export interface GithubSettings {
  clientId: string;
  clientSecret: string;
  /** `--org ORG[:TEAM]`: a person must be an active member of at least one; empty: anyone with a GitHub account. */
  orgs: GithubOrgRule[];
  /** GitHub Enterprise: its REST API, e.g. `https://ghe.example.com/api/v3`; the web base is derived from it. */
  apiBase?: string;
}

export type GithubOutcome =
  | {
      kind: 'ok';
      /** The numeric user id as a string: a login can be renamed, and the name then given to someone else. */
      subject: string;
      claims: { preferred_username: string; email: string; email_verified: true; name?: string; picture?: string; profile?: string };
    }
  | { kind: 'refused'; reason: string; detail?: string }
  | { kind: 'unavailable'; reason: string };

export interface GithubSignInOptions {
  /** The transport (as oauth4webapi's customFetch): tests and proxies give their own. */
  fetch?: typeof fetch;
  /** The longest one request may take (default GITHUB_REQUEST_TIMEOUT_MS). */
  timeoutMs?: number;
  /** The longest the whole sign-in may take (default GITHUB_SIGNIN_TIMEOUT_MS). */
  deadlineMs?: number;
}

/** What GitHub asks for in a User-Agent: the application's name ("REST API: Getting started", User agent). */
export const GITHUB_USER_AGENT = 'authcli-server';
/** The REST API version the answers are read as ("API Versions"). */
export const GITHUB_API_VERSION = '2022-11-28';

const DOT_COM = { web: 'https://github.com', api: 'https://api.github.com' } as const;
/** An organization's login: letters, digits and single hyphens inside, at most 39 characters. */
const ORG_PATTERN = /^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$/;
/** A team slug: what GitHub makes of a team's name (lowercase letters, digits, hyphens, underscores). */
const TEAM_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;
/** A user's login (Enterprise Managed Users add `_shortcode`), as read back from GitHub. */
const LOGIN_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;
/** A GitHub access token: [A-Za-z0-9_] up to 255 characters (older Enterprise tokens are 40 hex digits). */
const TOKEN_PATTERN = new RegExp(`^[A-Za-z0-9_]{1,${GITHUB_TOKEN_MAX}}$`);
/** RFC 7636 §4.2: an S256 challenge is 43 base64url characters. */
const CHALLENGE_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** `--org ORG[:TEAM]` as a rule; an InputError says what is wrong with it. */
export function parseGithubOrgRule(value: string): GithubOrgRule {
  const [org = '', team, ...rest] = value.split(':');
  if (!ORG_PATTERN.test(org) || rest.length > 0) {
    throw new InputError(`--org ${JSON.stringify(value)}: give ORG or ORG:TEAM, ORG a GitHub organization's login`, 'org');
  }
  if (team === undefined) return { org };
  if (!TEAM_PATTERN.test(team)) throw new InputError(`--org ${JSON.stringify(value)}: TEAM is a team's slug, as in its URL`, 'org');
  return { org, team };
}

/**
 * GitHub's web base (the authorize and token endpoints) and REST API base. Without apiBase: github.com.
 * `https://HOST/api/v3` is GitHub Enterprise Server (web `https://HOST`); `https://api.HOST` is github.com's
 * or GitHub Enterprise Cloud's with data residency (web `https://HOST`). http only on loopback (a stand-in).
 */
export function githubEndpoints(s: Pick<GithubSettings, 'apiBase'>): { web: string; api: string } {
  if (s.apiBase === undefined) return DOT_COM;
  const bad = (why: string) => new InputError(`--api-base ${JSON.stringify(s.apiBase)}: ${why}`, 'apiBase');
  if (!URL.canParse(s.apiBase)) throw bad('not a URL');
  const url = new URL(s.apiBase);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) throw bad('use https');
  if (url.username || url.password || url.search || url.hash) throw bad('no credentials, query or fragment');
  const path = url.pathname.replace(/\/+$/, '');
  if (path.endsWith('/api/v3')) {
    return { web: `${url.origin}${path.slice(0, -'/api/v3'.length)}`, api: `${url.origin}${path}` };
  }
  if (path === '' && url.hostname.startsWith('api.')) {
    return { web: `${url.protocol}//${url.host.slice('api.'.length)}`, api: url.origin };
  }
  throw bad("GitHub Enterprise Server's API is https://HOST/api/v3; GitHub Enterprise Cloud's is https://api.HOST");
}

/** The scopes asked for ("Scopes for OAuth apps"): the profile, the email addresses, and the memberships when they are checked. */
export function githubScopes(s: Pick<GithubSettings, 'orgs'>): string {
  return s.orgs.length > 0 ? 'read:user user:email read:org' : 'read:user user:email';
}

/** Where to send the browser: `{web}/login/oauth/authorize` with the app, the callback, the state and an S256 challenge. */
export function githubAuthorizationUrl(s: GithubSettings, p: { redirectUri: string; state: string; codeChallenge: string }): string {
  if (!CHALLENGE_PATTERN.test(p.codeChallenge)) throw new TypeError('codeChallenge must be an RFC 7636 S256 challenge');
  if (p.state.length === 0) throw new TypeError('state must not be empty');
  const url = new URL(`${githubEndpoints(s).web}/login/oauth/authorize`);
  url.search = new URLSearchParams({
    client_id: s.clientId,
    redirect_uri: p.redirectUri,
    scope: githubScopes(s),
    state: p.state,
    code_challenge: p.codeChallenge,
    code_challenge_method: 'S256',
  }).toString();
  return url.href;
}

/**
 * The way back: exchange the code (with the PKCE verifier), read the user and their primary email, check the
 * organizations and teams. Never throws for anything GitHub does: `refused` (GitHub or the operator's rules
 * say no) or `unavailable` (GitHub is down, slow, or answered what its docs do not describe).
 */
export async function githubSignIn(
  s: GithubSettings,
  p: { code: string; redirectUri: string; codeVerifier: string },
  opts: GithubSignInOptions = {},
): Promise<GithubOutcome> {
  const { web, api } = githubEndpoints(s);
  const t: Transport = {
    fetch: opts.fetch ?? fetch,
    timeoutMs: opts.timeoutMs ?? GITHUB_REQUEST_TIMEOUT_MS,
    deadline: AbortSignal.timeout(opts.deadlineMs ?? GITHUB_SIGNIN_TIMEOUT_MS),
  };
  try {
    const token = await exchangeCode(t, web, s, p);
    const get = (what: string, path: string) =>
      request(t, what, `${api}${path}`, {
        method: 'GET',
        headers: {
          accept: 'application/vnd.github+json',
          'x-github-api-version': GITHUB_API_VERSION,
          authorization: `Bearer ${token.accessToken}`,
          'user-agent': GITHUB_USER_AGENT,
        },
      });
    const user = await readUser(await get("GitHub's /user", '/user'));
    const email = primaryEmail(await get("GitHub's /user/emails", `/user/emails?per_page=${GITHUB_EMAILS_PER_PAGE}`));
    if (s.orgs.length > 0) await checkMemberships(s.orgs, user.login, get);
    return { kind: 'ok', subject: user.subject, claims: { ...user.claims, email, email_verified: true } };
  } catch (err) {
    if (err instanceof GithubStop) return err.outcome;
    throw err;
  }
}

/** POST `{web}/login/oauth/access_token`; GitHub answers its errors with 200 and an `error` member. */
async function exchangeCode(t: Transport, web: string, s: GithubSettings, p: { code: string; redirectUri: string; codeVerifier: string }) {
  const what = "GitHub's token endpoint";
  const a = await request(t, what, `${web}/login/oauth/access_token`, {
    method: 'POST',
    headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded', 'user-agent': GITHUB_USER_AGENT },
    body: new URLSearchParams({
      client_id: s.clientId,
      client_secret: s.clientSecret,
      code: p.code,
      redirect_uri: p.redirectUri,
      code_verifier: p.codeVerifier,
    }).toString(),
  });
  const body = okObject(a, what);
  if (body.error !== undefined) {
    const code = text(body, 'error', 64, /^[a-z_]+$/);
    if (code === undefined) throw unavailable(`${what} answered an error GitHub does not document`);
    if (code === 'unverified_user_email') throw refused('the GitHub account has no verified primary email address');
    throw refused(`GitHub did not accept the sign-in: ${code}`);
  }
  const accessToken = text(body, 'access_token', GITHUB_TOKEN_MAX, TOKEN_PATTERN);
  if (accessToken === undefined) throw unavailable(`${what} answered without an access token of the form GitHub documents`);
  if (typeof body.token_type !== 'string' || body.token_type.toLowerCase() !== 'bearer') {
    throw unavailable(`${what} answered a token type other than bearer`);
  }
  // "Scopes for OAuth apps": the scopes granted can differ from those asked for. `user` holds `user:email`.
  if (typeof body.scope === 'string') {
    const granted = new Set(body.scope.split(/[,\s]+/));
    if (!granted.has('user:email') && !granted.has('user')) throw refused('GitHub granted no user:email scope: the email cannot be read');
    if (s.orgs.length > 0 && !['read:org', 'write:org', 'admin:org'].some((x) => granted.has(x))) {
      throw refused('GitHub granted no read:org scope: organization membership cannot be checked');
    }
  } else if (body.scope !== undefined) {
    throw unavailable(`${what} answered a scope that is not a string`);
  }
  return { accessToken };
}

/** GET /user: the id (the subject) and the profile claims. */
function readUser(a: Answer) {
  const what = "GitHub's /user";
  const u = okObject(a, what);
  if (typeof u.id !== 'number' || !Number.isSafeInteger(u.id) || u.id <= 0) throw unavailable(`${what} answered without a numeric user id`);
  const login = text(u, 'login', CLAIM_TEXT_MAX, LOGIN_PATTERN);
  if (login === undefined) throw unavailable(`${what} answered without a login of the form GitHub documents`);
  if (u.name !== undefined && u.name !== null && typeof u.name !== 'string')
    throw unavailable(`${what} answered a name that is not a string`);
  const claims: { preferred_username: string; name?: string; picture?: string; profile?: string } = { preferred_username: login };
  const name = text(u, 'name', CLAIM_TEXT_MAX);
  if (name !== undefined && name.trim() !== '') claims.name = name;
  const picture = webUrl(u, 'avatar_url', CLAIM_URL_MAX);
  if (picture !== undefined) claims.picture = picture;
  const profile = webUrl(u, 'html_url', CLAIM_URL_MAX);
  if (profile !== undefined) claims.profile = profile;
  return { subject: String(u.id), login, claims };
}

/** GET /user/emails: the one address marked primary, which must be verified. */
function primaryEmail(a: Answer): string {
  const what = "GitHub's /user/emails";
  if (a.status !== 200) throw unavailable(rateLimited(a) ? `${what} is rate-limited (${a.status})` : `${what} answered ${a.status}`);
  if (!Array.isArray(a.json)) throw unavailable(`${what} answered with something other than the JSON array GitHub documents`);
  const entries = a.json.map((e) => {
    if (!isRecord(e) || typeof e.email !== 'string' || typeof e.primary !== 'boolean' || typeof e.verified !== 'boolean') {
      throw unavailable(`${what} answered an entry without email, primary and verified`);
    }
    return { email: e.email, primary: e.primary, verified: e.verified };
  });
  const primaries = entries.filter((e) => e.primary);
  if (primaries.length > 1) throw unavailable(`${what} answered more than one primary address`);
  const primary = primaries[0];
  if (primary === undefined) throw refused('the GitHub account has no primary email address');
  if (!primary.verified) throw refused("the GitHub account's primary email address is not verified");
  if (primary.email.length > CLAIM_TEXT_MAX || !/^[^\s@]+@[^\s@]+$/.test(primary.email)) {
    throw unavailable(`${what} answered a primary address that is not an email address`);
  }
  return primary.email;
}

type Get = (what: string, path: string) => Promise<Answer>;

/**
 * An active membership of at least one rule's organization (or team). A rule GitHub could not answer for
 * makes the sign-in unavailable only when no other rule let the person in.
 */
async function checkMemberships(rules: GithubOrgRule[], login: string, get: Get): Promise<void> {
  let failure: GithubStop | undefined;
  const reasons: string[] = [];
  for (const rule of rules) {
    try {
      const answer = await membership(rule, login, get);
      if (answer === true) return;
      reasons.push(answer);
    } catch (err) {
      if (!(err instanceof GithubStop)) throw err;
      failure ??= err;
    }
  }
  if (failure) throw failure;
  throw refused(NOT_A_MEMBER, `the GitHub account is not let in: ${reasons.join('; ')}`);
}

/**
 * GET /user/memberships/orgs/{org}, or for a team GET /orgs/{org}/teams/{team_slug}/memberships/{username}:
 * 200 with state "active" is a member ("pending" is an invitation not yet accepted); 404 is not a member (or
 * a team the person cannot see). 403 (not a rate limit) is GitHub refusing this app the organization's data:
 * OAuth app access restrictions, or SAML single sign-on the token was not authorized for. `true`, or why not.
 */
async function membership(rule: GithubOrgRule, login: string, get: Get): Promise<true | string> {
  const org = encodeURIComponent(rule.org);
  const name = rule.team === undefined ? rule.org : `${rule.org}:${rule.team}`;
  const what = `GitHub's membership of ${name}`;
  const path =
    rule.team === undefined
      ? `/user/memberships/orgs/${org}`
      : `/orgs/${org}/teams/${encodeURIComponent(rule.team)}/memberships/${encodeURIComponent(login)}`;
  const a = await get(what, path);
  if (a.status === 404) return `not a member of ${name}`;
  if (a.status === 403 && !rateLimited(a)) {
    return `GitHub does not let this app read ${rule.org}'s memberships (the organization restricts OAuth apps or requires SSO)`;
  }
  const m = okObject(a, what);
  if (typeof m.state !== 'string') throw unavailable(`${what} answered without a state`);
  return m.state === 'active'
    ? true
    : `the membership of ${name} is ${m.state === 'pending' ? 'an invitation not yet accepted' : 'not active'}`;
}

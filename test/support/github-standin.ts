/**
 * A stand-in for GitHub (github.com cannot be reached from the test machines): an HTTP server on 127.0.0.1
 * that answers the endpoints the GitHub connector uses as GitHub's docs describe them, for users the test
 * configures. Its web base is `url` and its REST API `apiBase` (`url` + `/api/v3`), laid out as GitHub
 * Enterprise Server is, so the connector reaches it through its `apiBase` setting.
 *
 * Endpoints, and the GitHub docs page each follows:
 * - `GET /login/oauth/authorize`: "Authorizing OAuth apps", web application flow step 1 and "Redirect URLs"
 *   (the redirect_uri's host, subdomains allowed, and port must match the callback URL, its path be the
 *   callback's or beneath it; any port on a loopback callback), PKCE (`code_challenge`, S256 only, from the
 *   changelog "PKCE support for OAuth and GitHub App authentication", 2025-07-14); its errors as in
 *   "Troubleshooting authorization request errors" (redirect_uri_mismatch and access_denied sent back to the
 *   callback URL). The person is whoever the test signed in with `signIn`; an unknown client_id is a 404 page.
 * - `POST /login/oauth/access_token`: web application flow step 2; its errors as in "Troubleshooting OAuth app
 *   access token request errors", all answered 200: incorrect_client_credentials, redirect_uri_mismatch,
 *   bad_verification_code (a code unknown, used or past its 10 minutes), unverified_user_email. GitHub does not
 *   document the answer to a wrong or missing code_verifier: the stand-in answers bad_verification_code. A
 *   code is used up by its first exchange, whatever that exchange's outcome (the docs promise no more). JSON
 *   with `Accept: application/json`, form-encoded otherwise, as the docs say.
 * - `GET /api/v3/user`: REST "Users" > "Get the authenticated user".
 * - `GET /api/v3/user/emails`: REST "Emails" > "List email addresses for the authenticated user" (needs
 *   `user` or `user:email`; paginated by `per_page`, 30 by default and at most 100, with a `Link` header).
 * - `GET /api/v3/user/memberships/orgs/:org`: REST "Organization members" > "Get an organization membership
 *   for the authenticated user" (404 when not a member).
 * - `GET /api/v3/orgs/:org/teams/:team_slug/memberships/:username`: REST "Team members" > "Get team membership
 *   for a user" (404 when the user is not a member, or the team is not visible to the caller).
 * Every API answer names the token's scopes in `X-OAuth-Scopes` ("Scopes for OAuth apps"); a request without
 * a User-Agent is refused with 403 and one with an `X-GitHub-Api-Version` other than 2022-11-28 with 400
 * ("Getting started with the REST API"); a missing or unknown token is 401 "Bad credentials".
 *
 * `fault(endpoint, …)` makes an endpoint hang, answer late, answer 500, answer malformed JSON, or answer a
 * body the test gives; `requests` records what arrived, headers included.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface StandinEmail {
  email: string;
  primary: boolean;
  verified: boolean;
}

export interface StandinUser {
  id: number;
  login: string;
  name?: string | null;
  emails: StandinEmail[];
  /** Organization memberships: `state` active unless said; `teams` the slugs of the teams the user is in. */
  orgs?: { org: string; state?: 'active' | 'pending'; role?: 'admin' | 'member'; teams?: string[] }[];
}

export type StandinEndpoint = 'authorize' | 'access_token' | 'user' | 'emails' | 'org_membership' | 'team_membership';

export type StandinFault =
  | 'hang'
  | 'error500'
  | 'malformed'
  | { delayMs: number }
  /** This answer instead; `chunked`: sent in pieces with no Content-Length (a body whose size is known only by reading it). */
  | { status: number; body: string; contentType?: string; headers?: Record<string, string>; chunked?: boolean };

export interface RecordedRequest {
  endpoint: StandinEndpoint | 'other';
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface GithubStandin {
  /** The web base: `http://127.0.0.1:<port>`. */
  url: string;
  /** The REST API base: `url` + `/api/v3` (GitHub Enterprise Server's layout). */
  apiBase: string;
  clientId: string;
  clientSecret: string;
  /** The users, by id; a test may change one (rename it, verify an email) between sign-ins. */
  users: Map<number, StandinUser>;
  requests: RecordedRequest[];
  /**
   * `unverifiedEmailAtTokenEndpoint` (on, as GitHub documents): the code exchange answers unverified_user_email
   * for a user without a verified primary address. Off, the token is issued and /user/emails is what tells (an
   * address that stopped being verified between the two requests).
   */
  checks: { unverifiedEmailAtTokenEndpoint: boolean };
  /** Who is signed in at GitHub in the browser `/login/oauth/authorize` sees; `deny`: they click Cancel. */
  signIn(userId: number, opts?: { deny?: boolean }): void;
  /** Make one endpoint (or all) misbehave; `undefined` puts it right. */
  fault(endpoint: StandinEndpoint | 'all', fault: StandinFault | undefined): void;
  /** GET an authorization URL as a browser would, and read the redirect GitHub answers with. */
  authorize(authorizationUrl: string): Promise<URL>;
  close(): Promise<void>;
}

const API_VERSION = '2022-11-28';
const CODE_TTL_MS = 10 * 60_000;
const DOCS = 'https://docs.github.com';

interface CodeGrant {
  userId: number;
  clientId: string;
  redirectUri: string | undefined;
  challenge: string | undefined;
  scopes: string[];
  issuedAt: number;
  used: boolean;
}

export async function startGithubStandin(opts: {
  users: StandinUser[];
  /** The OAuth app's registered callback URL. */
  callbackUrl: string;
  clientId?: string;
  clientSecret?: string;
}): Promise<GithubStandin> {
  const clientId = opts.clientId ?? `Iv1.${randomBytes(8).toString('hex')}`;
  const clientSecret = opts.clientSecret ?? randomBytes(20).toString('hex');
  const users = new Map(opts.users.map((u) => [u.id, structuredClone(u)]));
  const codes = new Map<string, CodeGrant>();
  const tokens = new Map<string, { userId: number; scopes: string[] }>();
  const faults = new Map<StandinEndpoint | 'all', StandinFault>();
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let browser: { userId: number; deny: boolean } | undefined;
  const checks = { unverifiedEmailAtTokenEndpoint: true };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const url = new URL(req.url ?? '/', 'http://standin');
      const endpoint = route(req.method ?? 'GET', url.pathname);
      requests.push({
        endpoint: endpoint?.name ?? 'other',
        method: req.method ?? '',
        url: req.url ?? '',
        headers: { ...req.headers },
        body,
      });
      if (!endpoint) return json(res, 404, { message: 'Not Found', documentation_url: `${DOCS}/rest` });
      const fault = faults.get(endpoint.name) ?? faults.get('all');
      const answer = () => endpoint.handle(req, res, url, body, endpoint.params);
      if (fault === undefined) return answer();
      if (fault === 'hang') return; // the socket stays open until close()
      if (fault === 'error500') return json(res, 500, { message: 'Server Error' });
      if (fault === 'malformed') return send(res, 200, 'application/json; charset=utf-8', '{"login": "octocat", "id": 1');
      if ('delayMs' in fault) {
        const timer = setTimeout(() => {
          timers.delete(timer);
          answer();
        }, fault.delayMs);
        timers.add(timer);
        return;
      }
      const contentType = fault.contentType ?? 'application/json; charset=utf-8';
      if (!fault.chunked) return send(res, fault.status, contentType, fault.body, fault.headers);
      res.writeHead(fault.status, { 'content-type': contentType, ...fault.headers });
      for (let at = 0; at < fault.body.length; at += 16 * 1024) res.write(fault.body.slice(at, at + 16 * 1024));
      res.end();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const base = `http://127.0.0.1:${port}`;
  const callback = new URL(opts.callbackUrl);

  type Handler = (req: IncomingMessage, res: ServerResponse, url: URL, body: string, params: string[]) => void;
  const routes: [StandinEndpoint, 'GET' | 'POST', RegExp, Handler][] = [
    ['authorize', 'GET', /^\/login\/oauth\/authorize$/, authorizeEndpoint],
    ['access_token', 'POST', /^\/login\/oauth\/access_token$/, tokenEndpoint],
    ['user', 'GET', /^\/api\/v3\/user$/, api(userEndpoint)],
    ['emails', 'GET', /^\/api\/v3\/user\/emails$/, api(emailsEndpoint)],
    ['org_membership', 'GET', /^\/api\/v3\/user\/memberships\/orgs\/([^/]+)$/, api(orgMembershipEndpoint)],
    ['team_membership', 'GET', /^\/api\/v3\/orgs\/([^/]+)\/teams\/([^/]+)\/memberships\/([^/]+)$/, api(teamMembershipEndpoint)],
  ];
  function route(method: string, path: string) {
    for (const [name, m, pattern, handle] of routes) {
      const match = pattern.exec(path);
      if (match && m === method) return { name, handle, params: match.slice(1).map(decodeURIComponent) };
    }
    return undefined;
  }

  /** "Redirect URLs": host (or a subdomain of it) and port as the callback's, path the callback's or beneath; any port on loopback. */
  function redirectAllowed(given: string): boolean {
    if (!URL.canParse(given)) return false;
    const r = new URL(given);
    const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(callback.hostname);
    const hostOk = r.hostname === callback.hostname || r.hostname.endsWith(`.${callback.hostname}`);
    const portOk = loopback || r.port === callback.port;
    const base = callback.pathname.replace(/\/$/, '');
    const pathOk = r.pathname === callback.pathname || r.pathname.startsWith(`${base}/`);
    return r.protocol === callback.protocol && hostOk && portOk && pathOk;
  }

  function authorizeEndpoint(_req: IncomingMessage, res: ServerResponse, url: URL) {
    const q = url.searchParams;
    if (q.get('client_id') !== clientId) return send(res, 404, 'text/html; charset=utf-8', '<h1>404 Page not found</h1>');
    const state = q.get('state');
    const given = q.get('redirect_uri') ?? undefined;
    const back = (params: Record<string, string>) => {
      const to = new URL(given !== undefined && redirectAllowed(given) ? given : callback.href);
      for (const [k, v] of Object.entries(params)) to.searchParams.set(k, v);
      if (state !== null) to.searchParams.set('state', state);
      res.writeHead(302, { location: to.href }).end();
    };
    if (given !== undefined && !redirectAllowed(given)) {
      return back({
        error: 'redirect_uri_mismatch',
        error_description: 'The redirect_uri MUST match the registered callback URL for this application.',
        error_uri: `${DOCS}/apps/managing-oauth-apps/troubleshooting-authorization-request-errors/#redirect-uri-mismatch`,
      });
    }
    const challenge = q.get('code_challenge') ?? undefined;
    const method = q.get('code_challenge_method');
    if (challenge !== undefined && (method !== 'S256' || !/^[A-Za-z0-9_-]{43}$/.test(challenge))) {
      return back({ error: 'invalid_request', error_description: 'Only the S256 code challenge method is accepted.' });
    }
    if (!browser) return send(res, 200, 'text/html; charset=utf-8', '<h1>Sign in to GitHub</h1>');
    if (browser.deny) {
      return back({
        error: 'access_denied',
        error_description: 'The user has denied your application access.',
        error_uri: `${DOCS}/apps/managing-oauth-apps/troubleshooting-authorization-request-errors/#access-denied`,
      });
    }
    const code = randomBytes(10).toString('hex');
    const scopes = (q.get('scope') ?? '').split(/[\s,]+/).filter(Boolean);
    codes.set(code, { userId: browser.userId, clientId, redirectUri: given, challenge, scopes, issuedAt: Date.now(), used: false });
    back({ code });
  }

  function tokenEndpoint(req: IncomingMessage, res: ServerResponse, url: URL, body: string) {
    const p = new URLSearchParams(url.search);
    const type = req.headers['content-type'] ?? '';
    let form: Record<string, unknown>;
    try {
      form = type.startsWith('application/json')
        ? (JSON.parse(body || '{}') as Record<string, unknown>)
        : Object.fromEntries(new URLSearchParams(body));
    } catch {
      return json(res, 400, { message: 'Problems parsing JSON', documentation_url: `${DOCS}/rest` });
    }
    for (const [k, v] of Object.entries(form)) if (typeof v === 'string') p.set(k, v);
    const wantsJson = (req.headers.accept ?? '').includes('application/json');
    const reply = (fields: Record<string, string>) =>
      wantsJson
        ? json(res, 200, fields)
        : send(res, 200, 'application/x-www-form-urlencoded; charset=utf-8', new URLSearchParams(fields).toString());
    const error = (error: string, error_description: string, anchor: string) =>
      reply({
        error,
        error_description,
        error_uri: `${DOCS}/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#${anchor}`,
      });
    if (p.get('client_id') !== clientId || p.get('client_secret') !== clientSecret) {
      return error(
        'incorrect_client_credentials',
        'The client_id and/or client_secret passed are incorrect.',
        'incorrect-client-credentials',
      );
    }
    const badCode = () => error('bad_verification_code', 'The code passed is incorrect or expired.', 'bad-verification-code');
    const grant = codes.get(p.get('code') ?? '');
    if (!grant || grant.used || grant.clientId !== clientId || Date.now() - grant.issuedAt > CODE_TTL_MS) return badCode();
    grant.used = true;
    const redirectUri = p.get('redirect_uri');
    if (redirectUri !== null && (grant.redirectUri ?? callback.href) !== redirectUri) {
      return error(
        'redirect_uri_mismatch',
        'The redirect_uri MUST match the registered callback URL for this application.',
        'redirect-uri-mismatch2',
      );
    }
    if (grant.challenge !== undefined) {
      const verifier = p.get('code_verifier') ?? '';
      if (createHash('sha256').update(verifier).digest('base64url') !== grant.challenge) return badCode();
    }
    const user = users.get(grant.userId);
    if (!user || (checks.unverifiedEmailAtTokenEndpoint && !user.emails.some((e) => e.primary && e.verified))) {
      return error('unverified_user_email', 'The user must have a verified primary email.', 'unverified-user-email');
    }
    const token = `gho_${randomBytes(27).toString('base64url').replace(/-/g, 'A').replace(/_/g, 'B')}`;
    tokens.set(token, { userId: grant.userId, scopes: grant.scopes });
    reply({ access_token: token, scope: grant.scopes.join(','), token_type: 'bearer' });
  }

  type ApiHandler = (ctx: { res: ServerResponse; url: URL; user: StandinUser; scopes: string[]; params: string[] }) => void;
  /** What every REST endpoint checks first: a User-Agent, the API version, the token. */
  function api(handler: ApiHandler): Handler {
    return (req, res, url, _body, params) => {
      if (!req.headers['user-agent']) {
        return send(
          res,
          403,
          'text/plain',
          'Request forbidden by administrative rules. Please make sure your request has a User-Agent header',
        );
      }
      const version = req.headers['x-github-api-version'];
      if (version !== undefined && version !== API_VERSION) {
        return json(res, 400, {
          message: `Unsupported 'X-GitHub-Api-Version' header: ${String(version)}`,
          documentation_url: `${DOCS}/rest`,
        });
      }
      const m = /^(?:Bearer|token) (\S+)$/i.exec(req.headers.authorization ?? '');
      const token = m ? tokens.get(m[1]!) : undefined;
      const user = token && users.get(token.userId);
      if (!token || !user) return json(res, 401, { message: 'Bad credentials', documentation_url: `${DOCS}/rest`, status: '401' });
      res.setHeader('x-oauth-scopes', token.scopes.join(', '));
      handler({ res, url, user, scopes: token.scopes, params });
    };
  }
  const needScope = (res: ServerResponse, scopes: string[], accepted: string[]) => {
    if (accepted.some((s) => scopes.includes(s))) return true;
    res.setHeader('x-accepted-oauth-scopes', accepted.join(', '));
    json(res, 403, { message: 'Resource not accessible by integration', documentation_url: `${DOCS}/rest` });
    return false;
  };
  const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
  const userJson = (u: StandinUser) => ({
    login: u.login,
    id: u.id,
    node_id: `U_${Buffer.from(String(u.id)).toString('base64url')}`,
    avatar_url: `https://avatars.githubusercontent.com/u/${u.id}?v=4`,
    url: `${base}/api/v3/users/${u.login}`,
    html_url: `${base}/${u.login}`,
    type: 'User',
    site_admin: false,
  });

  function userEndpoint({ res, user }: Parameters<ApiHandler>[0]) {
    json(res, 200, { ...userJson(user), name: user.name ?? null, company: null, blog: '', location: null, email: null, bio: null });
  }

  function emailsEndpoint({ res, url, user, scopes }: Parameters<ApiHandler>[0]) {
    if (!needScope(res, scopes, ['user', 'user:email'])) return;
    const perPage = Math.min(100, Math.max(1, Number(url.searchParams.get('per_page') ?? 30) || 30));
    const page = Math.max(1, Number(url.searchParams.get('page') ?? 1) || 1);
    const all = user.emails.map((e) => ({ ...e, visibility: e.primary ? 'private' : null }));
    if (page * perPage < all.length) {
      res.setHeader('link', `<${base}/api/v3/user/emails?per_page=${perPage}&page=${page + 1}>; rel="next"`);
    }
    json(res, 200, all.slice((page - 1) * perPage, page * perPage));
  }

  function orgMembershipEndpoint({ res, user, scopes, params: [org = ''] }: Parameters<ApiHandler>[0]) {
    if (!needScope(res, scopes, ['read:org', 'write:org', 'admin:org'])) return;
    const m = user.orgs?.find((o) => same(o.org, org));
    if (!m) return json(res, 404, { message: 'Not Found', documentation_url: `${DOCS}/rest`, status: '404' });
    json(res, 200, {
      url: `${base}/api/v3/orgs/${m.org}/memberships/${user.login}`,
      state: m.state ?? 'active',
      role: m.role ?? 'member',
      organization_url: `${base}/api/v3/orgs/${m.org}`,
      organization: { login: m.org, id: 9000, url: `${base}/api/v3/orgs/${m.org}` },
      user: userJson(user),
    });
  }

  function teamMembershipEndpoint({ res, user, scopes, params: [org = '', team = '', username = ''] }: Parameters<ApiHandler>[0]) {
    if (!needScope(res, scopes, ['read:org', 'write:org', 'admin:org'])) return;
    const notFound = () => json(res, 404, { message: 'Not Found', documentation_url: `${DOCS}/rest`, status: '404' });
    // The team is visible to the caller only as a member of its organization.
    if (!user.orgs?.some((o) => same(o.org, org) && (o.state ?? 'active') === 'active')) return notFound();
    const member = [...users.values()].find((u) => same(u.login, username));
    const m = member?.orgs?.find((o) => same(o.org, org));
    if (!member || !m?.teams?.some((t) => same(t, team))) return notFound();
    json(res, 200, { url: `${base}/api/v3/teams/1/memberships/${member.login}`, role: 'member', state: m.state ?? 'active' });
  }

  return {
    url: base,
    apiBase: `${base}/api/v3`,
    clientId,
    clientSecret,
    users,
    requests,
    checks,
    signIn(userId, o = {}) {
      if (!users.has(userId)) throw new Error(`no stand-in user ${userId}`);
      browser = { userId, deny: o.deny === true };
    },
    fault(endpoint, fault) {
      if (fault === undefined) faults.delete(endpoint);
      else faults.set(endpoint, fault);
    },
    async authorize(authorizationUrl) {
      const res = await fetch(authorizationUrl, { redirect: 'manual' });
      await res.arrayBuffer();
      const location = res.headers.get('location');
      if (res.status !== 302 || !location) throw new Error(`the stand-in's authorize endpoint answered ${res.status}, no redirect`);
      return new URL(location);
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function send(res: ServerResponse, status: number, contentType: string, body: string, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), ...headers }).end(body);
}

function json(res: ServerResponse, status: number, value: unknown) {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(value));
}

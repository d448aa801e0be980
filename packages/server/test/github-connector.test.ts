/**
 * The GitHub connector's core (src/connectors/github.ts) against a stand-in that answers GitHub's documented
 * endpoints in this process (test/support/github-standin.ts): github.com cannot be reached from here. Each
 * test has its own stand-in; timeouts are short through the sign-in's options.
 */
import { createHash, randomBytes } from 'node:crypto';
import { type GithubStandin, type StandinUser, startGithubStandin } from '@authcli/test-support/github-standin';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type GithubSettings,
  type GithubSignInOptions,
  githubAuthorizationUrl,
  githubEndpoints,
  githubSignIn,
  parseGithubOrgRule,
} from '../src/connectors/github.js';
import { GITHUB_RESPONSE_MAX_BYTES } from '../src/config/defaults.js';
import { InputError } from '../src/util/input-error.js';

const CALLBACK = 'https://auth.example.com/connectors/github/callback';

const octocat: StandinUser = {
  id: 583231,
  login: 'octocat',
  name: 'The Octocat',
  emails: [
    { email: 'octocat@example.com', primary: true, verified: true },
    { email: 'octo@work.example', primary: false, verified: true },
  ],
  orgs: [
    { org: 'acme', teams: ['platform'] },
    { org: 'pending-co', state: 'pending' },
  ],
};
const outsider: StandinUser = { id: 77, login: 'outsider', emails: [{ email: 'out@example.com', primary: true, verified: true }] };

let standin: GithubStandin;
beforeEach(async () => {
  standin = await startGithubStandin({ users: [octocat, outsider], callbackUrl: CALLBACK });
});
afterEach(async () => {
  await standin.close();
});

const settings = (over: Partial<GithubSettings> = {}): GithubSettings => ({
  clientId: standin.clientId,
  clientSecret: standin.clientSecret,
  orgs: [],
  apiBase: standin.apiBase,
  ...over,
});
const newVerifier = () => randomBytes(32).toString('base64url');
const challengeOf = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/** A browser's round trip through the stand-in's authorize endpoint: the code GitHub sends back. */
async function codeFor(userId: number, s: GithubSettings, verifier: string): Promise<string> {
  standin.signIn(userId);
  const state = randomBytes(16).toString('base64url');
  const back = await standin.authorize(githubAuthorizationUrl(s, { redirectUri: CALLBACK, state, codeChallenge: challengeOf(verifier) }));
  expect(back.origin + back.pathname).toBe(CALLBACK);
  expect(back.searchParams.get('state')).toBe(state);
  const code = back.searchParams.get('code');
  expect(code).toMatch(/^[0-9a-f]{20}$/);
  return code!;
}

async function signInAs(userId: number, s = settings(), opts: GithubSignInOptions = {}) {
  const verifier = newVerifier();
  const code = await codeFor(userId, s, verifier);
  return githubSignIn(s, { code, redirectUri: CALLBACK, codeVerifier: verifier }, { timeoutMs: 2000, ...opts });
}

describe('GitHub connector: signing in', () => {
  it('a member signs in: the numeric id is the subject, the profile and the verified primary email are the claims', async () => {
    const outcome = await signInAs(octocat.id, settings({ orgs: [{ org: 'acme' }] }));
    expect(outcome).toEqual({
      kind: 'ok',
      subject: '583231',
      claims: {
        preferred_username: 'octocat',
        email: 'octocat@example.com',
        email_verified: true,
        name: 'The Octocat',
        picture: 'https://avatars.githubusercontent.com/u/583231?v=4',
        profile: `${standin.url}/octocat`,
      },
    });
    // What went over the wire: the code with its verifier; the API with GitHub's headers and the token only in Authorization.
    const exchange = standin.requests.find((r) => r.endpoint === 'access_token')!;
    expect(exchange.headers.accept).toBe('application/json');
    expect(new URLSearchParams(exchange.body).get('code_verifier')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const apiCalls = standin.requests.filter((r) => r.url.startsWith('/api/v3/'));
    expect(apiCalls.map((r) => r.url)).toEqual(['/api/v3/user', '/api/v3/user/emails?per_page=100', '/api/v3/user/memberships/orgs/acme']);
    for (const r of apiCalls) {
      expect(r.headers.accept).toBe('application/vnd.github+json');
      expect(r.headers['x-github-api-version']).toBe('2022-11-28');
      expect(r.headers.authorization).toMatch(/^Bearer gho_[A-Za-z0-9]+$/);
      expect(r.headers['user-agent']).toBeTruthy();
      expect(r.url).not.toContain('gho_');
    }
  });

  it('without organization rules anyone signs in, and no membership is asked about', async () => {
    const outcome = await signInAs(outsider.id);
    expect(outcome).toMatchObject({ kind: 'ok', subject: '77', claims: { preferred_username: 'outsider', email: 'out@example.com' } });
    expect(outcome.kind === 'ok' && 'name' in outcome.claims).toBe(false);
    expect(standin.requests.some((r) => r.url.includes('memberships'))).toBe(false);
  });

  it('a renamed login signs in as the same subject, with the new preferred_username', async () => {
    const s = settings({ orgs: [{ org: 'acme', team: 'platform' }] });
    const before = await signInAs(octocat.id, s);
    standin.users.get(octocat.id)!.login = 'octo-renamed';
    const after = await signInAs(octocat.id, s);
    expect(before).toMatchObject({ kind: 'ok', subject: '583231', claims: { preferred_username: 'octocat' } });
    expect(after).toMatchObject({ kind: 'ok', subject: '583231', claims: { preferred_username: 'octo-renamed' } });
    expect(standin.requests.at(-1)!.url).toBe('/api/v3/orgs/acme/teams/platform/memberships/octo-renamed');
  });

  it('a team member signs in; a member of the second organization allowed signs in', async () => {
    expect(await signInAs(octocat.id, settings({ orgs: [{ org: 'acme', team: 'platform' }] }))).toMatchObject({ kind: 'ok' });
    expect(await signInAs(octocat.id, settings({ orgs: [{ org: 'elsewhere' }, { org: 'ACME' }] }))).toMatchObject({ kind: 'ok' });
  });
});

describe('GitHub connector: refusals', () => {
  it('no verified primary email: GitHub refuses the code exchange (unverified_user_email), so does the connector', async () => {
    standin.users.get(outsider.id)!.emails = [{ email: 'out@example.com', primary: true, verified: false }];
    const outcome = await signInAs(outsider.id);
    expect(outcome).toEqual({ kind: 'refused', reason: expect.stringMatching(/no verified primary email/) });
  });

  it('no primary email in /user/emails: refused', async () => {
    standin.checks.unverifiedEmailAtTokenEndpoint = false;
    standin.users.get(outsider.id)!.emails = [{ email: 'out@example.com', primary: false, verified: true }];
    expect(await signInAs(outsider.id)).toEqual({ kind: 'refused', reason: expect.stringMatching(/no primary email/) });
    standin.users.get(outsider.id)!.emails = [];
    expect(await signInAs(outsider.id)).toEqual({ kind: 'refused', reason: expect.stringMatching(/no primary email/) });
  });

  it('an unverified primary with a verified secondary: refused, the primary must be verified', async () => {
    standin.checks.unverifiedEmailAtTokenEndpoint = false;
    standin.users.get(octocat.id)!.emails = [
      { email: 'octo@work.example', primary: false, verified: true },
      { email: 'octocat@example.com', primary: true, verified: false },
    ];
    expect(await signInAs(octocat.id)).toEqual({ kind: 'refused', reason: expect.stringMatching(/primary email address is not verified/) });
  });

  it('outside the organization: refused', async () => {
    const outcome = await signInAs(outsider.id, settings({ orgs: [{ org: 'acme' }] }));
    // The person is told only that they may not use this service; which organization would do is for the log.
    expect(outcome).toEqual({
      kind: 'refused',
      reason: 'your account may not use this service',
      detail: expect.stringMatching(/not a member of acme/),
    });
  });

  it('in the organization but not the team: refused; an invitation not yet accepted: refused', async () => {
    standin.users.get(octocat.id)!.orgs![0]!.teams = [];
    expect(await signInAs(octocat.id, settings({ orgs: [{ org: 'acme', team: 'platform' }] }))).toEqual({
      kind: 'refused',
      reason: 'your account may not use this service',
      detail: expect.stringMatching(/not a member of acme:platform/),
    });
    expect(await signInAs(octocat.id, settings({ orgs: [{ org: 'pending-co' }] }))).toEqual({
      kind: 'refused',
      reason: 'your account may not use this service',
      detail: expect.stringMatching(/pending-co is an invitation not yet accepted/),
    });
  });

  it('an organization that keeps its data from the app (403, not a rate limit): refused, saying so', async () => {
    standin.fault('org_membership', { status: 403, body: JSON.stringify({ message: 'OAuth App access restrictions' }) });
    expect(await signInAs(octocat.id, settings({ orgs: [{ org: 'acme' }] }))).toEqual({
      kind: 'refused',
      reason: 'your account may not use this service',
      detail: expect.stringMatching(/does not let this app read acme's memberships/),
    });
  });

  it('a code used twice: the second exchange is refused (bad_verification_code)', async () => {
    const s = settings();
    const verifier = newVerifier();
    const code = await codeFor(octocat.id, s, verifier);
    const p = { code, redirectUri: CALLBACK, codeVerifier: verifier };
    expect(await githubSignIn(s, p)).toMatchObject({ kind: 'ok' });
    expect(await githubSignIn(s, p)).toEqual({ kind: 'refused', reason: expect.stringMatching(/bad_verification_code/) });
  });

  it('a wrong PKCE verifier: refused, and GitHub asked for no user', async () => {
    const s = settings();
    const code = await codeFor(octocat.id, s, newVerifier());
    const outcome = await githubSignIn(s, { code, redirectUri: CALLBACK, codeVerifier: newVerifier() });
    expect(outcome).toEqual({ kind: 'refused', reason: expect.stringMatching(/bad_verification_code/) });
    expect(standin.requests.some((r) => r.url.startsWith('/api/'))).toBe(false);
  });

  it('a wrong client secret: refused (incorrect_client_credentials)', async () => {
    const outcome = await signInAs(octocat.id, settings({ clientSecret: 'not-the-secret' }));
    expect(outcome).toEqual({ kind: 'refused', reason: expect.stringMatching(/incorrect_client_credentials/) });
  });
});

describe('GitHub connector: GitHub unavailable', () => {
  it('GitHub hanging: unavailable within the timeout', async () => {
    for (const endpoint of ['access_token', 'emails'] as const) {
      standin.fault(endpoint, 'hang');
      const started = performance.now();
      const outcome = await signInAs(octocat.id, settings(), { timeoutMs: 300 });
      const elapsed = performance.now() - started;
      expect(outcome).toEqual({ kind: 'unavailable', reason: expect.stringMatching(/did not answer within 300 ms/) });
      expect(elapsed).toBeGreaterThanOrEqual(290);
      expect(elapsed).toBeLessThan(2000);
      standin.fault(endpoint, undefined);
    }
  });

  it('each answer in time but the whole sign-in too slow: unavailable at the deadline', async () => {
    const s = settings({ orgs: [{ org: 'acme' }] });
    const verifier = newVerifier();
    const code = await codeFor(octocat.id, s, verifier);
    standin.fault('all', { delayMs: 250 });
    const started = performance.now();
    const outcome = await githubSignIn(s, { code, redirectUri: CALLBACK, codeVerifier: verifier }, { timeoutMs: 2000, deadlineMs: 600 });
    const elapsed = performance.now() - started;
    expect(outcome).toEqual({ kind: 'unavailable', reason: expect.stringMatching(/in time/) });
    expect(elapsed).toBeGreaterThanOrEqual(590);
    expect(elapsed).toBeLessThan(2000);
  });

  it('500 or malformed JSON from any endpoint: unavailable, and no reason names the token', async () => {
    for (const endpoint of ['access_token', 'user', 'emails', 'org_membership'] as const) {
      for (const fault of ['error500', 'malformed'] as const) {
        standin.fault(endpoint, fault);
        const outcome = await signInAs(octocat.id, settings({ orgs: [{ org: 'acme' }] }));
        expect(outcome, `${endpoint} ${fault}`).toEqual({ kind: 'unavailable', reason: expect.any(String) });
        expect(outcome.kind !== 'ok' && outcome.reason).not.toMatch(/gho_|secret/i);
        standin.fault(endpoint, undefined);
      }
    }
  });

  it('answers of another shape than GitHub documents: unavailable', async () => {
    const wrong: [Parameters<GithubStandin['fault']>[0], unknown][] = [
      ['access_token', { access_token: 42, token_type: 'bearer' }],
      ['access_token', { access_token: 'gho_abc', token_type: 'mac', scope: 'user:email' }],
      ['access_token', { error: { nested: true } }],
      ['user', { id: '583231', login: 'octocat' }],
      ['user', { id: 583231, login: 'octo cat' }],
      ['user', [{ id: 583231, login: 'octocat' }]],
      ['emails', { email: 'octocat@example.com', primary: true, verified: true }],
      ['emails', [{ email: 'octocat@example.com', primary: 'yes', verified: true }]],
      ['emails', [{ email: 'not an address', primary: true, verified: true }]],
      ['org_membership', { state: 1 }],
    ];
    for (const [endpoint, body] of wrong) {
      standin.fault(endpoint, { status: 200, body: JSON.stringify(body) });
      expect(await signInAs(octocat.id, settings({ orgs: [{ org: 'acme' }] })), JSON.stringify(body)).toMatchObject({
        kind: 'unavailable',
      });
      standin.fault(endpoint, undefined);
    }
    // JSON, but not said to be: the token endpoint's form-encoded answer is not read as JSON.
    standin.fault('access_token', {
      status: 200,
      body: 'access_token=gho_x&token_type=bearer',
      contentType: 'application/x-www-form-urlencoded',
    });
    expect(await signInAs(octocat.id)).toMatchObject({ kind: 'unavailable' });
  });

  it('an answer larger than the bound, declared or streamed: unavailable', async () => {
    const huge = JSON.stringify({ id: 583231, login: 'octocat', bio: 'x'.repeat(GITHUB_RESPONSE_MAX_BYTES) });
    for (const chunked of [false, true]) {
      standin.fault('user', { status: 200, body: huge, chunked });
      expect(await signInAs(octocat.id)).toEqual({ kind: 'unavailable', reason: expect.stringMatching(/more than 65536 bytes/) });
    }
  });

  it('rate-limited (403 with no requests left, or 429): unavailable, not refused', async () => {
    const s = settings({ orgs: [{ org: 'acme' }] });
    standin.fault('org_membership', {
      status: 403,
      body: '{"message":"API rate limit exceeded"}',
      headers: { 'x-ratelimit-remaining': '0' },
    });
    expect(await signInAs(octocat.id, s)).toEqual({ kind: 'unavailable', reason: expect.stringMatching(/rate-limited/) });
    standin.fault('user', { status: 429, body: '{"message":"slow down"}' });
    expect(await signInAs(octocat.id, s)).toEqual({ kind: 'unavailable', reason: expect.stringMatching(/rate-limited/) });
  });

  it('one organization unanswered and none other lets the person in: unavailable; another that does: ok', async () => {
    standin.fault('team_membership', 'error500');
    expect(await signInAs(octocat.id, settings({ orgs: [{ org: 'acme', team: 'platform' }, { org: 'elsewhere' }] }))).toMatchObject({
      kind: 'unavailable',
    });
    expect(await signInAs(octocat.id, settings({ orgs: [{ org: 'acme', team: 'platform' }, { org: 'acme' }] }))).toMatchObject({
      kind: 'ok',
    });
  });

  it('a transport that fails: unavailable, the reason without the error message', async () => {
    const failing: typeof fetch = async () => {
      throw new TypeError('fetch failed: https://secret.example/?client_secret=hunter2');
    };
    const outcome = await githubSignIn(settings(), { code: 'c', redirectUri: CALLBACK, codeVerifier: newVerifier() }, { fetch: failing });
    expect(outcome).toEqual({ kind: 'unavailable', reason: "GitHub's token endpoint could not be reached (TypeError)" });
  });
});

describe('GitHub connector: settings and URLs', () => {
  const base = { clientId: 'Iv1.abc', clientSecret: 's', orgs: [] };
  const p = { redirectUri: CALLBACK, state: 'st', codeChallenge: challengeOf(newVerifier()) };

  it('github.com by default: the authorize URL and its parameters', () => {
    const url = new URL(githubAuthorizationUrl(base, p));
    expect(url.origin + url.pathname).toBe('https://github.com/login/oauth/authorize');
    expect(Object.fromEntries(url.searchParams)).toEqual({
      client_id: 'Iv1.abc',
      redirect_uri: CALLBACK,
      scope: 'read:user user:email',
      state: 'st',
      code_challenge: p.codeChallenge,
      code_challenge_method: 'S256',
    });
    expect(new URL(githubAuthorizationUrl({ ...base, orgs: [{ org: 'acme' }] }, p)).searchParams.get('scope')).toBe(
      'read:user user:email read:org',
    );
  });

  it('GitHub Enterprise: the web base is derived from apiBase, and every request goes to one or the other', async () => {
    const ghe = { ...base, orgs: [{ org: 'acme', team: 'platform' }], apiBase: 'https://ghe.example.com/api/v3' };
    const url = new URL(githubAuthorizationUrl(ghe, p));
    expect(url.origin + url.pathname).toBe('https://ghe.example.com/login/oauth/authorize');
    expect(githubEndpoints({ apiBase: 'https://ghe.example.com/api/v3/' })).toEqual({
      web: 'https://ghe.example.com',
      api: 'https://ghe.example.com/api/v3',
    });
    expect(githubEndpoints({ apiBase: 'https://api.octocorp.ghe.com' })).toEqual({
      web: 'https://octocorp.ghe.com',
      api: 'https://api.octocorp.ghe.com',
    });

    // The requests a sign-in makes, through an injected transport answering as GitHub would.
    const seen: string[] = [];
    const answers: Record<string, unknown> = {
      'https://ghe.example.com/login/oauth/access_token': {
        access_token: 'gho_x',
        token_type: 'bearer',
        scope: 'read:org,read:user,user:email',
      },
      'https://ghe.example.com/api/v3/user': { id: 5, login: 'mona' },
      'https://ghe.example.com/api/v3/user/emails?per_page=100': [{ email: 'mona@ghe.example.com', primary: true, verified: true }],
      'https://ghe.example.com/api/v3/orgs/acme/teams/platform/memberships/mona': { state: 'active', role: 'member' },
    };
    const transport: typeof fetch = async (input) => {
      const u = String(input);
      seen.push(u);
      return Response.json(answers[u] ?? { message: 'Not Found' }, { status: u in answers ? 200 : 404 });
    };
    const outcome = await githubSignIn(ghe, { code: 'c', redirectUri: CALLBACK, codeVerifier: newVerifier() }, { fetch: transport });
    expect(outcome).toMatchObject({ kind: 'ok', subject: '5', claims: { preferred_username: 'mona', email: 'mona@ghe.example.com' } });
    expect(seen).toEqual(Object.keys(answers));
  });

  it('an apiBase that is not GitHub API: an InputError', () => {
    for (const apiBase of [
      'http://ghe.example.com/api/v3',
      'https://ghe.example.com/',
      'https://ghe.example.com/api/v4',
      'nonsense',
      'https://u:p@ghe.example.com/api/v3',
    ]) {
      expect(() => githubEndpoints({ apiBase }), apiBase).toThrow(InputError);
    }
  });

  it('--org ORG[:TEAM]', () => {
    expect(parseGithubOrgRule('acme')).toEqual({ org: 'acme' });
    expect(parseGithubOrgRule('acme:platform-team')).toEqual({ org: 'acme', team: 'platform-team' });
    for (const bad of ['', 'ac me', '-acme', 'acme:', 'acme:a:b', 'a'.repeat(40), 'acme:te/am']) {
      expect(() => parseGithubOrgRule(bad), bad).toThrow(InputError);
    }
  });
});

describe('the stand-in answers as GitHub documents (so the tests above can fail)', () => {
  const p = () => ({ redirectUri: CALLBACK, state: 'st', codeChallenge: challengeOf(newVerifier()) });

  it('authorize: an unknown client_id is a 404 page; a redirect_uri off the callback comes back as redirect_uri_mismatch', async () => {
    standin.signIn(octocat.id);
    const unknown = await fetch(githubAuthorizationUrl(settings({ clientId: 'Iv1.unknown' }), p()), { redirect: 'manual' });
    expect(unknown.status).toBe(404);
    await unknown.arrayBuffer();
    const elsewhere = await standin.authorize(githubAuthorizationUrl(settings(), { ...p(), redirectUri: 'https://evil.example/cb' }));
    expect(elsewhere.origin + elsewhere.pathname).toBe(CALLBACK);
    expect(elsewhere.searchParams.get('error')).toBe('redirect_uri_mismatch');
    expect(elsewhere.searchParams.get('code')).toBeNull();
    const beneath = await standin.authorize(githubAuthorizationUrl(settings(), { ...p(), redirectUri: `${CALLBACK}/deeper` }));
    expect(beneath.searchParams.get('code')).toMatch(/^[0-9a-f]{20}$/);
    standin.signIn(octocat.id, { deny: true });
    const denied = await standin.authorize(githubAuthorizationUrl(settings(), p()));
    expect([denied.searchParams.get('error'), denied.searchParams.get('state')]).toEqual(['access_denied', 'st']);
  });

  it('token: another redirect_uri than the code was given for is redirect_uri_mismatch', async () => {
    const verifier = newVerifier();
    const code = await codeFor(octocat.id, settings(), verifier);
    const outcome = await githubSignIn(settings(), { code, redirectUri: `${CALLBACK}/deeper`, codeVerifier: verifier });
    expect(outcome).toEqual({ kind: 'refused', reason: expect.stringMatching(/redirect_uri_mismatch/) });
  });

  it('the REST API: no User-Agent is 403, another API version 400, no token 401', async () => {
    expect((await fetch(`${standin.apiBase}/user`, { headers: { 'user-agent': '' } })).status).toBe(403);
    expect((await fetch(`${standin.apiBase}/user`, { headers: { 'user-agent': 't', 'x-github-api-version': '1999-01-01' } })).status).toBe(
      400,
    );
    expect((await fetch(`${standin.apiBase}/user`, { headers: { 'user-agent': 't', authorization: 'Bearer gho_nope' } })).status).toBe(401);
  });
});

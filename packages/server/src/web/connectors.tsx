import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { calculatePKCECodeChallenge } from 'oauth4webapi';
import { CONNECTOR_STATE_TTL_MS, CONNECTOR_TIMEOUT_MS, SIGNIN_USERNAME_MAX, USERNAME_PATTERN } from '../config/defaults.js';
import { credentialChangeOf } from '../oauth/credential-change.js';
import { clientAddress } from '../http/client-ip.js';
import { FEDERATED_ACR } from '../oauth/acr.js';
import { pageForm, pageQuery } from '../http/form.js';
import { authenticateLdap, directoryFacing } from '../connectors/ldap.js';
import { retryAfterText } from './retry-after.js';
import { LdapSignInPage, SwitchAccountPage } from './connector-views.js';
import { federatedUser, NO_PASSWORD, type UpstreamIdentity } from '../connectors/accounts.js';
import { githubAuthorizationUrl, githubSignIn } from '../connectors/github.js';
import { oidcAuthorizationUrl, oidcCallback, UpstreamMetadata, type UpstreamOutcome } from '../connectors/oidc.js';
import { type Connector, connectorOf } from '../connectors/registry.js';
import { randomToken, sha256Hex } from '../util/crypto.js';
import type { WebContext } from './context.js';
import { reauthFor } from './continuation.js';
import type { CurrentSession } from './session.js';
import { sendPage } from './render.js';
import { MessagePage } from './views.js';

const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/**
 * Sign-in through a connector (connectors/): `GET /connectors/<id>/start` sends the browser to the upstream
 * with a fresh state, PKCE verifier and nonce kept here (bound to this browser by a cookie of their own, used
 * once, for {@link CONNECTOR_STATE_TTL_MS}); `GET /connectors/<id>/callback` (the redirect URI an operator
 * registers upstream) checks the answer, signs the person in as the user linked to their upstream account
 * (made at the first sign-in), and resumes what waited. Whatever goes wrong is a page that says what
 * happened; local accounts are never touched.
 */
export async function connectorRoutes(app: FastifyInstance, ctx: WebContext): Promise<void> {
  const { store, config, sessions, continuations, trustedDevices, limits } = ctx;
  /** Whether this session may link or unlink an upstream account now (oauth/credential-change.ts). */
  const mayChangeCredentials = (c: CurrentSession) => credentialChangeOf(store, c, config.now());
  /** The account page's history: a link or unlink, when and from where. */
  const recordLink = (req: FastifyRequest, userId: string, kind: 'connector-linked' | 'connector-unlinked', connectorId: string) =>
    store.signInEvents.recordCredential(userId, kind, connectorId, clientAddress(req), config.now());
  const secure = config.issuer.startsWith('https:');
  const cookieName = secure ? '__Host-authcli_upstream' : 'authcli_upstream';
  const redirectUri = (id: string) => `${config.issuer}/connectors/${id}/callback`;
  // Upstream discovery kept between sign-ins (and with it the upstream's keys), for this instance.
  const timeout = { timeoutMs: CONNECTOR_TIMEOUT_MS, metadata: new UpstreamMetadata(config.now) };

  const problem = (reply: FastifyReply, status: number, title: string, message: string) =>
    sendPage(reply, <MessagePage title={title} kind="error" message={message} />, status);

  async function load(req: FastifyRequest, reply: FastifyReply): Promise<Connector | undefined> {
    const { id } = req.params as { id: string };
    const row = await store.connectors.get(id);
    if (!row) {
      await problem(
        reply,
        404,
        'Unknown sign-in service',
        'This sign-in service does not exist here (any more). Go back and choose another way to sign in.',
      );
      return undefined;
    }
    try {
      return connectorOf(row, config.keyEncryptionKey);
    } catch (err) {
      // A secret this server cannot decrypt (another key-encryption key): the operator's to fix, not a 500.
      req.log.error({ reqId: req.id, connector: row.id, reason: (err as Error).message }, 'connector unusable');
      await problem(
        reply,
        503,
        'Sign-in service unavailable',
        `${row.name} cannot be used right now. Try again later, or sign in another way.`,
      );
      return undefined;
    }
  }

  /** Sends the browser to the upstream, for a sign-in (resuming `continueId`) or to link the signed-in `linkUserId`. */
  async function goUpstream(
    req: FastifyRequest,
    reply: FastifyReply,
    connector: Connector,
    p: { continueId?: string | undefined; linkUserId?: string },
  ) {
    const state = randomToken(32);
    const codeVerifier = randomToken(32);
    const nonce = randomToken(32);
    // The browser's binding value is kept while it lasts: two round trips in one browser (two tabs) both come back.
    const existing = req.cookies[cookieName];
    const browser = existing && TOKEN.test(existing) ? existing : randomToken(32);
    const target =
      connector.type === 'oidc'
        ? await oidcAuthorizationUrl(connector.settings, { redirectUri: redirectUri(connector.id), state, codeVerifier, nonce }, timeout)
        : new URL(
            githubAuthorizationUrl(
              { ...(connector as Connector & { type: 'github' }).settings, clientSecret: connector.secret },
              { redirectUri: redirectUri(connector.id), state, codeChallenge: await calculatePKCECodeChallenge(codeVerifier) },
            ),
          );
    if (!(target instanceof URL)) return failed(reply, connector, target);
    await store.connectors.addState({
      state_hash: sha256Hex(state),
      connector_id: connector.id,
      browser_hash: sha256Hex(browser),
      code_verifier: codeVerifier,
      nonce,
      continue_id: p.continueId !== undefined && TOKEN.test(p.continueId) ? p.continueId : null,
      link_user_id: p.linkUserId ?? null,
      expires_at: config.now() + CONNECTOR_STATE_TTL_MS,
    });
    // SameSite=Lax: the upstream's redirect back is a top-level navigation, which carries it.
    // Path / as the __Host- prefix requires on https (a browser refuses such a cookie with any other path).
    reply.setCookie(cookieName, browser, {
      path: '/',
      httpOnly: true,
      sameSite: 'lax',
      secure,
      maxAge: CONNECTOR_STATE_TTL_MS / 1000,
    });
    return reply.redirect(target.href, 303);
  }

  /** Starts a sign-in round trip; a browser already signed in confirms first (below). */
  async function start(req: FastifyRequest, reply: FastifyReply, continueId: string | undefined) {
    const connector = await load(req, reply);
    if (!connector) return reply;
    if (connector.type === 'ldap') return reply.redirect(`/connectors/${connector.id}/signin`, 303);
    // Each round trip is a row kept 15 minutes and a request to the upstream: counted per client IP like the
    // sign-in continuations a signed-out visitor makes.
    if (!(await limits.continuation(clientAddress(req))).admitted) {
      return problem(reply, 429, 'Too many attempts', 'Too many sign-ins started from this address. Try again in a few minutes.');
    }
    return goUpstream(req, reply, connector, { continueId });
  }

  app.get('/connectors/:id/start', async (req, reply) => {
    const continueId = pageQuery(req).continue;
    const current = await sessions.current(req);
    if (!current) return start(req, reply, continueId);
    // Signed in already: a link on another site must not switch this browser to another account (an upstream
    // that approves at once would do it unseen). The person confirms with a form of this server's.
    const connector = await load(req, reply);
    if (!connector) return reply;
    return sendPage(
      reply,
      <SwitchAccountPage
        csrf={reply.generateCsrf()}
        connector={{ id: connector.id, name: connector.name }}
        username={current.user.username}
        continueId={continueId !== undefined && TOKEN.test(continueId) ? continueId : undefined}
      />,
    );
  });

  app.post('/connectors/:id/start', { preHandler: app.csrfProtection }, async (req, reply) => start(req, reply, pageForm(req).continue));

  // Linking an upstream account to the signed-in user (the account page): a CSRF-protected POST, so no page of
  // another site can start it. An LDAP connector's link checks the directory's username and password here.
  app.post('/connectors/:id/link', { preHandler: app.csrfProtection }, async (req, reply) => {
    const current = await sessions.current(req);
    if (!current) return reply.redirect(await continuations.signInUrl(req, reply, { kind: 'page', page: 'account' }), 303);
    const connector = await load(req, reply);
    if (!connector) return reply;
    // Linking gives an upstream account a way into this one: only right after a sign-in here, with a passkey once
    // the account has one (a session left open on a shared computer, or opened with a stolen password, cannot be
    // given a new way in by whoever sits at it).
    const change = await mayChangeCredentials(current);
    if (!change.allowed) return reply.redirect(await continuations.signInUrl(req, reply, reauthFor(change.needs)), 303);
    if (connector.type !== 'ldap') return goUpstream(req, reply, connector, { linkUserId: current.user.id });
    const form = pageForm(req);
    const username = (form.username ?? '').trim().slice(0, SIGNIN_USERNAME_MAX);
    if (!USERNAME_PATTERN.test(username))
      return problem(reply, 401, 'Not linked', `${connector.name} did not accept that username and password.`);
    const admission = await limits.signIn(clientAddress(req), username, trustedDevices.deviceFor(req, username), connector.id);
    if (!admission.admitted) {
      reply.header('retry-after', String(admission.retryAfterSeconds));
      return problem(
        reply,
        429,
        'Too many attempts',
        `Too many failed sign-ins. Try again in ${retryAfterText(admission.retryAfterSeconds)}.`,
      );
    }
    const outcome =
      username && form.password
        ? await authenticateLdap({ ...connector.settings, bindPassword: connector.secret }, username, form.password)
        : ({ kind: 'invalid' } as const);
    if (outcome.kind === 'invalid')
      return problem(reply, 401, 'Not linked', `${connector.name} did not accept that username and password.`);
    await admission.giveBack();
    if (outcome.kind !== 'ok')
      return failed(reply, connector, directoryFacing(outcome, req.log, { reqId: req.id, connector: connector.id }));
    return link(req, reply, connector, outcome.subject, current.user.id);
  });

  // Unlinking: the account page's "Unlink", after a recent sign-in as linking; never the last way into an account.
  app.post('/connectors/:id/unlink', { preHandler: app.csrfProtection }, async (req, reply) => {
    const current = await sessions.current(req);
    if (!current) return reply.redirect(await continuations.signInUrl(req, reply, reauthFor('recent')), 303);
    const change = await mayChangeCredentials(current);
    if (!change.allowed) return reply.redirect(await continuations.signInUrl(req, reply, reauthFor(change.needs)), 303);
    const { id } = req.params as { id: string };
    const links = await store.connectors.linksOf(current.user.id);
    const otherWays =
      current.user.password_hash !== NO_PASSWORD ||
      links.some((l) => l.connectorId !== id) ||
      (await store.passkeys.listByUser(current.user.id)).length > 0;
    if (!otherWays) return problem(reply, 409, 'Not unlinked', 'This is the only way into your account: it stays linked.');
    await store.changes(
      async () => (await store.connectors.unlink(id, current.user.id)) && recordLink(req, current.user.id, 'connector-unlinked', id),
    );
    return reply.redirect('/account#connectors', 303);
  });

  /** Links (connector, subject) to `userId`, unless it signs someone else in already. */
  async function link(req: FastifyRequest, reply: FastifyReply, connector: Connector, subject: string, userId: string) {
    const linked = await store.changes(async () => {
      const to = await store.connectors.link(connector.id, subject, userId, config.now());
      if (to === userId) await recordLink(req, userId, 'connector-linked', connector.id);
      return to;
    });
    if (linked !== userId) {
      return problem(
        reply,
        409,
        'Already linked',
        `That ${connector.name} account signs in another account here; it was not linked to yours.`,
      );
    }
    reply.clearCookie(cookieName, { path: '/', httpOnly: true, sameSite: 'lax', secure });
    return reply.redirect('/account#connectors', 303);
  }

  // An LDAP connector's sign-in: the directory's username and password, on a form of this server's.
  const ldapForm = (
    reply: FastifyReply,
    c: Connector,
    p: { continueId?: string | undefined; username?: string; error?: string },
    status = 200,
  ) =>
    sendPage(
      reply,
      <LdapSignInPage
        csrf={reply.generateCsrf()}
        connector={{ id: c.id, name: c.name }}
        continueId={p.continueId}
        username={p.username}
        error={p.error}
      />,
      status,
    );

  app.get('/connectors/:id/signin', async (req, reply) => {
    const connector = await load(req, reply);
    if (!connector) return reply;
    if (connector.type !== 'ldap') return reply.redirect(`/connectors/${connector.id}/start`, 303);
    const continueId = pageQuery(req).continue;
    return ldapForm(reply, connector, { continueId: continueId !== undefined && TOKEN.test(continueId) ? continueId : undefined });
  });

  app.post('/connectors/:id/signin', { preHandler: app.csrfProtection }, async (req, reply) => {
    const connector = await load(req, reply);
    if (!connector) return reply;
    if (connector.type !== 'ldap') return reply.redirect(`/connectors/${connector.id}/start`, 303);
    const form = pageForm(req);
    const username = (form.username ?? '').trim().slice(0, SIGNIN_USERNAME_MAX);
    const password = form.password ?? '';
    const continueId = form.continue !== undefined && TOKEN.test(form.continue) ? form.continue : undefined;
    if (!username || !password)
      return ldapForm(reply, connector, { continueId, username, error: 'Enter your username and password.' }, 400);
    // A name no account here could have is never sent to the directory: the sign-in limits count per account only
    // names of the usual form, and such a name would be guessed against without one.
    if (!USERNAME_PATTERN.test(username)) {
      return ldapForm(reply, connector, { continueId, username, error: 'Invalid username or password.' }, 401);
    }
    // A directory password is guessed like a local one: the same sign-in limits, counted before the directory is
    // asked, a browser where this person signed in before on a budget of its own.
    const admission = await limits.signIn(clientAddress(req), username, trustedDevices.deviceFor(req, username), connector.id);
    if (!admission.admitted) {
      reply.header('retry-after', String(admission.retryAfterSeconds));
      return ldapForm(
        reply,
        connector,
        { continueId, username, error: `Too many failed sign-ins. Try again in ${retryAfterText(admission.retryAfterSeconds)}.` },
        429,
      );
    }
    const outcome = await authenticateLdap({ ...connector.settings, bindPassword: connector.secret }, username, password);
    if (outcome.kind === 'invalid')
      return ldapForm(reply, connector, { continueId, username, error: 'Invalid username or password.' }, 401);
    await admission.giveBack();
    if (outcome.kind !== 'ok')
      return failed(reply, connector, directoryFacing(outcome, req.log, { reqId: req.id, connector: connector.id }));
    // A directory checked the password: `pwd` (RFC 8176), of the federated class.
    return signIn(
      req,
      reply,
      connector,
      { subject: outcome.subject, claims: outcome.claims, amr: ['pwd'], acr: FEDERATED_ACR },
      continueId,
    );
  });

  app.get('/connectors/:id/callback', async (req, reply) => {
    const connector = await load(req, reply);
    if (!connector) return reply;
    const query = pageQuery(req);
    const browser = req.cookies[cookieName];
    const state = query.state;
    const round =
      state && browser && TOKEN.test(browser)
        ? await store.connectors.takeState(sha256Hex(state), sha256Hex(browser), config.now())
        : undefined;
    if (!round || round.connector_id !== connector.id) {
      return problem(
        reply,
        400,
        'Sign-in not finished',
        `This answer from ${connector.name} does not match a sign-in this browser started (it may have expired after ${CONNECTOR_STATE_TTL_MS / 60_000} minutes, or been used already). Start again.`,
      );
    }
    if (query.error !== undefined) {
      const declined = query.error === 'access_denied';
      return problem(
        reply,
        declined ? 403 : 502,
        declined ? 'Sign-in declined' : 'Sign-in failed',
        declined
          ? `The sign-in was declined at ${connector.name}.`
          : `${connector.name} answered with an error (${query.error.slice(0, 64)}).`,
      );
    }
    const callbackUrl = new URL(req.url, config.issuer);
    const outcome: UpstreamOutcome =
      connector.type === 'oidc'
        ? await oidcCallback(
            connector.settings,
            connector.secret,
            { callbackUrl, redirectUri: redirectUri(connector.id), state: state!, codeVerifier: round.code_verifier, nonce: round.nonce },
            timeout,
          )
        : connector.type === 'github'
          ? await githubOutcome(connector, query.code, round.code_verifier)
          : ({ kind: 'refused', reason: 'this sign-in service takes a username and password' } as const);
    if (outcome.kind !== 'ok') return failed(reply, connector, outcome);
    if (round.link_user_id !== null) return link(req, reply, connector, outcome.identity.subject, round.link_user_id);
    return signIn(req, reply, connector, outcome.identity, round.continue_id ?? undefined);
  });

  async function githubOutcome(
    connector: Connector & { type: 'github' },
    code: string | undefined,
    codeVerifier: string,
  ): Promise<UpstreamOutcome> {
    if (!code) return { kind: 'refused', reason: 'GitHub sent no code' };
    const r = await githubSignIn(
      { ...connector.settings, clientSecret: connector.secret },
      { code, redirectUri: redirectUri(connector.id), codeVerifier },
      timeout,
    );
    if (r.kind !== 'ok') return r;
    return { kind: 'ok', identity: { subject: r.subject, claims: r.claims, amr: [], acr: FEDERATED_ACR } };
  }

  function failed(reply: FastifyReply, connector: Connector, outcome: Exclude<UpstreamOutcome, { kind: 'ok' }>) {
    if (outcome.kind === 'refused' && outcome.detail)
      reply.log.info({ connector: connector.id, detail: outcome.detail }, 'connector refused');
    return outcome.kind === 'refused'
      ? problem(reply, 403, 'Not allowed', `${connector.name} signed you in, but ${outcome.reason}.`)
      : problem(
          reply,
          503,
          'Sign-in service unavailable',
          `${connector.name} cannot be used right now: ${outcome.reason}. Try again later, or sign in another way.`,
        );
  }

  /** Signs the person in as the user their upstream account is linked to, and resumes what waited. */
  async function signIn(
    req: FastifyRequest,
    reply: FastifyReply,
    connector: Connector,
    identity: UpstreamIdentity,
    continueId: string | undefined,
  ) {
    const now = config.now();
    const user = await federatedUser(store, connector.id, identity, now);
    if (!user) return problem(reply, 403, 'Account disabled', 'The account this sign-in belongs to is disabled here.');
    trustedDevices.issue(reply, user.username);
    await sessions.start(req, reply, user, identity.amr, identity.acr);
    await store.signInEvents.record({
      user_id: user.id,
      at: now,
      kind: 'federated',
      client_ip: clientAddress(req),
      device_ip: null,
      client_id: null,
    });
    reply.clearCookie(cookieName, { path: '/', httpOnly: true, sameSite: 'lax', secure });
    return reply.redirect(await continuations.resume(req, continueId), 303);
  }
}

import { SIGNIN_PASSWORD_MAX, SIGNIN_USERNAME_MAX } from '../config/defaults.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebContext } from './context.js';
import { clientAddress } from '../http/client-ip.js';
import { ANONYMOUS } from '../store/store.js';
import { FormError, isParsedForm, pageForm, pageQuery } from '../http/form.js';
import { sendNotFoundProblem } from '../http/errors.js';
import { validateAuthorizationRequest } from '../oauth/authorize.js';
import { loginHint } from '../oauth/authorize-checks.js';
import { AuthorizationPageError } from '../oauth/authorization-request.js';
import { requestQuery, resumeQuery } from '../oauth/authorization-query.js';
import { denied } from '../oauth/authorization-response.js';
import { approveAuthorization, consentScopes, nextAuthorizationStep } from '../oauth/authorization-step.js';
import { pushedRequestHash, usePushedRequest } from '../oauth/pushed-request-uri.js';
import { redirectTarget } from '../oauth/redirect-uri.js';
import { amrOf, meetsAcr, PASSWORD_ACR, PASSWORD_AMR } from '../oauth/acr.js';
import { PasswordHasherBusy } from '../util/password-pool.js';
import { retryAfterText } from './retry-after.js';
import { sendAuthorizationResponse } from './authorization-answer.js';
import { sendBundle } from './bundles.js';
import { FAVICON_PATH, FAVICON_SVG, FAVICON_VERSION, STYLESHEET, STYLESHEET_ETAG } from './assets.js';
import type { Continuation } from './continuation.js';
import { sendPage, viewerOf } from './render.js';
import { passkeyAvailability } from './webauthn.js';
import { StepUpPage } from './passkey-views.js';
import { authenticationOf } from './session.js';
import { ConsentPage, HomePage, MessagePage, NotFoundPage, SignInPage, SignOutPage } from './views.js';

/** End-user pages: sign-in, sign-out, consent and the authorization endpoint that drives them. */
export async function pageRoutes(app: FastifyInstance, ctx: WebContext): Promise<void> {
  const { sessions, continuations, store, config, limits, passwords, trustedDevices } = ctx;
  const passkeysOffered = passkeyAvailability(config.issuer).available;
  /** The sign-in page's "Continue with NAME" links (an LDAP connector's leads to its form: web/connectors.tsx). */
  const connectorButtons = async () => (await store.connectors.list()).map((c) => ({ id: c.id, name: c.name, form: c.type === 'ldap' }));

  app.get('/assets/style.css', async (req, reply) => {
    reply.header('etag', STYLESHEET_ETAG).header('cache-control', 'public, max-age=3600');
    if (req.headers['if-none-match'] === STYLESHEET_ETAG) return reply.code(304).send();
    return reply.type('text/css; charset=utf-8').send(STYLESHEET);
  });

  // The favicon's URL carries its content hash (assets.ts), so it is cached for a year; /favicon.ico, which
  // browsers and crawlers ask for on their own, points there instead of filling the log with 404s.
  app.get(`/assets/favicon-:version.svg`, async (req, reply) => {
    if ((req.params as { version: string }).version !== FAVICON_VERSION) return reply.redirect(FAVICON_PATH, 301);
    return reply.header('cache-control', 'public, max-age=31536000, immutable').type('image/svg+xml').send(FAVICON_SVG);
  });
  app.get('/assets/passkey.js', async (_req, reply) => sendBundle(reply, 'passkey'));
  app.get('/favicon.ico', async (_req, reply) => reply.header('cache-control', 'public, max-age=86400').redirect(FAVICON_PATH, 301));

  // Unknown addresses: an HTML page in the house style. The protocol endpoints (/oauth/*, /.well-known/*) are
  // read by programs: a JSON problem (RFC 9457). Neither repeats anything of the request.
  app.setNotFoundHandler(async (req, reply) => {
    const path = (req.raw.url ?? '/').split('?')[0]!;
    if (path.startsWith('/oauth/') || path.startsWith('/.well-known/') || path.startsWith('/admin/')) return sendNotFoundProblem(reply);
    const current = req.method === 'GET' || req.method === 'HEAD' ? await sessions.current(req) : undefined;
    return sendPage(reply, <NotFoundPage viewer={viewerOf(reply, current)} />, 404);
  });

  app.get('/', async (req, reply) => {
    const current = await sessions.current(req);
    return sendPage(reply, <HomePage issuer={config.issuer} viewer={viewerOf(reply, current)} />);
  });

  // ---- sign-in / sign-out ----------------------------------------------------

  /** The application an authorization request waits for, named on the sign-in page. */
  async function appNameOf(c: Continuation | undefined): Promise<string | undefined> {
    if (c?.kind !== 'authorize') return undefined;
    const clientId = new URLSearchParams(c.query).get('client_id');
    return clientId ? (await store.applications.get(clientId))?.name : undefined;
  }

  /**
   * The `login_hint` of the authorization request a sign-in resumes (OIDC Core §3.1.2.1), checked again as it is
   * read; for a pushed request (RFC 9126), from the request its client pushed.
   */
  async function loginHintOf(c: Continuation | undefined): Promise<string | undefined> {
    if (c?.kind !== 'authorize') return undefined;
    const query = new URLSearchParams(c.query);
    const requestUri = query.get('request_uri');
    if (requestUri === null) return loginHint(query.get('login_hint'));
    const hash = pushedRequestHash(requestUri);
    const pushed = hash === undefined ? undefined : await store.pushedRequests.find(hash);
    return pushed?.clientId === query.get('client_id') ? loginHint(new URLSearchParams(pushed.query).get('login_hint')) : undefined;
  }

  // A sign-in resumes only a server-side continuation (continuation.ts): the page and form carry its random id.
  // `return_to`, which old links and forms may still send, is ignored, so no request names a redirect target.
  app.get('/signin', async (req, reply) => {
    const id = pageQuery(req).continue;
    const waiting = await continuations.peek(req, id);
    const acr = waiting?.kind === 'authorize' || waiting?.kind === 'device' || waiting?.kind === 'page' ? waiting.acr : undefined;
    // The account page sends a signed-in person here to sign in again before a passkey or linked account changes.
    const forAccount = waiting?.kind === 'page' && waiting.page === 'account';
    const current = acr === undefined && !forAccount ? undefined : await sessions.current(req);
    if (current && acr !== undefined && !meetsAcr(amrOf(current.session.amr), acr, current.session.acr)) {
      // Signed in, below what waits: the step-up (a passkey), not another password.
      const availability = passkeyAvailability(config.issuer);
      return sendPage(
        reply,
        <StepUpPage
          viewer={viewerOf(reply, current)!}
          continueId={id}
          appName={await appNameOf(waiting)}
          forDevice={waiting?.kind === 'device'}
          forAccount={forAccount}
          unavailable={availability.available ? undefined : availability.reason}
        />,
      );
    }
    return sendPage(
      reply,
      <SignInPage
        passkeys={passkeysOffered}
        connectors={await connectorButtons()}
        csrf={reply.generateCsrf()}
        continueId={waiting && id}
        appName={await appNameOf(waiting)}
        forDevice={waiting?.kind === 'device'}
        username={await loginHintOf(waiting)}
        passkeyRequired={acr !== undefined && acr !== PASSWORD_ACR}
        forAccount={forAccount && current !== undefined}
      />,
    );
  });

  app.post('/signin', { preHandler: app.csrfProtection }, async (req, reply) => {
    const form = pageForm(req);
    const username = (form.username ?? '').trim();
    const password = form.password ?? '';
    const retry = async (error: string, status: number) => {
      // The id goes back into the form only while it is live for this browser; a successful sign-in uses it up instead.
      const waiting = await continuations.peek(req, form.continue);
      return sendPage(
        reply,
        <SignInPage
          passkeys={passkeysOffered}
          connectors={await connectorButtons()}
          csrf={reply.generateCsrf()}
          continueId={waiting && form.continue}
          username={username.slice(0, SIGNIN_USERNAME_MAX)}
          error={error}
          appName={await appNameOf(waiting)}
          forDevice={waiting?.kind === 'device'}
        />,
        status,
      );
    };
    if (!username || !password) return retry('Enter your username and password.', 400);
    // Counted before the password is hashed: parallel guesses cannot all pass a check not yet counted. A browser
    // where this user signed in before is counted on its own, never slowed by an attack on the account.
    const client = clientAddress(req);
    const device = trustedDevices.deviceFor(req, username);
    const admission = await limits.signIn(client, username.slice(0, SIGNIN_USERNAME_MAX), device);
    if (!admission.admitted) {
      reply.header('retry-after', String(admission.retryAfterSeconds));
      return retry(`Too many failed sign-ins. Try again in ${retryAfterText(admission.retryAfterSeconds)}.`, 429);
    }
    if (username.length > SIGNIN_USERNAME_MAX || password.length > SIGNIN_PASSWORD_MAX) return retry('Invalid username or password.', 401);
    const user = await store.users.findByUsername(username);
    let ok: boolean;
    try {
      // Hash even for unknown users so response time does not reveal which usernames exist. A browser where this
      // user signed in before is served ahead of unknown ones: a flood of guesses slows strangers, not the owner.
      ok = await passwords.verify(password, user?.password_hash ?? passwords.dummyHash, { client, device });
    } catch (err) {
      if (!(err instanceof PasswordHasherBusy)) throw err;
      await admission.giveBack();
      reply.header('retry-after', String(err.retryAfterSeconds));
      return retry(`The server is busy. Try again in ${retryAfterText(err.retryAfterSeconds)}.`, 503);
    }
    // A disabled account answers as a wrong password does, and counts as one: a different answer to the right
    // password would tell whoever tries it that the password is right.
    if (!user || !ok || user.disabled_at !== null) {
      // The audit trail's `signin.failed`: about an account that exists (never the name typed for one that does
      // not: people type passwords into username fields), from where, and why, which only administrators read.
      // Best effort: the answer is the same whether or not the row can be written.
      await store.audit
        .append({
          at: config.now(),
          actor: ANONYMOUS,
          action: 'signin.failed',
          target: user ? { type: 'user', id: user.id, name: user.username } : null,
          address: client,
          detail: { reason: !user ? 'unknown username' : !ok ? 'wrong password' : 'account disabled' },
        })
        .catch((err: unknown) => req.log.warn({ err, reqId: req.id }, 'audit row not written'));
      return retry('Invalid username or password.', 401);
    }
    await admission.giveBack();
    if (passwords.needsRehash(user.password_hash)) {
      // Upgraded to the current cost while the password is at hand, only over the hash just checked (a reset in
      // between wins). The sign-in itself has succeeded: if the upgrade cannot be made now, it is made next time.
      try {
        await store.users.setPasswordHash(user.id, await passwords.hash(password, { client, device }), user.password_hash);
      } catch (err) {
        req.log.warn({ err, reqId: req.id }, 'password hash upgrade postponed');
      }
    }
    trustedDevices.issue(reply, user.username);
    await sessions.start(req, reply, user, PASSWORD_AMR);
    // The account page's "Recent sign-ins": when, from where, how.
    await store.signInEvents.record({
      user_id: user.id,
      at: config.now(),
      kind: 'password',
      client_ip: client,
      device_ip: null,
      client_id: null,
    });
    return reply.redirect(await continuations.resume(req, form.continue), 303);
  });

  app.get('/signout', async (req, reply) => {
    const current = await sessions.current(req);
    if (!current) return reply.redirect('/', 303);
    return sendPage(reply, <SignOutPage viewer={viewerOf(reply, current)!} />);
  });

  app.post('/signout', { preHandler: app.csrfProtection }, async (req, reply) => {
    await sessions.end(req, reply);
    return sendPage(reply, <MessagePage title="Signed out" kind="success" message="You are signed out of this browser." />);
  });

  // ---- authorization endpoint (RFC 6749 §3.1, §4.1.1) -------------------------

  function rawQuery(req: FastifyRequest): string {
    const q = req.raw.url!.indexOf('?');
    return q === -1 ? '' : req.raw.url!.slice(q + 1);
  }

  app.get('/oauth/authorize', async (req, reply) => {
    const ar = await validateAuthorizationRequest(ctx, rawQuery(req));
    const current = await sessions.current(req);
    const step = await nextAuthorizationStep(ctx, ar, current && authenticationOf(current));
    if (step.next === 'redirect') return sendAuthorizationResponse(reply, step.response);
    if (step.next === 'sign-in' || step.next === 'step-up') {
      const target = { kind: 'authorize' as const, query: resumeQuery(ar), ...(step.acr !== undefined && { acr: step.acr }) };
      return reply.redirect(await continuations.signInUrl(req, reply, target), 303);
    }
    if (step.next === 'select-account') {
      // The sign-in page despite the live session: continue as the signed-in user, or sign in as someone else
      // (resumed like any sign-in).
      const signInUrl = await continuations.signInUrl(req, reply, { kind: 'authorize', query: resumeQuery(ar) });
      const continueId = new URLSearchParams(signInUrl.split('?')[1]).get('continue') ?? undefined;
      return sendPage(
        reply,
        <SignInPage
          passkeys={passkeysOffered}
          connectors={await connectorButtons()}
          csrf={reply.generateCsrf()}
          continueId={continueId}
          appName={ar.app.name}
          signedInAs={{ username: current!.user.username, continueHref: step.continueAs }}
        />,
      );
    }
    return sendPage(
      reply,
      <ConsentPage
        viewer={viewerOf(reply, current)!}
        appName={ar.app.name}
        selfRegistered={ar.app.registrationTokenHash !== null}
        clientId={ar.app.clientId}
        scopes={consentScopes(ar)}
        apis={await ctx.store.resources.catalog()}
        request={ar.rawQuery}
        redirectHost={redirectTarget(ar.redirectUri)}
      />,
    );
  });

  // OIDC Core §3.1.2.1: the authorization endpoint takes POST too, the parameters form-encoded in the body. No CSRF
  // check: a client's page posts it cross-site, and it only starts what a GET link could start. The request is
  // validated here, with the same errors as GET (page or redirect), then the browser is sent to the GET endpoint
  // with the validated request serialized again: the session cookie is SameSite=Lax, so a cross-site POST arrives
  // without it, and answering in place would ask every signed-in user to sign in again (and make prompt=none fail).
  // The GET that follows is a top-level navigation, which carries the cookie, and validates the request again.
  app.post('/oauth/authorize', async (req, reply) => {
    const text = req.body === undefined ? '' : isParsedForm(req.body) ? req.body.text : undefined;
    if (text === undefined) throw new FormError('expected a form submission');
    const ar = await validateAuthorizationRequest(ctx, text);
    return reply.redirect(`/oauth/authorize?${requestQuery(ar)}`, 303);
  });

  app.post('/consent', { preHandler: app.csrfProtection }, async (req, reply) => {
    const form = pageForm(req);
    const ar = await validateAuthorizationRequest(ctx, form.request ?? '');
    const current = await sessions.current(req);
    if (!current) return reply.redirect(await continuations.signInUrl(req, reply, { kind: 'authorize', query: resumeQuery(ar) }), 303);
    if (form.decision === 'deny') {
      // A pushed request is answered once (RFC 9126 §4): a denial uses it up as a code would.
      if (!(await usePushedRequest(ctx, ar))) {
        throw new AuthorizationPageError(
          'invalid_request_uri',
          'This sign-in request was already answered. Start again from the application.',
        );
      }
      throw denied(ar);
    }
    if (form.decision !== 'approve') throw new FormError('decision must be approve or deny');
    return sendAuthorizationResponse(reply, await approveAuthorization(ctx, ar, authenticationOf(current)));
  });
}

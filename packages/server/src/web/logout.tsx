import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WebContext } from './context.js';
import { FormError, isParsedForm, pageForm, pageQuery } from '../http/form.js';
import { callbackUrl } from '../oauth/authorization-response.js';
import { type LogoutRequest, validateLogout } from '../oauth/logout.js';
import { sendPage } from './render.js';
import { Layout, MessagePage } from './views.js';

function LogoutConfirmPage(props: { csrf: string; username: string; request: LogoutRequest }) {
  const { app, redirectUri, state } = props.request;
  return (
    <Layout title="Sign out">
      <div class="card">
        <h1>Sign out</h1>
        <p>
          {app ? `${app.name} asks to sign ` : 'Sign '}
          <strong>{props.username}</strong> out of this server in this browser?
        </p>
        <form method="post" action="/oauth/logout/confirm">
          <input type="hidden" name="_csrf" value={props.csrf} />
          {app && <input type="hidden" name="client_id" value={app.clientId} />}
          {redirectUri && <input type="hidden" name="post_logout_redirect_uri" value={redirectUri} />}
          {state !== undefined && <input type="hidden" name="state" value={state} />}
          <div class="actions">
            <button type="submit">Sign out</button>
            <a href="/">Stay signed in</a>
          </div>
        </form>
      </div>
    </Layout>
  );
}

/**
 * Where a browser with no session goes after logout when the application registered itself (RFC 7591): a page
 * with a link, not a redirect, so the logout endpoint cannot be used by anyone who registers a client as a
 * redirector to a site of their choosing (RFC 9700 §4.11.2 on open redirectors).
 */
function LeavingPage(props: { appName: string; target: string }) {
  const host = new URL(props.target).host;
  return (
    <Layout title="Signed out">
      <div class="card">
        <h1>Signed out</h1>
        <p>You are not signed in to this server in this browser.</p>
        <p>
          <strong>{props.appName}</strong> registered itself with this server and asks to send you to <code>{host}</code>. Continue only if
          you expected to go there.
        </p>
        <div class="actions">
          <a class="button" href={props.target}>
            Continue to {host}
          </a>
        </div>
      </div>
    </Layout>
  );
}

/** OpenID Connect RP-Initiated Logout 1.0: `GET/POST /oauth/logout` and the confirmation it may need. */
export async function logoutRoutes(app: FastifyInstance, ctx: WebContext): Promise<void> {
  const { sessions } = ctx;

  function done(reply: FastifyReply, lr: LogoutRequest) {
    if (lr.redirectUri) return reply.redirect(callbackUrl(lr.redirectUri, { state: lr.state }), 303);
    return sendPage(reply, <MessagePage title="Signed out" kind="success" message="You are signed out of this browser." />);
  }

  async function endSession(req: FastifyRequest, reply: FastifyReply, params: Readonly<Record<string, string>>) {
    const lr = await validateLogout(ctx, params);
    const current = await sessions.current(req);
    if (!current) {
      // Nothing to end. A self-registered application's URI is offered as a link; an operator's or a developer's
      // application, registered by someone this server answers for, gets its redirect as before.
      if (lr.redirectUri && lr.app && lr.app.registrationTokenHash !== null) {
        return sendPage(reply, <LeavingPage appName={lr.app.name} target={callbackUrl(lr.redirectUri, { state: lr.state })} />);
      }
      return done(reply, lr);
    }
    // §2: without a hint naming the signed-in user, the user is asked, so a link alone cannot sign anyone out.
    if (lr.hintSub === undefined || lr.hintSub !== current.user.id) {
      return sendPage(reply, <LogoutConfirmPage csrf={reply.generateCsrf()} username={current.user.username} request={lr} />);
    }
    await sessions.end(req, reply);
    return done(reply, lr);
  }

  app.get('/oauth/logout', async (req, reply) => endSession(req, reply, pageQuery(req)));

  // §3: POST is allowed, form-encoded, and an RP posts it cross-site: no CSRF token, and the session cookie
  // (SameSite=Lax) does not come with it; the browser continues as a GET, which carries the cookie.
  app.post('/oauth/logout', async (req, reply) => {
    if (!isParsedForm(req.body)) throw new FormError('expected a form submission');
    const params = req.body.params;
    await validateLogout(ctx, params);
    const query = new URLSearchParams();
    for (const name of ['id_token_hint', 'client_id', 'post_logout_redirect_uri', 'state']) {
      if (params[name] !== undefined) query.set(name, params[name]);
    }
    return reply.redirect(`/oauth/logout?${query}`, 303);
  });

  app.post('/oauth/logout/confirm', { preHandler: app.csrfProtection }, async (req, reply) => {
    const form = pageForm(req);
    const { id_token_hint: _hint, ...rest } = form;
    const lr = await validateLogout(ctx, rest);
    await sessions.end(req, reply);
    return done(reply, lr);
  });
}

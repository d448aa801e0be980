import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { decodeJwt, jwtVerify } from 'jose';
import type { AppContext } from '../context.js';
import { FormError, isParsedForm } from '../http/form.js';
import { callbackUrl } from '../oauth/authorize.js';
import type { Application } from '../store/store.js';
import { pageForm, pageQuery, sendPage } from './pages.js';
import { Layout, MessagePage } from './views.js';

/** An end-session request that passed every check; nothing in it came from the request unverified. */
interface LogoutRequest {
  /** The subject of a verified `id_token_hint`. */
  hintSub: string | undefined;
  app: Application | undefined;
  /** An exact match of one of `app`'s registered post-logout redirect URIs. */
  redirectUri: string | undefined;
  state: string | undefined;
}

class LogoutError extends Error {
  readonly statusCode = 400;
}

const MAX_STATE = 1024;

/**
 * Validates an end-session request (OpenID Connect RP-Initiated Logout 1.0
 * §2, §3): `id_token_hint` must be an ID token this server signed (its
 * expiry is not checked: §2 expects expired ones); `client_id`, when both
 * are sent, must be its audience; `post_logout_redirect_uri` needs a client
 * and must equal one the client registered. Every failure is a page, never
 * a redirect.
 */
async function validateLogout(ctx: AppContext, params: Readonly<Record<string, string>>): Promise<LogoutRequest> {
  let hintSub: string | undefined;
  let hintAud: string | undefined;
  if (params.id_token_hint !== undefined) {
    try {
      const { payload } = await jwtVerify(params.id_token_hint, await ctx.keys.verificationKeys(), {
        issuer: ctx.config.issuer,
        algorithms: ['ES256', 'RS256'],
        typ: 'JWT',
        // Only exp is left unchecked: an RP commonly holds an expired ID token when the user signs out.
        currentDate: new Date(Math.min(ctx.config.now(), (decodeJwt(params.id_token_hint).exp ?? 0) * 1000 - 1000)),
      });
      if (typeof payload.sub !== 'string' || typeof payload.aud !== 'string') throw new Error('not an ID token');
      hintSub = payload.sub;
      hintAud = payload.aud;
    } catch {
      throw new LogoutError('id_token_hint is not an ID token issued by this server');
    }
  }
  if (params.client_id !== undefined && hintAud !== undefined && params.client_id !== hintAud) {
    throw new LogoutError('client_id does not match the audience of id_token_hint');
  }
  const clientId = params.client_id ?? hintAud;
  const app = clientId === undefined ? undefined : await ctx.store.getApplication(clientId);
  if (clientId !== undefined && !app) throw new LogoutError('unknown client_id');
  let redirectUri: string | undefined;
  if (params.post_logout_redirect_uri !== undefined) {
    if (!app) throw new LogoutError('post_logout_redirect_uri needs client_id or id_token_hint to say which application registered it');
    if (!app.postLogoutRedirectUris.includes(params.post_logout_redirect_uri)) {
      throw new LogoutError('post_logout_redirect_uri is not registered for this application');
    }
    redirectUri = params.post_logout_redirect_uri;
  }
  if (params.state !== undefined && params.state.length > MAX_STATE) throw new LogoutError('state is too long');
  return { hintSub, app, redirectUri, state: params.state };
}

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

/** OpenID Connect RP-Initiated Logout 1.0: `GET/POST /oauth/logout` and the confirmation it may need. */
export async function logoutRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const { sessions } = ctx;

  function done(reply: FastifyReply, lr: LogoutRequest) {
    if (lr.redirectUri) return reply.redirect(callbackUrl(lr.redirectUri, { state: lr.state }), 303);
    return sendPage(reply, <MessagePage title="Signed out" kind="success" message="You are signed out of this browser." />);
  }

  async function endSession(req: FastifyRequest, reply: FastifyReply, params: Readonly<Record<string, string>>) {
    const lr = await validateLogout(ctx, params);
    const current = await sessions.current(req);
    if (!current) return done(reply, lr);
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

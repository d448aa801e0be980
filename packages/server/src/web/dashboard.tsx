import { recordApp, recordAppUpdate } from '../admin/apps.js';
import { ADMIN_SCOPES } from '../admin/auth.js';
import { APP_HISTORY_SHOWN, AppHistory } from './app-history.js';
import { clientAddress } from '../http/client-ip.js';
import type { Recorder } from '../admin/context.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PHISHING_RESISTANT_ACR } from '../oauth/acr.js';
import { checkGrantsForKind, newClientSecret, registerApplication, validateApplicationFields } from '../oauth/registration.js';
import { keysOfText } from '../oauth/client-keys.js';
import { InputError } from '../util/input-error.js';
import type { WebContext } from './context.js';
import { isParsedForm } from '../http/form.js';
import type { Application } from '../store/store.js';
import { AppFormPage, ConfirmPage, DashboardPage, SecretPage, type AppFormValues } from './dashboard-views.js';
import { sendBundle } from './bundles.js';
import { Flash } from './flash.js';
import { sendPage, viewerOf } from './render.js';
import type { Continuation } from './continuation.js';
import { requireSignIn, type CurrentSession } from './session.js';
import { NotFoundPage } from './views.js';
import { checkFapi2 } from '../oauth/fapi2.js';

type WithId = { Params: { clientId: string } };

const DASHBOARD: Continuation = { kind: 'page', page: 'dashboard' };

/**
 * /dashboard: the applications a user registered (administrators see all).
 * Someone else's application answers 404, never 403, so client ids of other
 * users cannot be probed.
 *
 * Every form answers 303 to a GET page (post-redirect-get), so a reload or
 * the back button repeats no action. A new client secret and the "saved"
 * notices travel to that page in a one-time flash bound to the session
 * (flash.ts), never in the URL; the secret page is no-store like every page.
 */
export async function dashboardRoutes(app: FastifyInstance, ctx: WebContext): Promise<void> {
  const { store, config } = ctx;
  const flash = new Flash(() => config.now());

  // Each page names what a sign-in resumes (continuation.ts); a form posted after the session ended resumes the list.
  const signedIn = (req: FastifyRequest, reply: FastifyReply, resume: Continuation = DASHBOARD) => requireSignIn(ctx, req, reply, resume);
  const mayManage = (c: CurrentSession, a: Application | undefined): a is Application =>
    a !== undefined && (c.user.is_admin === 1 || a.ownerId === c.user.id);

  function formValues(req: FastifyRequest, base?: Application): AppFormValues {
    const lists = isParsedForm(req.body) ? req.body.lists : {};
    const one = (name: string) => lists[name]?.[0] ?? '';
    return {
      name: one('name'),
      kind: base?.kind ?? (one('kind') === 'confidential' ? 'confidential' : 'public'),
      callbackUrls: one('callback_urls'),
      postLogoutRedirectUris: one('post_logout_redirect_uris'),
      scopes: lists.scope ?? [],
      grantTypes: lists.grant ?? [],
      idTokenAlg: one('id_token_alg') || 'RS256',
      // A disabled radio is not sent: an administrator's `all`, which a developer cannot change, stays.
      introspection: one('introspection') || base?.introspection || 'own',
      requireDpop: one('require_dpop') === '1',
      requirePushedAuthorizationRequests: one('require_par') === '1',
      requirePasskey: one('require_acr') === PHISHING_RESISTANT_ACR,
      backchannelLogoutUri: one('backchannel_logout_uri'),
      backchannelLogoutSessionRequired: one('backchannel_logout_session_required') === '1',
      jwksUri: one('jwks_uri'),
      jwks: one('jwks'),
    };
  }
  /**
   * A dashboard user's keys are a registering client's: a jwks_uri over https to a public host only. Keys sent
   * back as the form showed them stay as they are (an operator's http jwks_uri, a registered algorithm).
   */
  const keysOf = async (v: AppFormValues, base?: Application) => {
    const kept = base?.clientKeys;
    const json = (text: string) => {
      try {
        return text.trim() && JSON.stringify(JSON.parse(text));
      } catch {
        return text;
      }
    };
    if (kept && v.jwksUri.trim() === (kept.jwksUri ?? '') && json(v.jwks) === (kept.jwks ? JSON.stringify(kept.jwks) : '')) return kept;
    return keysOfText(v, { operator: false, fapi2: config.fapi2 });
  };
  /** Only an administrator lets an application see every token; a developer keeps what an administrator set. */
  function checkIntrospection(c: CurrentSession, v: AppFormValues, base?: Application): void {
    if (v.introspection === 'all' && c.user.is_admin !== 1 && base?.introspection !== 'all') {
      throw new InputError('only an administrator can let an application introspect every token');
    }
    // The admin API's scopes make an application an administrator's proxy: only an administrator allows them.
    const adminScope = v.scopes.find((s) => ADMIN_SCOPES.includes(s) && !base?.scopes.includes(s));
    if (adminScope !== undefined && c.user.is_admin !== 1) {
      throw new InputError(`only an administrator can allow an application the admin API's scope ${adminScope}`);
    }
    // Client credentials tokens carry API scopes no person approved: only an administrator (or the operator) grants them.
    if (v.grantTypes.includes('client_credentials') && c.user.is_admin !== 1) {
      if (!base?.grantTypes.includes('client_credentials')) {
        throw new InputError('only an administrator can let an application get tokens of its own (client credentials)');
      }
      // Nor widen what such tokens carry: a scope added to it would be in its next token, approved by nobody.
      const added = v.scopes.find((s) => !base.scopes.includes(s));
      if (added !== undefined)
        throw new InputError(`only an administrator can add a scope (${added}) to an application with client credentials`);
    }
  }
  const fieldsOf = (v: AppFormValues) => ({
    name: v.name,
    callbackUrls: v.callbackUrls.split(/\r?\n/),
    postLogoutRedirectUris: v.postLogoutRedirectUris.split(/\r?\n/),
    scopes: [...v.scopes],
    grantTypes: [...v.grantTypes],
    idTokenAlg: v.idTokenAlg,
    introspection: v.introspection,
    requireDpop: v.requireDpop,
    requirePushedAuthorizationRequests: v.requirePushedAuthorizationRequests,
    requireAcr: v.requirePasskey ? PHISHING_RESISTANT_ACR : null,
    backchannelLogoutUri: v.backchannelLogoutUri,
    backchannelLogoutSessionRequired: v.backchannelLogoutSessionRequired,
  });
  const valuesOf = (a: Application): AppFormValues => ({
    name: a.name,
    kind: a.kind,
    callbackUrls: a.callbackUrls.join('\n'),
    postLogoutRedirectUris: a.postLogoutRedirectUris.join('\n'),
    scopes: a.scopes,
    grantTypes: a.grantTypes,
    idTokenAlg: a.idTokenAlg,
    introspection: a.introspection,
    requireDpop: a.requireDpop,
    requirePushedAuthorizationRequests: a.requirePushedAuthorizationRequests,
    requirePasskey: a.requireAcr === PHISHING_RESISTANT_ACR,
    backchannelLogoutUri: a.backchannelLogoutUri ?? '',
    backchannelLogoutSessionRequired: a.backchannelLogoutSessionRequired,
    jwksUri: a.clientKeys?.jwksUri ?? '',
    jwks: a.clientKeys?.jwks ? JSON.stringify(a.clientKeys.jwks, null, 2) : '',
  });
  // Someone else's application looks exactly like an unknown address: the same 404 page.
  const notFound = (reply: FastifyReply) => sendPage(reply, <NotFoundPage />, 404);
  /** Who the audit trail says made a change here: the signed-in user, from the request's address. */
  const recorder = (req: FastifyRequest, c: CurrentSession): Recorder => ({
    store,
    actor: { type: 'user', id: c.user.id, name: c.user.username },
    address: clientAddress(req),
    now: config.now(),
  });
  const appPath = (clientId: string) => `/dashboard/apps/${encodeURIComponent(clientId)}`;
  const notice = (c: CurrentSession) => flash.take(c.session.id_hash, 'notice')?.text;

  app.get('/assets/copy.js', async (_req, reply) => sendBundle(reply, 'copy'));

  app.get('/dashboard', async (req, reply) => {
    const c = await signedIn(req, reply, DASHBOARD);
    if (!c) return reply;
    const all = c.user.is_admin === 1;
    const apps = await store.applications.list(all ? undefined : c.user.id);
    return sendPage(reply, <DashboardPage viewer={viewerOf(reply, c)} apps={apps} all={all} notice={notice(c)} />);
  });

  app.get('/dashboard/apps/new', async (req, reply) => {
    const c = await signedIn(req, reply, { kind: 'page', page: 'new-application' });
    if (!c) return reply;
    const values: AppFormValues = {
      name: '',
      kind: 'public',
      callbackUrls: '',
      postLogoutRedirectUris: '',
      scopes: ['openid', 'profile'],
      grantTypes: ['authorization_code', 'refresh_token'],
      idTokenAlg: 'RS256',
      introspection: 'own',
      requireDpop: false,
      requirePushedAuthorizationRequests: false,
      requirePasskey: false,
      backchannelLogoutUri: '',
      backchannelLogoutSessionRequired: false,
      jwksUri: '',
      jwks: '',
    };
    return sendPage(
      reply,
      <AppFormPage viewer={viewerOf(reply, c)} admin={c.user.is_admin === 1} apis={await store.resources.catalog()} values={values} />,
    );
  });

  app.post('/dashboard/apps', { preHandler: app.csrfProtection }, async (req, reply) => {
    const c = await signedIn(req, reply);
    if (!c) return reply;
    const values = formValues(req);
    try {
      checkIntrospection(c, values);
      const clientKeys = await keysOf(values);
      const { app: created, clientSecret } = await store.changes(async () => {
        const made = await registerApplication(
          store,
          { ...fieldsOf(values), kind: values.kind, ownerId: c.user.id, clientKeys },
          config.now(),
          { fapi2: config.fapi2 },
        );
        await recordApp(recorder(req, c), 'created', made.app);
        return made;
      });
      if (clientSecret) {
        flash.put(c.session.id_hash, { kind: 'secret', clientId: created.clientId, secret: clientSecret, rotated: false });
        return reply.redirect(`${appPath(created.clientId)}/secret`, 303);
      }
      flash.put(c.session.id_hash, { kind: 'notice', text: 'Application registered' });
      return reply.redirect(appPath(created.clientId), 303);
    } catch (err) {
      if (!(err instanceof InputError)) throw err;
      return sendPage(
        reply,
        <AppFormPage
          viewer={viewerOf(reply, c)}
          admin={c.user.is_admin === 1}
          apis={await store.resources.catalog()}
          values={values}
          error={err.message}
        />,
        400,
      );
    }
  });

  app.get<WithId>('/dashboard/apps/:clientId', async (req, reply) => {
    const c = await signedIn(req, reply, { kind: 'application', clientId: req.params.clientId });
    if (!c) return reply;
    const a = await store.applications.get(req.params.clientId);
    if (!mayManage(c, a)) return notFound(reply);
    return sendPage(
      reply,
      <AppFormPage
        viewer={viewerOf(reply, c)}
        admin={c.user.is_admin === 1}
        apis={await store.resources.catalog()}
        values={valuesOf(a)}
        app={a}
        notice={notice(c)}
        history={
          <AppHistory
            rows={await store.audit.list({ target: a.clientId, type: 'app', order: 'desc', limit: APP_HISTORY_SHOWN })}
            now={config.now()}
            showAddresses={c.user.is_admin === 1}
          />
        }
      />,
    );
  });

  // The page a new or rotated secret is shown on, once: the flash is taken here, so a reload finds none and
  // goes back to the application (nothing is registered or rotated again).
  app.get<WithId>('/dashboard/apps/:clientId/secret', async (req, reply) => {
    const c = await signedIn(req, reply, { kind: 'application', clientId: req.params.clientId });
    if (!c) return reply;
    const a = await store.applications.get(req.params.clientId);
    if (!mayManage(c, a)) return notFound(reply);
    const shown = flash.take(c.session.id_hash, 'secret', (m) => m.clientId === a.clientId);
    if (!shown) return reply.redirect(appPath(a.clientId), 303);
    return sendPage(reply, <SecretPage viewer={viewerOf(reply, c)} app={a} secret={shown.secret} rotated={shown.rotated} />);
  });

  app.post<WithId>('/dashboard/apps/:clientId', { preHandler: app.csrfProtection }, async (req, reply) => {
    const c = await signedIn(req, reply);
    if (!c) return reply;
    const a = await store.applications.get(req.params.clientId);
    if (!mayManage(c, a)) return notFound(reply);
    const values = formValues(req, a);
    try {
      checkIntrospection(c, values, a);
      const clientKeys = await keysOf(values, a);
      if (clientKeys && a.kind !== 'confidential') throw new InputError('only a confidential application authenticates with keys');
      // Keys replace the secret; an application that had keys and is given none goes back to a (new) secret.
      const secret = !clientKeys && a.clientKeys ? newClientSecret() : undefined;
      const authentication = clientKeys ? { clientKeys, secretHash: null } : secret ? { clientKeys: null, secretHash: secret.hash } : {};
      // An administrator editing a self-registered application holds it to the rules it registered under.
      const fields = validateApplicationFields(
        { ...fieldsOf(values), selfRegistered: a.registrationTokenHash !== null },
        a.clientId,
        (await ctx.store.resources.catalog()).byScope,
      );
      checkGrantsForKind(a.kind, fields.grantTypes);
      checkFapi2(config.fapi2, {
        kind: a.kind,
        clientKeys: 'clientKeys' in authentication ? (authentication.clientKeys ?? null) : a.clientKeys,
        idTokenAlg: fields.idTokenAlg,
      });
      await store.changes(async () => {
        const updated = await store.applications.update(a.clientId, { ...fields, ...authentication }, config.now());
        await recordAppUpdate(recorder(req, c), a, updated);
        if (secret) await recordApp(recorder(req, c), 'secret_rotated', updated);
      });
      if (secret) {
        flash.put(c.session.id_hash, { kind: 'secret', clientId: a.clientId, secret: secret.secret, rotated: true });
        return reply.redirect(`${appPath(a.clientId)}/secret`, 303);
      }
      flash.put(c.session.id_hash, { kind: 'notice', text: 'Application saved' });
      return reply.redirect(appPath(a.clientId), 303);
    } catch (err) {
      if (!(err instanceof InputError)) throw err;
      return sendPage(
        reply,
        <AppFormPage
          viewer={viewerOf(reply, c)}
          admin={c.user.is_admin === 1}
          apis={await store.resources.catalog()}
          values={values}
          app={a}
          error={err.message}
        />,
        400,
      );
    }
  });

  // Rotate and delete are confirmed on a page of their own; only its form's POST acts.
  for (const [action, segment] of [
    ['rotate', 'rotate-secret'],
    ['delete', 'delete'],
  ] as const) {
    app.get<WithId>(`/dashboard/apps/:clientId/${segment}`, async (req, reply) => {
      const c = await signedIn(req, reply, { kind: 'application', clientId: req.params.clientId });
      if (!c) return reply;
      const a = await store.applications.get(req.params.clientId);
      if (!mayManage(c, a)) return notFound(reply);
      if (action === 'rotate' && (a.kind !== 'confidential' || a.clientKeys)) return reply.redirect(appPath(a.clientId), 303);
      return sendPage(reply, <ConfirmPage viewer={viewerOf(reply, c)} app={a} action={action} />);
    });
  }

  app.post<WithId>('/dashboard/apps/:clientId/rotate-secret', { preHandler: app.csrfProtection }, async (req, reply) => {
    const c = await signedIn(req, reply);
    if (!c) return reply;
    const a = await store.applications.get(req.params.clientId);
    if (!mayManage(c, a)) return notFound(reply);
    if (a.kind !== 'confidential') return reply.code(400).type('text/plain').send('Public applications have no secret');
    if (a.clientKeys) return reply.code(400).type('text/plain').send('This application authenticates with its keys, not a secret');
    const { secret, hash } = newClientSecret();
    await store.changes(async () => {
      await store.applications.update(a.clientId, { secretHash: hash }, config.now());
      await recordApp(recorder(req, c), 'secret_rotated', a);
    });
    flash.put(c.session.id_hash, { kind: 'secret', clientId: a.clientId, secret, rotated: true });
    return reply.redirect(`${appPath(a.clientId)}/secret`, 303);
  });

  app.post<WithId>('/dashboard/apps/:clientId/delete', { preHandler: app.csrfProtection }, async (req, reply) => {
    const c = await signedIn(req, reply);
    if (!c) return reply;
    const a = await store.applications.get(req.params.clientId);
    if (!mayManage(c, a)) return notFound(reply);
    await store.changes(async () => {
      await store.applications.delete(a.clientId);
      await recordApp(recorder(req, c), 'deleted', a);
    });
    flash.put(c.session.id_hash, { kind: 'notice', text: `Application “${a.name}” deleted` });
    return reply.redirect('/dashboard', 303);
  });
}

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ADMIN_PAGE_DEFAULT } from '../config/audit-defaults.js';
import { headerValues } from '../http/header-values.js';
import { clientAddress } from '../http/client-ip.js';
import { parseJson } from '../http/json.js';
import type { OAuthContext } from '../oauth/context.js';
import { checkClientKeys } from '../oauth/client-keys.js';
import { DEVICE_CODE_GRANT_TYPE } from '@authcli/protocol';
import { ADMIN_PATH, adminCaller } from './auth.js';
import { appResource, createApp, deleteApp, findApp, listApps, updateApp } from './apps.js';
import { auditFilter, auditJson, auditPage } from './audit.js';
import type { AdminContext, Page, PageRequest } from './context.js';
import type { Actor } from '../store/store.js';
import { openApiDocument } from './openapi.js';
import { apiConfigurationRoutes } from './routes-apis.js';
import { Problem, problemHandler } from './problems.js';
import * as S from './schemas.js';
import { createUser, deleteUser, findUser, listUsers, updateUser, userResource } from './users.js';

type Body = Record<string, unknown>;
type Json = FastifyRequest<{ Body: Body; Params: Record<string, string>; Querystring: Record<string, string> }>;

/** The page a list request asks for (`limit`, `after`). */
function pageRequest(q: Record<string, string>): PageRequest {
  return { limit: q.limit === undefined ? ADMIN_PAGE_DEFAULT : Math.min(Number(q.limit), 500), after: q.after };
}

/**
 * A page as JSON: `{items, next}`, and the next page's URL in `Link` (RFC 8288, rel="next") as GitHub's API
 * gives it, so a client follows pages without building URLs.
 */
function sendPage<T>(req: FastifyRequest, reply: FastifyReply, issuer: string, page: Page<T>, json: (t: T) => unknown) {
  if (page.next !== undefined) {
    const url = new URL(req.url, issuer);
    url.searchParams.set('after', page.next);
    reply.header('link', `<${issuer}${url.pathname}${url.search}>; rel="next"`);
  }
  return reply.header('cache-control', 'no-store').send({ items: page.items.map(json), next: page.next ?? null });
}

/** `device_code` for the device grant's URN (RFC 8628 §3.4), as the operator CLI takes it. */
const grantTypesOf = (grants: unknown) =>
  Array.isArray(grants) ? grants.map((g) => (g === 'device_code' ? DEVICE_CODE_GRANT_TYPE : String(g))) : undefined;
const scopesOf = (scope: unknown) => (typeof scope === 'string' ? scope.split(/\s+/).filter(Boolean) : undefined);

/** The keys an application body names (private_key_jwt), checked as a remote caller's: https and a public address. */
async function keysOf(b: Body, ctx: OAuthContext) {
  if (b.jwks === undefined && b.jwks_uri === undefined) {
    if (b.token_endpoint_auth_signing_alg !== undefined) {
      throw new Problem(
        400,
        'invalid_input',
        'token_endpoint_auth_signing_alg goes with jwks or jwks_uri',
        {},
        'token_endpoint_auth_signing_alg',
      );
    }
    return undefined;
  }
  return checkClientKeys(
    {
      ...(b.jwks !== undefined && { jwks: b.jwks }),
      ...(typeof b.jwks_uri === 'string' && { jwksUri: b.jwks_uri }),
      ...(typeof b.token_endpoint_auth_signing_alg === 'string' && { signingAlg: b.token_endpoint_auth_signing_alg }),
    },
    { operator: false, fapi2: ctx.config.fapi2 },
  );
}

/** An application's settings from a JSON body (RFC 7591 names), for creating it or changing it. */
function appSettings(b: Body) {
  return {
    ...(typeof b.name === 'string' && { name: b.name }),
    ...(b.redirect_uris !== undefined && { callbackUrls: b.redirect_uris as string[] }),
    ...(b.post_logout_redirect_uris !== undefined && { postLogoutRedirectUris: b.post_logout_redirect_uris as string[] }),
    ...(b.scope !== undefined && { scopes: scopesOf(b.scope) }),
    ...(b.grant_types !== undefined && { grantTypes: grantTypesOf(b.grant_types) }),
    ...(b.id_token_signed_response_alg !== undefined && { idTokenAlg: b.id_token_signed_response_alg as string }),
    ...(b.introspection !== undefined && { introspection: b.introspection as string }),
    ...(b.dpop_bound_access_tokens !== undefined && { requireDpop: b.dpop_bound_access_tokens as boolean }),
    ...(b.require_pushed_authorization_requests !== undefined && {
      requirePushedAuthorizationRequests: b.require_pushed_authorization_requests as boolean,
    }),
    ...(b.require_acr !== undefined && { requireAcr: b.require_acr as string | null }),
    ...(b.backchannel_logout_uri !== undefined && { backchannelLogoutUri: b.backchannel_logout_uri as string | null }),
    ...(b.backchannel_logout_session_required !== undefined && {
      backchannelLogoutSessionRequired: b.backchannel_logout_session_required as boolean,
    }),
    ...(b.access_token_ttl !== undefined && { accessTokenTtl: b.access_token_ttl as number | null }),
    ...(b.refresh_token_ttl !== undefined && { refreshTokenTtl: b.refresh_token_ttl as number | null }),
  };
}

/**
 * /admin/v1: users, applications and the audit trail over JSON, for
 * administrators and applications the operator allowed `admin:read` /
 * `admin:write` (auth.ts), with the operations of the operator CLI
 * (users.ts, apps.ts: one code path, one audit row per change). Bodies are
 * JSON objects validated against schemas.ts (unknown members refused),
 * within the server's body limit; every error is an RFC 9457 problem. No
 * cookie is read or set, so no request can be forged from a browser.
 */
export async function adminRoutes(app: FastifyInstance, ctx: OAuthContext): Promise<void> {
  app.setErrorHandler(problemHandler);
  // JSON only: the form parser every other endpoint has is not this context's.
  app.removeAllContentTypeParsers();
  for (const type of ['application/json', 'application/merge-patch+json']) {
    app.addContentTypeParser(type, { parseAs: 'buffer' }, (_req, body, done) => {
      try {
        const parsed = parseJson(body as Buffer).value;
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
          throw new Problem(400, 'invalid_input', 'the request body must be a JSON object');
        }
        done(null, parsed);
      } catch (err) {
        done(err as Error, undefined);
      }
    });
  }

  // Who calls, before the body is read: a request without a token for this API is refused before anything of
  // it is parsed. A write is counted against the caller's budget.
  const callers = new WeakMap<FastifyRequest, Actor>();
  app.addHook('onRequest', async (req) => {
    // A path segment can carry NUL (`/users/%00`), which PostgreSQL text cannot hold.
    if (req.url.includes('%00')) throw new Problem(400, 'invalid_input', 'an address must not contain NUL');
    const path = req.url.split('?', 1)[0]!;
    if (path === `${ADMIN_PATH}/openapi.json`) return;
    const write = req.method !== 'GET' && req.method !== 'HEAD';
    const actor = await adminCaller(
      ctx,
      { authorization: req.headers.authorization, dpop: headerValues(req, 'dpop'), method: req.method, path },
      write,
    );
    if (write) {
      const admission = await ctx.limits.adminWrite(actor.id);
      if (!admission.admitted) {
        throw new Problem(429, 'rate_limited', 'too many changes from this caller: wait and try again', {
          'retry-after': String(admission.retryAfterSeconds),
        });
      }
    }
    callers.set(req, actor);
  });
  /** The operation's context for a request the hook admitted. */
  const admin = (req: FastifyRequest): AdminContext => ({
    store: ctx.store,
    config: ctx.config,
    actor: callers.get(req)!,
    address: clientAddress(req),
    now: ctx.config.now(),
    logout: async (ended) => {
      await ended(ctx.backchannel);
    },
  });
  const issuer = ctx.config.issuer;
  const at = (path: string) => `${ADMIN_PATH}${path}`;

  app.get(at('/openapi.json'), async (_req, reply) => reply.header('cache-control', 'public, max-age=300').send(openApiDocument(issuer)));

  // ---- users
  app.get(at('/users'), { schema: { querystring: S.PageQuery } }, async (req: Json, reply) => {
    return sendPage(req, reply, issuer, await listUsers(ctx.store, pageRequest(req.query)), (u) => u);
  });
  app.post(at('/users'), { schema: { body: S.UserCreate } }, async (req: Json, reply) => {
    const c = admin(req);
    const b = req.body;
    const user = await createUser(c, {
      username: b.username as string,
      password: b.password as string,
      admin: b.admin as boolean | undefined,
      name: b.name as string | null | undefined,
      email: b.email as string | null | undefined,
    });
    return reply
      .code(201)
      .header('location', `${issuer}${at(`/users/${encodeURIComponent(user.username)}`)}`)
      .header('cache-control', 'no-store')
      .send(user);
  });
  app.get(at('/users/:username'), async (req: Json, reply) => {
    return reply.header('cache-control', 'no-store').send(await userResource(ctx.store, await findUser(ctx.store, req.params.username!)));
  });
  app.patch(at('/users/:username'), { schema: { body: S.UserPatch } }, async (req: Json, reply) => {
    const c = admin(req);
    const b = req.body;
    const user = await updateUser(c, req.params.username!, {
      name: b.name as string | null | undefined,
      email: b.email as string | null | undefined,
      admin: b.admin as boolean | undefined,
      disabled: b.disabled as boolean | undefined,
      password: b.password as string | undefined,
      claims: b.claims as Record<string, unknown> | undefined,
    });
    return reply.header('cache-control', 'no-store').send(user);
  });
  app.delete(at('/users/:username'), async (req: Json, reply) => {
    await deleteUser(admin(req), req.params.username!);
    return reply.code(204).send();
  });

  // ---- applications
  app.get(at('/apps'), { schema: { querystring: S.PageQuery } }, async (req: Json, reply) => {
    return sendPage(req, reply, issuer, await listApps(ctx.store, pageRequest(req.query)), appResource);
  });
  app.post(at('/apps'), { schema: { body: S.AppCreate } }, async (req: Json, reply) => {
    const c = admin(req);
    const b = req.body;
    const clientKeys = await keysOf(b, ctx);
    const settings = appSettings(b);
    const { app: made, clientSecret } = await createApp(c, {
      ...settings,
      name: b.name as string,
      kind: b.kind as string,
      callbackUrls: settings.callbackUrls ?? [],
      scopes: settings.scopes ?? [],
      ...(clientKeys && { clientKeys }),
    });
    return reply
      .code(201)
      .header('location', `${issuer}${at(`/apps/${encodeURIComponent(made.clientId)}`)}`)
      .header('cache-control', 'no-store')
      .send({ ...appResource(made), ...(clientSecret && { client_secret: clientSecret }) });
  });
  app.get(at('/apps/:clientId'), async (req: Json, reply) => {
    return reply.header('cache-control', 'no-store').send(appResource(await findApp(ctx.store, req.params.clientId!)));
  });
  app.patch(at('/apps/:clientId'), { schema: { body: S.AppPatch } }, async (req: Json, reply) => {
    const c = admin(req);
    const clientKeys = await keysOf(req.body, ctx);
    const { app: updated } = await updateApp(c, req.params.clientId!, { ...appSettings(req.body), clientKeys });
    return reply.header('cache-control', 'no-store').send(appResource(updated));
  });
  app.post(at('/apps/:clientId/secret'), async (req: Json, reply) => {
    const c = admin(req);
    const { app: updated, clientSecret } = await updateApp(c, req.params.clientId!, { newSecret: true });
    return reply.header('cache-control', 'no-store').send({ client_id: updated.clientId, client_secret: clientSecret });
  });
  app.delete(at('/apps/:clientId'), async (req: Json, reply) => {
    await deleteApp(admin(req), req.params.clientId!);
    return reply.code(204).send();
  });

  apiConfigurationRoutes(app, ctx, {
    admin,
    at,
    pageRequest,
    sendPage: (req, reply, page, json) => sendPage(req, reply, issuer, page, json),
  });

  // ---- the audit trail
  app.get(at('/audit'), { schema: { querystring: S.AuditQuery } }, async (req: Json, reply) => {
    const filter = auditFilter(req.query, ctx.config.now());
    return sendPage(req, reply, issuer, await auditPage(ctx.store, filter, pageRequest(req.query)), auditJson);
  });
}

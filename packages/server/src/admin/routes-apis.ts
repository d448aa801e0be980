import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { OAuthContext } from '../oauth/context.js';
import { parseLifetime } from '../oauth/workloads.js';
import { StoreError } from '../store/store.js';
import { InputError } from '../util/input-error.js';
import { type ConnectorInput, createConnector, listConnectors, removeConnector } from './connectors.js';
import { type AdminContext, type Page, type PageRequest, pageOf } from './context.js';
import { createResource, findResource, removeResource, resourceJson, updateResource } from './resources.js';
import * as S from './schemas.js';
import { createWorkload, removeWorkload, workloadJson } from './workloads.js';

type Body = Record<string, unknown>;
type Json = FastifyRequest<{ Body: Body; Params: Record<string, string>; Querystring: Record<string, string> }>;

/** What routes.ts lends these routes: the operation context of an admitted request, a page request, and how a page is sent. */
export interface AdminKit {
  admin(req: FastifyRequest): AdminContext;
  pageRequest(q: Record<string, string>): PageRequest;
  sendPage<T>(req: FastifyRequest, reply: import('fastify').FastifyReply, page: Page<T>, json: (t: T) => unknown): unknown;
  at(path: string): string;
}

const scopesOf = (scopes: unknown) =>
  (scopes as { name: string; description?: string }[]).map((s) => ({ name: s.name, description: s.description?.trim() || s.name }));

/** A connector from the admin API's JSON (schemas.ts ConnectorCreate): each type's members, its secret write-only. */
function connectorInput(b: Body): ConnectorInput {
  const str = (k: string) => (typeof b[k] === 'string' ? (b[k] as string) : undefined);
  const list = (k: string) => (Array.isArray(b[k]) ? (b[k] as string[]) : []);
  const need = (k: string, what = k) => {
    const v = str(k);
    if (v === undefined || v === '') throw new InputError(`${b.type} connectors need ${what}`, k);
    return v;
  };
  const common = { id: need('id'), name: need('name') };
  if (b.type === 'ldap') {
    return {
      type: 'ldap',
      ...common,
      secret: need('bind_password'),
      url: need('url'),
      startTls: b.start_tls === true,
      bindDn: need('bind_dn'),
      userBase: need('user_base'),
      userFilter: str('user_filter') ?? '(uid={username})',
      groupBase: str('group_base'),
      allowedGroups: list('allowed_groups'),
      caCertPem: str('ca_cert_pem'),
    };
  }
  if (b.type === 'github') {
    return {
      type: 'github',
      ...common,
      secret: need('client_secret'),
      clientId: need('client_id'),
      orgs: list('orgs'),
      apiBase: str('api_base'),
    };
  }
  return {
    type: 'oidc',
    ...common,
    secret: need('client_secret'),
    issuer: need('issuer'),
    clientId: need('client_id'),
    scopes: (str('scope') ?? 'openid email profile').split(/\s+/).filter(Boolean),
    allowedEmailDomains: list('allowed_email_domains'),
    trustUpstreamAcr: b.trust_upstream_acr === true,
  };
}

/** /admin/v1/resources, /workloads and /connectors: the operator CLI's `resources`, `workloads` and `connectors`. */
export function apiConfigurationRoutes(app: FastifyInstance, ctx: OAuthContext, kit: AdminKit): void {
  const { admin, at, pageRequest, sendPage } = kit;
  const created = (reply: import('fastify').FastifyReply, path: string, body: unknown) =>
    reply
      .code(201)
      .header('location', `${ctx.config.issuer}${at(path)}`)
      .header('cache-control', 'no-store')
      .send(body);
  const noStore = (reply: import('fastify').FastifyReply, body: unknown) => reply.header('cache-control', 'no-store').send(body);

  // ---- resources (the team's APIs, RFC 8707)
  app.get(at('/resources'), { schema: { querystring: S.PageQuery } }, async (req: Json, reply) => {
    const { list } = await ctx.store.resources.catalog();
    return sendPage(
      req,
      reply,
      pageOf(list, (r) => r.id, pageRequest(req.query)),
      resourceJson,
    );
  });
  app.post(at('/resources'), { schema: { body: S.ResourceCreate } }, async (req: Json, reply) => {
    const b = req.body;
    const r = await createResource(admin(req), { id: b.id as string, name: b.name as string, scopes: scopesOf(b.scopes) });
    return created(reply, `/resources/${encodeURIComponent(r.id)}`, resourceJson(r));
  });
  app.get(at('/resources/:id'), async (req: Json, reply) => noStore(reply, resourceJson(await findResource(ctx.store, req.params.id!))));
  app.patch(at('/resources/:id'), { schema: { body: S.ResourcePatch } }, async (req: Json, reply) => {
    const b = req.body;
    const r = await updateResource(admin(req), req.params.id!, {
      name: b.name as string | undefined,
      scopes: b.scopes === undefined ? undefined : scopesOf(b.scopes),
    });
    return noStore(reply, resourceJson(r));
  });
  app.delete(at('/resources/:id'), async (req: Json, reply) => {
    await removeResource(admin(req), req.params.id!);
    return reply.code(204).send();
  });

  // ---- CI workloads' trust policies (RFC 8693)
  app.get(at('/workloads'), { schema: { querystring: S.PageQuery } }, async (req: Json, reply) =>
    sendPage(
      req,
      reply,
      pageOf(await ctx.store.workloads.list(), (w) => w.id, pageRequest(req.query)),
      workloadJson,
    ),
  );
  app.post(at('/workloads'), { schema: { body: S.WorkloadCreate } }, async (req: Json, reply) => {
    const b = req.body;
    const w = await createWorkload(admin(req), {
      id: b.id as string,
      issuer: b.issuer as string,
      audience: b.audience as string,
      subject: b.subject as string,
      claims: Object.entries((b.claims as Record<string, string> | undefined) ?? {}).map(([name, pattern]) => `${name}=${pattern}`),
      app: b.app as string,
      scopes: (b.scope as string).split(/\s+/).filter(Boolean),
      tokenLifetimeSeconds: b.token_lifetime === undefined ? undefined : parseLifetime(String(b.token_lifetime)),
    });
    return created(reply, `/workloads/${encodeURIComponent(w.id)}`, workloadJson(w));
  });
  app.get(at('/workloads/:id'), async (req: Json, reply) => {
    const w = (await ctx.store.workloads.list()).find((x) => x.id === req.params.id);
    if (!w) throw new StoreError('not_found', `no workload ${req.params.id}`);
    return noStore(reply, workloadJson(w));
  });
  app.delete(at('/workloads/:id'), async (req: Json, reply) => {
    await removeWorkload(admin(req), req.params.id!);
    return reply.code(204).send();
  });

  // ---- connectors (upstream identity providers)
  const connectors = () => listConnectors(ctx.store, ctx.config.keyEncryptionKey, ctx.config.issuer);
  app.get(at('/connectors'), { schema: { querystring: S.PageQuery } }, async (req: Json, reply) =>
    sendPage(
      req,
      reply,
      pageOf(await connectors(), (c) => c.id, pageRequest(req.query)),
      (c) => c,
    ),
  );
  app.post(at('/connectors'), { schema: { body: S.ConnectorCreate } }, async (req: Json, reply) => {
    const c = await createConnector(admin(req), connectorInput(req.body));
    return created(
      reply,
      `/connectors/${c.id}`,
      (await connectors()).find((x) => x.id === c.id),
    );
  });
  app.get(at('/connectors/:id'), async (req: Json, reply) => {
    const c = (await connectors()).find((x) => x.id === req.params.id);
    if (!c) throw new StoreError('not_found', `no connector ${req.params.id} (see connectors list)`);
    return noStore(reply, c);
  });
  app.delete(at('/connectors/:id'), async (req: Json, reply) => {
    await removeConnector(admin(req), req.params.id!);
    return reply.code(204).send();
  });
}

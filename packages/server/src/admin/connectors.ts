import { normalizeIssuer } from '../config/config.js';
import { githubEndpoints, parseGithubOrgRule } from '../connectors/github.js';
import { ldapSettingsProblem } from '../connectors/ldap.js';
import { type Connector, connectorOf, emailDomain, rowOf } from '../connectors/registry.js';
import { type ConnectorRow, StoreError, type Store } from '../store/store.js';
import { InputError } from '../util/input-error.js';
import { type AdminContext, audited } from './context.js';

/** A connector as the operator and the admin API give it: the upstream's settings, never its secret. */
export type ConnectorInput =
  | {
      type: 'oidc';
      id: string;
      name: string;
      secret: string;
      issuer: string;
      clientId: string;
      scopes: string[];
      allowedEmailDomains: string[];
      trustUpstreamAcr?: boolean | undefined;
    }
  | { type: 'github'; id: string; name: string; secret: string; clientId: string; orgs: string[]; apiBase?: string | undefined }
  | {
      type: 'ldap';
      id: string;
      name: string;
      secret: string;
      url: string;
      startTls: boolean;
      bindDn: string;
      userBase: string;
      userFilter: string;
      groupBase?: string | undefined;
      allowedGroups: string[];
      caCertPem?: string | undefined;
    };

/**
 * A connector from what an operator or an administrator gave, checked as `connectors add` checks it: an
 * issuer URL, scopes with openid, email domains, GitHub organization rules and API base, LDAP settings.
 * @throws InputError
 */
export function connectorFromInput(input: ConnectorInput): Connector {
  const { id, name, secret } = input;
  if (input.type === 'oidc') {
    let issuer: string;
    try {
      issuer = normalizeIssuer(input.issuer);
    } catch (err) {
      throw new InputError(`issuer: ${(err as Error).message}`);
    }
    if (!input.scopes.includes('openid')) throw new InputError('the scopes must include openid');
    return {
      id,
      type: 'oidc',
      name,
      secret,
      settings: {
        issuer,
        clientId: input.clientId,
        scopes: input.scopes,
        allowedEmailDomains: input.allowedEmailDomains.map(emailDomain),
        ...(input.trustUpstreamAcr && { trustUpstreamAcr: true }),
      },
    };
  }
  if (input.type === 'github') {
    const orgs = input.orgs.map(parseGithubOrgRule);
    if (input.apiBase !== undefined) githubEndpoints({ apiBase: input.apiBase });
    return {
      id,
      type: 'github',
      name,
      secret,
      settings: { clientId: input.clientId, orgs, ...(input.apiBase !== undefined && { apiBase: input.apiBase }) },
    };
  }
  const settings = {
    url: input.url,
    startTls: input.startTls,
    bindDn: input.bindDn,
    userBase: input.userBase,
    userFilter: input.userFilter,
    ...(input.groupBase !== undefined && { groupBase: input.groupBase }),
    allowedGroups: input.allowedGroups,
    ...(input.caCertPem !== undefined && { caCertPem: input.caCertPem }),
  };
  const problem = ldapSettingsProblem({ ...settings, bindPassword: secret });
  if (problem) throw new InputError(problem);
  return { id, type: 'ldap', name, secret, settings };
}

/** A connector as `connectors list --json` prints it and the admin API answers it. */
export function connectorJson(c: Connector, users: number, issuer: string) {
  const where = c.type === 'oidc' ? c.settings.issuer : c.type === 'ldap' ? c.settings.url : (c.settings.apiBase ?? 'github.com');
  return {
    id: c.id,
    type: c.type,
    name: c.name,
    upstream: where,
    users,
    redirect_uri: c.type === 'ldap' ? null : `${issuer}/connectors/${c.id}/callback`,
    trust_upstream_acr: c.type === 'oidc' && c.settings.trustUpstreamAcr === true,
  };
}

/** Every connector, oldest first, with how many people each has signed in. */
export async function listConnectors(store: Store, kek: Buffer | undefined, issuer: string) {
  const counts = await store.connectors.userCounts();
  return (await store.connectors.list()).map((row: ConnectorRow) => connectorJson(connectorOf(row, kek), counts[row.id] ?? 0, issuer));
}

/** The settings an audit row records of a connector: all but its secret (and a CA certificate's bytes). */
function audible(c: Connector): Record<string, unknown> {
  const { caCertPem, ...settings } = c.settings as Record<string, unknown>;
  return { type: c.type, name: c.name, ...settings, ...(caCertPem !== undefined && { ca_cert: 'set' }) };
}

/** Adds a connector (its secret encrypted with the key-encryption key when there is one). */
export async function createConnector(ctx: AdminContext, input: ConnectorInput): Promise<Connector> {
  const connector = connectorFromInput(input);
  const row = rowOf(connector, ctx.now, ctx.config.keyEncryptionKey);
  await ctx.store.changes(async () => {
    await ctx.store.connectors.create(row);
    await audited(ctx, {
      action: 'connector.created',
      target: { type: 'connector', id: connector.id, name: connector.name },
      detail: audible(connector),
    });
  });
  return connector;
}

/** Removes a connector: its button goes, its people can no longer sign in through it (their accounts stay). */
export async function removeConnector(ctx: AdminContext, id: string): Promise<void> {
  await ctx.store.changes(async () => {
    const row = (await ctx.store.connectors.list()).find((r) => r.id === id);
    if (!row || !(await ctx.store.connectors.delete(id))) throw new StoreError('not_found', `no connector ${id} (see connectors list)`);
    await audited(ctx, { action: 'connector.removed', target: { type: 'connector', id, name: row.name }, detail: { type: row.type } });
  });
}

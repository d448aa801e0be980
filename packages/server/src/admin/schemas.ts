/**
 * The JSON Schemas of the admin API's bodies and answers: the request ones
 * are what Fastify validates each body with (unknown members refused, no
 * type coercion), and all of them are the components of the OpenAPI 3.1
 * document (openapi.ts), so the document and the checks cannot drift apart.
 * What a value means (a callback URL's rules, a username's characters) is
 * checked after, by the same functions as the operator CLI's.
 */

import { ACCESS_TOKEN_TTL_BOUNDS, GRANT_TTL_BOUNDS } from '../config/lifetime-defaults.js';
const nullable = (type: string, extra: Record<string, unknown> = {}) => ({ type: [type, 'null'], ...extra });
const text = (maxLength: number, description?: string) => ({ type: 'string', maxLength, ...(description && { description }) });
const uris = (description: string) => ({ type: 'array', items: text(2000), maxItems: 20, description });

const USER_FIELDS = {
  name: { ...nullable('string', { maxLength: 200 }), description: 'Display name (the `name` claim); null removes it.' },
  email: {
    ...nullable('string', { maxLength: 254 }),
    description: 'Email address (the `email` claim, unverified unless `claims.email_verified` says otherwise); null removes it.',
  },
  admin: { type: 'boolean', description: 'An administrator: sees every application in the dashboard, and may use this API.' },
} as const;

export const UserCreate = {
  type: 'object',
  additionalProperties: false,
  required: ['username', 'password'],
  properties: {
    username: text(64, 'Letters, digits and . _ @ -; unique without regard to case.'),
    password: { ...text(1024, 'At least 8 characters; never read back.'), writeOnly: true },
    ...USER_FIELDS,
  },
} as const;

export const UserPatch = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    ...USER_FIELDS,
    disabled: { type: 'boolean', description: 'Disabled: sign-in and token redemption are refused; applications are told.' },
    password: {
      ...text(1024, "A new password: ends the user's sessions and clears their failed sign-in counters."),
      writeOnly: true,
    },
    claims: {
      type: 'object',
      description: 'A JSON merge patch (RFC 7396) of standard claims (OpenID Connect Core §5.1): null removes one.',
    },
  },
} as const;

export const User = {
  type: 'object',
  required: ['id', 'username', 'name', 'email', 'admin', 'disabled', 'connectors', 'created'],
  properties: {
    id: { type: 'string', description: 'The `sub` of their tokens.' },
    username: { type: 'string' },
    name: nullable('string'),
    email: nullable('string'),
    admin: { type: 'boolean' },
    disabled: { type: 'boolean' },
    connectors: { type: 'array', items: { type: 'string' }, description: 'The connectors this person signs in through.' },
    created: { type: 'string', format: 'date-time' },
  },
} as const;

const APP_FIELDS = {
  name: text(100, 'Shown on consent pages.'),
  redirect_uris: uris('Callback URLs: https, loopback http, or a native scheme (RFC 8252).'),
  post_logout_redirect_uris: uris('Where RP-initiated logout may return to, exact match.'),
  scope: text(2000, 'Allowed scopes, space-separated: OpenID Connect scopes and API scopes (see resources).'),
  grant_types: {
    type: 'array',
    maxItems: 10,
    items: text(100),
    description:
      'authorization_code, refresh_token, urn:ietf:params:oauth:grant-type:device_code (or device_code), client_credentials, urn:ietf:params:oauth:grant-type:token-exchange.',
  },
  id_token_signed_response_alg: { type: 'string', enum: ['RS256', 'ES256'] },
  introspection: { type: 'string', enum: ['own', 'owner', 'all'], description: 'Whose tokens it may introspect (RFC 7662).' },
  dpop_bound_access_tokens: { type: 'boolean', description: 'Every token request must carry a DPoP proof (RFC 9449).' },
  require_pushed_authorization_requests: { type: 'boolean', description: 'Authorization requests must be pushed first (RFC 9126).' },
  require_acr: { ...nullable('string'), description: '`phr`: every sign-in for it must be with a passkey; null for any.' },
  backchannel_logout_uri: { ...nullable('string', { maxLength: 2000 }), description: 'Where logout tokens are posted; null for none.' },
  backchannel_logout_session_required: { type: 'boolean' },
  access_token_ttl: {
    ...nullable('integer', { minimum: ACCESS_TOKEN_TTL_BOUNDS.min, maximum: ACCESS_TOKEN_TTL_BOUNDS.max }),
    description: "Its access tokens' lifetime, seconds; null for the server's (AUTHCLI_ACCESS_TOKEN_TTL).",
  },
  refresh_token_ttl: {
    ...nullable('integer', { minimum: GRANT_TTL_BOUNDS.min, maximum: GRANT_TTL_BOUNDS.max }),
    description:
      "How long its sign-ins (refresh tokens) last from when they began, seconds; null for the server's (AUTHCLI_REFRESH_TOKEN_TTL). At least the access token lifetime.",
  },
  jwks: { type: 'object', description: 'Authenticate with private_key_jwt, with these public keys (a JWK Set).' },
  jwks_uri: text(2000, 'Authenticate with private_key_jwt, with the keys at this https URL (a public address).'),
  token_endpoint_auth_signing_alg: { type: 'string', description: 'The one algorithm its client assertions may use.' },
} as const;

export const AppCreate = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'kind', 'scope'],
  properties: {
    ...APP_FIELDS,
    kind: { type: 'string', enum: ['public', 'confidential'] },
  },
} as const;

export const AppPatch = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: APP_FIELDS,
} as const;

export const App = {
  type: 'object',
  required: ['client_id', 'name', 'kind', 'redirect_uris', 'scope', 'grant_types', 'token_endpoint_auth_method'],
  properties: {
    client_id: { type: 'string' },
    client_secret: { type: 'string', description: 'Only in the answer that made it (creation, rotation): store it then.' },
    ...APP_FIELDS,
    kind: { type: 'string', enum: ['public', 'confidential'] },
    token_endpoint_auth_method: { type: 'string', enum: ['none', 'client_secret_basic', 'private_key_jwt'] },
    registered_by: { type: 'string', enum: ['operator', 'dashboard', 'client'] },
    owner: { ...nullable('string'), description: 'The dashboard user who owns it (their id); null for the operator.' },
    created: { type: 'string', format: 'date-time' },
  },
} as const;

export const AuditEvent = {
  type: 'object',
  required: ['seq', 'at', 'actor', 'action', 'target', 'address', 'detail', 'hash', 'prev_hash'],
  properties: {
    seq: { type: 'integer', description: 'Its place in the chain: 1, 2, 3 ...' },
    at: { type: 'string', format: 'date-time' },
    actor: {
      type: 'object',
      properties: {
        type: { type: 'string', enum: ['operator', 'user', 'client', 'anonymous', 'system'] },
        id: { type: 'string' },
        name: nullable('string'),
      },
    },
    action: { type: 'string', description: 'e.g. user.created, app.updated, signin.failed (docs/audit.md).' },
    target: {
      type: ['object', 'null'],
      properties: { type: { type: 'string' }, id: { type: 'string' }, name: nullable('string') },
    },
    address: { ...nullable('string'), description: 'The client address of the request; null for the operator CLI.' },
    detail: { type: 'object', description: 'What changed: field -> {from, to} for an update; never a secret.' },
    hash: { type: 'string', description: 'SHA-256 of prev_hash and the row (docs/audit.md).' },
    prev_hash: { type: 'string' },
  },
} as const;

/** A page of a list: its items, and the cursor of the next page (null on the last); the next page's URL is also in `Link`. */
export const pageOf = (items: Record<string, unknown>) =>
  ({
    type: 'object',
    required: ['items', 'next'],
    properties: { items: { type: 'array', items: items }, next: nullable('string') },
  }) as const;

export const PageQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: { type: 'string', pattern: '^[1-9][0-9]{0,2}$', description: 'At most this many items (1-500, default 100).' },
    after: { type: 'string', maxLength: 300, description: 'The `next` cursor of the page before.' },
  },
} as const;

export const AuditQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...PageQuery.properties,
    since: { type: 'string', maxLength: 40, description: 'From this time on: an ISO 8601 date or time, or an age such as 24h or 7d.' },
    until: { type: 'string', maxLength: 40, description: 'Before this time (same forms).' },
    type: { type: 'string', maxLength: 100, description: 'An action (user.created) or its kind (user).' },
    actor: { type: 'string', maxLength: 300, description: 'A user id, client_id, or operator.' },
    target: { type: 'string', maxLength: 300, description: 'A user id, client_id, resource, workload or connector id.' },
  },
} as const;

const SCOPES = {
  type: 'array',
  maxItems: 50,
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['name'],
    properties: { name: text(64), description: text(200, 'Shown on consent pages; the name when absent.') },
  },
} as const;

export const ResourceCreate = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'name', 'scopes'],
  properties: {
    id: text(255, "The API's identifier, an absolute URL (RFC 8707): the aud of its tokens."),
    name: text(100, 'Shown on consent pages above its scopes.'),
    scopes: SCOPES,
  },
} as const;

export const ResourcePatch = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    name: ResourceCreate.properties.name,
    scopes: { ...SCOPES, description: 'Replace them all: those left out are taken from every application.' },
  },
} as const;

export const Resource = {
  type: 'object',
  required: ['id', 'name', 'scopes'],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    scopes: SCOPES,
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' },
  },
} as const;

const WORKLOAD_FIELDS = {
  id: text(64, 'A name for the policy, e.g. deploy-main.'),
  issuer: text(255, "The CI provider's issuer, e.g. https://token.actions.githubusercontent.com."),
  audience: text(255, 'The audience its tokens must name.'),
  subject: text(255, 'The sub they must have; * matches any run of characters.'),
  claims: { type: 'object', additionalProperties: text(255), description: 'Other claims they must match: name -> pattern.' },
  app: text(64, 'The client_id the tokens are for (allowed the token-exchange grant and the scopes).'),
  scope: text(2000, 'The API scopes they may have, space-separated.'),
} as const;

export const WorkloadCreate = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'issuer', 'audience', 'subject', 'app', 'scope'],
  properties: {
    ...WORKLOAD_FIELDS,
    token_lifetime: { type: ['integer', 'string'], description: 'Seconds (or 10m, 1h): from 1 minute to 1 hour; 10 minutes by default.' },
  },
} as const;

export const Workload = {
  type: 'object',
  required: ['id', 'issuer', 'audience', 'subject', 'claims', 'app', 'scope', 'token_lifetime'],
  properties: { ...WORKLOAD_FIELDS, token_lifetime: { type: 'integer' }, created_at: { type: 'string', format: 'date-time' } },
} as const;

const strings = (description: string) => ({ type: 'array', maxItems: 50, items: text(255), description });

export const ConnectorCreate = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'id', 'name'],
  properties: {
    type: { type: 'string', enum: ['oidc', 'github', 'ldap'] },
    id: text(32, 'Lower-case letters, digits and -; part of its redirect URI.'),
    name: text(64, 'Shown on the sign-in page as "Continue with NAME".'),
    client_secret: { ...text(1000, 'oidc and github: the client secret registered at the upstream; never read back.'), writeOnly: true },
    bind_password: { ...text(1000, "ldap: the service account's password; never read back."), writeOnly: true },
    issuer: text(255, "oidc: the provider's issuer URL."),
    client_id: text(255, 'oidc and github: the client id registered at the upstream.'),
    scope: text(1000, 'oidc: the scopes to ask for (openid among them); openid email profile by default.'),
    allowed_email_domains: strings('oidc: let in only verified emails of these domains.'),
    trust_upstream_acr: { type: 'boolean', description: "oidc: count the provider's acr phr as this server's." },
    orgs: strings('github: let in only members of these organizations (org or org:team).'),
    api_base: text(255, 'github: GitHub Enterprise API base.'),
    url: text(255, 'ldap: ldap://HOST[:PORT] or ldaps://HOST[:PORT].'),
    start_tls: { type: 'boolean', description: 'ldap: upgrade with StartTLS before any bind.' },
    bind_dn: text(1000, 'ldap: the service account that searches users.'),
    user_base: text(1000, 'ldap: where users are searched.'),
    user_filter: text(1000, 'ldap: {username} stands for the escaped username; (uid={username}) by default.'),
    group_base: text(1000, 'ldap: where groups are searched.'),
    allowed_groups: strings('ldap: let in only members of these groups (cn).'),
    ca_cert_pem: text(20000, "ldap: a CA certificate (PEM) to check the directory's certificate with."),
  },
} as const;

export const Connector = {
  type: 'object',
  required: ['id', 'type', 'name', 'upstream', 'users'],
  properties: {
    id: { type: 'string' },
    type: { type: 'string', enum: ['oidc', 'github', 'ldap'] },
    name: { type: 'string' },
    upstream: { type: 'string', description: 'The issuer, the GitHub API, or the directory URL.' },
    users: { type: 'integer', description: 'How many people have signed in through it.' },
    redirect_uri: { ...nullable('string'), description: 'To register at the upstream (null for LDAP).' },
    trust_upstream_acr: { type: 'boolean' },
  },
} as const;

import { ADMIN_PATH, ADMIN_READ, ADMIN_WRITE, adminResourceId } from './auth.js';
import * as S from './schemas.js';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: unknown) => ({ 'application/json': { schema } });
const problem = (description: string) => ({ description, content: { 'application/problem+json': { schema: ref('Problem') } } });

/** The answers every operation may give besides its own. */
const FAILURES = {
  '400': problem('The request is not valid: `detail` says what to change, `field` which member.'),
  '401': problem('No access token, or one that is invalid, expired, revoked or not for this API (`WWW-Authenticate`).'),
  '403': problem('The token lacks the scope (`insufficient_scope`), or its person is not an administrator.'),
  '429': problem('Too many changes from this caller (`Retry-After`).'),
  '503': problem('The store did not answer (`Retry-After`).'),
};
const notFound = { '404': problem('There is nothing by that name.') };

/** The query parameters of a list (`limit`, `after`), as OpenAPI parameters. */
const listParameters = (schema: { properties: Record<string, { description?: string }> }) =>
  Object.entries(schema.properties).map(([name, s]) => ({ name, in: 'query', required: false, schema: s, description: s.description }));

const pathParameter = (name: string, description: string) => ({
  name,
  in: 'path',
  required: true,
  schema: { type: 'string' },
  description,
});

/** An operation: what it does, its scope, its body and its answers (the failures added). */
function op(
  summary: string,
  scope: string,
  answers: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return { summary, security: [{ bearer: [scope] }, { dpop: [scope] }], ...extra, responses: { ...answers, ...FAILURES } };
}

const body = (name: string, patch = false) => ({
  requestBody: {
    required: true,
    content: patch ? { ...json(ref(name)), 'application/merge-patch+json': { schema: ref(name) } } : json(ref(name)),
  },
});

/**
 * The OpenAPI 3.1 document of /admin/v1 (GET /admin/v1/openapi.json): its
 * schemas are the ones the routes validate with (schemas.ts).
 */
export function openApiDocument(issuer: string): Record<string, unknown> {
  const user = pathParameter('username', 'The username (without regard to case).');
  const client = pathParameter('client_id', 'The application.');
  return {
    openapi: '3.1.0',
    info: {
      title: 'authcli-server administration API',
      version: '1',
      description:
        `Users, applications and the audit trail of this server. Access tokens are for the resource ${adminResourceId(issuer)} ` +
        `with the scope ${ADMIN_READ} (reading) or ${ADMIN_WRITE} (changing, and reading): an administrator signed in with ` +
        '`authcli login --scope "admin:write"`, or an application the operator allowed those scopes (client credentials). ' +
        'Errors are RFC 9457 problems. Lists are paged: `next` is the cursor of the next page, whose URL is also in `Link`.',
    },
    servers: [{ url: `${issuer}${ADMIN_PATH}` }],
    paths: {
      '/users': {
        get: op(
          'List users, in username order',
          ADMIN_READ,
          { '200': { description: 'A page of users.', content: json(ref('UserPage')) } },
          {
            parameters: listParameters(S.PageQuery),
          },
        ),
        post: op(
          'Add a user',
          ADMIN_WRITE,
          {
            '201': { description: 'The user (its URL in Location).', content: json(ref('User')) },
            '409': problem('The username is taken.'),
          },
          body('UserCreate'),
        ),
      },
      '/users/{username}': {
        parameters: [user],
        get: op('A user', ADMIN_READ, { '200': { description: 'The user.', content: json(ref('User')) }, ...notFound }),
        patch: op(
          'Change a user (what is absent stays)',
          ADMIN_WRITE,
          { '200': { description: 'The user as changed.', content: json(ref('User')) }, ...notFound },
          body('UserPatch', true),
        ),
        delete: op('Delete a user, with their sessions, sign-ins and passkeys', ADMIN_WRITE, {
          '204': { description: 'Deleted; applications holding their sign-ins are told.' },
          ...notFound,
        }),
      },
      '/apps': {
        get: op(
          'List applications, in client_id order',
          ADMIN_READ,
          { '200': { description: 'A page of applications.', content: json(ref('AppPage')) } },
          {
            parameters: listParameters(S.PageQuery),
          },
        ),
        post: op(
          'Register an application',
          ADMIN_WRITE,
          { '201': { description: 'The application, with its client_secret (confidential, shown this once).', content: json(ref('App')) } },
          body('AppCreate'),
        ),
      },
      '/apps/{client_id}': {
        parameters: [client],
        get: op('An application', ADMIN_READ, {
          '200': { description: 'The application (never its secret).', content: json(ref('App')) },
          ...notFound,
        }),
        patch: op(
          'Change an application (checked whole again, as at registration)',
          ADMIN_WRITE,
          { '200': { description: 'The application as changed.', content: json(ref('App')) }, ...notFound },
          body('AppPatch', true),
        ),
        delete: op('Delete an application with its grants and tokens', ADMIN_WRITE, { '204': { description: 'Deleted.' }, ...notFound }),
      },
      '/apps/{client_id}/secret': {
        parameters: [client],
        post: op('Make a new client secret (the old one stops working)', ADMIN_WRITE, {
          '200': {
            description: 'The new secret, shown this once.',
            content: json({
              type: 'object',
              required: ['client_id', 'client_secret'],
              properties: { client_id: { type: 'string' }, client_secret: { type: 'string' } },
            }),
          },
          ...notFound,
        }),
      },
      '/resources': {
        get: op(
          "List the team's APIs (RFC 8707 resources)",
          ADMIN_READ,
          { '200': { description: 'A page of APIs.', content: json(ref('ResourcePage')) } },
          {
            parameters: listParameters(S.PageQuery),
          },
        ),
        post: op(
          'Define an API with its scopes',
          ADMIN_WRITE,
          {
            '201': { description: 'The API.', content: json(ref('Resource')) },
            '409': problem('The identifier, or a scope name, is taken.'),
          },
          body('ResourceCreate'),
        ),
      },
      '/resources/{id}': {
        parameters: [pathParameter('id', "The API's identifier, percent-encoded.")],
        get: op('An API', ADMIN_READ, { '200': { description: 'The API.', content: json(ref('Resource')) }, ...notFound }),
        patch: op(
          "Change an API's name or scopes",
          ADMIN_WRITE,
          { '200': { description: 'The API as changed.', content: json(ref('Resource')) }, ...notFound },
          body('ResourcePatch', true),
        ),
        delete: op('Remove an API: its scopes are taken from every application', ADMIN_WRITE, {
          '204': { description: 'Removed.' },
          ...notFound,
        }),
      },
      '/workloads': {
        get: op(
          "List CI workloads' trust policies (RFC 8693)",
          ADMIN_READ,
          { '200': { description: 'A page of policies.', content: json(ref('WorkloadPage')) } },
          {
            parameters: listParameters(S.PageQuery),
          },
        ),
        post: op(
          'Trust the CI jobs whose tokens match',
          ADMIN_WRITE,
          { '201': { description: 'The policy.', content: json(ref('Workload')) }, '409': problem('The id is taken.') },
          body('WorkloadCreate'),
        ),
      },
      '/workloads/{id}': {
        parameters: [pathParameter('id', 'The policy.')],
        get: op('A trust policy', ADMIN_READ, { '200': { description: 'The policy.', content: json(ref('Workload')) }, ...notFound }),
        delete: op('Remove a trust policy', ADMIN_WRITE, { '204': { description: 'Removed.' }, ...notFound }),
      },
      '/connectors': {
        get: op(
          'List connectors (upstream identity providers)',
          ADMIN_READ,
          { '200': { description: 'A page of connectors.', content: json(ref('ConnectorPage')) } },
          {
            parameters: listParameters(S.PageQuery),
          },
        ),
        post: op(
          'Add a connector (its secret is never read back)',
          ADMIN_WRITE,
          { '201': { description: 'The connector.', content: json(ref('Connector')) }, '409': problem('The id is taken.') },
          body('ConnectorCreate'),
        ),
      },
      '/connectors/{id}': {
        parameters: [pathParameter('id', 'The connector.')],
        get: op('A connector', ADMIN_READ, { '200': { description: 'The connector.', content: json(ref('Connector')) }, ...notFound }),
        delete: op('Remove a connector (its people keep their accounts)', ADMIN_WRITE, { '204': { description: 'Removed.' }, ...notFound }),
      },
      '/audit': {
        get: op(
          'The audit trail, newest first',
          ADMIN_READ,
          { '200': { description: 'A page of audit rows.', content: json(ref('AuditPage')) } },
          {
            parameters: listParameters(S.AuditQuery),
          },
        ),
      },
    },
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT (RFC 9068)' },
        dpop: { type: 'http', scheme: 'dpop', description: 'A DPoP-bound token with its proof (RFC 9449).' },
      },
      schemas: {
        User: S.User,
        UserCreate: S.UserCreate,
        UserPatch: S.UserPatch,
        UserPage: S.pageOf(ref('User')),
        App: S.App,
        AppCreate: S.AppCreate,
        AppPatch: S.AppPatch,
        AppPage: S.pageOf(ref('App')),
        Resource: S.Resource,
        ResourceCreate: S.ResourceCreate,
        ResourcePatch: S.ResourcePatch,
        ResourcePage: S.pageOf(ref('Resource')),
        Workload: S.Workload,
        WorkloadCreate: S.WorkloadCreate,
        WorkloadPage: S.pageOf(ref('Workload')),
        Connector: S.Connector,
        ConnectorCreate: S.ConnectorCreate,
        ConnectorPage: S.pageOf(ref('Connector')),
        AuditEvent: S.AuditEvent,
        AuditPage: S.pageOf(ref('AuditEvent')),
        Problem: {
          type: 'object',
          description: 'RFC 9457 problem details.',
          required: ['type', 'title', 'status', 'detail', 'error'],
          properties: {
            type: { type: 'string', const: 'about:blank' },
            title: { type: 'string' },
            status: { type: 'integer' },
            detail: { type: 'string' },
            error: {
              type: 'string',
              description: 'invalid_token, insufficient_scope, invalid_input, not_found, conflict, rate_limited, ...',
            },
            field: { type: 'string', description: 'The member at fault, when one is.' },
          },
        },
      },
    },
  };
}

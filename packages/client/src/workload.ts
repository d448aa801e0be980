// `authcli login --ci`: a CI job signs in with its own OIDC token (RFC 8693 token exchange), no stored secret.
import { decodeJwt } from 'jose';
import type { ClientSettings } from './config.js';
import type { StoredSession } from './credentials.js';
import { AuthcliError } from './errors.js';
import type { Transport } from './http.js';
import { OAuthClient } from './oauth/client.js';
import type { ServerMetadata } from './oauth/discovery.js';

/** Where the job's OIDC token comes from: GitHub Actions' ID-token request, or an environment variable (GitLab's id_tokens). */
export interface CiSource {
  /** The audience asked of GitHub Actions (default: the issuer). */
  audience: string;
  /** The variable holding the token (`--ci-token-env`), instead of GitHub Actions' request. */
  tokenEnv?: string | undefined;
}

/**
 * The job's OIDC token: the variable `--ci-token-env` names, else GitHub Actions' documented request
 * (`ACTIONS_ID_TOKEN_REQUEST_URL` with `audience`, `Authorization: Bearer ACTIONS_ID_TOKEN_REQUEST_TOKEN`).
 */
export async function ciToken(source: CiSource, transport: Transport, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if (source.tokenEnv !== undefined) {
    const value = env[source.tokenEnv]?.trim();
    if (!value) throw new AuthcliError('usage', `${source.tokenEnv} holds no CI token (GitLab: declare it under the job's id_tokens)`);
    return value;
  }
  const url = env.ACTIONS_ID_TOKEN_REQUEST_URL;
  const bearer = env.ACTIONS_ID_TOKEN_REQUEST_TOKEN;
  if (!url || !bearer) {
    throw new AuthcliError(
      'usage',
      'no CI token here: in GitHub Actions give the job `permissions: id-token: write`; in another CI pass --ci-token-env NAME',
      {
        hint: 'See `authcli login --help` and docs/ci.md.',
      },
    );
  }
  const request = new URL(url);
  request.searchParams.set('audience', source.audience);
  const res = await transport(request.href, { method: 'GET', headers: { authorization: `Bearer ${bearer}`, accept: 'application/json' } });
  const value = (res.body as { value?: unknown } | undefined)?.value;
  if (res.status !== 200 || typeof value !== 'string') {
    throw new AuthcliError(
      'protocol',
      `GitHub Actions did not give the job its OIDC token (HTTP ${res.status}); does the job have \`permissions: id-token: write\`?`,
    );
  }
  return value;
}

/**
 * Exchanges the job's token for the application's access token (RFC 8693) and shapes the session to store: no
 * refresh token; `authcli token` exchanges a new CI token when this one nears expiry.
 */
export async function workloadSession(
  meta: ServerMetadata,
  settings: ClientSettings,
  opts: {
    source: CiSource;
    scope: string | undefined;
    transport: Transport;
    tokenTransport?: Transport | undefined;
    dpopJkt?: string | undefined;
  },
  now: () => number = Date.now,
): Promise<StoredSession> {
  const subjectToken = await ciToken(opts.source, opts.transport);
  const client = new OAuthClient({ meta, settings, transport: opts.transport, tokenTransport: opts.tokenTransport });
  const tokens = await client.tokenExchange(subjectToken, opts.scope);
  const bound = tokens.token_type.toLowerCase() === 'dpop';
  if (bound && !opts.dpopJkt) throw new AuthcliError('protocol', 'the server sent a DPoP-bound token to a request without a DPoP proof');
  let subject: string | undefined;
  try {
    subject = decodeJwt(tokens.access_token).sub;
  } catch {
    subject = undefined;
  }
  return {
    kind: 'workload',
    ci: { audience: opts.source.audience, ...(opts.source.tokenEnv !== undefined && { token_env: opts.source.tokenEnv }) },
    client_id: settings.clientId,
    access_token: tokens.access_token,
    token_type: bound ? 'DPoP' : 'Bearer',
    ...(bound && { dpop_jkt: opts.dpopJkt }),
    expires_at: now() + (tokens.expires_in ?? 600) * 1000,
    scope: tokens.scope ?? opts.scope ?? '',
    subject,
    username: undefined,
    obtained_at: now(),
    ...(settings.resource !== undefined && { resource: settings.resource }),
  };
}

/**
 * A validated authorization request written back into a query string by the
 * server, never the query as received: for a POSTed request continued as a
 * GET, the "continue as" link, and the request a sign-in resumes.
 */
import type { AuthorizationRequest } from './authorization-request.js';
import { serializeClaimsRequest } from './claims-request.js';

/**
 * The validated request serialized again by the server, every field it uses
 * kept (`prompt` and `max_age` included): what a POSTed request (OIDC Core
 * §3.1.2.1) is redirected to the GET endpoint with.
 */
export function requestQuery(req: AuthorizationRequest): string {
  if (req.pushed) {
    // By reference (RFC 9126 §4); a prompt the server narrowed ("continue as") goes along, as openPushedRequest allows.
    const query = new URLSearchParams({ client_id: req.app.clientId, request_uri: req.pushed.requestUri });
    const pushedPrompt = req.pushed.prompt;
    if (req.prompt.size !== pushedPrompt.size || [...req.prompt].some((p) => !pushedPrompt.has(p)))
      query.set('prompt', [...req.prompt].join(' '));
    return query.toString();
  }
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: req.app.clientId,
    redirect_uri: req.redirectUri,
    scope: req.scopes.join(' '),
    code_challenge: req.codeChallenge,
    code_challenge_method: 'S256',
  });
  if (req.state !== undefined) query.set('state', req.state);
  if (req.responseMode !== 'query') query.set('response_mode', req.responseMode);
  if (req.nonce !== undefined) query.set('nonce', req.nonce);
  if (req.prompt.size) query.set('prompt', [...req.prompt].join(' '));
  if (req.maxAge !== undefined) query.set('max_age', String(req.maxAge));
  if (req.claims !== undefined) query.set('claims', serializeClaimsRequest(req.claims)!);
  if (req.idTokenHint !== undefined) query.set('id_token_hint', req.idTokenHint);
  if (req.loginHint !== undefined) query.set('login_hint', req.loginHint);
  if (req.acrValues?.length) query.set('acr_values', req.acrValues.join(' '));
  if (req.dpopJkt !== undefined) query.set('dpop_jkt', req.dpopJkt);
  for (const resource of req.resources) query.append('resource', resource);
  return query.toString();
}

/**
 * The query of the authorization request a sign-in resumes, serialized by the
 * server from the validated fields, never the query as received: parameters
 * this server does not use are left behind, `login` and `select_account`
 * leave `prompt` and `max_age` goes (the sign-in that follows satisfies all
 * three, so they must not ask again). GET /oauth/authorize validates the
 * result again when it runs.
 */
export function resumeQuery(req: AuthorizationRequest): string {
  // A pushed request is resumed by reference; the sign-in itself satisfies its prompt and max_age (nextAuthorizationStep).
  if (req.pushed) return requestQuery(req);
  return requestQuery({ ...withoutPrompt(req, 'login', 'select_account'), maxAge: undefined });
}

/** The request without the given `prompt` values. */
export function withoutPrompt(req: AuthorizationRequest, ...values: string[]): AuthorizationRequest {
  return { ...req, prompt: new Set([...req.prompt].filter((p) => !values.includes(p))) };
}

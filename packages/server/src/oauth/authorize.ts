/**
 * The authorization endpoint's validation (RFC 6749 §4.1.2.1): a request,
 * sent directly or pushed first (RFC 9126), through the checks of
 * authorize-checks.ts in the order the RFC requires, into an
 * AuthorizationRequest. What follows a valid request is
 * authorization-step.ts (sign-in, consent or a code).
 */
import { CONTINUATION_TTL_MS } from '../config/defaults.js';
import { FormError, parseForm, resourceValues } from '../http/form.js';
import type { Application } from '../store/store.js';
import { AuthorizationPageError, type AuthorizationRequest, AuthorizationRedirectError } from './authorization-request.js';
import {
  checkClient,
  checkDpopJkt,
  checkLengths,
  checkNoRepeats,
  checkNoRequestObjects,
  checkPkce,
  checkPrompt,
  checkRedirectUri,
  checkResponseType,
  checkSubject,
  loginHint,
  responseModeOf,
} from './authorize-checks.js';
import { essentialAcrUnmet, parseClaimsRequest } from './claims-request.js';
import type { OAuthContext } from './context.js';
import { AccessDenied, InvalidRequest, OAuthError } from './errors.js';
import { PUSHED_REQUEST_URI_PREFIX, pushedRequestHash } from './pushed-request-uri.js';
import { parseScope } from './scopes.js';
import { coveredResources, namedResources } from './resources.js';

type Params = Readonly<Record<string, string>>;

/** The query as a strict form (http/form.ts); a malformed one is shown, as no redirect_uri can be trusted from it. */
function parseQuery(rawQuery: string) {
  try {
    return parseForm(rawQuery);
  } catch (err) {
    if (err instanceof FormError) throw new AuthorizationPageError('invalid_request', err.message);
    throw err;
  }
}

/**
 * Validates an authorization request, in the order RFC 6749 §4.1.2.1
 * requires: client and redirect_uri first (errors shown as a page), then
 * everything else (errors redirected with state and iss). A `request_uri`
 * of this server's stands for a pushed request (RFC 9126 §4).
 */
export async function validateAuthorizationRequest(ctx: OAuthContext, rawQuery: string): Promise<AuthorizationRequest> {
  const form = parseQuery(rawQuery);
  const { params, repeated } = form;
  const app = await checkClient(ctx, params, repeated);
  if (params.request_uri?.startsWith(PUSHED_REQUEST_URI_PREFIX)) return openPushedRequest(ctx, app, params, repeated);
  const mustBePushed = app.requirePushedAuthorizationRequests || ctx.config.requirePushedAuthorizationRequests;
  return validateParams(ctx, app, params, repeated, rawQuery, mustBePushed, resourceValues(form));
}

/**
 * A request pushed to the PAR endpoint (RFC 9126 §2.1), by a client already
 * authenticated: validated exactly as at the authorization endpoint. The
 * caller answers every error as JSON (§2.3), a redirect_uri error included.
 */
export function validatePushedParams(
  ctx: OAuthContext,
  app: Application,
  params: Params,
  repeated: ReadonlySet<string>,
  resources: readonly string[] = [],
): Promise<AuthorizationRequest> {
  return validateParams(ctx, app, params, repeated, '', false, resources);
}

/**
 * RFC 9126 §4: the authorization request by reference. The request_uri must
 * be live, unused and pushed by this client; its stored parameters are
 * validated again (a key or user may have changed since) and the other
 * parameters of the query are ignored, except the server's own "continue
 * as" link, which may drop `select_account` from `prompt` (nothing else).
 * The first time a browser opens it, it lives as long as a sign-in may take.
 */
async function openPushedRequest(
  ctx: OAuthContext,
  app: Application,
  params: Params,
  repeated: ReadonlySet<string>,
): Promise<AuthorizationRequest> {
  if (repeated.has('request_uri')) throw new AuthorizationPageError('invalid_request', 'request_uri is repeated');
  const requestUri = params.request_uri!;
  const hash = pushedRequestHash(requestUri);
  const now = ctx.config.now();
  const row = hash === undefined ? undefined : await ctx.store.pushedRequests.find(hash);
  if (!row || row.clientId !== app.clientId || row.usedAt !== null || now >= row.expiresAt) {
    throw new AuthorizationPageError(
      'invalid_request_uri',
      'This sign-in request is unknown, has expired or was already answered. Start again from the application.',
    );
  }
  if (row.openedAt === null) await ctx.store.pushedRequests.open(hash!, now, now + CONTINUATION_TTL_MS);
  const stored = parseQuery(row.query);
  const inner = await validateParams(ctx, app, stored.params, stored.repeated, row.query, false, resourceValues(stored));
  let prompt = inner.prompt;
  if (params.prompt !== undefined && !repeated.has('prompt')) {
    const asked = new Set(params.prompt.split(' ').filter(Boolean));
    const narrowed = [...asked].every((p) => inner.prompt.has(p)) && [...inner.prompt].every((p) => asked.has(p) || p === 'select_account');
    if (narrowed) prompt = asked;
  }
  const rawQuery = new URLSearchParams({ client_id: app.clientId, request_uri: requestUri }).toString();
  return { ...inner, prompt, rawQuery, pushed: { requestUri, createdAt: row.createdAt, prompt: inner.prompt } };
}

/** Everything after the client: the redirect_uri (errors shown), then the rest (errors redirected with state and iss). */
async function validateParams(
  ctx: OAuthContext,
  app: Application,
  params: Params,
  repeated: ReadonlySet<string>,
  rawQuery: string,
  mustBePushed: boolean,
  resourceParams: readonly string[],
): Promise<AuthorizationRequest> {
  const redirectUri = checkRedirectUri(app, params, repeated);
  const state = repeated.has('state') ? undefined : params.state;
  const responseMode = responseModeOf(params, repeated);
  try {
    checkNoRepeats(repeated);
    checkNoRequestObjects(params);
    if (mustBePushed) {
      throw new InvalidRequest(
        'this application must push its authorization requests first (RFC 9126): use the pushed_authorization_request_endpoint',
      );
    }
    checkResponseType(app, params);
    checkLengths(params);
    const codeChallenge = checkPkce(params);
    const catalog = await ctx.store.resources.catalog();
    const scopes = parseScope(params.scope, app.scopes, catalog.byScope);
    // RFC 8707 §2: the APIs named, and those the scopes imply.
    const resources = coveredResources(namedResources(resourceParams, catalog, app.scopes), scopes, catalog);
    const { prompt, maxAge } = checkPrompt(params);
    const claims = parseClaimsRequest(params.claims, app.scopes);
    if (essentialAcrUnmet(claims)) throw new AccessDenied('the requested authentication context class cannot be satisfied');
    const subject = await checkSubject(ctx, app, params, claims);
    const dpopJkt = checkDpopJkt(params);
    return {
      app,
      redirectUri,
      state,
      responseMode,
      scopes,
      resources,
      nonce: params.nonce,
      codeChallenge,
      prompt,
      maxAge,
      claims,
      idTokenHint: params.id_token_hint,
      loginHint: loginHint(params.login_hint),
      acrValues: params.acr_values?.split(' ').filter(Boolean),
      subject,
      dpopJkt,
      rawQuery,
      pushed: undefined,
    };
  } catch (err) {
    if (err instanceof OAuthError) throw new AuthorizationRedirectError(err, redirectUri, state, responseMode);
    throw err;
  }
}

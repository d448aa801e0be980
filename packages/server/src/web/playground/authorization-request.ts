/**
 * The form and the authorization request it starts: the chosen application's
 * scopes, PKCE, state and nonce from @authcli/pkce, the DPoP key's thumbprint
 * (`dpop_jkt`, RFC 9449 §10) when DPoP is on, the push to the PAR endpoint
 * (RFC 9126) when PAR is on, the request saved for its callback, then the
 * browser sent to the authorization endpoint.
 */
import { challengeS256, generateNonce, generateState, generateVerifier } from '@authcli/pkce';
import { createDpopKey, type DpopKey, dpopProof, purgeExpiredDpopKeys, saveDpopKey } from './dpop.js';
import { el, issuer, json, pre, redirectUri, step } from './page.js';
import { errorOf, latestDpopNonce, sendShown } from './requests.js';
import { type SavedRequest, saveRequest, TTL_MS } from './saved-request.js';

/** Nothing is sent when this browser cannot make or keep the DPoP key pair (WebCrypto, IndexedDB). */
function dpopUnavailable(err: unknown): void {
  step(
    'DPoP unavailable',
    el('p', { class: 'alert', role: 'alert' }, `This browser could not make or keep the DPoP key pair: ${(err as Error).message}`),
    el('p', { class: 'muted' }, 'No authorization request was sent. Untick DPoP to run the flow with Bearer tokens.'),
  );
}

/** Shows the chosen application's scopes to tick, and ticks DPoP and PAR when it requires them. */
export async function loadApp(select: HTMLSelectElement, scopeBox: HTMLElement): Promise<void> {
  scopeBox.replaceChildren();
  if (!select.value) return;
  const res = await fetch(`/developer/playground/apps/${encodeURIComponent(select.value)}`, { headers: { accept: 'application/json' } });
  if (!res.ok) {
    scopeBox.append(el('p', { class: 'alert', role: 'alert' }, `Could not load the application (${res.status}).`));
    return;
  }
  const app = (await res.json()) as { scopes: string[]; callback_urls: string[]; require_dpop: boolean; require_par: boolean };
  // An application that requires DPoP gets no token without a proof; one that requires PAR, no code without a push.
  const dpop = document.getElementById('dpop') as HTMLInputElement | null;
  if (dpop && app.require_dpop) dpop.checked = true;
  const par = document.getElementById('par') as HTMLInputElement | null;
  if (par && app.require_par) par.checked = true;
  scopeBox.append(el('legend', {}, 'Scopes'));
  for (const s of app.scopes) {
    const box = el('input', { type: 'checkbox', name: 'scope', value: s });
    if (s === 'openid' || s === 'profile') box.setAttribute('checked', '');
    scopeBox.append(el('label', {}, box, ' ', el('code', {}, s)));
  }
  scopeBox.append(el('p', { class: 'muted' }, `Registered callback URLs: ${app.callback_urls.join(', ')}`));
}

/** Builds the authorization request from the form, pushes it when PAR is on, saves it, and sends the browser on. */
export async function start(form: HTMLFormElement): Promise<void> {
  const data = new FormData(form);
  const clientId = String(data.get('client_id') ?? '');
  const scope = data.getAll('scope').map(String).join(' ');
  const extra = String(data.get('extra') ?? '').trim();
  let key: DpopKey | undefined;
  try {
    key = data.get('dpop') === 'on' ? await createDpopKey() : undefined;
  } catch (err) {
    return dpopUnavailable(err);
  }
  const verifier = generateVerifier();
  const saved: SavedRequest = {
    issuer,
    client_id: clientId,
    redirect_uri: redirectUri,
    scope,
    verifier,
    state: generateState(),
    nonce: generateNonce(),
    created_at: Date.now(),
    url: '',
  };
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    scope,
    state: saved.state,
    nonce: saved.nonce,
    code_challenge: await challengeS256(verifier),
    code_challenge_method: 'S256',
  });
  // RFC 9449 §10: the code can be redeemed only with a proof by this key.
  if (key) params.set('dpop_jkt', key.jkt);
  for (const [k, v] of new URLSearchParams(extra)) params.set(k, v);
  // What was really sent is what the exchange must repeat, edited parameters included.
  saved.client_id = params.get('client_id') ?? clientId;
  saved.redirect_uri = params.get('redirect_uri') ?? redirectUri;
  saved.scope = params.get('scope') ?? scope;
  saved.nonce = params.get('nonce') ?? saved.nonce;
  let url = `${issuer}/oauth/authorize?${params}`;
  if (data.get('par') === 'on') {
    const requestUri = await push(params, key);
    if (requestUri === undefined) return;
    saved.pushed = Object.fromEntries(params);
    url = `${issuer}/oauth/authorize?${new URLSearchParams({ client_id: saved.client_id, request_uri: requestUri })}`;
  }
  saved.url = url;
  if (key) {
    saved.dpop_jkt = key.jkt;
    try {
      await purgeExpiredDpopKeys(TTL_MS);
      await saveDpopKey(saved.state, key);
    } catch (err) {
      return dpopUnavailable(err);
    }
  }
  saveRequest(saved);
  step(
    '1. Authorization request',
    pre(url, 'Authorization request URL'),
    pre(json(Object.fromEntries(params)), 'Authorization request parameters'),
  );
  window.location.assign(url);
}

/**
 * RFC 9126 §2: pushes the authorization request's parameters to the PAR
 * endpoint as this public client (its client_id is its authentication), with
 * a DPoP proof when there is a key (RFC 9449 §10.1: it binds the code as
 * dpop_jkt does). The request_uri of a 201 answer, or undefined when the
 * push was refused (shown, and nothing more is sent).
 */
async function push(params: URLSearchParams, key: DpopKey | undefined): Promise<string | undefined> {
  const url = `${issuer}/oauth/par`;
  const section = step('Pushed authorization request (RFC 9126)');
  const { answer } = await sendShown(
    section,
    async () => {
      const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
      if (key) headers.dpop = await dpopProof(key, 'POST', url, { nonce: latestDpopNonce() });
      return { method: 'POST', url, headers, body: String(params) };
    },
    { request: 'Pushed authorization request', response: 'Pushed authorization response' },
  );
  let requestUri: unknown;
  try {
    requestUri = (JSON.parse(answer.text) as { request_uri?: unknown }).request_uri;
  } catch {
    /* not JSON: refused below */
  }
  if (answer.status === 201 && typeof requestUri === 'string') return requestUri;
  section.append(
    el('p', { class: 'alert', role: 'alert', id: 'par-error' }, `The push was refused: ${errorOf(answer) ?? `HTTP ${answer.status}`}`),
    el('p', { class: 'muted' }, 'No authorization request was sent.'),
  );
  return undefined;
}

/**
 * The callback: the saved request of this tab for its state, the checks that
 * must pass before anything is sent (state, `iss` per RFC 9207, the DPoP key
 * still in this browser), then the code exchange and what follows it.
 */
import { takeDpopKey } from './dpop.js';
import { offerFollowUps } from './follow-ups.js';
import { check, el, json, pre, step } from './page.js';
import { takeSaved, TTL_MS } from './saved-request.js';
import { showBinding, showIdToken, tokenCall } from './tokens.js';

/** Says why the code is not exchanged: nothing is sent. */
function blocked(message: string): void {
  step(
    'Token exchange blocked',
    el('p', { class: 'alert', role: 'alert', id: 'blocked' }, message),
    el('p', { class: 'muted' }, 'No token request was sent.'),
  );
}

/** Handles the authorization response the browser came back with. */
export async function handleCallback(params: URLSearchParams): Promise<void> {
  // Keep the callback off the address bar and history: a reload must not replay it.
  history.replaceState(null, '', window.location.pathname);
  const state = params.get('state') ?? '';
  const saved = state ? takeSaved(state) : undefined;
  // The DPoP key is one use too, whatever the checks below say.
  const key = saved?.dpop_jkt ? await takeDpopKey(state, TTL_MS).catch(() => undefined) : undefined;
  if (saved) {
    const sent = new URL(saved.url);
    step(
      '1. Authorization request',
      pre(saved.url, 'Authorization request URL'),
      pre(json(Object.fromEntries(sent.searchParams)), 'Authorization request parameters'),
      ...(saved.pushed ? [el('h3', {}, 'Pushed first (RFC 9126)'), pre(json(saved.pushed), 'Pushed parameters')] : []),
    );
  }
  step('2. Callback', pre(json(Object.fromEntries(params)), 'Callback parameters'));
  const checks = el('ul', { class: 'checks' });
  step('3. Checks', checks);
  checks.append(check('state: a saved request of this tab', saved !== undefined));
  if (!saved) {
    return blocked(
      'No saved request for this state in this tab (another tab, a reload after use, cleared storage, or older than 10 minutes).',
    );
  }
  const iss = params.get('iss');
  const issOk = iss !== null && iss === saved.issuer;
  checks.append(check('iss equals the issuer (RFC 9207)', issOk, iss ?? 'missing'));
  if (!issOk)
    return blocked(iss === null ? 'The callback has no iss parameter.' : `The callback's iss (${iss}) is not the issuer ${saved.issuer}.`);
  if (saved.dpop_jkt) {
    const keyOk = key?.jkt === saved.dpop_jkt;
    checks.append(check('DPoP key of the request kept in this browser', keyOk, saved.dpop_jkt));
    if (!keyOk) return blocked('The DPoP key pair of this request is not in this browser (IndexedDB), so no proof can be signed.');
  }
  const error = params.get('error');
  if (error) {
    step(
      'Authorization error',
      el('p', { class: 'alert', role: 'alert', id: 'auth-error' }, `${error}: ${params.get('error_description') ?? ''}`),
    );
    return;
  }
  const code = params.get('code');
  if (!code) return blocked('The callback has neither a code nor an error.');
  const result = await tokenCall(
    '4. Token request',
    new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: saved.redirect_uri,
      client_id: saved.client_id,
      code_verifier: saved.verifier,
    }),
    key,
  );
  if (!result) return;
  if (key) await showBinding(result.tokens, key);
  if (typeof result.tokens.id_token === 'string') await showIdToken(result.tokens.id_token, saved);
  offerFollowUps(result, saved, key);
}

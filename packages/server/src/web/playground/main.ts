/**
 * Developer > OAuth playground, in the browser: the playground acts as one
 * of the developer's own public applications. PKCE, state and nonce come
 * from @authcli/pkce; the saved request lives in this tab's sessionStorage
 * only (never localStorage), keyed by state, for at most 10 minutes, and is
 * removed on first use. The exchange is refused, with nothing sent, when the
 * saved request is missing or the callback's iss is missing or wrong.
 * Every value is put into the page as text, never as HTML.
 *
 * With the DPoP toggle on (RFC 9449), the request names a new key pair's
 * thumbprint (`dpop_jkt`, §10), every token and userinfo request carries a
 * proof signed by that key (the server's nonce added when it asks, §8), and
 * the page shows the proofs, the access token's `cnf` beside the key's
 * thumbprint, and the server refusing a replayed proof and the bound token
 * sent as Bearer. The key pair is made and kept by ./dpop.ts.
 *
 * With the PAR toggle on (RFC 9126), the parameters are pushed to the PAR
 * endpoint first, the proof with them when DPoP is on, and the browser goes
 * to the authorization endpoint with only client_id and the request_uri.
 *
 * This module wires the page; each part is a module beside it, bundled with
 * it (tsup.config.ts): the form and the request (./authorization-request.ts),
 * the saved request (./saved-request.ts), the callback (./callback.ts), the
 * token requests (./tokens.ts), what follows them (./follow-ups.ts), the
 * requests as shown (./requests.ts) and the page's text-only helpers (./page.ts).
 */
import { loadApp, start } from './authorization-request.js';
import { handleCallback } from './callback.js';
import { root } from './page.js';
import { purgeExpired } from './saved-request.js';

purgeExpired();
const params = new URLSearchParams(window.location.search);
if (params.has('code') || params.has('error') || params.has('state')) {
  document.getElementById('request-form')?.setAttribute('hidden', '');
  void handleCallback(params).finally(() => root.setAttribute('data-done', 'true'));
} else {
  const form = document.getElementById('request-form') as HTMLFormElement | null;
  if (form) {
    const select = form.querySelector('select')!;
    const scopeBox = document.getElementById('scopes')!;
    select.addEventListener('change', () => void loadApp(select, scopeBox));
    void loadApp(select, scopeBox);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      void start(form);
    });
  }
  root.setAttribute('data-done', 'true');
}

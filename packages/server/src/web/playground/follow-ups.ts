/**
 * What can be done with the tokens once they are shown: refresh them, call
 * userinfo, and, with DPoP, play the thief: replay a request with its proof,
 * or send the bound access token as Bearer, and see the server refuse it.
 */
import { type DpopKey, dpopProof } from './dpop.js';
import { check, el, issuer, pre, step } from './page.js';
import { errorOf, latestDpopNonce, proofView, requestText, responseText, type Sent, send, sendShown } from './requests.js';
import type { SavedRequest } from './saved-request.js';
import { type Tokens, tokenCall } from './tokens.js';

/** Sends what a thief holds (`sent`: a copied request, or a bare token) and shows the server's refusal. */
async function attack(title: string, sent: Sent, text: { what: string; request: string; label: string; check: string }): Promise<void> {
  const answer = await send(sent);
  const error = errorOf(answer);
  const { what, label } = text;
  step(
    title,
    el('p', {}, what),
    el('h3', {}, text.request),
    pre(requestText(sent), `${label} request`),
    ...(sent.headers.dpop ? proofView(sent.headers.dpop) : []),
    el('h3', {}, 'Response'),
    pre(responseText(answer), `${label} response`),
    el('ul', { class: 'checks' }, check(text.check, answer.status === 400 || answer.status === 401, error ?? `HTTP ${answer.status}`)),
  );
}

async function callUserinfo(token: string, key: DpopKey | undefined): Promise<void> {
  const url = `${issuer}/oauth/userinfo`;
  if (!key) {
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    step('Userinfo', pre(`GET ${url}\nauthorization: Bearer …\n\nHTTP ${res.status}\n\n${await res.text()}`, 'Userinfo response'));
    return;
  }
  // RFC 9449 §7.1: the DPoP scheme, and a proof naming the token in ath.
  const section = step('Userinfo');
  const { sent } = await sendShown(
    section,
    async () => ({
      method: 'GET',
      url,
      headers: { authorization: `DPoP ${token}`, dpop: await dpopProof(key, 'GET', url, { nonce: latestDpopNonce(), accessToken: token }) },
    }),
    { request: 'Userinfo request', response: 'Userinfo response' },
  );
  const again = el('button', { type: 'button', class: 'secondary' }, 'Replay this userinfo request');
  again.addEventListener('click', () =>
    attack('Replay: the same userinfo request again', sent, {
      what: 'Someone who copied this request, token and proof, sends it again: the proof’s jti was used already.',
      request: 'Request, the same proof again',
      label: 'Userinfo replay',
      check: 'replayed userinfo request refused',
    }),
  );
  section.append(el('div', { class: 'actions' }, again));
}

/** The buttons for what can follow these tokens: refresh, userinfo, and with DPoP the replays and the Bearer downgrade. */
export function offerFollowUps(result: Tokens, saved: SavedRequest, key?: DpopKey): void {
  const { tokens } = result;
  const actions = el('div', { class: 'actions' });
  if (typeof tokens.refresh_token === 'string') {
    const b = el('button', { type: 'button' }, 'Refresh tokens');
    b.addEventListener('click', async () => {
      const next = await tokenCall(
        'Refresh',
        new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token as string, client_id: saved.client_id }),
        key,
      );
      if (next) offerFollowUps(next, saved, key);
    });
    actions.append(b);
  }
  const token = typeof tokens.access_token === 'string' ? tokens.access_token : undefined;
  if (
    token !== undefined &&
    String(tokens.scope ?? '')
      .split(' ')
      .includes('openid')
  ) {
    const b = el('button', { type: 'button', class: 'secondary' }, 'Call userinfo');
    b.addEventListener('click', () => callUserinfo(token, key));
    actions.append(b);
  }
  if (key) {
    const again = el('button', { type: 'button', class: 'secondary' }, 'Replay the token request');
    again.addEventListener('click', () =>
      attack('Replay: the same token request again', result.sent, {
        what: 'The token request above, sent again to the letter: its proof’s jti was used already.',
        request: 'Request, the same proof again',
        label: 'Token replay',
        check: 'replayed token request refused',
      }),
    );
    actions.append(again);
  }
  if (key && token !== undefined) {
    const bearer = el('button', { type: 'button', class: 'secondary' }, 'Send the token as Bearer');
    bearer.addEventListener('click', async () => {
      const url = `${issuer}/oauth/userinfo`;
      await attack(
        'Downgrade: the DPoP-bound token as Bearer',
        { method: 'GET', url, headers: { authorization: `Bearer ${token}` } },
        {
          what: 'A stolen access token without the key: the server refuses a DPoP-bound token sent as a Bearer token (RFC 9449 §7.1).',
          request: 'Request, the token alone',
          label: 'Bearer downgrade',
          check: 'Bearer downgrade refused',
        },
      );
    });
    actions.append(bearer);
  }
  if (actions.childElementCount) step('Next steps', actions);
}

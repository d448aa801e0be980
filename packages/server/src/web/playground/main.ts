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
 */
import { challengeS256, generateNonce, generateState, generateVerifier, timingSafeEqualString } from '@authcli/pkce';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { createDpopKey, type DpopKey, dpopProof, purgeExpiredDpopKeys, saveDpopKey, takeDpopKey } from './dpop.js';

const PREFIX = 'authcli.playground.request.';
const TTL_MS = 10 * 60_000;

interface SavedRequest {
  issuer: string;
  client_id: string;
  redirect_uri: string;
  scope: string;
  verifier: string;
  state: string;
  nonce: string;
  created_at: number;
  /** The authorization request as sent, to show it again after the round trip. */
  url: string;
  /** With DPoP: the thumbprint of the key pair waiting in IndexedDB for this state (see ./dpop.ts). */
  dpop_jkt?: string;
  /** With PAR (RFC 9126): the parameters pushed, which the authorization request itself no longer carries. */
  pushed?: Record<string, string>;
}

const root = document.getElementById('playground')!;
const issuer = root.dataset.issuer!;
const redirectUri = root.dataset.redirectUri!;
const steps = document.getElementById('steps')!;
/** The latest DPoP-Nonce the server sent (RFC 9449 §8), put in every following proof. */
let dpopNonce: string | undefined;

// ---- DOM helpers (text only) ----

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}

function step(title: string, ...content: (Node | string)[]): HTMLElement {
  const s = el('section', { class: 'card step' }, el('h2', {}, title), ...content);
  steps.append(s);
  return s;
}

function pre(text: string, label?: string): HTMLElement {
  return el('pre', label ? { 'aria-label': label } : {}, text);
}

function check(label: string, ok: boolean, detail = ''): HTMLElement {
  return el(
    'li',
    { class: ok ? 'check ok' : 'check fail', 'data-check': label },
    `${ok ? '✔' : '✘'} ${label}${detail ? ` — ${detail}` : ''}`,
  );
}

function blocked(message: string): void {
  step(
    'Token exchange blocked',
    el('p', { class: 'alert', role: 'alert', id: 'blocked' }, message),
    el('p', { class: 'muted' }, 'No token request was sent.'),
  );
}

const json = (v: unknown) => JSON.stringify(v, null, 2);

// ---- saved requests ----

function purgeExpired(): void {
  for (let i = sessionStorage.length - 1; i >= 0; i--) {
    const key = sessionStorage.key(i);
    if (!key?.startsWith(PREFIX)) continue;
    try {
      const saved = JSON.parse(sessionStorage.getItem(key)!) as SavedRequest;
      if (Date.now() - saved.created_at > TTL_MS) sessionStorage.removeItem(key);
    } catch {
      sessionStorage.removeItem(key);
    }
  }
}

/** The saved request for `state`, removed as it is read (one use). */
function takeSaved(state: string): SavedRequest | undefined {
  const key = PREFIX + state;
  const raw = sessionStorage.getItem(key);
  sessionStorage.removeItem(key);
  if (!raw) return undefined;
  const saved = JSON.parse(raw) as SavedRequest;
  return Date.now() - saved.created_at > TTL_MS ? undefined : saved;
}

// ---- the request ----

/** Nothing is sent when this browser cannot make or keep the DPoP key pair (WebCrypto, IndexedDB). */
function dpopUnavailable(err: unknown): void {
  step(
    'DPoP unavailable',
    el('p', { class: 'alert', role: 'alert' }, `This browser could not make or keep the DPoP key pair: ${(err as Error).message}`),
    el('p', { class: 'muted' }, 'No authorization request was sent. Untick DPoP to run the flow with Bearer tokens.'),
  );
}

async function loadApp(select: HTMLSelectElement, scopeBox: HTMLElement): Promise<void> {
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

async function start(form: HTMLFormElement): Promise<void> {
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
  sessionStorage.setItem(PREFIX + saved.state, JSON.stringify(saved));
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
      if (key) headers.dpop = await dpopProof(key, 'POST', url, { nonce: dpopNonce });
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

// ---- the requests ----

/** A request as sent: shown on the page, and sent again to the letter for the replay. */
interface Sent {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: string;
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

async function send(req: Sent): Promise<Answer> {
  const res = await fetch(req.url, { method: req.method, headers: req.headers, body: req.body });
  const nonce = res.headers.get('dpop-nonce');
  if (nonce) dpopNonce = nonce;
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** The request as text; an access token in the Authorization header is not repeated on the page. */
function requestText(req: Sent): string {
  const headers = Object.entries(req.headers).map(([k, v]) => `${k}: ${k === 'authorization' ? `${v.split(' ')[0]} …` : v}`);
  return `${req.method} ${req.url}\n${headers.join('\n')}${req.body === undefined ? '' : `\n\n${req.body}`}`;
}

function responseText(answer: Answer): string {
  const headers = [...answer.headers].map(([k, v]) => `${k}: ${v}`).join('\n');
  return `HTTP ${answer.status}\n${headers}\n\n${answer.text}`;
}

/** The OAuth error of an answer: the JSON body's, else the one in the WWW-Authenticate challenge (RFC 6750 §3, RFC 9449 §7.1). */
function errorOf(answer: Answer): string | undefined {
  try {
    const { error } = JSON.parse(answer.text) as { error?: unknown };
    if (typeof error === 'string') return error;
  } catch {
    /* not JSON: the challenge says it */
  }
  return /error="([^"]+)"/.exec(answer.headers.get('www-authenticate') ?? '')?.[1];
}

/** Whether the server asks for its nonce: 400 use_dpop_nonce (RFC 9449 §8) or a 401 challenge naming it (§9), with a DPoP-Nonce. */
function asksForNonce(answer: Answer): boolean {
  return answer.headers.has('dpop-nonce') && (answer.status === 400 || answer.status === 401) && errorOf(answer) === 'use_dpop_nonce';
}

/** A proof decoded: its header (typ, alg, jwk) and claims (jti, htm, htu, iat, nonce, ath). */
function proofView(proof: string): Node[] {
  return [
    el('h3', {}, 'DPoP proof: header'),
    pre(json(decodeProtectedHeader(proof)), 'DPoP proof header'),
    el('h3', {}, 'DPoP proof: payload'),
    pre(json(decodeJwt(proof)), 'DPoP proof payload'),
  ];
}

/**
 * Sends the request `make` builds, showing it (and its proof) in `section`.
 * With DPoP, `make` signs a new proof with the latest server nonce each time,
 * and when the server answers that it wants its nonce the request goes once
 * more (RFC 9449 §8). `beforeAnswer` adds what goes between the request and
 * the final answer.
 */
async function sendShown(
  section: HTMLElement,
  make: () => Promise<Sent>,
  label: { request: string; response: string },
  beforeAnswer: (sent: Sent) => Node[] = () => [],
): Promise<{ sent: Sent; answer: Answer }> {
  for (let attempt = 1; ; attempt++) {
    const sent = await make();
    section.append(
      el('h3', {}, attempt === 1 ? 'Request' : 'Request again, the nonce in a new proof'),
      pre(requestText(sent), label.request),
    );
    if (sent.headers.dpop) section.append(...proofView(sent.headers.dpop));
    const answer = await send(sent);
    if (attempt === 1 && sent.headers.dpop && asksForNonce(answer)) {
      section.append(el('h3', {}, 'Response: the server wants its nonce (RFC 9449 §8)'), pre(responseText(answer), 'Nonce challenge'));
      continue;
    }
    section.append(...beforeAnswer(sent), el('h3', {}, 'Response'), pre(responseText(answer), label.response));
    return { sent, answer };
  }
}

// ---- the callback ----

function curlOf(req: Sent): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  return [
    `curl -sS -X POST ${q(req.url)}`,
    ...Object.entries(req.headers).map(([k, v]) => `  -H ${q(`${k}: ${v}`)}`),
    ...[...new URLSearchParams(req.body)].map(([k, v]) => `  --data-urlencode ${q(`${k}=${v}`)}`),
  ].join(' \\\n');
}

/** A token request that succeeded: the tokens, and the request as sent (for the replay). */
interface Tokens {
  tokens: Record<string, unknown>;
  sent: Sent;
}

async function tokenCall(title: string, body: URLSearchParams, key?: DpopKey): Promise<Tokens | undefined> {
  const url = `${issuer}/oauth/token`;
  const { sent, answer } = await sendShown(
    step(title),
    async () => {
      const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
      if (key) headers.dpop = await dpopProof(key, 'POST', url, { nonce: dpopNonce });
      return { method: 'POST', url, headers, body: String(body) };
    },
    { request: 'Token request', response: 'Token response' },
    (sent) => {
      const curl = curlOf(sent);
      const copy = el('button', { type: 'button', class: 'secondary' }, 'Copy as curl');
      copy.addEventListener('click', () => void navigator.clipboard?.writeText(curl));
      const once = key
        ? [el('p', { class: 'muted' }, 'A DPoP proof is accepted once: run as it is, this command is refused as a replay.')]
        : [];
      return [copy, pre(curl, 'curl'), ...once];
    },
  );
  try {
    const parsed = JSON.parse(answer.text) as Record<string, unknown>;
    return answer.status >= 200 && answer.status < 300 ? { tokens: parsed, sent } : undefined;
  } catch {
    return undefined;
  }
}

/** RFC 9449 §6.1: the access token's cnf.jkt is the thumbprint of the key this browser holds, and that key cannot leave it. */
async function showBinding(tokens: Record<string, unknown>, key: DpopKey): Promise<void> {
  let cnf: unknown;
  try {
    cnf = decodeJwt(String(tokens.access_token)).cnf;
  } catch {
    cnf = undefined;
  }
  const jkt = (cnf as { jkt?: unknown } | undefined)?.jkt;
  const checks = el('ul', { class: 'checks' });
  step(
    'DPoP binding',
    el('p', {}, 'The access token is bound to the key pair this page made: it is useless without a proof signed by the private key.'),
    el('h3', {}, 'token_type'),
    pre(String(tokens.token_type), 'token_type'),
    el('h3', {}, 'Key thumbprint (RFC 7638), sent as dpop_jkt'),
    pre(key.jkt, 'DPoP key thumbprint'),
    el('h3', {}, 'Access token cnf claim'),
    pre(json(cnf ?? null), 'Access token cnf'),
    el('h3', {}, 'Public key (the jwk header of every proof)'),
    pre(json(key.jwk), 'DPoP public key'),
    checks,
  );
  checks.append(
    check('token_type is DPoP', tokens.token_type === 'DPoP', String(tokens.token_type)),
    check('cnf.jkt equals the key thumbprint', jkt === key.jkt, typeof jkt === 'string' ? jkt : 'missing'),
  );
  // The private key was made non-extractable: WebCrypto refuses to hand it out, to this page or to a script injected in it.
  const exported = await crypto.subtle.exportKey('jwk', key.privateKey).then(
    () => 'exported',
    (err: Error) => err.name,
  );
  checks.append(check('private key is non-extractable', !key.privateKey.extractable && exported !== 'exported', `exportKey: ${exported}`));
}

async function showIdToken(idToken: string, saved: SavedRequest): Promise<void> {
  const checks = el('ul', { class: 'checks' });
  const section = step(
    'ID token',
    el('h3', {}, 'Header'),
    pre(json(decodeProtectedHeader(idToken))),
    el('h3', {}, 'Payload'),
    pre(json(decodeJwt(idToken)), 'ID token payload'),
    checks,
  );
  try {
    const jwks = (await (await fetch(`${issuer}/oauth/jwks`)).json()) as JSONWebKeySet;
    const { payload } = await jwtVerify(idToken, createLocalJWKSet(jwks), { issuer: saved.issuer, audience: saved.client_id });
    checks.append(
      check('signature verified against the JWKS', true),
      check('iss and aud', true, `${payload.iss} / ${String(payload.aud)}`),
    );
    const nonceOk = typeof payload.nonce === 'string' && timingSafeEqualString(payload.nonce, saved.nonce);
    checks.append(check('nonce matches the request', nonceOk));
  } catch (err) {
    checks.append(check('signature verified against the JWKS', false, (err as Error).message));
  }
  void section;
}

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
      headers: { authorization: `DPoP ${token}`, dpop: await dpopProof(key, 'GET', url, { nonce: dpopNonce, accessToken: token }) },
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

function offerFollowUps(result: Tokens, saved: SavedRequest, key?: DpopKey): void {
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

async function handleCallback(params: URLSearchParams): Promise<void> {
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

// ---- wiring ----

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

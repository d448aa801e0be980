/**
 * Developer > OAuth playground, in the browser: the playground acts as one
 * of the developer's own public applications. PKCE, state and nonce come
 * from @authcli/pkce; the saved request lives in this tab's sessionStorage
 * only (never localStorage), keyed by state, for at most 10 minutes, and is
 * removed on first use. The exchange is refused, with nothing sent, when the
 * saved request is missing or the callback's iss is missing or wrong.
 * Every value is put into the page as text, never as HTML.
 */
import { challengeS256, generateNonce, generateState, generateVerifier, timingSafeEqualString } from '@authcli/pkce';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';

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
}

const root = document.getElementById('playground')!;
const issuer = root.dataset.issuer!;
const redirectUri = root.dataset.redirectUri!;
const steps = document.getElementById('steps')!;

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

async function loadApp(select: HTMLSelectElement, scopeBox: HTMLElement): Promise<void> {
  scopeBox.replaceChildren();
  if (!select.value) return;
  const res = await fetch(`/developer/playground/apps/${encodeURIComponent(select.value)}`, { headers: { accept: 'application/json' } });
  if (!res.ok) {
    scopeBox.append(el('p', { class: 'alert', role: 'alert' }, `Could not load the application (${res.status}).`));
    return;
  }
  const app = (await res.json()) as { scopes: string[]; callback_urls: string[] };
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
  for (const [k, v] of new URLSearchParams(extra)) params.set(k, v);
  // What was really sent is what the exchange must repeat, edited parameters included.
  saved.client_id = params.get('client_id') ?? clientId;
  saved.redirect_uri = params.get('redirect_uri') ?? redirectUri;
  saved.scope = params.get('scope') ?? scope;
  saved.nonce = params.get('nonce') ?? saved.nonce;
  const url = `${issuer}/oauth/authorize?${params}`;
  saved.url = url;
  sessionStorage.setItem(PREFIX + saved.state, JSON.stringify(saved));
  step(
    '1. Authorization request',
    pre(url, 'Authorization request URL'),
    pre(json(Object.fromEntries(params)), 'Authorization request parameters'),
  );
  window.location.assign(url);
}

// ---- the callback ----

function curlOf(url: string, body: URLSearchParams): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  return [
    `curl -sS -X POST ${q(url)}`,
    `  -H ${q('content-type: application/x-www-form-urlencoded')}`,
    ...[...body].map(([k, v]) => `  --data-urlencode ${q(`${k}=${v}`)}`),
  ].join(' \\\n');
}

async function tokenCall(title: string, body: URLSearchParams): Promise<Record<string, unknown> | undefined> {
  const url = `${issuer}/oauth/token`;
  const curl = curlOf(url, body);
  const copy = el('button', { type: 'button', class: 'secondary' }, 'Copy as curl');
  copy.addEventListener('click', () => void navigator.clipboard?.writeText(curl));
  const section = step(
    title,
    el('h3', {}, 'Request'),
    pre(`POST ${url}\ncontent-type: application/x-www-form-urlencoded\n\n${body}`, 'Token request'),
    copy,
    pre(curl, 'curl'),
  );
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
  const text = await res.text();
  const headers = [...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n');
  section.append(el('h3', {}, 'Response'), pre(`HTTP ${res.status}\n${headers}\n\n${text}`, 'Token response'));
  try {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    return res.ok ? parsed : undefined;
  } catch {
    return undefined;
  }
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

function offerFollowUps(tokens: Record<string, unknown>, saved: SavedRequest): void {
  const actions = el('div', { class: 'actions' });
  if (typeof tokens.refresh_token === 'string') {
    const b = el('button', { type: 'button' }, 'Refresh tokens');
    b.addEventListener('click', async () => {
      const next = await tokenCall(
        'Refresh',
        new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token as string, client_id: saved.client_id }),
      );
      if (next) offerFollowUps(next, saved);
    });
    actions.append(b);
  }
  if (
    typeof tokens.access_token === 'string' &&
    String(tokens.scope ?? '')
      .split(' ')
      .includes('openid')
  ) {
    const b = el('button', { type: 'button', class: 'secondary' }, 'Call userinfo');
    b.addEventListener('click', async () => {
      const res = await fetch(`${issuer}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token as string}` } });
      step(
        'Userinfo',
        pre(`GET ${issuer}/oauth/userinfo\nauthorization: Bearer …\n\nHTTP ${res.status}\n\n${await res.text()}`, 'Userinfo response'),
      );
    });
    actions.append(b);
  }
  if (actions.childElementCount) step('Next steps', actions);
}

async function handleCallback(params: URLSearchParams): Promise<void> {
  // Keep the callback off the address bar and history: a reload must not replay it.
  history.replaceState(null, '', window.location.pathname);
  const state = params.get('state') ?? '';
  const saved = state ? takeSaved(state) : undefined;
  if (saved) {
    const sent = new URL(saved.url);
    step(
      '1. Authorization request',
      pre(saved.url, 'Authorization request URL'),
      pre(json(Object.fromEntries(sent.searchParams)), 'Authorization request parameters'),
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
  const tokens = await tokenCall(
    '4. Token request',
    new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: saved.redirect_uri,
      client_id: saved.client_id,
      code_verifier: saved.verifier,
    }),
  );
  if (!tokens) return;
  if (typeof tokens.id_token === 'string') await showIdToken(tokens.id_token, saved);
  offerFollowUps(tokens, saved);
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

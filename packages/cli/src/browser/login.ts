import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { challengeS256, generateNonce, generateState, generateVerifier } from '@authcli/pkce';
import { AUTHORIZATION_CODE_GRANT_TYPE, type TokenResponse } from '@authcli/protocol';
import type { ClientSettings } from '../config.js';
import type { ServerMetadata } from '../discovery.js';
import { CliError } from '../errors.js';
import { clientAuth, oauthError, type Transport } from '../http.js';
import { asTokenResponse } from '../tokens.js';
import { validateCallback, type ValidatedCallback } from './callback.js';

/** The redirect URI a server must have registered for the CLI (any port, RFC 8252 §7.3). */
export const LOOPBACK_CALLBACK = 'http://127.0.0.1/callback';

/** Who signed in, as far as the page in the browser needs to know. */
export interface SignedIn {
  username?: string | undefined;
  subject?: string | undefined;
}

export interface BrowserLoginOptions<T extends SignedIn> {
  scope: string;
  port: number;
  /** Opens the URL in the system browser; false when it could not. */
  openBrowser: ((url: string) => Promise<boolean>) | undefined;
  say: (line: string) => void;
  timeoutMs: number;
  /**
   * After this long with nothing from the browser, say what to check: an
   * error page the server shows instead of redirecting never reaches the CLI
   * (default 60 s).
   */
  quietHintMs?: number | undefined;
  signal?: AbortSignal | undefined;
  /**
   * Verifies the tokens (ID token) and stores the sign-in. The browser's
   * request to the loopback listener is held until it settles, so the page
   * says "Signed in" only once that is true.
   */
  complete: (tokens: TokenResponse, nonce: string) => Promise<T>;
  /** How the code is exchanged: with DPoP proofs when the sign-in uses DPoP (default: the transport). */
  tokenTransport?: Transport | undefined;
  /** RFC 9449 §10: the thumbprint of the sign-in's DPoP key, sent as `dpop_jkt` to bind the code to it. */
  dpopJkt?: string | undefined;
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

/** The page the browser shows at the loopback callback; `message` is plain text. */
function page(title: string, message: string): string {
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer"><title>${esc(title)} · authcli</title>` +
    `<style>body{font:16px system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#1d2330}h1{font-size:1.3rem}</style>` +
    `</head><body><h1>${esc(title)}</h1><p>${esc(message)}</p><p>You can close this tab and return to the terminal.</p></body></html>`
  );
}

/** Sends a page; resolves once it is handed to the connection (or the connection is gone). */
function answer(res: ServerResponse, status: number, html: string): Promise<void> {
  const sent = new Promise<void>((resolve) => {
    res.once('finish', resolve);
    res.once('close', resolve);
  });
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
  });
  res.end(html);
  return sent;
}

/** The page for a sign-in that did not complete: denial in its own words, anything else with its reason. */
function failurePage(res: ServerResponse, err: unknown): Promise<void> {
  if (err instanceof CliError && err.code === 'access_denied') {
    return answer(res, 200, page('Sign-in cancelled', 'You denied the sign-in in the browser, so authcli did not sign in.'));
  }
  const reason = err instanceof CliError ? err.message : 'an unexpected error; the terminal has the details';
  return answer(res, 400, page('Sign-in failed', `authcli could not complete the sign-in: ${reason}.`));
}

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new CliError('config', err.code === 'EADDRINUSE' ? `port ${port} on 127.0.0.1 is in use; pick another with --port` : err.message),
      ),
    );
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

/** "5 min", "90 s": how the CLI states a wait. */
export function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s >= 120 && s % 60 === 0 ? `${s / 60} min` : `${s} s`;
}

function checkHint(settings: ClientSettings): string {
  return `check the client id (${settings.clientId}) and that the server has ${LOOPBACK_CALLBACK} registered as a redirect URI for it`;
}

interface Arrived {
  callback: ValidatedCallback;
  /** The browser's request, held open until the sign-in is complete. */
  res: ServerResponse;
}

/**
 * RFC 8252 §7.3: waits for the one callback on the loopback listener; stray
 * requests get 404 and are ignored. A callback that fails validation is
 * answered at once with the reason; a valid one is handed over unanswered.
 */
function awaitCallback(
  server: Server,
  expect: Parameters<typeof validateCallback>[1],
  opts: {
    timeoutMs: number;
    quietHintMs: number;
    signal?: AbortSignal | undefined;
    say: (line: string) => void;
    settings: ClientSettings;
    /** Pages being sent, to be let out before the listener closes. */
    sending: Promise<void>[];
  },
): Promise<Arrived> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () =>
        finish(
          new CliError('timeout', `no answer from the browser within ${duration(opts.timeoutMs)}`, {
            hint: `If the browser shows an error page, ${checkHint(opts.settings)}; to wait longer, pass --timeout SECONDS.`,
          }),
        ),
      opts.timeoutMs,
    );
    const quiet =
      opts.quietHintMs < opts.timeoutMs
        ? setTimeout(
            () =>
              opts.say(
                `Nothing has come back from the browser yet. If it shows an error page, ${checkHint(opts.settings)}. Still waiting… Ctrl-C to cancel`,
              ),
            opts.quietHintMs,
          )
        : undefined;
    const onAbort = () => finish(new CliError('cancelled', 'sign-in cancelled'));
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    let done = false;
    function finish(result: Arrived | Error) {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(quiet);
      opts.signal?.removeEventListener('abort', onAbort);
      server.off('request', onRequest);
      server.on('request', (_req: IncomingMessage, res: ServerResponse) =>
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found'),
      );
      if (result instanceof Error) reject(result);
      else resolve(result);
    }
    function onRequest(req: IncomingMessage, res: ServerResponse) {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (req.method !== 'GET' || url.pathname !== '/callback') {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return;
      }
      try {
        finish({ callback: validateCallback(url.searchParams, expect), res });
      } catch (err) {
        opts.sending.push(failurePage(res, err));
        finish(err as Error);
      }
    }
    server.on('request', onRequest);
  });
}

const OAUTH_ERROR_CODE =
  /\b(invalid_client|invalid_request|unauthorized_client|redirect_uri_mismatch|invalid_redirect_uri|unsupported_response_type|invalid_scope)\b/;

/** What an error page says, in one short line: its OAuth error code and its first paragraph (or title). */
function pageReason(body: unknown): string | undefined {
  if (body && typeof body === 'object') {
    const e = oauthError({ status: 400, headers: new Headers(), body });
    return e && `${e.error}${e.description ? `: ${e.description}` : ''}`;
  }
  if (typeof body !== 'string' || !body.trim()) return undefined;
  const text = (html: string) =>
    html
      .replace(/<(script|style|head)\b[\s\S]*?<\/\1>/gi, ' ')
      .replace(/<[^>]*>/g, ' ')
      .replace(/&(amp|lt|gt|quot|#39);/g, (m) => Object.entries(ESCAPES).find(([, v]) => v === m)![0])
      .replace(/\s+/g, ' ')
      .trim();
  const all = text(body);
  const code = OAUTH_ERROR_CODE.exec(all)?.[1];
  const para = /<p\b[^>]*>([\s\S]*?)<\/p>/i.exec(body)?.[1] ?? /<title\b[^>]*>([\s\S]*?)<\/title>/i.exec(body)?.[1];
  let said = para !== undefined ? text(para) : all;
  if (said.length > 200) said = `${said.slice(0, 199)}…`;
  return [code, said].filter(Boolean).join(': ') || undefined;
}

/**
 * Asks for the authorization URL once, as the browser is about to, without
 * following redirects. A server that will not send the result back (unknown
 * client, unregistered redirect URI) shows an error page instead of
 * redirecting (RFC 6749 §4.1.2.1), and the CLI would otherwise wait for a
 * callback that never comes. Only such a 4xx page stops the login: a
 * redirect (to sign-in, or to us) or a network problem here leaves it to the
 * browser, whose proxy and cookies may differ; 403 and 429 are about who is
 * asking, not the request.
 */
async function preflight(url: URL, transport: Transport, settings: ClientSettings): Promise<void> {
  let res;
  try {
    res = await transport(url.href, { method: 'GET', redirect: 'manual', headers: { accept: 'text/html' } });
  } catch (err) {
    if (err instanceof CliError && err.code === 'network') return;
    throw err;
  }
  if (res.status < 400 || res.status >= 500 || [403, 407, 429].includes(res.status)) return;
  const reason = pageReason(res.body);
  const aboutRedirect = /redirect/i.test(reason ?? '');
  const aboutClient = !aboutRedirect && /client/i.test(reason ?? '');
  throw new CliError(
    'authorization_request',
    `the server refused the sign-in request with HTTP ${res.status}${reason ? ` (${reason})` : ''}; the browser was not opened`,
    {
      hint: aboutRedirect
        ? `Check that the server has ${LOOPBACK_CALLBACK} (any port) registered as a redirect URI for client ${settings.clientId}.`
        : aboutClient
          ? `Check the client id (${settings.clientId}: --client-id, AUTHCLI_CLIENT_ID or config.json).`
          : `${checkHint(settings).replace(/^c/, 'C')}.`,
    },
  );
}

/**
 * Pushes the authorization request (RFC 9126 §2.1) with the client's authentication, and returns the
 * `request_uri` the browser is sent with. A refusal ends the login before any browser opens, with what to check.
 */
export async function pushAuthorizationRequest(
  endpoint: string,
  params: Record<string, string>,
  transport: Transport,
  settings: ClientSettings,
): Promise<string> {
  const auth = clientAuth(settings, params);
  // client_id stays in the form with Basic too: RFC 9126 §2.1 sends every authorization parameter.
  const res = await transport(endpoint, { method: 'POST', headers: auth.headers, form: { client_id: settings.clientId, ...auth.form } });
  const body = res.body as { request_uri?: unknown } | undefined;
  if ((res.status === 201 || res.status === 200) && typeof body?.request_uri === 'string') return body.request_uri;
  const e = oauthError(res);
  const reason = e ? `${e.error}${e.description ? `: ${e.description}` : ''}` : `HTTP ${res.status}`;
  throw new CliError(
    'authorization_request',
    `the server refused the pushed authorization request (${reason}); the browser was not opened`,
    {
      hint:
        e?.error === 'invalid_client' || e?.error === 'unauthorized_client'
          ? `Check the client id (${settings.clientId}: --client-id, AUTHCLI_CLIENT_ID or config.json) and, for a confidential client, its secret.`
          : /redirect/i.test(reason)
            ? `Check that the server has ${LOOPBACK_CALLBACK} (any port) registered as a redirect URI for client ${settings.clientId}.`
            : `${checkHint(settings).replace(/^c/, 'C')}.`,
    },
  );
}

/**
 * Authorization code flow with PKCE S256 for a native app (RFC 8252): listen
 * on 127.0.0.1 first, check that the server accepts the request, open the
 * browser at the authorization URL, accept the one callback with our state
 * and the issuer's iss, exchange the code with the verifier, let `complete`
 * verify and store, and only then answer the browser with what happened.
 */
export async function browserLogin<T extends SignedIn>(
  meta: ServerMetadata,
  settings: ClientSettings,
  transport: Transport,
  opts: BrowserLoginOptions<T>,
): Promise<T> {
  if (!meta.authorization_endpoint) throw new CliError('discovery', `${settings.issuer} has no authorization endpoint`);
  const server = await listen(opts.port);
  const sending: Promise<void>[] = [];
  try {
    const { port } = server.address() as { port: number };
    const redirectUri = `http://127.0.0.1:${port}/callback`;
    const verifier = generateVerifier();
    const state = generateState();
    const nonce = generateNonce();
    const params: Record<string, string> = {
      response_type: 'code',
      client_id: settings.clientId,
      redirect_uri: redirectUri,
      scope: opts.scope,
      state,
      nonce,
      code_challenge: await challengeS256(verifier),
      code_challenge_method: 'S256',
      ...(opts.dpopJkt && { dpop_jkt: opts.dpopJkt }),
    };
    const url = new URL(meta.authorization_endpoint);
    if (meta.pushed_authorization_request_endpoint) {
      // RFC 9126: the request goes to the server directly (checked there, client authenticated); the
      // browser gets only its single-use reference, so there is nothing to ask for in advance.
      url.searchParams.set('client_id', settings.clientId);
      url.searchParams.set(
        'request_uri',
        await pushAuthorizationRequest(meta.pushed_authorization_request_endpoint, params, transport, settings),
      );
    } else {
      for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
      await preflight(url, transport, settings);
    }
    const arrived = awaitCallback(
      server,
      { state, issuer: settings.issuer, issRequired: meta.authorization_response_iss_parameter_supported === true },
      { timeoutMs: opts.timeoutMs, quietHintMs: opts.quietHintMs ?? 60_000, signal: opts.signal, say: opts.say, settings, sending },
    );
    opts.say(`Open this URL in a browser on this machine to sign in:\n\n  ${url.href}\n`);
    if (opts.openBrowser && !(await opts.openBrowser(url.href))) {
      opts.say('Could not open a browser here. On a machine without a display (e.g. over SSH) use `authcli login` (device flow) instead.');
    }
    opts.say(`Waiting for the browser to finish signing in (up to ${duration(opts.timeoutMs)})… Ctrl-C to cancel`);
    const { callback, res } = await arrived;
    try {
      const tokens = await exchangeCode(meta, settings, opts.tokenTransport ?? transport, callback, redirectUri, verifier);
      const signedIn = await opts.complete(tokens, nonce);
      const who = signedIn.username ?? signedIn.subject;
      sending.push(
        answer(res, 200, page(`Signed in${who ? ` as ${who}` : ''}`, `authcli has verified and stored the sign-in to ${settings.issuer}.`)),
      );
      return signedIn;
    } catch (err) {
      sending.push(failurePage(res, err));
      throw err;
    }
  } finally {
    // The page goes out first; then no socket (keep-alive, the browser's preconnects) may hold the listener open.
    await Promise.race([Promise.all(sending), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
    server.closeAllConnections();
    server.close();
  }
}

/** RFC 6749 §4.1.3 + RFC 7636 §4.5: only a validated callback can be exchanged. */
export async function exchangeCode(
  meta: ServerMetadata,
  settings: ClientSettings,
  transport: Transport,
  callback: ValidatedCallback,
  redirectUri: string,
  verifier: string,
): Promise<TokenResponse> {
  const auth = clientAuth(settings, {
    grant_type: AUTHORIZATION_CODE_GRANT_TYPE,
    code: callback.code,
    redirect_uri: redirectUri,
    code_verifier: verifier,
  });
  const res = await transport(meta.token_endpoint, { method: 'POST', headers: auth.headers, form: auth.form });
  if (res.status === 200) return asTokenResponse(res.body);
  const e = oauthError(res);
  if (e?.error === 'invalid_client') {
    throw new CliError('invalid_client', `the server refused this client: ${e.description ?? 'invalid_client'}`, {
      hint: 'Check --client-id and the client secret (--client-secret-stdin or AUTHCLI_CLIENT_SECRET).',
    });
  }
  throw new CliError(
    'protocol',
    `the code exchange failed: ${e ? `${e.error}${e.description ? `: ${e.description}` : ''}` : `HTTP ${res.status}`}`,
  );
}

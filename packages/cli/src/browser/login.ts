import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { challengeS256, generateNonce, generateState, generateVerifier } from '@authcli/pkce';
import type { ClientSettings } from '../config.js';
import type { ServerMetadata } from '../discovery.js';
import { CliError } from '../errors.js';
import { clientAuth, oauthError, type Transport } from '../http.js';
import { asTokenResponse, type TokenResponse } from '../tokens.js';
import { validateCallback, type ValidatedCallback } from './callback.js';

export interface BrowserLoginOptions {
  scope: string;
  port: number;
  /** Opens the URL in the system browser; false when it could not. */
  openBrowser: ((url: string) => Promise<boolean>) | undefined;
  say: (line: string) => void;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
}

const page = (title: string, message: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title>` +
  `<style>body{font:16px system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#1d2330}h1{font-size:1.3rem}</style>` +
  `</head><body><h1>${title}</h1><p>${message}</p></body></html>`;

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new CliError('config', err.code === 'EADDRINUSE' ? `port ${port} on 127.0.0.1 is in use; pick another with --port` : err.message)),
    );
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

/** RFC 8252 §7.3: waits for the one callback on the loopback listener; stray requests get 404 and are ignored. */
function awaitCallback(server: Server, expect: Parameters<typeof validateCallback>[1], timeoutMs: number, signal?: AbortSignal): Promise<ValidatedCallback> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish(new CliError('timeout', 'no answer from the browser within 5 minutes')), timeoutMs);
    const onAbort = () => finish(new CliError('cancelled', 'sign-in cancelled'));
    signal?.addEventListener('abort', onAbort, { once: true });
    let done = false;
    function finish(result: ValidatedCallback | Error) {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      server.off('request', onRequest);
      if (result instanceof Error) reject(result);
      else resolve(result);
    }
    function onRequest(req: IncomingMessage, res: ServerResponse) {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (req.method !== 'GET' || url.pathname !== '/callback' || done) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return;
      }
      try {
        const cb = validateCallback(url.searchParams, expect);
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
        res.end(page('Signed in', 'authcli received the sign-in. You can close this tab and return to the terminal.'));
        finish(cb);
      } catch (err) {
        res.writeHead(400, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
        res.end(page('Sign-in failed', 'authcli did not accept this answer; see the terminal for details. You can close this tab.'));
        finish(err as Error);
      }
    }
    server.on('request', onRequest);
  });
}

/**
 * Authorization code flow with PKCE S256 for a native app (RFC 8252): listen
 * on 127.0.0.1 first, open the browser at the authorization URL, accept the
 * one callback with our state and the issuer's iss, exchange the code with
 * the verifier, close the listener.
 */
export async function browserLogin(
  meta: ServerMetadata,
  settings: ClientSettings,
  transport: Transport,
  opts: BrowserLoginOptions,
): Promise<{ tokens: TokenResponse; nonce: string }> {
  if (!meta.authorization_endpoint) throw new CliError('discovery', `${settings.issuer} has no authorization endpoint`);
  const server = await listen(opts.port);
  try {
    const { port } = server.address() as { port: number };
    const redirectUri = `http://127.0.0.1:${port}/callback`;
    const verifier = generateVerifier();
    const state = generateState();
    const nonce = generateNonce();
    const url = new URL(meta.authorization_endpoint);
    for (const [k, v] of Object.entries({
      response_type: 'code',
      client_id: settings.clientId,
      redirect_uri: redirectUri,
      scope: opts.scope,
      state,
      nonce,
      code_challenge: await challengeS256(verifier),
      code_challenge_method: 'S256',
    })) {
      url.searchParams.set(k, v);
    }
    const callback = awaitCallback(server, { state, issuer: settings.issuer, issRequired: meta.authorization_response_iss_parameter_supported === true }, opts.timeoutMs, opts.signal);
    opts.say(`Open this URL in a browser on this machine to sign in:\n\n  ${url.href}\n`);
    if (opts.openBrowser && !(await opts.openBrowser(url.href))) {
      opts.say('Could not open a browser here. On a machine without a display (e.g. over SSH) use `authcli login` (device flow) instead.');
    }
    const cb = await callback;
    return { tokens: await exchangeCode(meta, settings, transport, cb, redirectUri, verifier), nonce };
  } finally {
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
  const auth = clientAuth(settings, { grant_type: 'authorization_code', code: callback.code, redirect_uri: redirectUri, code_verifier: verifier });
  const res = await transport(meta.token_endpoint, { method: 'POST', headers: auth.headers, form: auth.form });
  if (res.status === 200) return asTokenResponse(res.body);
  const e = oauthError(res);
  if (e?.error === 'invalid_client') throw new CliError('invalid_client', `the server refused this client: ${e.description ?? 'invalid_client'}`);
  throw new CliError('protocol', `the code exchange failed: ${e ? `${e.error}${e.description ? `: ${e.description}` : ''}` : `HTTP ${res.status}`}`);
}

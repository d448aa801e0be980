import type { TokenResponse } from '@authcli/protocol';
import type { ClientSettings } from '../config.js';
import { AuthcliError } from '../errors.js';
import type { Transport } from '../http.js';
import { authorizationRequest } from '../oauth/authorization.js';
import { OAuthClient } from '../oauth/client.js';
import type { ServerMetadata } from '../oauth/discovery.js';
import { checkClientAndRedirect } from '../oauth/explain.js';
import { openLoopback } from './listener.js';
import { failurePage, signedInPage } from './pages.js';
import { preflight } from './preflight.js';

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
  /** The tool's name on the page the browser shows at the end (default authcli). */
  appName?: string | undefined;
}

/** "5 min", "90 s": how the CLI states a wait. */
export function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s >= 120 && s % 60 === 0 ? `${s / 60} min` : `${s} s`;
}

/**
 * Authorization code flow with PKCE S256 for a native app (RFC 8252): listen
 * on 127.0.0.1 first, check that the server accepts the request (or push it,
 * RFC 9126), open the browser at the authorization URL, accept the one
 * callback with our state and the issuer's iss, exchange the code with the
 * verifier, let `complete` verify and store, and only then answer the browser
 * with what happened.
 */
export async function browserLogin<T extends SignedIn>(
  meta: ServerMetadata,
  settings: ClientSettings,
  transport: Transport,
  opts: BrowserLoginOptions<T>,
): Promise<T> {
  const client = new OAuthClient({ meta, settings, transport, tokenTransport: opts.tokenTransport });
  const loopback = await openLoopback(opts.port);
  try {
    const request = await authorizationRequest(settings.clientId, {
      redirectUri: loopback.redirectUri,
      scope: opts.scope,
      dpopJkt: opts.dpopJkt,
    });
    let url: URL;
    if (meta.pushed_authorization_request_endpoint) {
      // RFC 9126: the request goes to the server directly (checked there, client authenticated); the
      // browser gets only its single-use reference, so there is nothing to ask for in advance.
      url = client.authorizationUrl({ client_id: settings.clientId, request_uri: await client.pushAuthorizationRequest(request.params) });
    } else {
      url = client.authorizationUrl(request.params);
      await preflight(url, transport, settings, opts.scope);
    }
    const check = checkClientAndRedirect(settings.clientId);
    const arrived = loopback.callback(
      {
        state: request.state,
        issuer: settings.issuer,
        issRequired: meta.authorization_response_iss_parameter_supported === true,
        clientId: settings.clientId,
        scope: opts.scope,
      },
      {
        timeoutMs: opts.timeoutMs,
        quietMs: opts.quietHintMs ?? 60_000,
        signal: opts.signal,
        appName: opts.appName,
        onQuiet: () =>
          opts.say(`Nothing has come back from the browser yet. If it shows an error page, ${check}. Still waiting… Ctrl-C to cancel`),
        timedOut: () =>
          new AuthcliError('timeout', `no answer from the browser within ${duration(opts.timeoutMs)}`, {
            hint: `If the browser shows an error page, ${check}; to wait longer, pass --timeout SECONDS.`,
          }),
      },
    );
    // Awaited below; a failure before then (the opener throws) closes the listener, which ends this wait: handled here.
    arrived.catch(() => undefined);
    opts.say(`Open this URL in a browser on this machine to sign in:\n\n  ${url.href}\n`);
    if (opts.openBrowser && !(await opts.openBrowser(url.href))) {
      opts.say('Could not open a browser here. On a machine without a display (e.g. over SSH) use `authcli login` (device flow) instead.');
    }
    opts.say(`Waiting for the browser to finish signing in (up to ${duration(opts.timeoutMs)})… Ctrl-C to cancel`);
    const { callback, respond } = await arrived;
    try {
      const tokens = await client.exchangeCode(callback, request.redirectUri, request.verifier);
      const signedIn = await opts.complete(tokens, request.nonce);
      respond(signedInPage(signedIn.username ?? signedIn.subject, settings.issuer, opts.appName));
      return signedIn;
    } catch (err) {
      respond(failurePage(err, opts.appName));
      throw err;
    }
  } finally {
    await loopback.close();
  }
}

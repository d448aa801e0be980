// The loopback listener of a native app (RFC 8252 §7.3): http://127.0.0.1:<port>/callback, the one
// authorization response it accepts, and the page the browser gets back.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { AuthcliError } from '../errors.js';
import { type CallbackExpectations, type ValidatedCallback, validateCallback } from '../oauth/authorization.js';
import { failurePage, PAGE_CSP, type Page } from './pages.js';

/** A callback that passed validation; the browser's request is held open until `respond`. */
export interface Arrived {
  callback: ValidatedCallback;
  respond(page: Page): void;
}

export interface WaitOptions {
  timeoutMs: number;
  /** After this long with nothing from the browser, `onQuiet` is called once (not when it is past the timeout). */
  quietMs: number;
  onQuiet(): void;
  /** The error to end the wait with at the timeout. */
  timedOut(): Error;
  signal?: AbortSignal | undefined;
  /** The tool's name on the page a failed callback gets (default authcli). */
  appName?: string | undefined;
}

export interface Loopback {
  /** http://127.0.0.1:<port>/callback, with the port the listener got. */
  redirectUri: string;
  /**
   * Waits for the one callback; stray requests get 404 and are ignored. A callback that fails validation is
   * answered at once with the reason (and ends the wait with it); a valid one is handed over unanswered.
   */
  callback(expect: CallbackExpectations, opts: WaitOptions): Promise<Arrived>;
  /** Lets the pages being sent go out (2 s at most), then closes every connection and the listener. */
  close(): Promise<void>;
}

/** Sends a page; resolves once it is handed to the connection (or the connection is gone). */
function answer(res: ServerResponse, page: Page): Promise<void> {
  const sent = new Promise<void>((resolve) => {
    res.once('finish', resolve);
    res.once('close', resolve);
  });
  res.writeHead(page.status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-security-policy': PAGE_CSP,
    'x-content-type-options': 'nosniff',
  });
  res.end(page.html);
  return sent;
}

const notFound = (res: ServerResponse) => res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new AuthcliError(
          'config',
          err.code === 'EADDRINUSE' ? `port ${port} on 127.0.0.1 is in use; pick another with --port` : err.message,
        ),
      ),
    );
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

/** Listens on 127.0.0.1:`port` (0: any free port). */
export async function openLoopback(port: number): Promise<Loopback> {
  const server = await listen(port);
  const sending: Promise<void>[] = [];
  const respond = (res: ServerResponse, page: Page) => void sending.push(answer(res, page));
  /** Ends the wait under way (its timers and abort listener) when the listener closes before a callback came. */
  let endWait: ((err: Error) => void) | undefined;
  return {
    redirectUri: `http://127.0.0.1:${(server.address() as { port: number }).port}/callback`,
    callback: (expect, opts) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => finish(opts.timedOut()), opts.timeoutMs);
        const quiet = opts.quietMs < opts.timeoutMs ? setTimeout(opts.onQuiet, opts.quietMs) : undefined;
        const onAbort = () => finish(new AuthcliError('cancelled', 'sign-in cancelled'));
        opts.signal?.addEventListener('abort', onAbort, { once: true });
        let done = false;
        endWait = (err) => finish(err);
        function finish(result: Arrived | Error) {
          if (done) return;
          done = true;
          endWait = undefined;
          clearTimeout(timer);
          clearTimeout(quiet);
          opts.signal?.removeEventListener('abort', onAbort);
          server.off('request', onRequest);
          server.on('request', (_req: IncomingMessage, res: ServerResponse) => notFound(res));
          if (result instanceof Error) reject(result);
          else resolve(result);
        }
        function onRequest(req: IncomingMessage, res: ServerResponse) {
          const url = new URL(req.url ?? '/', 'http://127.0.0.1');
          if (req.method !== 'GET' || url.pathname !== '/callback') {
            notFound(res);
            return;
          }
          try {
            finish({ callback: validateCallback(url.searchParams, expect), respond: (page) => respond(res, page) });
          } catch (err) {
            respond(res, failurePage(err, opts.appName));
            finish(err as Error);
          }
        }
        server.on('request', onRequest);
      }),
    close: async () => {
      endWait?.(new AuthcliError('cancelled', 'sign-in cancelled'));
      // The page goes out first; then no socket (keep-alive, the browser's preconnects) may hold the listener open.
      await Promise.race([Promise.all(sending), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
      server.closeAllConnections();
      server.close();
    },
  };
}

/**
 * A relying party's back-channel logout endpoint (OpenID Connect Back-Channel Logout 1.0 §2.5) for tests: an HTTP
 * server on a loopback port that records every POST it gets and answers each path as the test says (200, an
 * error status, or not at all: `hang`, until the test ends).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

/** One request the receiver got. */
export interface ReceivedLogout {
  path: string;
  method: string;
  contentType: string | undefined;
  /** The body's form fields (logout_token, and anything else that was sent). */
  fields: Record<string, string>;
  /** When it arrived (Date.now()). */
  at: number;
}

/** 200 at once, no answer at all, another status at once, or 200 after a while. */
export type ReceiverBehaviour = 'ok' | 'hang' | number | { delayMs: number };

export interface LogoutReceiver {
  /** `http://127.0.0.1:<port>` */
  url: string;
  received: ReceivedLogout[];
  /** The logout tokens posted to `path`, in order. */
  tokens(path: string): string[];
  /** How `path` answers from now on (`ok` unless said). */
  answer(path: string, behaviour: ReceiverBehaviour): void;
  /** The most requests that were open at once. */
  readonly maxOpen: number;
  /** Waits until `path` got at least `count` requests (or fails after `timeoutMs`). */
  waitFor(path: string, count: number, timeoutMs?: number): Promise<ReceivedLogout[]>;
  close(): Promise<void>;
}

export async function startLogoutReceiver(): Promise<LogoutReceiver> {
  const received: ReceivedLogout[] = [];
  const behaviours = new Map<string, ReceiverBehaviour>();
  const hanging = new Set<ServerResponse>();
  let open = 0;
  let maxOpen = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    open++;
    maxOpen = Math.max(maxOpen, open);
    res.on('close', () => open--);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!;
      received.push({
        path,
        method: req.method ?? '',
        contentType: req.headers['content-type'],
        fields: Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8'))),
        at: Date.now(),
      });
      const behaviour = behaviours.get(path) ?? 'ok';
      if (behaviour === 'hang') {
        hanging.add(res);
        return;
      }
      const send = () => res.writeHead(typeof behaviour === 'number' ? behaviour : 200, { 'cache-control': 'no-store' }).end();
      if (typeof behaviour === 'object') setTimeout(send, behaviour.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const of = (path: string) => received.filter((r) => r.path === path);
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    tokens: (path) => of(path).map((r) => r.fields.logout_token ?? ''),
    answer: (path, behaviour) => behaviours.set(path, behaviour),
    get maxOpen() {
      return maxOpen;
    },
    async waitFor(path, count, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (of(path).length < count) {
        if (Date.now() > deadline) throw new Error(`${path} got ${of(path).length} of ${count} logout requests in ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 10));
      }
      return of(path);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

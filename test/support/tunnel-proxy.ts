/**
 * An HTTP proxy for CLI tests: it tunnels CONNECT (what undici's
 * EnvHttpProxyAgent sends for every target, http ones included) to the real
 * server, and lets a test hold a request forever or cut the connection when a
 * request's first line matches, and read what the server answered through it
 * (plain HTTP on loopback, so the answers are readable).
 */
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';

export interface TunnelProxy {
  url: string;
  /** The CONNECT targets seen. */
  targets: string[];
  /** Everything the server answered through the proxy, in order. */
  answers(): string;
  /** Resolves when a request matching `hold` has been held (never forwarded). */
  held: Promise<void>;
  close(): Promise<void>;
}

export async function tunnelProxy(opts: { hold?: RegExp; cut?: RegExp } = {}): Promise<TunnelProxy> {
  const targets: string[] = [];
  const sockets = new Set<Socket>();
  let answers = '';
  let onHeld: () => void = () => undefined;
  const held = new Promise<void>((r) => (onHeld = r));
  const server: Server = createServer((_req, res) => res.writeHead(502).end());
  server.on('connect', (req, client: Socket, head: Buffer) => {
    targets.push(req.url ?? '');
    const [host, port] = (req.url ?? '').split(':');
    const upstream = connect(Number(port), host!);
    sockets.add(client).add(upstream);
    let holding = false;
    const forward = (data: Buffer) => {
      if (holding || data.length === 0) return;
      const text = data.toString('latin1');
      if (opts.cut?.test(text)) {
        client.destroy();
        upstream.destroy();
        return;
      }
      if (opts.hold?.test(text)) {
        holding = true;
        onHeld();
        return;
      }
      upstream.write(data);
    };
    upstream.once('connect', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      forward(head);
      client.on('data', forward);
    });
    upstream.on('data', (d: Buffer) => {
      answers += d.toString('latin1');
      client.write(d);
    });
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      a.on('error', () => b.destroy());
      a.on('close', () => {
        sockets.delete(a);
        b.destroy();
      });
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    targets,
    answers: () => answers,
    held,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

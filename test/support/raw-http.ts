import { connect } from 'node:net';

/** What a raw connection got back, and when the server closed it (ms after the first byte was sent). */
export interface RawOutcome {
  response: string;
  closedAfterMs: number;
}

/**
 * Sends `head` over a raw connection, then `trickle` one byte at a time every
 * `trickleEveryMs` (a client that never finishes), and waits for the server to
 * close the connection; fails if it is still open after `giveUpMs`.
 */
export function rawExchange(port: number, head: string, opts: { trickleEveryMs?: number; giveUpMs: number }): Promise<RawOutcome> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let response = '';
    let started = 0;
    let trickle: NodeJS.Timeout | undefined;
    const giveUp = setTimeout(() => {
      clearInterval(trickle);
      socket.destroy();
      reject(new Error(`still open after ${opts.giveUpMs} ms; got ${JSON.stringify(response)}`));
    }, opts.giveUpMs);
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (response += d));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(giveUp);
      clearInterval(trickle);
      resolve({ response, closedAfterMs: performance.now() - started });
    });
    socket.on('connect', () => {
      started = performance.now();
      socket.write(head);
      if (opts.trickleEveryMs) trickle = setInterval(() => socket.writable && socket.write('x'), opts.trickleEveryMs);
    });
  });
}

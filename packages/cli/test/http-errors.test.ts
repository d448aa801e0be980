import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server, type Socket } from 'node:net';
import { fetch } from 'undici';
import { type CliError, formatError } from '../src/errors.js';
import { httpTransport, networkError } from '@authcli/client/internal/http.js';

/** The error undici really throws for `url` (real sockets on loopback), turned into the CLI's. */
async function failure(url: string, timeoutMs = 5000): Promise<CliError> {
  try {
    await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    return networkError(url, err);
  }
  throw new Error(`${url} answered`);
}

describe('network failures become one line and a hint', () => {
  const sockets = new Set<Socket>();
  let silent: Server;
  let slammer: Server;
  const port = (s: Server) => (s.address() as { port: number }).port;
  beforeAll(async () => {
    silent = createServer((s) => sockets.add(s));
    slammer = createServer((s) => s.destroy());
    await Promise.all([silent, slammer].map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()))));
  });
  afterAll(() => {
    for (const s of sockets) s.destroy();
    silent.close();
    slammer.close();
  });

  it('a server that accepts and never answers: no answer within the timeout', async () => {
    const err = await failure(`http://127.0.0.1:${port(silent)}/`, 200);
    expect(err.message).toBe(`cannot reach http://127.0.0.1:${port(silent)}: no answer within 30 s`);
    expect(err.hint).toMatch(/overloaded|firewall/);
  });

  it('a connection closed before an answer', async () => {
    const err = await failure(`http://127.0.0.1:${port(slammer)}/`);
    expect(err.message).toBe(`cannot reach http://127.0.0.1:${port(slammer)}: the connection was closed before an answer`);
  });

  it('a port the fetch standard blocks is named as such, not as "bad port"', async () => {
    const err = await failure('http://127.0.0.1:6000/');
    expect(err.message).toBe("cannot reach http://127.0.0.1:6000: port 6000 is on the fetch standard's list of blocked ports");
  });

  it('the original error stays as the cause, for --debug', async () => {
    const err = await failure(`http://127.0.0.1:${port(slammer)}/`);
    expect((err.cause as Error).message).toBe('fetch failed');
    expect(await formatError(err, { debug: false })).toBe(`authcli: ${err.message}. ${err.hint}`);
    expect(await formatError(err, { debug: true })).toMatch(/UND_ERR_SOCKET/);
  });

  it('the transport throws them as CliError("network")', async () => {
    await expect(httpTransport(`http://127.0.0.1:${port(slammer)}/`, { method: 'GET' })).rejects.toMatchObject({ code: 'network' });
  });

  it('anything that is not a CliError is reported as a bug, in one line', async () => {
    expect(await formatError(new TypeError('x is undefined'), { debug: false })).toBe(
      'authcli: unexpected error: x is undefined. This is a bug; please report it with the output of the same command run with --debug.',
    );
  });
});

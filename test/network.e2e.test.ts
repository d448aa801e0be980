import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@authcli/test-support/http';
import { rawExchange } from '@authcli/test-support/raw-http';
import { serverCommand, startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

/** Sends `head` on a raw connection (then a byte every `trickleEveryMs`) and waits for the server to close it. */
async function sendAndWaitForClose(port: number, head: string, trickleEveryMs?: number): Promise<{ response: string; ms: number }> {
  const { response, closedAfterMs } = await rawExchange(port, head, { giveUpMs: 10_000, ...(trickleEveryMs && { trickleEveryMs }) });
  return { response, ms: closedAfterMs };
}

describe('the network limits of a started authcli-server process come from its environment', () => {
  let server: ServerProcess;
  let port: number;
  beforeAll(async () => {
    server = await startServerProcess({
      env: { AUTHCLI_HEADERS_TIMEOUT: '1', AUTHCLI_REQUEST_TIMEOUT: '2', AUTHCLI_MAX_CONNECTIONS: '16' },
    });
    port = Number(new URL(server.issuer).port);
  });
  afterAll(async () => server?.stop());

  it('a body that never arrives is cut at AUTHCLI_REQUEST_TIMEOUT', async () => {
    const head =
      'POST /oauth/token HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n';
    const { response, ms } = await sendAndWaitForClose(port, head);
    expect(response).toMatch(/^HTTP\/1\.1 408 /);
    expect(ms).toBeGreaterThan(1900);
    expect(ms).toBeLessThan(2000 + 750);
  });

  it('headers that never finish are cut at AUTHCLI_HEADERS_TIMEOUT', async () => {
    const { response, ms } = await sendAndWaitForClose(port, 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ', 100);
    expect(response).toMatch(/^HTTP\/1\.1 408 /);
    expect(ms).toBeGreaterThan(900);
    expect(ms).toBeLessThan(1000 + 750);
  });

  it('connections past AUTHCLI_MAX_CONNECTIONS are closed at once, and the server serves when they go', async () => {
    const sockets: Socket[] = [];
    const closedEarly: Socket[] = [];
    try {
      for (let i = 0; i < 24; i++) {
        const s = connect(port, '127.0.0.1');
        s.on('error', () => undefined);
        s.once('close', () => closedEarly.push(s));
        await new Promise((r) => s.once('connect', r));
        s.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ');
        sockets.push(s);
      }
      await new Promise((r) => setTimeout(r, 300));
      // The cap counts every connection, the test runner's own kept-alive one included: at most 16 stay open.
      expect(sockets.length - closedEarly.length).toBeLessThanOrEqual(16);
      expect(closedEarly.length).toBeGreaterThanOrEqual(8);
    } finally {
      for (const s of sockets) s.destroy();
    }
    await new Promise((r) => setTimeout(r, 200));
    expect((await fetch(`${server.issuer}/healthz`)).status).toBe(200);
  });
});

describe('a database that answers nothing at start', () => {
  let blackHole: Server;
  let held: Socket[] = [];
  beforeAll(async () => {
    // Accepts connections and never says a word (a firewall that drops, a hung server).
    blackHole = createServer((s) => {
      s.on('error', () => undefined);
      held.push(s);
    });
    await new Promise<void>((r) => blackHole.listen(0, '127.0.0.1', r));
  });
  afterAll(async () => {
    for (const s of held) s.destroy();
    held = [];
    await new Promise((r) => blackHole.close(r));
  });

  it('start fails within AUTHCLI_DB_TIMEOUT with one line naming the database, not a hang or a stack', async () => {
    const dbPort = (blackHole.address() as { port: number }).port;
    const started = performance.now();
    const result = await serverCommand(['start'], {
      DATABASE_URL: `postgres://authcli:secret-password@127.0.0.1:${dbPort}/authcli`,
      AUTHCLI_DB_TIMEOUT: '1',
      PORT: String(await freePort()),
      HOST: '127.0.0.1',
    });
    const ms = performance.now() - started;
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(
        `^authcli-server: cannot reach the database at 127\\.0\\.0\\.1:${dbPort}: .+ \\(no answer within AUTHCLI_DB_TIMEOUT, 1 s\\)\\n$`,
      ),
    );
    expect(result.stderr).not.toMatch(/secret-password/);
    expect(ms).toBeLessThan(5000);
  });
});

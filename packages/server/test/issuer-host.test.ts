import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issuerHostRedirect } from '../src/web/issuer-host.js';
import { startServer, type TestServer } from './helpers.js';

/** A request with the Host header a browser (or a proxy) would send, which fetch cannot set. */
function get(port: number, path: string, host: string, method = 'GET'): Promise<{ status: number; location: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers: { host } }, (res) => {
      res.resume();
      resolve({ status: res.statusCode!, location: res.headers.location });
    });
    req.once('error', reject);
    req.end(method === 'POST' ? 'a=b' : undefined);
  });
}

describe('pages on another loopback name of this server go to the issuer host', () => {
  it('issuerHostRedirect: only another loopback name of the issuer host, on its port', () => {
    const at = issuerHostRedirect(new URL('http://localhost:8080'));
    expect(at('127.0.0.1:8080', '/account?x=1')).toBe('http://localhost:8080/account?x=1');
    expect(at('[::1]:8080', '/signin')).toBe('http://localhost:8080/signin');
    expect(at('LOCALHOST:8080', '/signin')).toBeUndefined();
    expect(at('localhost:8080', '/signin')).toBeUndefined();
    // Another port is another listener (a proxy in front, a second instance): not ours to move.
    expect(at('127.0.0.1:9090', '/signin')).toBeUndefined();
    // A name that is not loopback is a proxy's Host: never redirected (it would loop through the proxy).
    expect(at('id.example.com:8080', '/signin')).toBeUndefined();
    expect(at(undefined, '/signin')).toBeUndefined();
    expect(at('bad host:8080', '/signin')).toBeUndefined();
    // An issuer that is not on loopback is reached through its own name: nothing is redirected.
    expect(issuerHostRedirect(new URL('https://id.example.com'))('127.0.0.1:443', '/signin')).toBeUndefined();
  });

  describe('the running server', () => {
    let server: TestServer;
    let port: number;
    beforeAll(async () => {
      server = await startServer('sqlite', {}, { issuerHost: 'localhost' });
      port = Number(new URL(server.config.issuer).port);
    });
    afterAll(async () => {
      await server?.close();
    });

    it('a page GET or HEAD on 127.0.0.1 is redirected to localhost, path and query kept; forms, the protocol and the issuer host are not', async () => {
      expect(await get(port, '/account?tab=passkeys', `127.0.0.1:${port}`)).toEqual({
        status: 302,
        location: `http://localhost:${port}/account?tab=passkeys`,
      });
      expect((await get(port, '/signin', `127.0.0.1:${port}`, 'HEAD')).status).toBe(302);
      // A form posted there is not moved (a redirect would turn it into a GET): it is answered where it came.
      expect((await get(port, '/signin', `127.0.0.1:${port}`, 'POST')).status).not.toBe(302);
      // The protocol endpoints answer on any name: a CLI or an RP on 127.0.0.1 is not sent elsewhere.
      expect((await get(port, '/.well-known/openid-configuration', `127.0.0.1:${port}`)).status).toBe(200);
      expect((await get(port, '/signin', `localhost:${port}`)).status).toBe(200);
    });
  });
});

import { describe, expect, it } from 'vitest';
import { browserLogin, duration } from '../src/browser/login.js';
import { AuthcliError } from '../src/errors.js';
import type { HttpResponse, Transport } from '../src/http.js';

const meta = {
  issuer: 'https://id.example',
  authorization_endpoint: 'https://id.example/authorize',
  token_endpoint: 'https://id.example/token',
  authorization_response_iss_parameter_supported: true,
};
const settings = { issuer: 'https://id.example', clientId: 'authcli', clientSecret: undefined };
const page = (status: number, body: unknown = '<html><body><form action="/signin"></form></body></html>'): HttpResponse => ({
  status,
  headers: new Headers(),
  body,
});

/** A server whose authorization endpoint sends the browser to sign in, and that must never see a token request. */
const signInRedirect: Transport = async (url, init) => {
  if (init.method === 'GET' && url.startsWith(meta.authorization_endpoint)) return page(303, '');
  throw new Error('no token request may be sent without a valid callback');
};
const complete = async () => {
  throw new Error('nothing to complete without a callback');
};

describe('browser login (RFC 8252 loopback)', () => {
  it('prints an authorization URL with PKCE S256, state, nonce and a 127.0.0.1 redirect, then the waiting line, and times out', async () => {
    const lines: string[] = [];
    const p = browserLogin(meta, settings, signInRedirect, {
      scope: 'openid',
      port: 0,
      openBrowser: undefined,
      say: (l) => lines.push(l),
      timeoutMs: 2000,
      complete,
    });
    await expect(p).rejects.toMatchObject({
      code: 'timeout',
      message: 'no answer from the browser within 2 s',
      hint: expect.stringMatching(/--timeout/),
    });
    const url = new URL(lines.join('\n').match(/https:\/\/id\.example\/authorize\?\S+/)![0]);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('code_challenge')).toMatch(/^[\w-]{43}$/);
    expect(url.searchParams.get('state')).toMatch(/^[\w-]{43}$/);
    expect(url.searchParams.get('nonce')).toMatch(/^[\w-]{43}$/);
    expect(url.searchParams.get('redirect_uri')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    expect(lines.at(-1)).toBe('Waiting for the browser to finish signing in (up to 2 s)… Ctrl-C to cancel');
    // The listener is gone afterwards.
    await expect(fetch(url.searchParams.get('redirect_uri')!)).rejects.toThrow();
  });

  it('the waiting line states the timeout in minutes when it is whole minutes', () => {
    expect(duration(300_000)).toBe('5 min');
    expect(duration(90_000)).toBe('90 s');
    expect(duration(2_000)).toBe('2 s');
  });

  it('says what to check when nothing has come back after a while, and keeps waiting', async () => {
    const lines: string[] = [];
    const p = browserLogin(meta, { ...settings, clientId: 'my-cli' }, signInRedirect, {
      scope: 'openid',
      port: 0,
      openBrowser: undefined,
      say: (l) => lines.push(l),
      timeoutMs: 600,
      quietHintMs: 200,
      complete,
    });
    await expect(p).rejects.toMatchObject({ code: 'timeout' });
    const hint = lines.find((l) => l.startsWith('Nothing has come back'));
    expect(hint).toMatch(/client id \(my-cli\).*http:\/\/127\.0\.0\.1\/callback registered/);
  });

  it('no such line when the sign-in ends first', async () => {
    const lines: string[] = [];
    const p = browserLogin(meta, settings, signInRedirect, {
      scope: 'openid',
      port: 0,
      openBrowser: undefined,
      say: (l) => lines.push(l),
      timeoutMs: 200,
      quietHintMs: 60_000,
      complete,
    });
    await expect(p).rejects.toMatchObject({ code: 'timeout' });
    expect(lines.some((l) => l.startsWith('Nothing has come back'))).toBe(false);
  });

  it('rfc6749 §4.1.2.1 an error page at the authorization endpoint stops the login before the browser opens', async () => {
    let opened = false;
    const errorPage: Transport = async () =>
      page(
        400,
        '<html><head><title>Cannot continue</title></head><body><h1>Cannot continue</h1><p role="alert">The application is not registered with this server (unknown client_id).</p><p>Error: invalid_client</p></body></html>',
      );
    const err = await browserLogin(meta, settings, errorPage, {
      scope: 'openid',
      port: 0,
      openBrowser: async () => (opened = true),
      say: () => {},
      timeoutMs: 60_000,
      complete,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthcliError);
    expect(err).toMatchObject({ code: 'authorization_request', hint: expect.stringMatching(/client id \(authcli/) });
    expect((err as AuthcliError).message).toBe(
      'the server refused the sign-in request with HTTP 400 (invalid_client: The application is not registered with this server (unknown client_id).); the browser was not opened',
    );
    expect(opened).toBe(false);
  });

  it('an unregistered redirect URI points at the callback to register', async () => {
    const errorPage: Transport = async () => page(400, { error: 'invalid_request', error_description: 'redirect_uri is not registered' });
    await expect(
      browserLogin(meta, settings, errorPage, {
        scope: 'openid',
        port: 0,
        openBrowser: undefined,
        say: () => {},
        timeoutMs: 60_000,
        complete,
      }),
    ).rejects.toMatchObject({
      hint: expect.stringMatching(/http:\/\/127\.0\.0\.1\/callback \(any port\) registered/),
    });
  });

  it('a preflight that cannot reach the server, or is refused for who asks (403), leaves it to the browser', async () => {
    for (const transport of [
      (async () => {
        throw new AuthcliError('network', 'cannot reach https://id.example: connection refused');
      }) satisfies Transport,
      (async () => page(403, 'forbidden')) satisfies Transport,
    ]) {
      const lines: string[] = [];
      await expect(
        browserLogin(meta, settings, transport, {
          scope: 'openid',
          port: 0,
          openBrowser: undefined,
          say: (l) => lines.push(l),
          timeoutMs: 200,
          complete,
        }),
      ).rejects.toMatchObject({ code: 'timeout' });
      expect(lines.join('\n')).toMatch(/Open this URL/);
    }
  });

  it('a browser that cannot be opened is reported with the device-flow hint', async () => {
    const lines: string[] = [];
    const p = browserLogin(meta, settings, signInRedirect, {
      scope: 'openid',
      port: 0,
      openBrowser: async () => false,
      say: (l) => lines.push(l),
      timeoutMs: 200,
      complete,
    });
    await expect(p).rejects.toMatchObject({ code: 'timeout' });
    expect(lines.join('\n')).toMatch(/Could not open a browser.*authcli login/s);
  });

  it('a fixed --port that is taken is a clear error', async () => {
    const { createServer } = await import('node:net');
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
    const port = (taken.address() as { port: number }).port;
    try {
      await expect(
        browserLogin(meta, settings, signInRedirect, {
          scope: 'openid',
          port,
          openBrowser: undefined,
          say: () => {},
          timeoutMs: 200,
          complete,
        }),
      ).rejects.toThrow(/in use/);
    } finally {
      taken.close();
    }
  });
});

describe('rfc9126 pushed authorization requests', () => {
  const parMeta = { ...meta, pushed_authorization_request_endpoint: 'https://id.example/par' };

  it('§2.1 pushes every parameter (with dpop_jkt, and Basic for a confidential client); the browser gets only client_id and request_uri, and no preflight', async () => {
    const sent: { url: string; init: Parameters<Transport>[1] }[] = [];
    const server: Transport = async (url, init) => {
      sent.push({ url, init });
      if (url === parMeta.pushed_authorization_request_endpoint) {
        return { status: 201, headers: new Headers(), body: { request_uri: 'urn:ietf:params:oauth:request_uri:abc', expires_in: 60 } };
      }
      throw new Error(`unexpected ${init.method} ${url}`);
    };
    const lines: string[] = [];
    const p = browserLogin(parMeta, { ...settings, clientSecret: 's3cret' }, server, {
      scope: 'openid',
      port: 0,
      openBrowser: undefined,
      say: (l) => lines.push(l),
      timeoutMs: 500,
      complete,
      dpopJkt: 'thumbprint-1',
    });
    await expect(p).rejects.toMatchObject({ code: 'timeout' });
    expect(sent).toHaveLength(1);
    const { init } = sent[0]!;
    expect(init.method).toBe('POST');
    expect(init.headers?.authorization).toBe(`Basic ${Buffer.from('authcli:s3cret').toString('base64')}`);
    expect(init.form).toMatchObject({
      client_id: 'authcli',
      response_type: 'code',
      scope: 'openid',
      code_challenge_method: 'S256',
      dpop_jkt: 'thumbprint-1',
      redirect_uri: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/callback$/),
    });
    const url = new URL(lines.join('\n').match(/https:\/\/id\.example\/authorize\?\S+/)![0]);
    expect([...url.searchParams.entries()]).toEqual([
      ['client_id', 'authcli'],
      ['request_uri', 'urn:ietf:params:oauth:request_uri:abc'],
    ]);
  });

  it('§2.3 a refused push ends the login before any browser, with the error and what to check', async () => {
    const refuse =
      (status: number, body: unknown): Transport =>
      async () => ({ status, headers: new Headers(), body });
    const opts = { scope: 'openid', port: 0, openBrowser: undefined, say: () => undefined, timeoutMs: 5000, complete };
    await expect(
      browserLogin(parMeta, settings, refuse(401, { error: 'invalid_client', error_description: 'unknown' }), opts),
    ).rejects.toMatchObject({
      code: 'authorization_request',
      message: 'the server refused the pushed authorization request (invalid_client: unknown); the browser was not opened',
      hint: expect.stringMatching(/^Check the client id \(authcli/),
    });
    await expect(
      browserLogin(parMeta, settings, refuse(400, { error: 'invalid_request', error_description: 'redirect_uri not registered' }), opts),
    ).rejects.toMatchObject({ hint: expect.stringContaining('http://127.0.0.1/callback') });
    await expect(browserLogin(parMeta, settings, refuse(404, 'not found'), opts)).rejects.toMatchObject({
      message: 'the server refused the pushed authorization request (HTTP 404); the browser was not opened',
    });
  });
});

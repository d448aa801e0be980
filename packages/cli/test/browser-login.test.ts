import { describe, expect, it } from 'vitest';
import { browserLogin } from '../src/browser/login.js';
import type { Transport } from '../src/http.js';

const meta = { issuer: 'https://id.example', authorization_endpoint: 'https://id.example/authorize', token_endpoint: 'https://id.example/token', authorization_response_iss_parameter_supported: true };
const settings = { issuer: 'https://id.example', clientId: 'authcli', clientSecret: undefined };
const noNetwork: Transport = async () => {
  throw new Error('no token request may be sent without a valid callback');
};

describe('browser login (RFC 8252 loopback)', () => {
  it('prints an authorization URL with PKCE S256, state, nonce and a 127.0.0.1 redirect, and times out', async () => {
    const lines: string[] = [];
    const p = browserLogin(meta, settings, noNetwork, { scope: 'openid', port: 0, openBrowser: undefined, say: (l) => lines.push(l), timeoutMs: 300 });
    await expect(p).rejects.toMatchObject({ code: 'timeout' });
    const url = new URL(lines.join('\n').match(/https:\/\/id\.example\/authorize\?\S+/)![0]);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('code_challenge')).toMatch(/^[\w-]{43}$/);
    expect(url.searchParams.get('state')).toMatch(/^[\w-]{43}$/);
    expect(url.searchParams.get('nonce')).toMatch(/^[\w-]{43}$/);
    expect(url.searchParams.get('redirect_uri')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    // The listener is gone afterwards.
    await expect(fetch(url.searchParams.get('redirect_uri')!)).rejects.toThrow();
  });

  it('a browser that cannot be opened is reported with the device-flow hint', async () => {
    const lines: string[] = [];
    const p = browserLogin(meta, settings, noNetwork, { scope: 'openid', port: 0, openBrowser: async () => false, say: (l) => lines.push(l), timeoutMs: 200 });
    await expect(p).rejects.toMatchObject({ code: 'timeout' });
    expect(lines.join('\n')).toMatch(/Could not open a browser.*authcli login/s);
  });

  it('a fixed --port that is taken is a clear error', async () => {
    const { createServer } = await import('node:net');
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
    const port = (taken.address() as { port: number }).port;
    try {
      await expect(browserLogin(meta, settings, noNetwork, { scope: 'openid', port, openBrowser: undefined, say: () => {}, timeoutMs: 200 })).rejects.toThrow(/in use/);
    } finally {
      taken.close();
    }
  });
});

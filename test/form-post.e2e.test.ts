import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import * as client from 'openid-client';
import { authorizationRequest } from './openid-rp.js';
import type { Browser as Chromium, Page } from 'playwright-core';
import { launchChromium } from '@authcli/test-support/chromium';
import { freePort } from '@authcli/test-support/http';
import { approveAtOtherProvider, startOtherProvider } from '@authcli/test-support/other-op';
import { addApp, addUsers } from '@authcli/test-support/seed';
import { startServerProcess, type ServerProcess } from '@authcli/test-support/server-process';

const PASSWORD = 'form post e2e password';

/** A relying party's callback: every POST it receives, with its form body. */
async function relyingParty() {
  const port = await freePort();
  const received: { contentType: string | undefined; body: string }[] = [];
  const waiting: ((r: { body: string }) => void)[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      if (req.method === 'POST') {
        received.push({ contentType: req.headers['content-type'], body });
        for (const w of waiting.splice(0)) w({ body });
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end('received');
    });
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return {
    redirectUri: `http://127.0.0.1:${port}/cb`,
    received,
    next: () => new Promise<{ body: string }>((resolve) => waiting.push(resolve)),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/**
 * OAuth 2.0 Form Post Response Mode in a real browser: the authorization server's page posts the response to
 * the relying party by itself, under its own CSP, and openid-client (not written here) accepts what arrives.
 * The same checks run against node-oidc-provider, so they are the standard's and not this server's.
 */
describe('response_mode=form_post in Chromium, checked by openid-client', () => {
  let server: ServerProcess;
  let other: Awaited<ReturnType<typeof startOtherProvider>>;
  let rp: Awaited<ReturnType<typeof relyingParty>>;
  let chromium: Chromium;
  let ours: { clientId: string; clientSecret: string };

  beforeAll(async () => {
    rp = await relyingParty();
    [server, other, chromium] = await Promise.all([
      startServerProcess(),
      startOtherProvider({ webClient: { clientId: 'rp', clientSecret: 'rp-secret-rp-secret-rp-secret-00', redirectUri: rp.redirectUri } }),
      launchChromium(),
    ]);
    await addUsers(server.env, [{ username: 'fay', password: PASSWORD }]);
    const app = await addApp(server.env, {
      name: 'Form Post RP',
      kind: 'confidential',
      callbackUrls: [rp.redirectUri],
      scopes: ['openid', 'profile'],
    });
    ours = { clientId: app.client_id, clientSecret: app.client_secret! };
  });
  afterAll(async () => {
    await chromium?.close();
    await other?.close();
    await server?.stop();
    await rp?.close();
  });

  async function signInAtOurs(page: Page) {
    await page.getByLabel('Username').fill('fay');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Approve' }).click();
  }

  for (const which of ['authcli-server', 'node-oidc-provider'] as const) {
    it(`${which}: the code, state and iss arrive by POST, no CSP violation, and openid-client redeems them`, async () => {
      const isOurs = which === 'authcli-server';
      const issuer = isOurs ? server.issuer : other.issuer;
      const [id, secret] = isOurs ? [ours.clientId, ours.clientSecret] : ['rp', 'rp-secret-rp-secret-rp-secret-00'];
      const config = await client.discovery(new URL(issuer), id, secret, client.ClientSecretBasic(secret), {
        execute: [client.allowInsecureRequests],
      });
      expect(config.serverMetadata().response_modes_supported).toContain('form_post');
      const { url, verifier, state } = await authorizationRequest(config, {
        redirect_uri: rp.redirectUri,
        scope: 'openid',
        response_mode: 'form_post',
      });
      const page = await chromium.newPage();
      const complaints: string[] = [];
      page.on('console', (m) => {
        // node-oidc-provider's development pages load resources from the internet, which this machine does not reach.
        const offline = !isOurs && m.text().includes('ERR_NAME_NOT_RESOLVED');
        if ((m.type() === 'error' && !offline) || /Content Security Policy|Refused to/.test(m.text())) complaints.push(m.text());
      });
      const arrived = rp.next();
      try {
        await page.goto(url.href);
        if (isOurs) await signInAtOurs(page);
        else await approveAtOtherProvider(page, 'fay');
        await page.waitForURL(rp.redirectUri);
        expect(await page.locator('body').innerText()).toBe('received');
      } finally {
        await page.close();
      }
      const { body } = await arrived;
      const posted = new URLSearchParams(body);
      expect(posted.get('state')).toBe(state);
      expect(posted.get('iss')).toBe(issuer);
      expect(complaints, complaints.join('\n')).toEqual([]);
      const tokens = await client.authorizationCodeGrant(
        config,
        new Request(rp.redirectUri, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
        { pkceCodeVerifier: verifier, expectedState: state },
      );
      expect(tokens.claims()?.iss).toBe(issuer);
    });
  }
});

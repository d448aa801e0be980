import { challengeS256 } from '@authcli/pkce';
import { describe, expect, it } from 'vitest';
import { browserLogin, type SignedIn } from '../src/browser/login.js';
import { PAGE_CSP } from '../src/browser/pages.js';
import { AuthcliError } from '../src/errors.js';
import type { Transport } from '../src/http.js';
import { response, scripted } from './support/scripted.js';

const ISS = 'https://id.example';
const meta = {
  issuer: ISS,
  authorization_endpoint: `${ISS}/authorize`,
  token_endpoint: `${ISS}/token`,
  authorization_response_iss_parameter_supported: true,
};
const settings = { issuer: ISS, clientId: 'authcli', clientSecret: undefined };
const tokens = { access_token: 'at-1', token_type: 'Bearer', expires_in: 300 };
/** A sign-in on any free port, never opening a browser (the test is the browser). */
const OPTIONS = { scope: 'openid profile', port: 0, openBrowser: undefined, timeoutMs: 10_000 };
/** The authorization endpoint's answer to the preflight: off to the sign-in page. */
const toSignIn = response(303, '', { location: `${ISS}/signin` });

/**
 * Starts the flow against a scripted server and returns once the authorization URL is printed: the URL, the
 * callback to "redirect the browser" to, and the flow's result.
 */
async function start(
  transport: Transport,
  complete: (t: unknown, nonce: string) => Promise<SignedIn> = async () => ({ username: 'alice' }),
) {
  const lines: string[] = [];
  const result = browserLogin(meta, settings, transport, { ...OPTIONS, say: (l) => lines.push(l), complete });
  result.catch(() => undefined);
  const printed = () => lines.join('\n').match(/https:\/\/id\.example\/authorize\?\S+/)?.[0];
  while (!printed()) await new Promise((r) => setTimeout(r, 5));
  const url = new URL(printed()!);
  const callback = (params: Record<string, string>) => {
    const to = new URL(url.searchParams.get('redirect_uri')!);
    for (const [k, v] of Object.entries({ state: url.searchParams.get('state')!, iss: ISS, ...params })) to.searchParams.set(k, v);
    return fetch(to);
  };
  return { url, result, callback };
}

describe('the browser flow through its callback (rfc8252, rfc6749 §4.1)', () => {
  it('exchanges the code with the verifier of the challenge it sent, stores, and only then says "Signed in" in the browser', async () => {
    const transport = scripted(toSignIn, response(200, tokens));
    let nonceSeen: string | undefined;
    const flow = await start(transport, async (got, nonce) => {
      expect(got).toEqual(tokens);
      nonceSeen = nonce;
      return { username: 'alice <admin>' };
    });
    const page = await flow.callback({ code: 'code-1' });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toBe(PAGE_CSP);
    const html = await page.text();
    expect(html).toContain('<h1>Signed in as alice &lt;admin&gt;</h1>');
    expect(html).toContain(`authcli has verified and stored the sign-in to ${ISS}.`);
    expect(await flow.result).toEqual({ username: 'alice <admin>' });
    expect(nonceSeen).toBe(flow.url.searchParams.get('nonce'));

    const [preflight, exchange] = transport.sent;
    expect(preflight).toMatchObject({ url: flow.url.href, init: { method: 'GET', redirect: 'manual' } });
    expect(exchange!.url).toBe(`${ISS}/token`);
    const form = exchange!.init.form!;
    expect(form).toMatchObject({ grant_type: 'authorization_code', code: 'code-1', client_id: 'authcli' });
    expect(form.redirect_uri).toBe(flow.url.searchParams.get('redirect_uri'));
    expect(await challengeS256(form.code_verifier!)).toBe(flow.url.searchParams.get('code_challenge'));
  });

  it('a refused exchange: "Sign-in failed" with the reason in the browser, and the same error in the terminal', async () => {
    const transport = scripted(toSignIn, response(400, { error: 'invalid_grant', error_description: 'the code is invalid' }));
    const flow = await start(transport);
    const page = await flow.callback({ code: 'code-1' });
    expect(page.status).toBe(400);
    const html = await page.text();
    expect(html).toContain('<h1>Sign-in failed</h1>');
    expect(html).toContain('authcli could not complete the sign-in: the code exchange failed: invalid_grant: the code is invalid.');
    await expect(flow.result).rejects.toMatchObject({
      code: 'protocol',
      message: 'the code exchange failed: invalid_grant: the code is invalid',
    });
  });

  it('a sign-in that cannot be verified or stored is a failure in the browser too', async () => {
    const flow = await start(scripted(toSignIn, response(200, tokens)), async () => {
      throw new AuthcliError('id_token', 'the ID token nonce does not match this sign-in');
    });
    const html = await (await flow.callback({ code: 'code-1' })).text();
    expect(html).toContain('authcli could not complete the sign-in: the ID token nonce does not match this sign-in.');
    await expect(flow.result).rejects.toMatchObject({ code: 'id_token' });
  });

  it('denied in the browser: "Sign-in cancelled", and no token request', async () => {
    const transport = scripted(toSignIn);
    const flow = await start(transport);
    const page = await flow.callback({ error: 'access_denied' });
    expect(await page.text()).toContain('<h1>Sign-in cancelled</h1>');
    await expect(flow.result).rejects.toMatchObject({ code: 'access_denied', message: 'you denied the sign-in in the browser' });
    expect(transport.sent).toHaveLength(1);
  });

  it('an error at the redirect URI is worded with its hint: invalid_scope names the scope to drop', async () => {
    const flow = await start(scripted(toSignIn));
    await flow.callback({ error: 'invalid_scope', error_description: 'the profile scope is not allowed for this application' });
    await expect(flow.result).rejects.toMatchObject({
      code: 'callback',
      message: 'the server returned invalid_scope: the profile scope is not allowed for this application',
      hint: 'Ask without profile: --scope "openid" (or ask the server\'s operator to allow it for client authcli).',
    });
  });

  it('rfc6749 §10.12 a callback with another state is refused in the browser and nothing is exchanged; stray requests are 404', async () => {
    const transport = scripted(toSignIn);
    const flow = await start(transport);
    const stray = await fetch(new URL('/favicon.ico', flow.url.searchParams.get('redirect_uri')!));
    expect(stray.status).toBe(404);
    const page = await flow.callback({ code: 'code-1', state: 'forged' });
    expect(page.status).toBe(400);
    expect(await page.text()).toContain('the callback state does not match this sign-in (possible CSRF); nothing was exchanged');
    await expect(flow.result).rejects.toMatchObject({ code: 'callback' });
    expect(transport.sent).toHaveLength(1);
  });
});

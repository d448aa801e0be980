import { describe, expect, it } from 'vitest';
import { deviceLogin } from '../src/device/login.js';
import { formatError } from '../src/errors.js';
import type { Transport } from '@authcli/client/internal/http.js';
import type { ServerMetadata } from '@authcli/client/internal/oauth/discovery.js';
import { createOutput } from '../src/output.js';
import { deviceCodes, FakeClock, response, scripted } from '../../client/test/support/scripted.js';

const ISS = 'https://id.example';
const meta: ServerMetadata = { issuer: ISS, token_endpoint: `${ISS}/token`, device_authorization_endpoint: `${ISS}/device` };
const settings = { issuer: ISS, clientId: 'authcli', clientSecret: undefined };
const codes = deviceCodes(ISS);
const tokens = { access_token: 'at-1', token_type: 'Bearer', expires_in: 300 };
const pending = response(400, { error: 'authorization_pending' });

/** The flow as it runs in a pipe (no terminal: no QR, no countdown), with what it says on stderr. */
function login(transport: Transport, opts: { tokenTransport?: Transport; clock?: FakeClock; offerBrowser?: (url: string) => void } = {}) {
  let said = '';
  const out = createOutput({ stdout: { write: () => true }, stderr: { write: (t: string) => (said += t) } }, {});
  const clock = opts.clock ?? new FakeClock();
  const result = deviceLogin(meta, settings, transport, out, { scope: 'openid', clock, ...opts });
  return { result, said: () => said, clock };
}

describe('the device flow as a person sees it (rfc8628 §3.3)', () => {
  it('shows where to go and the code (the complete URI as text off a terminal), offers it to a browser, polls until approved', async () => {
    const transport = scripted(response(200, codes), pending, pending, response(200, tokens));
    let offered: string | undefined;
    const run = login(transport, { offerBrowser: (url) => (offered = url) });
    expect(await run.result).toEqual(tokens);
    expect(run.said()).toBe(
      [
        `To sign in, open ${ISS}/device on any device and enter the code:\n`,
        '    BCDF-GHJK\n',
        `Or open ${ISS}/device?user_code=BCDF-GHJK (the code is filled in).\n`,
        '',
      ].join('\n'),
    );
    expect(offered).toBe(codes.verification_uri_complete);
    expect(run.clock.sleeps).toEqual([5000, 5000, 5000]);
    expect(transport.sent.map((s) => `${s.init.method} ${s.url} ${s.init.form?.device_code ?? ''}`.trim())).toEqual([
      `POST ${ISS}/device`,
      `POST ${ISS}/token dc-1`,
      `POST ${ISS}/token dc-1`,
      `POST ${ISS}/token dc-1`,
    ]);
  });

  it('the token endpoint is polled through the token transport (DPoP), the device endpoint through the plain one', async () => {
    const plain = scripted(response(200, codes));
    const token = scripted(pending, response(200, tokens));
    await login(plain, { tokenTransport: token }).result;
    expect(plain.sent.map((s) => s.url)).toEqual([`${ISS}/device`]);
    expect(token.sent.map((s) => s.url)).toEqual([`${ISS}/token`, `${ISS}/token`]);
  });

  it('slow_down and a server that does not answer are said, once each time', async () => {
    const transport = scripted(response(200, codes), response(400, { error: 'slow_down' }), 'network', response(200, tokens));
    const run = login(transport);
    await run.result;
    expect(run.said()).toMatch(/The server asked to poll more slowly: every 10 s from now on\.\nThe server did not answer; retrying…\n$/);
    expect(run.clock.sleeps).toEqual([5000, 10000, 20000]);
  });

  it('denied in the browser: one line, and no more polling', async () => {
    const transport = scripted(response(200, codes), pending, response(400, { error: 'access_denied' }));
    const err = await login(transport).result.catch((e: unknown) => e);
    expect(await formatError(err, { debug: false })).toBe('authcli: the sign-in was denied in the browser');
    expect(transport.sent).toHaveLength(3);
  });

  it('codes that expire first: expired_token, without a poll past the expiry', async () => {
    const transport = scripted(response(200, { ...codes, expires_in: 12 }), pending, pending);
    const err = await login(transport).result.catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'expired_token',
      message: 'the code expired before the sign-in was approved; run `authcli login` again',
    });
    expect(transport.sent).toHaveLength(3);
  });

  it('a client the server does not know: the line authcli prints, before any code is shown', async () => {
    const transport = scripted(response(401, { error: 'invalid_client', error_description: 'client authentication failed' }));
    const run = login(transport);
    const err = await run.result.catch((e: unknown) => e);
    expect(await formatError(err, { debug: false })).toBe(
      'authcli: the server refused this client for the device flow (invalid_client: client authentication failed). Check the client id (authcli: --client-id, AUTHCLI_CLIENT_ID or config.json) and, for a confidential client, its secret.',
    );
    expect(run.said()).toBe('');
  });
});

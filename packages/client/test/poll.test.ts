import { describe, expect, it } from 'vitest';
import { pollForTokens } from '../src/device/poll.js';
import { AuthcliError } from '../src/errors.js';
import type { HttpResponse, Transport } from '../src/http.js';
import { OAuthClient } from '../src/oauth/client.js';
import { FakeClock } from './support/scripted.js';

const pending: HttpResponse = { status: 400, headers: new Headers(), body: { error: 'authorization_pending' } };
const slow: HttpResponse = { status: 400, headers: new Headers(), body: { error: 'slow_down' } };
const ok: HttpResponse = { status: 200, headers: new Headers(), body: { access_token: 'at', token_type: 'Bearer', expires_in: 60 } };
const err = (error: string): HttpResponse => ({ status: 400, headers: new Headers(), body: { error } });

/** Answers from a script, one per poll, recording when each poll arrived. */
function scripted(clock: FakeClock, answers: (HttpResponse | 'network')[]) {
  const at: number[] = [];
  const transport: Transport = async () => {
    at.push(clock.t);
    const a = answers.shift();
    if (a === undefined) throw new Error('polled more than scripted');
    if (a === 'network') throw new AuthcliError('network', 'ECONNREFUSED');
    return a;
  };
  return { transport, at };
}

const timing = (expiresAt = 600_000) => ({ interval: 5, expiresAt });

/** Each poll is the protocol client's one token request for the device code, sent through `transport`. */
const polling = (transport: Transport) => {
  const client = new OAuthClient({
    meta: { issuer: 'http://as', token_endpoint: 'http://as/token' },
    settings: { issuer: 'http://as', clientId: 'authcli', clientSecret: undefined },
    transport,
  });
  return () => client.pollDeviceToken('device-code-1');
};

describe('rfc8628 §3.5 device polling loop', () => {
  it('honours the interval: every poll at least 5 s after the previous one', async () => {
    const clock = new FakeClock();
    const { transport, at } = scripted(clock, [pending, pending, pending, ok]);
    const tokens = await pollForTokens(polling(transport), timing(), clock);
    expect(tokens.access_token).toBe('at');
    expect(at).toEqual([5000, 10000, 15000, 20000]);
  });

  it('slow_down adds 5 seconds, kept for the rest of the login', async () => {
    const clock = new FakeClock();
    const { transport, at } = scripted(clock, [pending, slow, pending, pending, slow, pending, ok]);
    await pollForTokens(polling(transport), timing(), clock);
    const gaps = at.map((t, i) => t - (at[i - 1] ?? 0));
    expect(gaps).toEqual([5000, 5000, 10000, 10000, 10000, 15000, 15000]);
  });

  it('HTTP 429 is treated like slow_down', async () => {
    const clock = new FakeClock();
    const { transport, at } = scripted(clock, [{ status: 429, headers: new Headers(), body: '' }, pending, ok]);
    await pollForTokens(polling(transport), timing(), clock);
    expect(at).toEqual([5000, 15000, 25000]);
  });

  it('network errors and 5xx are retried with backoff, then polling resumes at the interval', async () => {
    const clock = new FakeClock();
    const { transport, at } = scripted(clock, ['network', 'network', { status: 503, headers: new Headers(), body: 'busy' }, pending, ok]);
    await pollForTokens(polling(transport), timing(), clock);
    const gaps = at.map((t, i) => t - (at[i - 1] ?? 0));
    expect(gaps).toEqual([5000, 10000, 20000, 40000, 5000]);
  });

  it('gives up with expired_token once the codes expire, without polling past expiry', async () => {
    const clock = new FakeClock();
    const { transport, at } = scripted(clock, [pending, pending, pending]);
    await expect(pollForTokens(polling(transport), timing(16_000), clock)).rejects.toMatchObject({ code: 'expired_token' });
    expect(at).toEqual([5000, 10000, 15000]);
  });

  it('expired_token from the server ends the login', async () => {
    const clock = new FakeClock();
    const { transport } = scripted(clock, [pending, err('expired_token')]);
    await expect(pollForTokens(polling(transport), timing(), clock)).rejects.toMatchObject({ code: 'expired_token' });
  });

  it('access_denied ends the login', async () => {
    const clock = new FakeClock();
    const { transport, at } = scripted(clock, [pending, err('access_denied')]);
    await expect(pollForTokens(polling(transport), timing(), clock)).rejects.toMatchObject({ code: 'access_denied' });
    expect(at).toHaveLength(2);
  });

  it('invalid_client ends the login', async () => {
    const clock = new FakeClock();
    const { transport } = scripted(clock, [{ status: 401, headers: new Headers(), body: { error: 'invalid_client' } }]);
    await expect(pollForTokens(polling(transport), timing(), clock)).rejects.toMatchObject({ code: 'invalid_client' });
  });

  it('Ctrl-C (abort) stops the loop', async () => {
    const clock = new FakeClock();
    const ac = new AbortController();
    const { transport } = scripted(clock, [pending]);
    const p = pollForTokens(
      polling(async (...a) => {
        const r = await transport(...a);
        ac.abort();
        return r;
      }),
      timing(),
      clock,
      ac.signal,
    );
    await expect(p).rejects.toMatchObject({ code: 'cancelled' });
  });

  it('an unknown error is reported, not retried', async () => {
    const clock = new FakeClock();
    const { transport } = scripted(clock, [err('invalid_grant')]);
    await expect(pollForTokens(polling(transport), timing(), clock)).rejects.toMatchObject({ code: 'protocol' });
  });
});

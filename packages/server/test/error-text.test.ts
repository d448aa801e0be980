import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as errors from '../src/oauth/errors.js';
import { errorDescription, OAuthError } from '../src/oauth/errors.js';
import { authorizeUrl, basic, postForm, seedApp, seedUser, signedInBrowser, startServer, type TestServer } from './helpers.js';

/** RFC 6749 §4.1.2.1, §5.2: error-description = 1*( %x20-21 / %x23-5B / %x5D-7E ). */
const RFC6749_TEXT = /^[\x20-\x21\x23-\x5b\x5d-\x7e]+$/;
/** Input a client might send, none of which may come back in an error description. */
const PROBE = 'zq§"\\é\u0007';
/** The same for a header (ASCII only: fetch refuses anything else there). */
const HEADER_PROBE = 'zq"\\{}';

describe('rfc6749 §5.2 error descriptions: one character set, no request input echoed', () => {
  it('errorDescription maps every character outside the set, and leaves text inside it alone', () => {
    expect(errorDescription('code_verifier is required (RFC 7636 §4.5)')).toBe('code_verifier is required (RFC 7636 section 4.5)');
    expect(errorDescription('say "hi" \\ bye')).toBe("say 'hi' / bye");
    expect(errorDescription('naïve\ttab\u{1F600}')).toBe('na?ve?tab?');
    const inside = 'plain text: a-z, 0-9 and !#$%&()*+,-./:;<=>?@[]^_`{|}~';
    expect(errorDescription(inside)).toBe(inside);
    for (let c = 0; c < 0x3000; c++) expect(errorDescription(`x${String.fromCharCode(c)}y`), `U+${c.toString(16)}`).toMatch(RFC6749_TEXT);
  });

  it('every OAuthError class holds its description, body and WWW-Authenticate to the set', () => {
    const extra: Record<string, unknown[]> = { TemporarilyUnavailable: [5], InsufficientScope: ['openid'], UseDpopNonce: ['nonce'] };
    type ErrorClass = new (...args: unknown[]) => OAuthError;
    const classes = Object.entries(errors as Record<string, unknown>).filter(
      (e): e is [string, ErrorClass] => typeof e[1] === 'function' && (e[1] as { prototype?: unknown }).prototype instanceof OAuthError,
    );
    expect(classes.length).toBeGreaterThanOrEqual(18);
    for (const [name, ErrorClass] of classes) {
      const err = new ErrorClass(`bad ${PROBE} (RFC 6749 §5.2)`, ...(extra[name] ?? []));
      expect(err.description, name).toMatch(RFC6749_TEXT);
      // BearerRequired (RFC 6750 §3.1: no credentials sent) answers with the bare challenge and no body at all.
      if (err.response.body !== '') {
        const body = JSON.parse(err.response.body) as { error: string; error_description: string };
        expect(body.error_description, name).toMatch(RFC6749_TEXT);
        expect(body.error, name).toMatch(/^[\x20-\x21\x23-\x5b\x5d-\x7e]+$/);
      } else expect(name).toBe('BearerRequired');
      const challenge = err.response.headers['www-authenticate'];
      if (challenge !== undefined) expect(challenge, name).toMatch(/^[\x20-\x7e]+$/);
    }
  });

  describe('every error path of every endpoint, over HTTP', () => {
    let server: TestServer;
    let conf: { id: string; secret: string };
    const redirectUri = 'https://app.example/callback';
    let seen: { where: string; text: string }[] = [];
    beforeEach(() => {
      seen = [];
    });
    afterEach(() => {
      expect(seen.length).toBeGreaterThan(10);
      for (const { where, text } of seen) {
        expect(text, where).toMatch(RFC6749_TEXT);
        // Nothing of the probe is echoed back.
        for (const piece of ['zq', '§', 'é']) expect(text, where).not.toContain(piece);
      }
    });

    beforeAll(async () => {
      server = await startServer('sqlite');
      await seedUser(server);
      const c = await seedApp(server, { kind: 'confidential', callbackUrls: [redirectUri] });
      conf = { id: c.app.clientId, secret: c.clientSecret! };
    });
    afterAll(async () => server.close());

    function record(where: string, res: { headers: Headers; json: Record<string, unknown> }) {
      if (typeof res.json.error_description === 'string') seen.push({ where, text: res.json.error_description });
      const challenge = res.headers.get('www-authenticate');
      const m = challenge && /error_description="([^"]*)"/.exec(challenge);
      if (m) seen.push({ where: `${where} (WWW-Authenticate)`, text: m[1]! });
    }

    it('JSON endpoints: token, device authorization, revocation, introspection, userinfo', async () => {
      const nasty = encodeURIComponent(PROBE);
      const bodies: [string, string, Record<string, string>?][] = [
        ['/oauth/token', ''],
        ['/oauth/token', `grant_type=${nasty}`],
        ['/oauth/token', `grant_type=authorization_code&client_id=authcli&code=${nasty}&redirect_uri=${nasty}`],
        ['/oauth/token', `grant_type=authorization_code&client_id=authcli&code=x&redirect_uri=x&code_verifier=${nasty}`],
        ['/oauth/token', 'grant_type=authorization_code&client_id=authcli'],
        ['/oauth/token', `grant_type=refresh_token&client_id=authcli&refresh_token=${nasty}&scope=${nasty}`],
        ['/oauth/token', `grant_type=urn:ietf:params:oauth:grant-type:device_code&client_id=authcli&device_code=${nasty}`],
        ['/oauth/token', `grant_type=client_credentials&client_id=${nasty}`],
        ['/oauth/token', `grant_type=authorization_code&${nasty}=1&${nasty}=2`],
        ['/oauth/token', 'grant_type=authorization_code&code=a&code=b'],
        ['/oauth/token', `grant_type=authorization_code`, { authorization: basic(PROBE, PROBE) }],
        ['/oauth/token', `grant_type=authorization_code`, { authorization: `Basic ${HEADER_PROBE}` }],
        ['/oauth/token', `%zz=${nasty}`],
        ['/oauth/device/authorization', `client_id=authcli&scope=${nasty}`],
        ['/oauth/device/authorization', `client_id=${nasty}&scope=openid`],
        ['/oauth/device/authorization', 'client_id=authcli&scope=admin'],
        ['/oauth/revoke', `token=${nasty}&token_type_hint=${nasty}&client_id=authcli`],
        ['/oauth/revoke', `client_id=authcli`],
        ['/oauth/introspect', `token=${nasty}`],
        ['/oauth/introspect', `token=${nasty}`, { authorization: basic(conf.id, 'wrong') }],
        ['/oauth/userinfo', `access_token=${nasty}`],
        ['/oauth/userinfo', 'access_token=bm90LWEtdG9rZW4'],
        ['/oauth/userinfo', '', { authorization: `Bearer ${HEADER_PROBE}` }],
      ];
      for (const [path, body, headers] of bodies) record(`${path} ${body}`, await postForm(server, path, body, headers));
      for (const type of ['application/json', `text/${PROBE.slice(0, 2)}`]) {
        const res = await fetch(`${server.url}/oauth/token`, { method: 'POST', headers: { 'content-type': type }, body: '{}' });
        record(`/oauth/token as ${type}`, { headers: res.headers, json: (await res.json()) as Record<string, unknown> });
      }
      const big = await postForm(server, '/oauth/token', `grant_type=${'x'.repeat(64 * 1024)}`);
      record('/oauth/token oversized', big);
    });

    it('the authorization endpoint: every redirected error', async () => {
      const b = await signedInBrowser(server);
      const cases: Record<string, string | undefined>[] = [
        { prompt: PROBE },
        { prompt: 'none login' },
        { code_challenge_method: PROBE },
        { code_challenge_method: 'plain' },
        { code_challenge: PROBE },
        { code_challenge: undefined },
        { response_type: PROBE },
        { response_mode: PROBE },
        { scope: PROBE },
        { scope: `${PROBE.slice(0, 2)} admin` },
        { max_age: PROBE },
        { claims: PROBE },
        { claims: JSON.stringify({ userinfo: { [PROBE]: { essential: PROBE } } }) },
        { id_token_hint: PROBE },
        { request: PROBE },
        { request_uri: PROBE },
        { state: 'x'.repeat(5000) },
      ];
      for (const extra of cases) {
        const { url } = await authorizeUrl({ clientId: conf.id, redirectUri });
        const u = new URL(url, server.url);
        for (const [k, v] of Object.entries(extra)) {
          if (v === undefined) u.searchParams.delete(k);
          else u.searchParams.set(k, v);
        }
        const res = await b.get(u.href);
        expect(res.status, JSON.stringify(extra)).toBe(303);
        const params = new URL(res.location!).searchParams;
        expect(params.get('error'), JSON.stringify(extra)).toBeTruthy();
        seen.push({ where: `authorize ${JSON.stringify(extra)}`, text: params.get('error_description') ?? '' });
      }
      // A repeated parameter with an odd name.
      const { url } = await authorizeUrl({ clientId: conf.id, redirectUri });
      const odd = encodeURIComponent(PROBE);
      const res = await b.get(`${url}&${odd}=1&${odd}=2`);
      seen.push({ where: 'authorize repeated odd name', text: new URL(res.location!).searchParams.get('error_description') ?? '' });
    });
  });
});

/**
 * The token requests (the code exchange and refresh) and what the page checks
 * in their answer: the DPoP binding of the access token (RFC 9449 §6.1) and
 * the ID token, verified against the server's JWKS with its nonce.
 */
import { timingSafeEqualString } from '@authcli/pkce';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { type DpopKey, dpopProof } from './dpop.js';
import { check, el, issuer, json, pre, step } from './page.js';
import { latestDpopNonce, type Sent, sendShown } from './requests.js';
import type { SavedRequest } from './saved-request.js';

/** The token request as a curl command, to run it outside the browser. */
function curlOf(req: Sent): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  return [
    `curl -sS -X POST ${q(req.url)}`,
    ...Object.entries(req.headers).map(([k, v]) => `  -H ${q(`${k}: ${v}`)}`),
    ...[...new URLSearchParams(req.body)].map(([k, v]) => `  --data-urlencode ${q(`${k}=${v}`)}`),
  ].join(' \\\n');
}

/** A token request that succeeded: the tokens, and the request as sent (for the replay). */
export interface Tokens {
  tokens: Record<string, unknown>;
  sent: Sent;
}

/** Sends a token request (with a DPoP proof when there is a key) and shows it; the tokens of a 2xx answer, else undefined. */
export async function tokenCall(title: string, body: URLSearchParams, key?: DpopKey): Promise<Tokens | undefined> {
  const url = `${issuer}/oauth/token`;
  const { sent, answer } = await sendShown(
    step(title),
    async () => {
      const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
      if (key) headers.dpop = await dpopProof(key, 'POST', url, { nonce: latestDpopNonce() });
      return { method: 'POST', url, headers, body: String(body) };
    },
    { request: 'Token request', response: 'Token response' },
    (sent) => {
      const curl = curlOf(sent);
      const copy = el('button', { type: 'button', class: 'secondary' }, 'Copy as curl');
      copy.addEventListener('click', () => void navigator.clipboard?.writeText(curl));
      const once = key
        ? [el('p', { class: 'muted' }, 'A DPoP proof is accepted once: run as it is, this command is refused as a replay.')]
        : [];
      return [copy, pre(curl, 'curl'), ...once];
    },
  );
  try {
    const parsed = JSON.parse(answer.text) as Record<string, unknown>;
    return answer.status >= 200 && answer.status < 300 ? { tokens: parsed, sent } : undefined;
  } catch {
    return undefined;
  }
}

/** RFC 9449 §6.1: the access token's cnf.jkt is the thumbprint of the key this browser holds, and that key cannot leave it. */
export async function showBinding(tokens: Record<string, unknown>, key: DpopKey): Promise<void> {
  let cnf: unknown;
  try {
    cnf = decodeJwt(String(tokens.access_token)).cnf;
  } catch {
    cnf = undefined;
  }
  const jkt = (cnf as { jkt?: unknown } | undefined)?.jkt;
  const checks = el('ul', { class: 'checks' });
  step(
    'DPoP binding',
    el('p', {}, 'The access token is bound to the key pair this page made: it is useless without a proof signed by the private key.'),
    el('h3', {}, 'token_type'),
    pre(String(tokens.token_type), 'token_type'),
    el('h3', {}, 'Key thumbprint (RFC 7638), sent as dpop_jkt'),
    pre(key.jkt, 'DPoP key thumbprint'),
    el('h3', {}, 'Access token cnf claim'),
    pre(json(cnf ?? null), 'Access token cnf'),
    el('h3', {}, 'Public key (the jwk header of every proof)'),
    pre(json(key.jwk), 'DPoP public key'),
    checks,
  );
  checks.append(
    check('token_type is DPoP', tokens.token_type === 'DPoP', String(tokens.token_type)),
    check('cnf.jkt equals the key thumbprint', jkt === key.jkt, typeof jkt === 'string' ? jkt : 'missing'),
  );
  // The private key was made non-extractable: WebCrypto refuses to hand it out, to this page or to a script injected in it.
  const exported = await crypto.subtle.exportKey('jwk', key.privateKey).then(
    () => 'exported',
    (err: Error) => err.name,
  );
  checks.append(check('private key is non-extractable', !key.privateKey.extractable && exported !== 'exported', `exportKey: ${exported}`));
}

/** The ID token decoded, its signature checked against the JWKS, and its iss, aud and nonce against the request. */
export async function showIdToken(idToken: string, saved: SavedRequest): Promise<void> {
  const checks = el('ul', { class: 'checks' });
  const section = step(
    'ID token',
    el('h3', {}, 'Header'),
    pre(json(decodeProtectedHeader(idToken))),
    el('h3', {}, 'Payload'),
    pre(json(decodeJwt(idToken)), 'ID token payload'),
    checks,
  );
  try {
    const jwks = (await (await fetch(`${issuer}/oauth/jwks`)).json()) as JSONWebKeySet;
    const { payload } = await jwtVerify(idToken, createLocalJWKSet(jwks), { issuer: saved.issuer, audience: saved.client_id });
    checks.append(
      check('signature verified against the JWKS', true),
      check('iss and aud', true, `${payload.iss} / ${String(payload.aud)}`),
    );
    const nonceOk = typeof payload.nonce === 'string' && timingSafeEqualString(payload.nonce, saved.nonce);
    checks.append(check('nonce matches the request', nonceOk));
  } catch (err) {
    checks.append(check('signature verified against the JWKS', false, (err as Error).message));
  }
  void section;
}
